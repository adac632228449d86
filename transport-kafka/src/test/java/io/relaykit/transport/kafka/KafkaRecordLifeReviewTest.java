package io.relaykit.transport.kafka;

import static io.relaykit.transport.kafka.KafkaRecordLifeTest.foreign;
import static io.relaykit.transport.kafka.KafkaRecordLifeTest.quick;
import static io.relaykit.transport.kafka.KafkaRecordLifeTest.send;
import static io.relaykit.transport.kafka.KafkaTestSupport.newTopic;
import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.message.InboundMapping;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHeaders;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.ordering.OrderingMode;
import io.relaykit.tck.Await;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Adversarial records on both Kafka runtimes: relaykit headers that name another topic or a
 * position outside the subscription, and header bytes that are not UTF-8 where ordering reads
 * them. Each ends with the identity and key every other view of the record has.
 */
@DisplayName("Kafka record life: forged and binary relaykit headers")
class KafkaRecordLifeReviewTest {

  private static final Duration WAIT = Duration.ofSeconds(60);

  @RegisterExtension
  final KafkaClients clients = new KafkaClients();

  @Test
  @DisplayName("a retry-topic record naming another topic as its source is handled and"
      + " dead-lettered as a record of the subscription's topic: the dead letter's source, id and"
      + " position (its replay target) cannot be forged")
  void forgedSourceOnRetryRecordIsIgnored() throws Exception {
    String topic = newTopic("forged-source", 1);
    String victim = newTopic("forged-victim", 1);
    String group = topic + "-g";
    List<String> sources = new CopyOnWriteArrayList<>();
    clients.subscriber().subscribe(SubscriptionSpec.builder(topic, group)
        .retryPolicy(quick(2)).build(), d -> {
          sources.add(d.source());
          throw new IllegalStateException("fails");
        });
    String retryTopic = KafkaTestSupport.config().build().retryTopic(topic, group);
    Message message = KafkaTestSupport.message("k", 0);
    Map<String, String> wire = new LinkedHashMap<>(MessageHeaders.toWire(message));
    Instant now = Instant.now();
    wire.put(MessageHeaders.ATTEMPT, "1");
    wire.put(MessageHeaders.FIRST_FAILURE_AT, now.toString());
    wire.put(MessageHeaders.LAST_FAILURE_AT, now.toString());
    wire.put(MessageHeaders.RETRY_AT, now.toString());
    wire.put(MessageHeaders.SOURCE, victim);
    wire.put(MessageHeaders.SOURCE_POSITION, victim + "-0@0");
    send(List.of(new ProducerRecord<>(retryTopic, 0, "k", message.payload(),
        KafkaRecords.toHeaders(wire))));

    KafkaDeadLetterStore dlt = clients.deadLetterStore(topic, group);
    Await.until(WAIT, "dead-lettered", () -> dlt.count(DeadLetterQuery.all()) == 1);
    assertThat(sources).containsOnly(topic);
    DeadLetter dead = dlt.list(DeadLetterQuery.all()).get(0);
    assertThat(dead.source()).isEqualTo(topic);
    assertThat(dead.id()).isEqualTo(DeadLetter.idOf(message.id(), topic, group));
    assertThat(dead.message().id()).isEqualTo(message.id());
    // The position the copy names (a reference entry's replay reads it) is in the retry topic,
    // where this record is, never in the topic the header named.
    List<String> positions = new CopyOnWriteArrayList<>();
    try (var reader = new org.apache.kafka.clients.consumer.KafkaConsumer<String, byte[]>(Map.of(
        "bootstrap.servers", KafkaTestBroker.bootstrapServers(), "group.id", topic + "-reader",
        "auto.offset.reset", "earliest"),
        new org.apache.kafka.common.serialization.StringDeserializer(),
        new org.apache.kafka.common.serialization.ByteArrayDeserializer())) {
      reader.subscribe(List.of(KafkaTestSupport.config().build().deadLetterTopic(topic, group)));
      Await.until(WAIT, "the dead-letter copy read", () -> {
        reader.poll(Duration.ofMillis(100)).forEach(r -> positions.add(
            KafkaRecords.fromHeaders(r.headers()).get(MessageHeaders.SOURCE_POSITION)));
        return !positions.isEmpty();
      });
    }
    assertThat(positions).singleElement().asString().startsWith(retryTopic + "-0@");
  }

