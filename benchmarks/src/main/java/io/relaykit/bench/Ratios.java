package io.relaykit.bench;

import java.util.List;

/**
 * Every ratio the README reports, with its target. One list, so the report, the README table and
 * the chart cannot drift apart. Each backend's benchmark adds its rows here.
 */
final class Ratios {
  private Ratios() {}

  static List<Ratio> all() {
    return List.of(
        new Ratio("report queue cycle vs ArrayBlockingQueue, 1 000 pending",
            Ratio.Select.of("ReportQueueBenchmark.cycle", "impl", "RELAYKIT", "capacity", "1000"),
            Ratio.Select.of("ReportQueueBenchmark.cycle", "impl", "ARRAY_BLOCKING_QUEUE",
                "capacity", "1000"),
            0.5),
        new Ratio("report queue cycle vs ArrayBlockingQueue, 100 000 pending",
            Ratio.Select.of("ReportQueueBenchmark.cycle", "impl", "RELAYKIT",
                "capacity", "100000"),
            Ratio.Select.of("ReportQueueBenchmark.cycle", "impl", "ARRAY_BLOCKING_QUEUE",
                "capacity", "100000"),
            0.5),
        new Ratio("report queue cycle at 100 000 vs at 1 000 pending (flat cost)",
            Ratio.Select.of("ReportQueueBenchmark.cycle", "impl", "RELAYKIT",
                "capacity", "100000"),
            Ratio.Select.of("ReportQueueBenchmark.cycle", "impl", "RELAYKIT", "capacity", "1000"),
            0.8),
        new Ratio("report queue cycle vs the seed design, 100 000 pending",
            Ratio.Select.of("ReportQueueBenchmark.cycle", "impl", "RELAYKIT",
                "capacity", "100000"),
            Ratio.Select.of("ReportQueueBenchmark.cycle", "impl", "SEED_BASELINE",
                "capacity", "100000"),
            100.0),
        new Ratio("report queue, 2 producers + 1 drainer, vs ArrayBlockingQueue",
            Ratio.Select.of("ReportQueueBenchmark.concurrentEnqueue", "impl", "RELAYKIT",
                "capacity", "100000"),
            Ratio.Select.of("ReportQueueBenchmark.concurrentEnqueue", "impl",
                "ARRAY_BLOCKING_QUEUE", "capacity", "100000"),
            null),
        new Ratio("offset tracker vs TreeSet, 10 000 in flight",
            Ratio.Select.of("OffsetTrackerBenchmark.completeTrackCommit", "impl", "RELAYKIT"),
            Ratio.Select.of("OffsetTrackerBenchmark.completeTrackCommit", "impl", "TREE_SET"),
            null),
        new Ratio("file journal group commit vs raw FileChannel append, force every 100",
            Ratio.Select.of("JournalBenchmark.append", "impl", "RELAYKIT",
                "durability", "GROUP_COMMIT"),
            Ratio.Select.of("JournalBenchmark.append", "impl", "RAW_FILE_CHANNEL",
                "durability", "GROUP_COMMIT"),
            0.7),
        new Ratio("file journal sync (CRITICAL) vs raw append + force per record",
            Ratio.Select.of("JournalBenchmark.append", "impl", "RELAYKIT", "durability", "SYNC"),
            Ratio.Select.of("JournalBenchmark.append", "impl", "RAW_FILE_CHANNEL",
                "durability", "SYNC"),
            0.7),
        new Ratio("file journal, 4 CRITICAL producers vs fsync per add (Tape-like)",
            Ratio.Select.of("JournalBenchmark.concurrentCritical", "impl", "RELAYKIT"),
            Ratio.Select.of("JournalBenchmark.concurrentCritical", "impl", "FSYNC_PER_ADD"),
            10.0),
        new Ratio("H2 journal group commit vs raw JDBC batch insert, commit every 100",
            Ratio.Select.of("H2JournalBenchmark.append", "impl", "RELAYKIT",
                "durability", "GROUP_COMMIT"),
            Ratio.Select.of("H2JournalBenchmark.append", "impl", "RAW_JDBC_BATCH",
                "durability", "GROUP_COMMIT"),
            null),
        new Ratio("H2 journal sync (CRITICAL) vs raw JDBC insert + commit per event",
            Ratio.Select.of("H2JournalBenchmark.append", "impl", "RELAYKIT", "durability", "SYNC"),
            Ratio.Select.of("H2JournalBenchmark.append", "impl", "RAW_JDBC_BATCH",
                "durability", "SYNC"),
            null),
        new Ratio("outbox relay, H2 → in-process, 10 000 keyless rows, vs the 10 000/s goal",
            Ratio.Select.of("OutboxRelayBenchmark.drain", "keys", "0"),
            Ratio.Select.fixed("goal", 10_000, "ops/s"),
            1.0));
  }
}
