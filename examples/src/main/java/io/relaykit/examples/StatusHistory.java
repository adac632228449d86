package io.relaykit.examples;

import io.relaykit.monitor.BacklogMonitor;
import io.relaykit.monitor.BacklogSample;
import io.relaykit.monitor.BacklogVerdict;
import io.relaykit.outbox.OutboxStats;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * The status page's memory: a bounded ring of samples (time, outbox backlog depth, oldest-pending
 * age, the backlog verdict, dead letters so far), one per {@link #tick()}, the oldest evicted
 * (and counted) when the ring is full. Each tick also feeds the {@link BacklogMonitor} whose
 * verdict it records, so the verdict is judged from the same samples the chart draws.
 *
 * <p>{@link #tick()} never throws: a reading that fails (the database is down, the clock went
 * back behind the monitor's latest sample) is counted in {@link #failedReads()} and leaves no
 * sample, so a gap in the chart shows it. Time comes from the injected clock. Thread-safe; a tick
 * costs one backlog read and O(1) (amortized) besides; {@link #samples()} copies the ring.
 */
final class StatusHistory {
  /** Samples kept by default: ten minutes at one a second. */
  static final int DEFAULT_CAPACITY = 600;

  private static final System.Logger LOG = System.getLogger(StatusHistory.class.getName());
  private static final Duration MINUTE = Duration.ofMinutes(1);

  /** Reads the outbox backlog at an instant; may fail. */
  @FunctionalInterface
  interface BacklogReader {
    OutboxStats read(Instant now) throws Exception;
  }

  /**
   * One sample.
   *
   * @param at when it was taken
   * @param backlog unsent outbox rows
   * @param oldestPendingMs age of the oldest unsent row, milliseconds
   * @param verdict the backlog monitor's verdict with this sample included
   * @param deadLetters DEAD_LETTERED lifecycle events since the demo started
   */
  record Sample(Instant at, long backlog, long oldestPendingMs, BacklogVerdict verdict,
      long deadLetters) {}

  private final int capacity;
  private final InstantSource clock;
  private final BacklogMonitor monitor;
  private final BacklogReader reader;
  private final LongSupplier deadLettered;
  private final ArrayDeque<Sample> ring;
  private long evicted;
  private long failedReads;

  /**
   * @param capacity most samples kept, 2 to 100 000
   * @param clock stamps the samples
   * @param monitor fed with every sample; its verdict is recorded
   * @param reader the backlog
   * @param deadLettered the running total of dead letters
   * @throws IllegalArgumentException if {@code capacity} is out of range
   * @throws NullPointerException if an argument is null
   */
  StatusHistory(int capacity, InstantSource clock, BacklogMonitor monitor, BacklogReader reader,
      LongSupplier deadLettered) {
    if (capacity < 2 || capacity > 100_000) {
      throw new IllegalArgumentException("capacity must be in 2..100000, was " + capacity);
    }
    this.capacity = capacity;
    this.clock = Objects.requireNonNull(clock, "clock");
    this.monitor = Objects.requireNonNull(monitor, "monitor");
    this.reader = Objects.requireNonNull(reader, "reader");
    this.deadLettered = Objects.requireNonNull(deadLettered, "deadLettered");
    this.ring = new ArrayDeque<>(capacity);
  }

  /**
   * Takes one sample. Never throws an exception: a failed read is counted and skipped.
   *
   * @return whether a sample was added
   */
  boolean tick() {
    try {
      Instant now = clock.instant();
      OutboxStats stats = reader.read(now);
      long age = stats.oldestUnsentAge().toMillis();
      BacklogVerdict verdict;
      // One lock for record + verdict + append, so concurrent ticks keep the ring in time order.
      synchronized (this) {
        monitor.record(new BacklogSample(now, stats.unsent(), stats.oldestUnsentAge()));
        verdict = monitor.verdict();
        if (ring.size() == capacity) {
          ring.removeFirst();
          evicted++;
        }
        ring.addLast(new Sample(now, stats.unsent(), age, verdict, deadLettered.getAsLong()));
      }
      return true;
    } catch (Exception e) {
      long failed;
      synchronized (this) {
        failed = ++failedReads;
      }
      // The first failure and then one in a hundred: a database that stays down does not flood
      // the log once a second.
      if (failed == 1 || failed % 100 == 0) {
        LOG.log(System.Logger.Level.WARNING, "status history: backlog read failed (" + failed
            + " so far): " + e);
      }
      return false;
    }
  }

  /** {@return the samples, oldest first (a copy)} */
  synchronized List<Sample> samples() {
    return List.copyOf(ring);
  }

  /** {@return samples evicted because the ring was full} */
  synchronized long evicted() {
    return evicted;
  }

  /** {@return ticks whose read failed} */
  synchronized long failedReads() {
    return failedReads;
  }

  int capacity() {
    return capacity;
  }

  /**
   * Dead letters per minute at each sample: how much the running total rose from the earliest
   * sample at most a minute older to this one (over the samples held: what happened before the
   * oldest one is not known, so the first minute undercounts). O(n).
   *
   * @param samples oldest first
   * @return one value per sample, in the same order
   */
  static long[] deadLettersPerMinute(List<Sample> samples) {
    long[] out = new long[samples.size()];
    int from = 0;
    for (int i = 0; i < samples.size(); i++) {
      Instant horizon = samples.get(i).at().minus(MINUTE);
      while (samples.get(from).at().isBefore(horizon)) {
        from++;
      }
      // The total at the window's first sample (the earliest no more than a minute back).
      out[i] = Math.max(0, samples.get(i).deadLetters() - samples.get(from).deadLetters());
    }
    return out;
  }

  /** The history as the JSON tree of {@code GET /api/history}. */
  Map<String, Object> json(Duration period) {
    List<Sample> s = samples();
    long[] perMinute = deadLettersPerMinute(s);
    List<Map<String, Object>> list = new ArrayList<>(s.size());
    for (int i = 0; i < s.size(); i++) {
      Sample x = s.get(i);
      Map<String, Object> m = new java.util.LinkedHashMap<>();
      m.put("at", x.at().toString());
      m.put("atMs", x.at().toEpochMilli());
      m.put("backlog", x.backlog());
      m.put("oldestPendingMs", x.oldestPendingMs());
      m.put("verdict", x.verdict().name());
      m.put("deadLetters", x.deadLetters());
      m.put("deadLettersPerMinute", perMinute[i]);
      list.add(m);
    }
    Map<String, Object> m = new java.util.LinkedHashMap<>();
    m.put("periodMs", period.toMillis());
    m.put("capacity", capacity);
    m.put("evicted", evicted());
    m.put("failedReads", failedReads());
    m.put("samples", list);
    return m;
  }

  /**
   * The history as the status page's chart: outbox backlog, oldest-pending age and dead letters
   * per minute over the samples held, the verdict marked where it was first seen and wherever it
   * changed.
   */
  String svg() {
    List<Sample> s = samples();
    long[] perMinute = deadLettersPerMinute(s);
    List<TimeChart.Point> depth = new ArrayList<>(s.size());
    List<TimeChart.Point> age = new ArrayList<>(s.size());
    List<TimeChart.Point> dead = new ArrayList<>(s.size());
    TimeChart.Builder chart = TimeChart.builder("history-svg").width(860).panelHeight(110);
    BacklogVerdict last = null;
    for (int i = 0; i < s.size(); i++) {
      Sample x = s.get(i);
      long t = x.at().toEpochMilli();
      depth.add(new TimeChart.Point(t, x.backlog()));
      age.add(new TimeChart.Point(t, x.oldestPendingMs()));
      dead.add(new TimeChart.Point(t, perMinute[i]));
      if (x.verdict() != last) {
        chart.mark(new TimeChart.Mark("verdict", color(x.verdict()), t, x.verdict().name(),
            Map.of("verdict", x.verdict().name())));
        last = x.verdict();
      }
    }
    if (s.size() >= 2) {
      long end = s.get(s.size() - 1).at().toEpochMilli();
      long start = s.get(0).at().toEpochMilli();
      // Ticks are a tenth of the span apart: whole seconds once that is at least 2 s.
      String format = end - start >= 20_000 ? "-%.0f s" : "-%.1f s";
      chart.timeRange(start, Math.max(end, start + 1))
          .timeLabel(t -> t >= end ? "now" : String.format(Locale.ROOT, format,
              (end - t) / 1000.0));
    }
    String verdict = last == null ? "no samples yet" : "verdict " + last.name();
    return chart
        .panel("outbox backlog (" + verdict + ")",
            new TimeChart.Line("backlog", "#9467bd", "unsent rows", depth))
        .panel("oldest pending age (ms)",
            new TimeChart.Line("age", "#8c564b", "oldest unsent row", age))
        .panel("dead letters per minute",
            new TimeChart.Line("dead-letters", "#d62728", "dead-lettered in the last minute",
                dead))
        .build().svg();
  }

  private static String color(BacklogVerdict v) {
    return switch (v) {
      case HEALTHY -> "#2ca02c";
      case DRAINING_SPIKE -> "#ff7f0e";
      default -> "#d62728";
    };
  }
}
