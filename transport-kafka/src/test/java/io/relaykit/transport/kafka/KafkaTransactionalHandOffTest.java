package io.relaykit.transport.kafka;

import static io.relaykit.transport.kafka.KafkaTestSupport.committedOffsets;
import static io.relaykit.transport.kafka.KafkaTestSupport.message;
import static io.relaykit.transport.kafka.KafkaTestSupport.newTopic;
import static io.relaykit.transport.kafka.KafkaTestSupport.publishAll;
import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.message.Message;
import io.relaykit.tck.Await;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The hand-off of failed records to the retry and dead-letter topics across a crash (issue F3 item
 * 10), with the member killed for real: it runs in a child JVM ({@link HandOffMember}) that the
 * test kills with SIGKILL at a chosen point, leaving behind what a dead process leaves (an open
 * transaction, uncommitted offsets); the restarted member runs in this JVM.
 *
 * <p>The records: 0 key a (stuck in the child, or succeeding), 1 key c (permanent failure: dead
 * letter), 2 key b (fails its first attempt: retry copy, due in an hour; the restarted member's
 * clock is two hours ahead, so it is due there), 3 key b (parked behind 2).
 */
@DisplayName("Kafka hand-off of retry and dead-letter copies across a killed member")
class KafkaTransactionalHandOffTest {

  private static final Duration WAIT = Duration.ofSeconds(90);

  @RegisterExtension
  final KafkaClients clients = new KafkaClients();

  private record Call(int seq, int attempt) {}

  /** How far ahead the restarted member's clock is. */
  private final java.util.concurrent.atomic.AtomicReference<Duration> SHIFT =
      new java.util.concurrent.atomic.AtomicReference<>(Duration.ofHours(2));

  /** A member in a child JVM; its stdout lines are collected. */
  private static final class Child implements AutoCloseable {
    final Process process;
    final List<String> lines = new CopyOnWriteArrayList<>();

    Child(String topic, String group, String member, String handOff, String scenario)
        throws Exception {
      String javaBin = ProcessHandle.current().info().command().orElse("java");
      Path log = Files.createTempFile("handoff-member-", ".log");
      process = new ProcessBuilder(javaBin, "-cp", System.getProperty("java.class.path"),
          HandOffMember.class.getName(), KafkaTestBroker.bootstrapServers(), topic, group, member,
          handOff, scenario)
          .redirectError(log.toFile()).start();
      Thread reader = new Thread(() -> {
        try (BufferedReader in = new BufferedReader(
            new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
          String line;
          while ((line = in.readLine()) != null) {
            lines.add(line);
          }
        } catch (java.io.IOException e) {
          // the child died
        }
      }, "handoff-member-reader");
      reader.setDaemon(true);
      reader.start();
    }

    void awaitLine(String line) {
      Await.until(WAIT, "child printed " + line, () -> {
        if (!process.isAlive() && !lines.contains(line)) {
          throw new AssertionError("child died before " + line + "; printed " + lines);
        }
        return lines.contains(line);
      });
    }

    /** SIGKILL: no close, no commit, no abort. */
    void kill() throws InterruptedException {
      process.destroyForcibly();
      assertThat(process.waitFor(30, TimeUnit.SECONDS)).isTrue();
    }

    @Override
    public void close() throws InterruptedException {
      if (process.isAlive()) {
        kill();
      }
    }
  }

  private static List<Message> records(String topic) {
    List<Message> messages = List.of(message("a", 0), message("c", 1), message("b", 2),
        message("b", 3));
    publishAll(topic, messages);
    return messages;
  }

