package io.relaykit.transport.kafka;

import static io.relaykit.transport.kafka.KafkaTestSupport.committedOffsets;
import static io.relaykit.transport.kafka.KafkaTestSupport.newTopic;
import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.message.Delivery;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHandler;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.ordering.OrderingMode;
import io.relaykit.retry.Backoff;
import io.relaykit.retry.RetryPolicy;
import io.relaykit.tck.Await;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The rebalance kit (issue F3): three members of one group join and leave at random while keyed
 * records flow with random transient failures and a few poison records. At the end: every record
 * was handled successfully or dead-lettered (each poison once, after the store's deduplication by
 * id), no member ran two records of a key at once or a never-tried record of a key after a later
 * one, the group's committed offsets are at the end of every source and retry partition, and no
 * key is left parked.
 *
 * <p>Grown by records a plain producer wrote: relaykit records with malformed failure headers
 * (each dead-lettered once, naming the header) and foreign records whose key is mapped from a
 * header (ordered by that key). A share-group run has members join and leave with records
 * acquired and queued: each record is handled or dead-lettered, never both.
 *
 * <p>CI size: {@value #CI_RECORDS} records per protocol (a sixth of it for share groups). Full
 * size (50 000 records):
 * {@code mvn -B -o -pl transport-kafka -am verify -Dtest='KafkaRebalanceKitTest'
 * -Dsurefire.failIfNoSpecifiedTests=false -Drelaykit.kit.records=50000}; {@code
 * -Drelaykit.kit.seed=N} replays one seed. Chaos is paced by progress (a member joins or leaves
 * every twelfth of the records handled), not by sleeps.
 */
@DisplayName("Kafka rebalance kit: three members joining and leaving while keyed records flow")
class KafkaRebalanceKitTest {

  static final int CI_RECORDS = 3000;
  /** Second handlings of a record in the consumer-group runs (none across graceful changes). */
  private static final java.util.concurrent.atomic.AtomicLong REPEATS =
      new java.util.concurrent.atomic.AtomicLong();
  private static final int KEYS = 40;
  private static final int PARTITIONS = 4;
  private static final long WORK_NANOS = 3_000_000;
  private static final Duration WAIT = Duration.ofSeconds(120);

  /** What one member saw. */
  private static final class Member {
    final int id;
    KafkaConsumerRuntime subscription;
    final Map<String, AtomicInteger> running = new ConcurrentHashMap<>();
    final Map<String, Integer> highestFirstTry = new ConcurrentHashMap<>();

    Member(int id) {
      this.id = id;
    }
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"range", "cooperative-sticky", "consumer", "range-transactional"})
  @DisplayName("every record handled or dead-lettered once, in key order inside a member, offsets"
      + " committed to the end, no key left parked")
  void membersJoinAndLeaveWhileRecordsFlow(String protocol) throws Exception {
    int total = Integer.getInteger("relaykit.kit.records", CI_RECORDS);
    long seed = Long.getLong("relaykit.kit.seed", protocol.hashCode() * 31L + total);
    SplittableRandom random = new SplittableRandom(seed);
    String topic = newTopic("kit-" + protocol, PARTITIONS);
    String group = topic + "-g";

    List<Message> messages = KafkaTestSupport.numberedMessages(total, i -> "key-" + (i % KEYS));
    Set<String> poison = new java.util.HashSet<>();
    for (int i = 0; i < total; i += 397) {
      poison.add(messages.get(i).id());
    }
    KafkaTestSupport.publishAll(topic, messages);
    // Grown by records a plain producer wrote: relaykit records whose failure headers are
    // malformed (dead-lettered, naming the header), and foreign records whose key is mapped from
    // a header (ordered with the relaykit records of that key, in that key's partition).
    Set<String> malformed = new java.util.HashSet<>();
    List<String> foreignIds = new ArrayList<>();
    sendGrown(topic, total, malformed, foreignIds);
    poison.addAll(malformed);

    Set<String> succeeded = ConcurrentHashMap.newKeySet();
    Set<String> tried = ConcurrentHashMap.newKeySet();
    List<String> violations = new CopyOnWriteArrayList<>();
    long failSalt = random.nextLong();
    SubscriptionSpec spec = SubscriptionSpec.builder(topic, group).ordering(OrderingMode.KEY)
        .concurrency(8).maxInFlight(64)
        .retryPolicy(RetryPolicy.builder().maxAttempts(4)
            .backoff(Backoff.fixed(Duration.ofMillis(50))).build())
        .inbound(io.relaykit.message.InboundMapping.foreign().keyHeader(KEY_HEADER).build())
        .build();
    KafkaTransportConfig.Builder config = config(protocol);

    Member[] members = new Member[3];
    AtomicInteger lives = new AtomicInteger();
    java.util.function.IntConsumer start = slot -> {
      Member m = new Member(lives.incrementAndGet());
      m.subscription = (KafkaConsumerRuntime) KafkaSubscriber.create(config.build())
          .subscribe(spec, handler(m, poison, succeeded, tried, violations, failSalt));
      members[slot] = m;
    };
    start.accept(0);
    try {
      int toggles = 12;
      for (int t = 1; t <= toggles; t++) {
        int threshold = total * t / (toggles + 2);
        Await.until(WAIT, threshold + " records handled or given up (seed " + seed + ")",
            () -> succeeded.size() + poison.size() >= threshold || succeeded.size() >= threshold);
        int slot = random.nextInt(3);
        long running = java.util.Arrays.stream(members).filter(java.util.Objects::nonNull).count();
        if (members[slot] == null) {
          start.accept(slot);
        } else if (running > 1) {
          members[slot].subscription.close(Duration.ofSeconds(5));
          members[slot] = null;
        } else {
          start.accept((slot + 1) % 3);
        }
      }
      for (int slot = 0; slot < 3; slot++) {
        if (members[slot] == null) {
          start.accept(slot);
        }
      }

      Set<String> all = new java.util.HashSet<>();
      messages.forEach(m -> all.add(m.id()));
      all.addAll(malformed);
      all.addAll(foreignIds);
      Set<String> expectedSuccess = new java.util.HashSet<>(all);
      expectedSuccess.removeAll(poison);
      Await.until(WAIT, "every healthy record handled (seed " + seed + ")",
          () -> succeeded.containsAll(expectedSuccess));
      String retryTopic = config.build().retryTopic(topic, group);
      Await.until(WAIT, "committed offsets at the end of every source and retry partition", () ->
          atEnd(group, topic) && (protocol.endsWith("-transactional")
              ? nothingAfterCommitted(group, retryTopic) : atEnd(group, retryTopic)));
      try (KafkaDeadLetterStore dlt = KafkaDeadLetterStore.forSubscription(config.build(), topic,
          group)) {
        List<DeadLetter> dead = dlt.list(DeadLetterQuery.all().withPage(0, DeadLetterQuery.MAX_LIMIT));
        List<String> deadIds = dead.stream().map(DeadLetter::messageId).toList();
        assertThat(deadIds).as("dead letters, one per message id").doesNotHaveDuplicates()
            .containsAll(poison);
        Set<String> accounted = new java.util.HashSet<>(succeeded);
        accounted.addAll(deadIds);
        assertThat(accounted).as("records lost (seed " + seed + ")").containsAll(all);
        assertThat(deadIds).as("only poison dead-lettered").containsExactlyInAnyOrderElementsOf(
            poison);
        assertThat(succeeded).as("handled and dead-lettered both").doesNotContainAnyElementsOf(
            deadIds);
        assertThat(dead.stream().filter(d -> malformed.contains(d.messageId()))
            .map(DeadLetter::reason)).as("malformed records' reasons")
            .allSatisfy(r -> assertThat(r).contains("relaykit-"));
      }
      for (Member m : members) {
        Await.until(WAIT, "no key parked at member " + m.id, () -> m.subscription.parkedKeys() == 0
            && m.subscription.inFlight() == 0);
      }
      long repeats = REPEATS.getAndSet(0);
      System.out.println("kit " + protocol + ": " + repeats + " second handlings"
          + " of " + all.size() + " records (seed " + seed + ")");
      // Every join and leave here is graceful: a revoke or a close hands over only what this
      // member did not finish (a crash would still repeat records: at least once).
      assertThat(repeats).as("second handlings across graceful joins and leaves (seed " + seed
          + ")").isZero();
      assertThat(violations).as("KEY-mode violations inside a member (seed " + seed + ")")
          .isEmpty();
    } finally {
      for (Member m : members) {
        if (m != null) {
          m.subscription.close(Duration.ofSeconds(5));
        }
      }
    }
  }

  @org.junit.jupiter.api.Test
  @DisplayName("share group: three members joining and leaving (graceful closes with records"
      + " acquired), every record handled or dead-lettered and never both, no member running two"
      + " records of one mapped key at once")
  void shareMembersJoinAndLeaveWhileRecordsFlow() throws Exception {
    int total = Integer.getInteger("relaykit.kit.records", CI_RECORDS) / 6;
    long seed = Long.getLong("relaykit.kit.seed", 848L * 31 + total);
    SplittableRandom random = new SplittableRandom(seed);
    String topic = newTopic("kit-share", PARTITIONS);
    String group = topic + "-g";
    List<Message> messages = KafkaTestSupport.numberedMessages(total, i -> "key-" + (i % KEYS));
    Set<String> poison = new java.util.HashSet<>();
    for (int i = 0; i < total; i += 397) {
      poison.add(messages.get(i).id());
    }
    KafkaTestSupport.publishAll(topic, messages);
    Set<String> malformed = new java.util.HashSet<>();
    List<String> foreignIds = new ArrayList<>();
    sendGrown(topic, total, malformed, foreignIds);
    poison.addAll(malformed);

    Set<String> succeeded = ConcurrentHashMap.newKeySet();
    Set<String> tried = ConcurrentHashMap.newKeySet();
    List<String> violations = new CopyOnWriteArrayList<>();
    long failSalt = random.nextLong();
    SubscriptionSpec spec = SubscriptionSpec.builder(topic, group).ordering(OrderingMode.KEY)
        .concurrency(4).maxInFlight(16)
        .retryPolicy(RetryPolicy.builder().maxAttempts(4)
            .backoff(Backoff.fixed(Duration.ofMillis(50))).build())
        .inbound(io.relaykit.message.InboundMapping.foreign().keyHeader(KEY_HEADER).build())
        .build();
    KafkaTransportConfig shareConfig = KafkaTestSupport.config()
        .groupType(KafkaTransportConfig.GroupType.SHARE).closeTimeout(Duration.ofSeconds(5))
        .build();
    KafkaShareSubscriber[] subscribers = new KafkaShareSubscriber[3];
    KafkaShareRuntime[] members = new KafkaShareRuntime[3];
    AtomicInteger lives = new AtomicInteger();
    java.util.function.IntConsumer start = slot -> {
      Member m = new Member(lives.incrementAndGet());
      subscribers[slot] = KafkaShareSubscriber.create(shareConfig);
      members[slot] = (KafkaShareRuntime) subscribers[slot].subscribe(spec,
          shareHandler(m, poison, succeeded, tried, violations, failSalt));
    };
    java.util.function.IntConsumer stop = slot -> {
      members[slot].close(Duration.ofMillis(200)); // records acquired and queued are given up
      subscribers[slot].close();
      members[slot] = null;
    };
    start.accept(0);
    try {
      for (int t = 1; t <= 8; t++) {
        int threshold = total * t / 10;
        Await.until(WAIT, threshold + " records handled (seed " + seed + ")",
            () -> succeeded.size() >= threshold);
        int slot = random.nextInt(3);
        long running = java.util.Arrays.stream(members).filter(java.util.Objects::nonNull).count();
        if (members[slot] == null) {
          start.accept(slot);
        } else if (running > 1) {
          stop.accept(slot);
        } else {
          start.accept((slot + 1) % 3);
        }
      }
      for (int slot = 0; slot < 3; slot++) {
        if (members[slot] == null) {
          start.accept(slot);
        }
      }
      Set<String> all = new java.util.HashSet<>();
      messages.forEach(m -> all.add(m.id()));
      all.addAll(malformed);
      all.addAll(foreignIds);
      try (KafkaDeadLetterStore dlt = KafkaDeadLetterStore.forSubscription(shareConfig, topic,
          group)) {
        Await.until(WAIT, "every record handled or dead-lettered (seed " + seed + ")", () -> {
          Set<String> accounted = new java.util.HashSet<>(succeeded);
          dlt.list(DeadLetterQuery.all().withPage(0, DeadLetterQuery.MAX_LIMIT))
              .forEach(d -> accounted.add(d.messageId()));
          return accounted.containsAll(all);
        });
        List<String> deadIds = dlt.list(DeadLetterQuery.all().withPage(0,
            DeadLetterQuery.MAX_LIMIT)).stream().map(DeadLetter::messageId).toList();
        assertThat(deadIds).as("dead letters, one per message id").doesNotHaveDuplicates()
            .containsAll(poison);
        assertThat(succeeded).as("handled and dead-lettered both (seed " + seed + ")")
            .doesNotContainAnyElementsOf(deadIds);
      }
      for (KafkaShareRuntime m : members) {
        Await.until(WAIT, "nothing in flight", () -> m.inFlight() == 0);
      }
      assertThat(violations).as("two records of one mapped key at once in a member, or one"
          + " record handled twice (seed "
          + seed + ")").isEmpty();
    } finally {
      for (int slot = 0; slot < 3; slot++) {
        if (members[slot] != null) {
          stop.accept(slot);
        }
      }
    }
  }

  /**
   * The kit's handler for share members: as {@link #handler}, without the first-try order check
   * (a share group spreads one key's records over members, and a record given back by a closing
   * member runs later elsewhere).
   */
  private static MessageHandler shareHandler(Member m, Set<String> poison, Set<String> succeeded,
      Set<String> tried, List<String> violations, long failSalt) {
    return (Delivery d) -> {
      String key = d.message().key().orElseThrow();
      String id = d.message().id();
      // First attempts only: retries run on the retry reader's own workers, beside the member's.
      boolean first = d.attempt() == 1;
      if (first && m.running.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet()
          != 1) {
        violations.add("member " + m.id + " ran two records of " + key + " at once");
      }
      try {
        tried.add(id);
        java.util.concurrent.locks.LockSupport.parkNanos(WORK_NANOS);
        if (poison.contains(id)) {
          throw new IllegalStateException("poison " + id);
        }
        if (d.attempt() == 1 && Math.floorMod(id.hashCode() ^ failSalt, 100) < 3) {
          throw new IllegalStateException("transient failure of " + id);
        }
        if (!succeeded.add(id)) {
          violations.add("member " + m.id + " handled " + id + " a second time");
        }
      } finally {
        if (first) {
          m.running.get(key).decrementAndGet();
        }
      }
    };
  }

  /** The header the kit's foreign records carry their key in. */
  static final String KEY_HEADER = "kit-key";

  /**
   * Writes the kit's grown records after the {@code total} relaykit ones: one malformed relaykit
   * record (a non-numeric attempt or a first-failure time that is no instant) per 600 records,
   * and a foreign record per 10, keyed {@code raw-*} but mapped to the kit's keys, each in the
   * partition of its mapped key, numbered after the relaykit records.
   */
  static void sendGrown(String topic, int total, Set<String> malformed, List<String> foreignIds)
      throws Exception {
    List<org.apache.kafka.clients.producer.ProducerRecord<String, byte[]>> out = new ArrayList<>();
    int seq = total;
    for (int i = 0; i < Math.max(2, total / 600); i++, seq++) {
      String key = "key-" + (seq % KEYS);
      Message m = KafkaTestSupport.message(key, seq);
      malformed.add(m.id());
      out.add(i % 2 == 0
          ? KafkaRecordLifeTest.relaykit(topic, m, io.relaykit.message.MessageHeaders.ATTEMPT,
              "x" + i)
          : KafkaRecordLifeTest.relaykit(topic, m, io.relaykit.message.MessageHeaders.ATTEMPT,
              "1", io.relaykit.message.MessageHeaders.FIRST_FAILURE_AT, "not-a-time"));
    }
    for (int i = 0; i < total / 10; i++, seq++) {
      String key = "key-" + (seq % KEYS);
      org.apache.kafka.clients.producer.ProducerRecord<String, byte[]> r =
          new org.apache.kafka.clients.producer.ProducerRecord<>(topic, partitionOf(key),
              "raw-" + i, Integer.toString(seq).getBytes(java.nio.charset.StandardCharsets.UTF_8));
      r.headers().add(KEY_HEADER, key.getBytes(java.nio.charset.StandardCharsets.UTF_8));
      out.add(r);
    }
    try (org.apache.kafka.clients.producer.KafkaProducer<String, byte[]> raw =
        new org.apache.kafka.clients.producer.KafkaProducer<>(Map.of(
            "bootstrap.servers", KafkaTestBroker.bootstrapServers()),
            new org.apache.kafka.common.serialization.StringSerializer(),
            new org.apache.kafka.common.serialization.ByteArraySerializer())) {
      List<java.util.concurrent.Future<org.apache.kafka.clients.producer.RecordMetadata>> sent =
          new ArrayList<>();
      for (var r : out) {
        sent.add(raw.send(r));
      }
      for (int i = 0; i < sent.size(); i++) {
        var md = sent.get(i).get(30, java.util.concurrent.TimeUnit.SECONDS);
        if (out.get(i).headers().lastHeader(KEY_HEADER) != null) {
          foreignIds.add(KafkaRecords.position(md.topic(), md.partition(), md.offset()));
        }
      }
    }
  }

  /** The partition the default partitioner gives {@code key} on the kit's topics. */
  static int partitionOf(String key) {
    byte[] bytes = key.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    return org.apache.kafka.common.utils.Utils.toPositive(
        org.apache.kafka.common.utils.Utils.murmur2(bytes)) % PARTITIONS;
  }

  private static MessageHandler handler(Member m, Set<String> poison, Set<String> succeeded,
      Set<String> tried, List<String> violations, long failSalt) {
    return (Delivery d) -> {
      String key = d.message().key().orElseThrow();
      int seq = Integer.parseInt(d.message().payloadUtf8());
      String id = d.message().id();
      if (m.running.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet() != 1) {
        violations.add("member " + m.id + " ran two records of " + key + " at once");
      }
      try {
        boolean firstTryAnywhere = tried.add(id);
        if (d.attempt() == 1 && firstTryAnywhere) {
          Integer higher = m.highestFirstTry.get(key);
          if (higher != null && higher > seq) {
            violations.add("member " + m.id + " ran " + key + " #" + seq + " for the first time"
                + " after #" + higher);
          }
          m.highestFirstTry.merge(key, seq, Math::max);
        }
        // A little work per record, so that joins and leaves meet records in flight.
        java.util.concurrent.locks.LockSupport.parkNanos(WORK_NANOS);
        if (poison.contains(id)) {
          throw new IllegalStateException("poison " + seq);
        }
        // Transient: about 3 % of first attempts fail, decided by the seed.
        if (d.attempt() == 1 && Math.floorMod(id.hashCode() ^ failSalt, 100) < 3) {
          throw new IllegalStateException("transient failure of " + seq);
        }
        if (!succeeded.add(id)) {
          // A graceful revoke or close hands over only unfinished records: counted, and
          // asserted zero at the end (a crash would repeat records: at least once).
          REPEATS.incrementAndGet();
        }
      } finally {
        m.running.get(key).decrementAndGet();
      }
    };
  }

  private static boolean atEnd(String group, String topic) {
    Map<Integer, Long> committed = committedOffsets(group, topic);
    for (int p = 0; p < PARTITIONS; p++) {
      long end = KafkaTestSupport.endOffset(topic, p);
      if (end > 0 && !Long.valueOf(end).equals(committed.get(p))) {
        return false;
      }
    }
    return true;
  }

  /**
   * Whether a read_committed reader finds nothing after the group's committed offsets of {@code
   * topic}: with the transactional hand-off the retry topic ends in commit markers, which take an
   * offset each but are no record, so the committed offset after the last copy is below the end.
   */
  private static boolean nothingAfterCommitted(String group, String topic) {
    Map<Integer, Long> committed = committedOffsets(group, topic);
    try (org.apache.kafka.clients.consumer.KafkaConsumer<String, byte[]> c =
        new org.apache.kafka.clients.consumer.KafkaConsumer<>(Map.of(
            "bootstrap.servers", KafkaTestBroker.bootstrapServers(),
            "enable.auto.commit", "false", "isolation.level", "read_committed"),
            new org.apache.kafka.common.serialization.StringDeserializer(),
            new org.apache.kafka.common.serialization.ByteArrayDeserializer())) {
      List<org.apache.kafka.common.TopicPartition> parts = new ArrayList<>();
      for (int p = 0; p < PARTITIONS; p++) {
        parts.add(new org.apache.kafka.common.TopicPartition(topic, p));
      }
      c.assign(parts);
      for (var tp : parts) {
        c.seek(tp, committed.getOrDefault(tp.partition(), 0L));
      }
      Map<org.apache.kafka.common.TopicPartition, Long> ends = c.endOffsets(parts);
      long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
      while (parts.stream().anyMatch(tp -> c.position(tp) < ends.get(tp))) {
        if (!c.poll(Duration.ofMillis(50)).isEmpty()) {
          return false;
        }
        if (System.nanoTime() - deadline > 0) {
          return false;
        }
      }
      return true;
    }
  }

  private static KafkaTransportConfig.Builder config(String protocol) {
    KafkaTransportConfig.Builder b = KafkaTestSupport.config().closeTimeout(Duration.ofSeconds(5));
    if (protocol.endsWith("-transactional")) {
      b.handOff(KafkaTransportConfig.HandOff.TRANSACTIONAL);
      protocol = protocol.substring(0, protocol.length() - "-transactional".length());
    }
    if (protocol.equals("consumer")) {
      return b.consumerProperty("group.protocol", "consumer");
    }
    return b.consumerProperty("session.timeout.ms", "3000")
        .consumerProperty("heartbeat.interval.ms", "500")
        .consumerProperty("partition.assignment.strategy", protocol.equals("range")
            ? "org.apache.kafka.clients.consumer.RangeAssignor"
            : "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");
  }
}
