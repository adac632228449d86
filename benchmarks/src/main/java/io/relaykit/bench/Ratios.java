package io.relaykit.bench;

import java.util.List;

/**
 * Every ratio the README reports, with its target. One list, so the report, the README table and
 * the chart cannot drift apart. Each backend's benchmark adds its rows here, one declaration a
 * ratio.
 */
final class Ratios {
  private Ratios() {}

  /** The target of a ratio that is reported but has no floor. */
  private static final Double NO_TARGET = null;

  static List<Ratio> all() {
    return List.of(
        row("report queue cycle at 100 000 vs at 1 000 pending (flat cost)",
            "ReportQueueBenchmark.cycle", "impl=RELAYKIT capacity=100000",
            "impl=RELAYKIT capacity=1000", 0.8),
        row("report queue cycle vs the seed design, 100 000 pending",
            "ReportQueueBenchmark.cycle", "impl=RELAYKIT capacity=100000",
            "impl=SEED_BASELINE capacity=100000", 100.0),
        row("offset tracker vs TreeSet, 10 000 in flight",
            "OffsetTrackerBenchmark.completeTrackCommit", "impl=RELAYKIT", "impl=TREE_SET",
            NO_TARGET),
        row("file journal group commit vs raw FileChannel append, force every 100",
            "JournalBenchmark.append", "impl=RELAYKIT durability=GROUP_COMMIT",
            "impl=RAW_FILE_CHANNEL durability=GROUP_COMMIT",
            JournalBenchmark.TARGET_GROUP_COMMIT_VS_RAW),
        row("file journal sync (CRITICAL) vs raw append + force per record",
            "JournalBenchmark.append", "impl=RELAYKIT durability=SYNC",
            "impl=RAW_FILE_CHANNEL durability=SYNC", 0.7),
        row("file journal, 1 CRITICAL producer vs Tape QueueFile add",
            "JournalBenchmark.critical1", "impl=RELAYKIT", "impl=TAPE", NO_TARGET),
        row("file journal, 4 CRITICAL producers vs Tape QueueFile add",
            "JournalBenchmark.critical4", "impl=RELAYKIT", "impl=TAPE",
            JournalBenchmark.TARGET_CRITICAL4_VS_TAPE),
        row("file journal, 16 CRITICAL producers vs Tape QueueFile add",
            "JournalBenchmark.critical16", "impl=RELAYKIT", "impl=TAPE", 25.0),
        row("file journal, 4 CRITICAL producers while a ~100 MB journal compacts vs not",
            "JournalCompactionBenchmark.produce", "compaction=RUNNING", "compaction=NONE",
            JournalBenchmark.TARGET_COMPACTING_VS_NOT),
        row("file journal, 4 CRITICAL producers while it compacts vs while the same I/O runs"
            + " elsewhere on the disk", "JournalCompactionBenchmark.produce", "compaction=RUNNING",
            "compaction=SAME_IO_ELSEWHERE", 0.8),
        row("H2 journal group commit vs raw JDBC batch insert, commit every 1 000",
            "H2JournalBenchmark.append", "impl=RELAYKIT durability=GROUP_COMMIT",
            "impl=RAW_JDBC_BATCH durability=GROUP_COMMIT", NO_TARGET),
        row("H2 journal sync (CRITICAL) vs raw JDBC insert + commit per event",
            "H2JournalBenchmark.append", "impl=RELAYKIT durability=SYNC",
            "impl=RAW_JDBC_BATCH durability=SYNC", JournalBenchmark.TARGET_H2_SYNC_VS_RAW),
        vsGoal("outbox relay, H2 → in-process, 10 000 keyless rows, vs the 10 000/s goal",
            "OutboxRelayBenchmark.drain", "keys=0 database=H2", 10_000, 1.0),
        vsGoal("outbox relay, PostgreSQL → in-process, 10 000 keyless rows, vs 10 000/s",
            "OutboxRelayBenchmark.drain", "keys=0 database=POSTGRESQL", 10_000, NO_TARGET),
        row("outbox claim, H2, 10 ready rows beside 100 000 backed off vs 10 ready alone",
            "OutboxClaimBenchmark.claim", "database=H2 backedOff=100000",
            "database=H2 backedOff=0", 0.5),
        row("outbox claim, PostgreSQL, 10 ready rows beside 100 000 backed off vs 10 alone",
            "OutboxClaimBenchmark.claim", "database=POSTGRESQL backedOff=100000",
            "database=POSTGRESQL backedOff=0", 0.5),
        row("dead-letter page of 50 by exception class, newest first, 1 900 matches deep in"
            + " 10 000, H2: keyset position vs offset", "DeadLetterPageBenchmark.page",
            "paging=KEYSET", "paging=OFFSET", NO_TARGET),
        row("outbox relay vs hand-written SKIP LOCKED loop, PostgreSQL, 10 000 keyless rows",
            "PostgresSkipLockedBenchmark.drain", "impl=RELAYKIT", "impl=HAND_WRITTEN", 0.7),
        row("outbox relay defaults + start() vs gruelbox flush, H2, 10 000 rows one tx each",
            "GruelboxOutboxBenchmark.drain", "impl=RELAYKIT", "impl=GRUELBOX", 2.8),
        row("RabbitMQ publisher with confirms vs raw amqp-client async confirms, window 1024",
            "RabbitMqPublisherBenchmark.publish", "impl=RELAYKIT window=1024",
            "impl=RAW_AMQP_CLIENT window=1024", 0.8),
        row("Redis idempotency claim vs raw EVALSHA of the same script, 4 threads",
            "RedisIdempotencyBenchmark.claim", "impl=RELAYKIT", "impl=RAW_EVALSHA", 0.8),
        // Informational: SET NX PX reads no server clock and cannot keep a lapsed claim
        // completable, so it is not the same work as the claim.
        row("Redis idempotency claim vs raw SET NX PX (informational), 4 threads",
            "RedisIdempotencyBenchmark.claim", "impl=RELAYKIT", "impl=RAW_LETTUCE", NO_TARGET),
        row("Redis claim + complete vs raw EVALSHA of the same two scripts, 4 threads",
            "RedisIdempotencyBenchmark.claimComplete", "impl=RELAYKIT", "impl=RAW_EVALSHA", 0.8),
        row("Redis claim + complete vs raw SET NX PX + EVALSHA (informational), 4 threads",
            "RedisIdempotencyBenchmark.claimComplete", "impl=RELAYKIT", "impl=RAW_LETTUCE",
            NO_TARGET),
        row("Kafka publisher (acks=all, idempotent) vs raw KafkaProducer, same settings",
            "KafkaPublisherBenchmark.publish", "impl=RELAYKIT", "impl=RAW_KAFKA_PRODUCER", 0.8),
        // The ideal at concurrency 64 is 64 × 200/s = 12 800/s, 64× the plain loop's 200/s; the
        // target is 0.9 of it.
        new Ratio("Kafka consumer runtime, 5 ms handler, KEY @ 64 vs plain poll loop (ideal 64×)",
            select("KafkaConsumerBenchmark.runtime", "mode=KEY concurrency=64 failingKeys=0"),
            select("KafkaConsumerBenchmark.plainLoop", ""), 57.0),
        new Ratio("Kafka consumer runtime, 5 ms handler, UNORDERED @ 64 vs plain poll loop "
            + "(ideal 64×)",
            select("KafkaConsumerBenchmark.runtime",
                "mode=UNORDERED concurrency=64 failingKeys=0"),
            select("KafkaConsumerBenchmark.plainLoop", ""), 57.0),
        // A key whose every record fails once and waits for its retry must not cost the other
        // keys their throughput: the same 10 000 healthy records, with and without it.
        row("Kafka consumer, KEY @ 64, healthy keys beside 1 % of keys failing transiently vs no"
            + " failures", "KafkaConsumerBenchmark.runtime", "mode=KEY concurrency=64 failingKeys=1",
            "mode=KEY concurrency=64 failingKeys=0", 0.9),
        row("Kafka consumer, UNORDERED @ 64, healthy keys beside 1 % of keys failing transiently"
            + " vs no failures", "KafkaConsumerBenchmark.runtime",
            "mode=UNORDERED concurrency=64 failingKeys=1",
            "mode=UNORDERED concurrency=64 failingKeys=0", 0.9),
        // Plain share consumers doing the same work are the ceiling of a share-group subscriber.
        row("Kafka share subscriber, 3 members × 64, vs raw KafkaShareConsumer loops, 1 partition",
            "KafkaShareBenchmark.consume", "setup=SHARE_3x64", "setup=RAW_SHARE_3x64", 0.95));
  }