  /** The restarted member, in this JVM, two hours ahead (the retry copies are due at once). */
  private KafkaSubscription restart(String topic, String group, String member,
      KafkaTransportConfig.HandOff handOff, List<Call> calls) {
    SHIFT.set(Duration.ofHours(2));
    InstantSource ahead = () -> Instant.now().plus(SHIFT.get());
    return clients.subscriber(KafkaTestSupport.config().closeTimeout(Duration.ofSeconds(5))
        .consumerProperty("session.timeout.ms", "3000")
        .consumerProperty("heartbeat.interval.ms", "500")
        .handOff(handOff).memberId(member).clock(ahead))
        .subscribe(HandOffMember.spec(topic, group), d -> {
          int seq = Integer.parseInt(d.message().payloadUtf8());
          calls.add(new Call(seq, d.attempt()));
          HandOffMember.handle(seq, d.attempt(), false);
        });
  }

  /** Every record of {@code topic}, read with {@code isolation}, without a group. */
  private static List<ConsumerRecord<String, byte[]>> read(String topic, String isolation) {
    return read(topic, isolation, 0);
  }

  /**
   * Like {@link #read(String, String)}, once at least {@code atLeast} records are visible: a
   * transaction's markers reach its partitions just after it committed.
   */
  private static List<ConsumerRecord<String, byte[]>> read(String topic, String isolation,
      int atLeast) {
    try (KafkaConsumer<String, byte[]> c = new KafkaConsumer<>(Map.of(
        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, KafkaTestBroker.bootstrapServers(),
        ConsumerConfig.CLIENT_ID_CONFIG, "handoff-reader-" + UUID.randomUUID(),
        ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false",
        ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation),
        new StringDeserializer(), new ByteArrayDeserializer())) {
      List<TopicPartition> parts = c.partitionsFor(topic, Duration.ofSeconds(10)).stream()
          .map(p -> new TopicPartition(topic, p.partition())).toList();
      c.assign(parts);
      c.seekToBeginning(parts);
      List<ConsumerRecord<String, byte[]>> out = new ArrayList<>();
      Await.until(Duration.ofSeconds(30), atLeast + " records on " + topic, () -> {
        c.poll(Duration.ofMillis(50)).forEach(out::add);
        Map<TopicPartition, Long> ends = c.endOffsets(parts);
        return out.size() >= atLeast && parts.stream().allMatch(p -> c.position(p) >= ends.get(p));
      });
      return out;
    }
  }

  private static long count(List<ConsumerRecord<String, byte[]>> records, String seq) {
    return records.stream()
        .filter(r -> r.value() != null && seq.equals(new String(r.value(), StandardCharsets.UTF_8)))
        .count();
  }

  @Test
  @DisplayName("transactional, killed after the copies were written but before the transaction"
      + " committed: the copies stay invisible, the records run again at attempt 1, in key order")
  void crashBeforeTheTransactionCommits() throws Exception {
    String topic = newTopic("txcrash", 1);
    String group = topic + "-g";
    String member = "m-" + UUID.randomUUID().toString().substring(0, 8);
    List<Message> messages = records(topic);
    KafkaTransportConfig names = KafkaTestSupport.config().build();
    String retryTopic = names.retryTopic(topic, group);
    String deadLetterTopic = names.deadLetterTopic(topic, group);
    try (Child child = new Child(topic, group, member, "transactional", "stuck")) {
      child.awaitLine("RETRIED " + messages.get(2).id());
      child.awaitLine("DEAD_LETTERED " + messages.get(1).id());
      // Both copies were really written, inside the open transaction, and nothing is committed:
      // record 0 never finishes, so the watermark never passes them.
      assertThat(count(read(retryTopic, "read_uncommitted"), "2")).isEqualTo(1);
      assertThat(count(read(deadLetterTopic, "read_uncommitted"), "1")).isEqualTo(1);
      assertThat(read(retryTopic, "read_committed")).isEmpty();
      assertThat(committedOffsets(group, topic).getOrDefault(0, 0L)).isZero();
      child.kill();
    }

    List<Call> calls = new CopyOnWriteArrayList<>();
    KafkaSubscription sub = restart(topic, group, member,
        KafkaTransportConfig.HandOff.TRANSACTIONAL, calls);
    Await.until(WAIT, "record 2 failed again", () -> calls.contains(new Call(2, 1)));
    SHIFT.set(Duration.ofHours(4)); // the restarted member's own retry copy is due now
    Await.until(WAIT, "every record handled", () -> calls.contains(new Call(3, 1)));
    Await.until(WAIT, "source committed to its end",
        () -> Long.valueOf(4).equals(committedOffsets(group, topic).get(0)));
    // The killed member's copies never ran: record 2 ran again at attempt 1, then once at attempt
    // 2 from the restarted member's own copy; its key's later record after that.
    assertThat(calls).filteredOn(c -> c.seq() == 2).containsExactly(new Call(2, 1),
        new Call(2, 2));
    assertThat(calls.indexOf(new Call(3, 1))).isGreaterThan(calls.indexOf(new Call(2, 2)));
    assertThat(calls).filteredOn(c -> c.seq() != 2).containsExactlyInAnyOrder(new Call(0, 1),
        new Call(1, 1), new Call(3, 1));
    // One dead letter: the aborted one is on the topic, but not committed, so not an entry.
    KafkaDeadLetterStore dlt = clients.deadLetterStore(topic, group);
    assertThat(dlt.list(DeadLetterQuery.all())).extracting(DeadLetter::messageId)
        .containsExactly(messages.get(1).id());
    assertThat(count(read(deadLetterTopic, "read_uncommitted"), "1")).isEqualTo(2);
    assertThat(count(read(deadLetterTopic, "read_committed", 1), "1")).isEqualTo(1);
    assertThat(count(read(retryTopic, "read_committed", 1), "2")).isEqualTo(1);
    assertThat(sub.close(Duration.ofSeconds(10))).isTrue();
  }