  @Test
  @DisplayName("consumer group: a foreign record whose relaykit-id header is not UTF-8 is"
      + " ordered by its mapped key, the key its handler sees")
  void binaryIdHeaderOrdersByMappedKeyConsumerGroup() throws Exception {
    String topic = newTopic("binary-id-key", 1);
    KafkaSubscriber subscriber = clients.subscriber();
    assertOrderedByMappedKey(topic, () -> {
      KafkaSubscription s = subscriber.subscribe(KafkaRecordLifeTest.mappedKeySpec(topic),
          this::handle);
      return () -> s.close(Duration.ofSeconds(5));
    });
  }

  @Test
  @DisplayName("share group: a foreign record whose relaykit-id header is not UTF-8 is"
      + " ordered by its mapped key, the key its handler sees")
  void binaryIdHeaderOrdersByMappedKeyShareGroup() throws Exception {
    String topic = newTopic("binary-id-key-share", 1);
    try (KafkaShareSubscriber subscriber = KafkaShareSubscriber.create(
        KafkaRecordLifeTest.shareConfig().build())) {
      assertOrderedByMappedKey(topic, () -> {
        KafkaShareSubscription s = subscriber.subscribe(
            KafkaRecordLifeTest.mappedKeySpec(topic), this::handle);
        return () -> s.close(Duration.ofSeconds(5));
      });
    }
  }

  private final CountDownLatch letGo = new CountDownLatch(1);
  private final List<String> started = new CopyOnWriteArrayList<>();
  private final List<String> keys = new CopyOnWriteArrayList<>();

  private void handle(io.relaykit.message.Delivery d) throws Exception {
    started.add(d.message().payloadUtf8());
    keys.add(d.message().key().orElse(null));
    if (d.message().payloadUtf8().equals("first")) {
      letGo.await(60, TimeUnit.SECONDS);
    }
  }

  private void assertOrderedByMappedKey(String topic,
      java.util.concurrent.Callable<AutoCloseable> subscribe) throws Exception {
    ProducerRecord<String, byte[]> second = foreign(topic, "raw-b", "second", "order-id", "o-1");
    second.headers().add(MessageHeaders.ID, new byte[] {(byte) 0xff, (byte) 0xfe});
    send(List.of(foreign(topic, "raw-a", "first", "order-id", "o-1"), second));
    try (AutoCloseable sub = subscribe.call()) {
      Await.until(WAIT, "the first record running", () -> started.contains("first"));
      Await.holds(Duration.ofMillis(1500), "the second waits for the first (same mapped key)",
          () -> started.size() == 1);
      letGo.countDown();
      Await.until(WAIT, "both handled", () -> started.size() == 2);
      assertThat(started).containsExactly("first", "second");
      assertThat(keys).containsOnly("o-1");
    }
  }