  /**
   * A ceiling on the p99 of {@link LatencyBenchmark} rows: every row whose benchmark is {@code
   * select}'s and whose params include {@code select}'s is judged against it.
   *
   * @param name what the target says, for a person
   * @param select the rows it applies to
   * @param p99Millis the highest p99 that meets it
   */
  record LatencyTarget(String name, Ratio.Select select, double p99Millis) {}

  /** Every latency target the README reports. */
  static List<LatencyTarget> latencyTargets() {
    return List.of(new LatencyTarget(
        "p99 ≤ 25 ms at 2 000/s on PostgreSQL + Kafka with one relay",
        select("LatencyBenchmark.postgresKafka", "rate=2000 relays=1 wake=WAKE"), 25.0));
  }

  /**
   * relaykit against a baseline in the same JMH benchmark: the two results differ only in their
   * params, each written as {@code key=value} pairs separated by spaces.
   */
  static Ratio row(String label, String benchmark, String relaykitParams, String baselineParams,
      Double target) {
    return new Ratio(label, select(benchmark, relaykitParams), select(benchmark, baselineParams),
        target);
  }

  /** relaykit's result against a fixed goal in ops/s. */
  static Ratio vsGoal(String label, String benchmark, String params, double goal, Double target) {
    return new Ratio(label, select(benchmark, params), Ratio.Select.fixed("goal", goal, "ops/s"),
        target);
  }

  /**
   * The result of {@code benchmark} with {@code params}, {@code key=value} pairs separated by
   * spaces ({@code "impl=RELAYKIT capacity=1000"}; empty for none).
   *
   * @throws IllegalArgumentException naming the pair when one is not {@code key=value}
   */
  static Ratio.Select select(String benchmark, String params) {
    String[] pairs = params.isBlank() ? new String[0] : params.trim().split("\\s+");
    String[] keyValues = new String[2 * pairs.length];
    for (int i = 0; i < pairs.length; i++) {
      int eq = pairs[i].indexOf('=');
      if (eq <= 0 || eq == pairs[i].length() - 1) {
        throw new IllegalArgumentException("params of " + benchmark
            + " are key=value pairs separated by spaces, but '" + pairs[i] + "' in '" + params
            + "' is not one");
      }
      keyValues[2 * i] = pairs[i].substring(0, eq);
      keyValues[2 * i + 1] = pairs[i].substring(eq + 1);
    }
    return Ratio.Select.of(benchmark, keyValues);
  }
}