  @Test
  @DisplayName("transactional, killed after the transaction committed: the copies are handled"
      + " once, the failed records are not run again from the source")
  void crashAfterTheTransactionCommitted() throws Exception {
    String topic = newTopic("txdone", 1);
    String group = topic + "-g";
    String member = "m-" + UUID.randomUUID().toString().substring(0, 8);
    List<Message> messages = records(topic);
    KafkaTransportConfig names = KafkaTestSupport.config().build();
    String retryTopic = names.retryTopic(topic, group);
    try (Child child = new Child(topic, group, member, "transactional", "flowing")) {
      child.awaitLine("RETRIED " + messages.get(2).id());
      child.awaitLine("DEAD_LETTERED " + messages.get(1).id());
      // Records 0-2 are done (3 waits for its key's retry): the transaction committed the copies
      // with the source offset 3.
      Await.until(WAIT, "the transaction committed",
          () -> Long.valueOf(3).equals(committedOffsets(group, topic).get(0)));
      assertThat(count(read(retryTopic, "read_committed", 1), "2")).isEqualTo(1);
      child.kill();
    }

    List<Call> calls = new CopyOnWriteArrayList<>();
    KafkaSubscription sub = restart(topic, group, member,
        KafkaTransportConfig.HandOff.TRANSACTIONAL, calls);
    Await.until(WAIT, "the retry and the parked record handled",
        () -> calls.contains(new Call(2, 2)) && calls.contains(new Call(3, 1)));
    Await.until(WAIT, "source committed to its end",
        () -> Long.valueOf(4).equals(committedOffsets(group, topic).get(0)));
    // Holds for a few commit intervals: nothing more runs.
    Await.holds(Duration.ofSeconds(1), "nothing else runs", () -> calls.size() == 2);
    assertThat(calls).containsExactlyInAnyOrder(new Call(2, 2), new Call(3, 1));
    KafkaDeadLetterStore dlt = clients.deadLetterStore(topic, group);
    assertThat(dlt.list(DeadLetterQuery.all())).extracting(DeadLetter::messageId)
        .containsExactly(messages.get(1).id());
    assertThat(count(read(names.deadLetterTopic(topic, group), "read_uncommitted"), "1"))
        .isEqualTo(1);
    assertThat(count(read(retryTopic, "read_uncommitted"), "2")).isEqualTo(1);
    assertThat(sub.close(Duration.ofSeconds(10))).isTrue();
  }