  @Test
  @DisplayName("consumer group: a retry send blocked after a timeout does not delay another"
      + " handler's timeout (the copies executor, not the watchdog's timer, runs it)")
  void blockedSendDoesNotDelayTimeoutsConsumerGroup() throws Exception {
    String topic = newTopic("cg-timer", 1);
    String group = topic + "-g";
    CountDownLatch unblock = new CountDownLatch(1);
    java.util.concurrent.atomic.AtomicInteger sends = new java.util.concurrent.atomic.AtomicInteger();
    java.util.concurrent.atomic.AtomicInteger timedOut =
        new java.util.concurrent.atomic.AtomicInteger();
    io.relaykit.monitor.MetricsListener timeouts = new io.relaykit.monitor.MetricsListener() {
      @Override
      public void handlerTimedOut(String destination, String g, Duration duration) {
        timedOut.incrementAndGet();
      }
    };
    KafkaSubscriber subscriber = KafkaSubscriber.create(KafkaTestSupport.config()
        .closeTimeout(Duration.ofSeconds(5)).build(), real -> (w, copy, what) -> {
          if (sends.incrementAndGet() == 1) {
            try { // the first copy's send blocks (a producer waiting for metadata)
              unblock.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
          }
          return real.send(w, copy, what);
        });
    send(List.of(KafkaRecordLifeTest.relaykit(topic, KafkaTestSupport.message("a", 0)),
        KafkaRecordLifeTest.relaykit(topic, KafkaTestSupport.message("b", 1))));
    KafkaConsumerRuntime s = (KafkaConsumerRuntime) subscriber.subscribe(SubscriptionSpec
        .builder(topic, group).concurrency(1).maxInFlight(4).metrics(timeouts).retryPolicy(quick(3))
        .handlerTimeout(Duration.ofMillis(500)).build(), d -> {
          if (d.attempt() == 1) {
            new CountDownLatch(1).await(60, TimeUnit.SECONDS); // hangs until interrupted
          }
        });
    try {
      Await.until(WAIT, "the first handler timed out and its send blocks",
          () -> timedOut.get() >= 1 && sends.get() == 1);
      Await.until(Duration.ofSeconds(10), "the second handler timed out while the first send"
          + " still blocks", () -> timedOut.get() == 2);
      assertThat(unblock.getCount()).as("the first send still blocks").isEqualTo(1);
      unblock.countDown();
      Await.until(WAIT, "both retried and handled, nothing in flight",
          () -> sends.get() == 2 && s.inFlight() == 0);
    } finally {
      unblock.countDown();
      s.close(Duration.ofSeconds(5));
    }
  }

  @Test
  @DisplayName("a dead-lettered foreign record with a mapped key replays under its id and mapped"
      + " key: the handler sees both again, and the entry is hidden")
  void foreignRecordWithMappedKeyReplays() throws Exception {
    String topic = newTopic("mapped-key-replay", 1);
    String group = topic + "-g";
    send(List.of(foreign(topic, "raw-a", "fails-until-replayed", "order-id", "o-9")));
    java.util.concurrent.atomic.AtomicBoolean fail = new java.util.concurrent.atomic.AtomicBoolean(
        true);
    List<String> seen = new CopyOnWriteArrayList<>();
    clients.subscriber().subscribe(SubscriptionSpec.builder(topic, group)
        .ordering(OrderingMode.KEY).retryPolicy(quick(2))
        .inbound(InboundMapping.foreign().keyHeader("order-id").build()).build(), d -> {
          seen.add(d.message().id() + "|" + d.message().key().orElse(null) + "|" + d.attempt());
          if (fail.get()) {
            throw new IllegalStateException("fails");
          }
        });
    KafkaDeadLetterStore dlt = clients.deadLetterStore(topic, group);
    Await.until(WAIT, "dead-lettered", () -> dlt.count(DeadLetterQuery.all()) == 1);
    DeadLetter dead = dlt.list(DeadLetterQuery.all()).get(0);
    String id = dead.message().id();
    assertThat(id).isEqualTo(topic + "-0@0");
    fail.set(false);
    assertThat(dlt.replay(dead.id())).isPresent();
    Await.until(WAIT, "handled after the replay", () -> seen.size() == 3);
    assertThat(seen).containsExactly(id + "|o-9|1", id + "|o-9|2", id + "|o-9|1");
    assertThat(dlt.count(DeadLetterQuery.all())).isZero();
  }

  @Test
  @DisplayName("share group: a record running in the retry reader is the subscription's one"
      + " in-flight record in every in-flight report (one gauge, not one per runtime)")
  void shareInFlightGaugeCoversTheRetryReaderOnce() throws Exception {
    String topic = newTopic("share-gauge", 1);
    String group = topic + "-g";
    CountDownLatch retryRunning = new CountDownLatch(1);
    CountDownLatch letGo = new CountDownLatch(1);
    List<Long> reports = new CopyOnWriteArrayList<>();
    io.relaykit.monitor.MetricsListener gauges = new io.relaykit.monitor.MetricsListener() {
      @Override
      public void inFlight(String destination, String g, long count) {
        if (retryRunning.getCount() == 0 && letGo.getCount() == 1) {
          reports.add(count);
        }
      }
    };
    send(List.of(KafkaRecordLifeTest.relaykit(topic, KafkaTestSupport.message("a", 0))));
    try (KafkaShareSubscriber subscriber = KafkaShareSubscriber.create(
        KafkaRecordLifeTest.shareConfig().commitInterval(Duration.ofMillis(100)).build())) {
      KafkaShareSubscription s = subscriber.subscribe(SubscriptionSpec.builder(topic, group)
          .metrics(gauges).retryPolicy(quick(3)).build(), d -> {
            if (d.attempt() == 1) {
              throw new IllegalStateException("to the retry reader");
            }
            retryRunning.countDown();
            letGo.await(60, TimeUnit.SECONDS);
          });
      // The retry reader's sample the share runtime reads may be one interval old at first.
      Await.until(WAIT, "five in-flight reports while the retry runs, after the first 1",
          () -> reports.indexOf(1L) >= 0 && reports.size() - reports.indexOf(1L) >= 5);
      letGo.countDown();
      assertThat(reports.subList(reports.indexOf(1L), reports.size()))
          .as("in-flight reports while only the retry reader holds a record").containsOnly(1L);
      Await.until(WAIT, "nothing in flight", () -> s.inFlight() == 0);
    } finally {
      letGo.countDown();
    }
  }

  @Test
  @DisplayName("a foreign record just under maxRecordBytes whose id, type and key are mapped"
      + " from long multi-byte headers is retried after a transient failure: its copy's envelope"
      + " (the mapped id, type and key it now carries) fits the copies' headroom")
  void nearLimitForeignRecordWithLongMappedHeadersIsRetried() throws Exception {
    String topic = newTopic("near-limit-foreign", 1);
    String group = topic + "-g";
    int limit = 64 * 1024;
    String longValue = "\u20ac".repeat(InboundMapping.MAX_MAPPED_CHARS); // 3 bytes each
    ProducerRecord<String, byte[]> r = foreign(topic, "k", "", "m-id", longValue, "m-type",
        longValue, "m-key", longValue);
    int headers = KafkaRecords.payloadBytes("k", new byte[0], r.headers());
    byte[] payload = new byte[limit - headers - 64];
    java.util.Arrays.fill(payload, (byte) 'x');
    send(List.of(new ProducerRecord<>(topic, 0, "k", payload, r.headers())));
    List<Integer> attempts = new CopyOnWriteArrayList<>();
    clients.subscriber(KafkaTestSupport.config().closeTimeout(Duration.ofSeconds(5))
        .maxRecordBytes(limit)).subscribe(SubscriptionSpec.builder(topic, group)
        .ordering(OrderingMode.KEY).retryPolicy(quick(3))
        .inbound(InboundMapping.foreign().idHeader("m-id").typeHeader("m-type")
            .keyHeader("m-key").build()).build(), d -> {
              attempts.add(d.attempt());
              if (d.attempt() == 1) {
                throw new IllegalStateException("transient");
              }
            });
    Await.until(WAIT, "retried", () -> attempts.contains(2));
    assertThat(clients.deadLetterStore(topic, group).count(DeadLetterQuery.all())).isZero();
  }

  @Test
  @DisplayName("share group: the backlog snapshot counts a record running in the share member,"
      + " not only the retry reader's records")
  void shareBacklogSnapshotCountsTheMembersRecords() throws Exception {
    String topic = newTopic("share-backlog", 1);
    String group = topic + "-g";
    CountDownLatch running = new CountDownLatch(1);
    CountDownLatch letGo = new CountDownLatch(1);
    List<Long> depths = new CopyOnWriteArrayList<>();
    io.relaykit.monitor.MetricsListener gauges = new io.relaykit.monitor.MetricsListener() {
      @Override
      public void backlog(String destination, String g, io.relaykit.monitor.BacklogSnapshot s) {
        if (running.getCount() == 0 && letGo.getCount() == 1) {
          depths.add(s.depth());
        }
      }
    };
    send(List.of(KafkaRecordLifeTest.relaykit(topic, KafkaTestSupport.message("a", 0))));
    try (KafkaShareSubscriber subscriber = KafkaShareSubscriber.create(
        KafkaRecordLifeTest.shareConfig().commitInterval(Duration.ofMillis(100)).build())) {
      subscriber.subscribe(SubscriptionSpec.builder(topic, group).metrics(gauges)
          .retryPolicy(quick(3)).build(), d -> {
            running.countDown();
            letGo.await(60, TimeUnit.SECONDS);
          });
      Await.until(WAIT, "four backlog snapshots while the record runs", () -> depths.size() >= 4);
      letGo.countDown();
      assertThat(depths).as("backlog depths while one record runs in the member")
          .allSatisfy(d -> assertThat(d).isPositive());
    } finally {
      letGo.countDown();
    }
  }
}