  @Test
  @DisplayName("default hand-off, killed between the copies and the commit: copies are written"
      + " twice, and the dead-letter store shows one entry per (message id, subscription)")
  void defaultHandOffDuplicatesCopiesAndTheStoreDeduplicates() throws Exception {
    String topic = newTopic("cfcrash", 1);
    String group = topic + "-g";
    String member = "m-" + UUID.randomUUID().toString().substring(0, 8);
    List<Message> messages = records(topic);
    KafkaTransportConfig names = KafkaTestSupport.config().build();
    String deadLetterTopic = names.deadLetterTopic(topic, group);
    try (Child child = new Child(topic, group, member, "confirmed", "stuck")) {
      child.awaitLine("RETRIED " + messages.get(2).id());
      child.awaitLine("DEAD_LETTERED " + messages.get(1).id());
      assertThat(count(read(deadLetterTopic, "read_committed"), "1")).isEqualTo(1);
      assertThat(committedOffsets(group, topic).getOrDefault(0, 0L)).isZero();
      child.kill();
    }

    List<Call> calls = new CopyOnWriteArrayList<>();
    KafkaSubscription sub = restart(topic, group, member,
        KafkaTransportConfig.HandOff.CONFIRMED, calls);
    // The record ran again at attempt 1 although its copy existed: both copies ran at attempt 2.
    Await.until(WAIT, "record 2 failed again", () -> calls.contains(new Call(2, 1)));
    SHIFT.set(Duration.ofHours(4));
    Await.until(WAIT, "both retry copies handled",
        () -> calls.stream().filter(c -> c.equals(new Call(2, 2))).count() == 2);
    Await.until(WAIT, "source committed to its end",
        () -> Long.valueOf(4).equals(committedOffsets(group, topic).get(0)));
    assertThat(calls).filteredOn(c -> c.seq() == 2).containsExactlyInAnyOrder(new Call(2, 1),
        new Call(2, 2), new Call(2, 2));
    // Two dead-letter copies of record 1 on the topic; one entry in the store.
    assertThat(count(read(deadLetterTopic, "read_committed"), "1")).isEqualTo(2);
    KafkaDeadLetterStore dlt = clients.deadLetterStore(topic, group);
    assertThat(dlt.list(DeadLetterQuery.all())).extracting(DeadLetter::messageId)
        .containsExactly(messages.get(1).id());
    assertThat(dlt.count(DeadLetterQuery.all())).isEqualTo(1);
    assertThat(sub.close(Duration.ofSeconds(10))).isTrue();

    // Deduplication is per subscription: another group's dead letter of the same message is its
    // own entry, in its own store.
    String other = topic + "-other";
    List<Call> otherCalls = new CopyOnWriteArrayList<>();
    KafkaSubscription second = restart(topic, other, member,
        KafkaTransportConfig.HandOff.CONFIRMED, otherCalls);
    KafkaDeadLetterStore otherDlt = clients.deadLetterStore(topic, other);
    Await.until(WAIT, "the other group dead-lettered record 1",
        () -> otherDlt.count(DeadLetterQuery.all()) == 1);
    assertThat(otherDlt.list(DeadLetterQuery.all()).get(0).group()).isEqualTo(other);
    assertThat(dlt.count(DeadLetterQuery.all())).isEqualTo(1);
    assertThat(second.close(Duration.ofSeconds(10))).isTrue();
  }

  @Test
  @DisplayName("transactional: a transaction the watermark does not pass commits after half of"
      + " transaction.timeout.ms, so a long record below a copy delays its retry by that much")
  void transactionIsBoundedByTheTransactionTimeout() {
    String topic = newTopic("txbound", 1);
    String group = topic + "-g";
    publishAll(topic, List.of(message("a", 0), message("b", 1)));
    CountDownLatch release = new CountDownLatch(1);
    List<Call> calls = new CopyOnWriteArrayList<>();
    List<Long> at = new CopyOnWriteArrayList<>();
    KafkaSubscription sub = clients.subscriber(KafkaTestSupport.config()
        .closeTimeout(Duration.ofSeconds(5))
        .handOff(KafkaTransportConfig.HandOff.TRANSACTIONAL)
        .producerProperty("transaction.timeout.ms", "4000"))
        .subscribe(io.relaykit.message.SubscriptionSpec.builder(topic, group)
            .ordering(io.relaykit.ordering.OrderingMode.KEY).concurrency(4).maxInFlight(16)
            .retryPolicy(io.relaykit.retry.RetryPolicy.builder().maxAttempts(3)
                .backoff(io.relaykit.retry.Backoff.fixed(Duration.ofMillis(1))).build())
            .build(),
            d -> {
              int seq = Integer.parseInt(d.message().payloadUtf8());
              calls.add(new Call(seq, d.attempt()));
              at.add(System.nanoTime());
              if (seq == 0) {
                release.await();
              }
              if (seq == 1 && d.attempt() == 1) {
                throw new IllegalStateException("first attempt fails");
              }
            });
    Await.until(WAIT, "record 1 retried while record 0 still runs",
        () -> calls.contains(new Call(1, 2)));
    long failedAt = at.get(calls.indexOf(new Call(1, 1)));
    long retriedAt = at.get(calls.indexOf(new Call(1, 2)));
    // The copy was written at once, but became visible only when the bound (2 s) committed it.
    assertThat(Duration.ofNanos(retriedAt - failedAt)).isGreaterThanOrEqualTo(
        Duration.ofMillis(1900));
    assertThat(committedOffsets(group, topic).getOrDefault(0, 0L)).isZero();
    release.countDown();
    Await.until(WAIT, "everything committed",
        () -> Long.valueOf(2).equals(committedOffsets(group, topic).get(0)));
    assertThat(calls).containsExactlyInAnyOrder(new Call(0, 1), new Call(1, 1), new Call(1, 2));
    assertThat(sub.close(Duration.ofSeconds(10))).isTrue();
  }
  @Test
  @DisplayName("transactional: a second live member with the same member id fences the first,"
      + " whose open transaction is aborted and whose subscription stops; the second re-runs the"
      + " records at attempt 1")
  void sameMemberIdFencesTheOlderMember() {
    String topic = newTopic("txfence", 1);
    String group = topic + "-g";
    String member = "m-" + UUID.randomUUID().toString().substring(0, 8);
    publishAll(topic, List.of(message("a", 0), message("b", 1)));
    CountDownLatch release = new CountDownLatch(1);
    List<String> calls = new CopyOnWriteArrayList<>();
    java.util.function.Function<String, io.relaykit.message.MessageHandler> handler = who -> d -> {
      int seq = Integer.parseInt(d.message().payloadUtf8());
      calls.add(who + " " + seq + "@" + d.attempt());
      if (seq == 0 && who.equals("first")) {
        release.await(); // the watermark stays at 0: the first member's transaction stays open
      }
      if (seq == 1 && d.attempt() == 1) {
        throw new IllegalStateException("first attempt fails");
      }
    };
    io.relaykit.message.SubscriptionSpec spec = io.relaykit.message.SubscriptionSpec
        .builder(topic, group).ordering(io.relaykit.ordering.OrderingMode.KEY).concurrency(4)
        .maxInFlight(16).retryPolicy(io.relaykit.retry.RetryPolicy.builder().maxAttempts(3)
            .backoff(io.relaykit.retry.Backoff.fixed(Duration.ofMillis(1))).build())
        .build();
    KafkaTransportConfig.Builder config = KafkaTestSupport.config()
        .closeTimeout(Duration.ofSeconds(5))
        .consumerProperty("session.timeout.ms", "3000")
        .consumerProperty("heartbeat.interval.ms", "500")
        .handOff(KafkaTransportConfig.HandOff.TRANSACTIONAL).memberId(member)
        .producerProperty("transaction.timeout.ms", "4000");
    KafkaSubscription first = clients.subscriber(config).subscribe(spec, handler.apply("first"));
    Await.until(WAIT, "the first member's copy written",
        () -> calls.contains("first 1@1") && ((KafkaConsumerRuntime) first).transactionOpen());
    try {
      KafkaSubscription second = clients.subscriber(config)
          .subscribe(spec, handler.apply("second"));
      Await.until(WAIT, "the first member stopped", () -> !first.isRunning());
      assertThat(first.failure()).get().asString().contains("fenced");
      Await.until(WAIT, "the second member handled record 1 at attempts 1 and 2",
          () -> calls.contains("second 1@2"));
      Await.until(WAIT, "everything committed",
          () -> Long.valueOf(2).equals(committedOffsets(group, topic).get(0)));
      // The first member's copy was aborted: attempt 2 ran once, from the second member's copy.
      assertThat(calls).filteredOn(c -> c.endsWith("1@2")).containsExactly("second 1@2");
      assertThat(calls).contains("second 0@1", "second 1@1");
      assertThat(second.close(Duration.ofSeconds(10))).isTrue();
    } finally {
      release.countDown();
    }
  }
  @Test
  @DisplayName("transactional, KEY mode: a transaction whose watermark stopped at a record waiting"
      + " for its parked key commits at once, not after half of transaction.timeout.ms (the"
      + " record cannot finish before the retry that transaction carries)")
  void watermarkStoppedAtAParkedRecordDoesNotHoldTheTransaction() {
    String topic = newTopic("txpark", 1);
    String group = topic + "-g";
    // 0 key a fails first: its retry copy; 1 key a waits for it (parked); 2 key b fails first:
    // its copy lies past the watermark, which stops at 1.
    publishAll(topic, List.of(message("a", 0), message("a", 1), message("b", 2)));
    List<Call> calls = new CopyOnWriteArrayList<>();
    KafkaSubscription sub = clients.subscriber(KafkaTestSupport.config()
        .closeTimeout(Duration.ofSeconds(5))
        .handOff(KafkaTransportConfig.HandOff.TRANSACTIONAL))
        .subscribe(io.relaykit.message.SubscriptionSpec.builder(topic, group)
            .ordering(io.relaykit.ordering.OrderingMode.KEY).concurrency(4).maxInFlight(16)
            .retryPolicy(io.relaykit.retry.RetryPolicy.builder().maxAttempts(3)
                .backoff(io.relaykit.retry.Backoff.fixed(Duration.ofMillis(1))).build())
            .build(),
            d -> {
              int seq = Integer.parseInt(d.message().payloadUtf8());
              calls.add(new Call(seq, d.attempt()));
              if (seq != 1 && d.attempt() == 1) {
                throw new IllegalStateException("first attempt fails");
              }
            });
    Await.until(WAIT, "records 0 and 2 failed once", () -> calls.contains(new Call(0, 1))
        && calls.contains(new Call(2, 1)));
    // Half of the default transaction.timeout.ms is 30 s: well before, both retries ran.
    Await.until(Duration.ofSeconds(20), "both retries and the parked record ran",
        () -> calls.contains(new Call(0, 2)) && calls.contains(new Call(2, 2))
            && calls.contains(new Call(1, 1)));
    assertThat(calls.indexOf(new Call(1, 1))).isGreaterThan(calls.indexOf(new Call(0, 2)));
    Await.until(WAIT, "everything committed",
        () -> Long.valueOf(3).equals(committedOffsets(group, topic).get(0)));
    assertThat(sub.close(Duration.ofSeconds(10))).isTrue();
  }
  @Test
  @DisplayName("transactional: partitions lost with a transaction open (the poll thread stalled"
      + " past max.poll.interval.ms) abort it and rewind: the copy never runs, the records run"
      + " again from the committed offset")
  void lostPartitionsAbortAndRewind() {
    String topic = newTopic("txlost", 1);
    String group = topic + "-g";
    publishAll(topic, List.of(message("a", 0), message("b", 1)));
    CountDownLatch release = new CountDownLatch(1);
    java.util.concurrent.atomic.AtomicBoolean stall =
        new java.util.concurrent.atomic.AtomicBoolean();
    java.util.concurrent.atomic.AtomicBoolean firstOfZero =
        new java.util.concurrent.atomic.AtomicBoolean(true);
    // The injected clock stalls the poll thread once, for 2.5 s: like a long GC pause, it makes
    // the member miss max.poll.interval.ms (1.5 s), so the group takes its partitions away.
    InstantSource clock = () -> {
      if (Thread.currentThread().getName().endsWith("-poll") && stall.compareAndSet(true, false)) {
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(2500);
        while (System.nanoTime() - end < 0) {
          java.util.concurrent.locks.LockSupport.parkNanos(end - System.nanoTime());
        }
      }
      return Instant.now();
    };
    List<Call> calls = new CopyOnWriteArrayList<>();
    KafkaSubscription sub = clients.subscriber(KafkaTestSupport.config()
        .closeTimeout(Duration.ofSeconds(5))
        .maxPollInterval(Duration.ofMillis(1500))
        .producerProperty("transaction.timeout.ms", "6000")
        .consumerProperty("session.timeout.ms", "3000")
        .consumerProperty("heartbeat.interval.ms", "500")
        .clock(clock)
        .handOff(KafkaTransportConfig.HandOff.TRANSACTIONAL))
        .subscribe(io.relaykit.message.SubscriptionSpec.builder(topic, group)
            .ordering(io.relaykit.ordering.OrderingMode.KEY).concurrency(4).maxInFlight(16)
            .handlerTimeout(Duration.ofMinutes(5))
            .retryPolicy(io.relaykit.retry.RetryPolicy.builder().maxAttempts(3)
                .backoff(io.relaykit.retry.Backoff.fixed(Duration.ofMillis(1))).build())
            .build(),
            d -> {
              int seq = Integer.parseInt(d.message().payloadUtf8());
              calls.add(new Call(seq, d.attempt()));
              if (seq == 0 && firstOfZero.compareAndSet(true, false)) {
                release.await(); // holds the watermark at 0: the transaction stays open
              }
              if (seq == 1 && d.attempt() == 1) {
                throw new IllegalStateException("first attempt fails");
              }
            });
    Await.until(WAIT, "record 1's copy in the open transaction", () -> calls.contains(
        new Call(1, 1)) && ((KafkaConsumerRuntime) sub).transactionOpen());
    stall.set(true);
    try {
      // Lost: the transaction aborted at once; rejoined: record 1 read again from the committed
      // offset and run at attempt 1 (its copy was discarded), then once at attempt 2 from its new
      // copy (committed at the bound, 3 s: record 0's new run waits for its stale one).
      Await.until(WAIT, "record 1 run again from the source",
          () -> calls.stream().filter(c -> c.equals(new Call(1, 1))).count() == 2);
      Await.until(WAIT, "its retry ran", () -> calls.contains(new Call(1, 2)));
      // The stale first call of record 0 still holds key a's lane (KEY mode: one at a time); once
      // it returns, record 0's run of the new assignment follows.
      release.countDown();
      Await.until(WAIT, "everything committed",
          () -> Long.valueOf(2).equals(committedOffsets(group, topic).get(0)));
      assertThat(calls).filteredOn(c -> c.seq() == 1).containsExactly(new Call(1, 1),
          new Call(1, 1), new Call(1, 2));
      assertThat(calls).filteredOn(c -> c.seq() == 0).containsExactly(new Call(0, 1),
          new Call(0, 1));
      String retryTopic = KafkaTestSupport.config().build().retryTopic(topic, group);
      assertThat(count(read(retryTopic, "read_uncommitted"), "1")).as("copies written")
          .isEqualTo(2);
      assertThat(count(read(retryTopic, "read_committed", 1), "1")).as("copies committed")
          .isEqualTo(1);
      assertThat(sub.isRunning()).isTrue();
    } finally {
      release.countDown();
    }
    sub.close(Duration.ofSeconds(10));
  }
}
