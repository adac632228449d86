package io.relaykit.console;

import io.relaykit.deadletter.DeadLetterCount;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.monitor.BacklogMonitor;
import io.relaykit.monitor.BacklogSample;
import io.relaykit.monitor.BacklogVerdict;
import io.relaykit.monitor.SubscriptionStatus;
import io.relaykit.monitor.SubscriptionStatusSource;
import io.relaykit.outbox.OutboxStats;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * The console's memory: a bounded ring of samples, one per {@link #tick()}, the oldest evicted
 * (and counted) when the ring is full. A sample holds the outbox backlog, its oldest pending age
 * and the {@link BacklogMonitor}'s verdict with that sample included, the dead letters per store,
 * destination and group ({@link DeadLetterStore#countBySource}, at most {@link #MAX_GROUPS} rows
 * per store), and lag and in-flight work per subscription (at most {@link #MAX_SUBSCRIPTIONS}).
 * The default ring, {@value #DEFAULT_CAPACITY} samples, holds an hour at one sample per {@link
 * #DEFAULT_PERIOD}.
 *
 * <p>The history is in memory only: it starts empty with the process ({@link #since()}), and a
 * restart loses it. {@link #tick()} never throws: a backlog read that fails (the database is down,
 * the clock stepped back behind the monitor's latest sample) leaves no sample, so the chart shows
 * a gap; a dead-letter or subscription read that fails leaves that part out of the sample. Each
 * failed read is counted in {@link #failedReads()} and logged (the first, then one in a hundred).
 * Time comes from the injected clock. Thread-safe; a tick costs one read of each source (the
 * backlog, each store's {@code countBySource}, each subscription source) and O(1) amortized
 * besides; {@link #samples()} copies the ring.
 */
public final class ConsoleHistory {
  /** Samples kept by default: an hour at one per {@link #DEFAULT_PERIOD}. */
  public static final int DEFAULT_CAPACITY = 1200;
  /** The sampling period the default capacity is meant for: 3 seconds. */
  public static final Duration DEFAULT_PERIOD = Duration.ofSeconds(3);
  /** Most rows of one store's dead-letter counts kept per sample. */
  public static final int MAX_GROUPS = 200;
  /** Most subscriptions kept per sample. */
  public static final int MAX_SUBSCRIPTIONS = 200;

  private static final System.Logger LOG = System.getLogger(ConsoleHistory.class.getName());
  private static final Duration MINUTE = Duration.ofMinutes(1);

  /** Reads the outbox backlog at an instant; may fail. */
  @FunctionalInterface
  public interface BacklogReader {
    /**
     * Reads the backlog.
     *
     * @param now the sample's time
     * @return the outbox's figures
     * @throws Exception if the outbox cannot be read; the tick leaves no sample
     */
    OutboxStats read(Instant now) throws Exception;
  }

  /**
   * Where dead letters are counted: a store, a destination (source) and a consumer group.
   *
   * @param store the console's name of the store
   * @param source the destination
   * @param group the consumer group, or null for none
   */
  public record GroupKey(String store, String source, String group) {
    /**
     * Checks the parts.
     *
     * @param store the component of that name
     * @param source the component of that name
     * @param group the component of that name
     * @throws NullPointerException if {@code store} or {@code source} is null
     */
    public GroupKey {
      Objects.requireNonNull(store, "store");
      Objects.requireNonNull(source, "source");
    }
  }

  /**
   * One sample.
   *
   * @param at when it was taken
   * @param backlog unsent outbox rows, or -1 without an outbox
   * @param oldestPendingMs age of the oldest unsent row in milliseconds, or -1 without an outbox
   * @param verdict the backlog monitor's verdict with this sample included; null without an outbox
   * @param deadLetters the dead-letter total: the given running total, else the sum of {@code
   *     deadLettersByGroup}; -1 when a store could not be read and no running total was given
   * @param deadLettersByGroup dead letters held per store, destination and group (the stores read)
   * @param subscriptions lag and in-flight per subscription (the sources read)
   * @param failedParts what could not be read for this sample ({@code "dead letters of relaykit"},
   *     {@code "subscriptions"}); empty when everything was read
   */
  public record Sample(Instant at, long backlog, long oldestPendingMs, BacklogVerdict verdict,
      long deadLetters, Map<GroupKey, Long> deadLettersByGroup,
      List<SubscriptionStatus> subscriptions, List<String> failedParts) {
    /**
     * Copies the collections.
     *
     * @param at the component of that name
     * @param backlog the component of that name
     * @param oldestPendingMs the component of that name
     * @param verdict the component of that name
     * @param deadLetters the component of that name
     * @param deadLettersByGroup the component of that name
     * @param subscriptions the component of that name
     * @param failedParts the component of that name
     * @throws NullPointerException if {@code at} or a collection is null
     */
    public Sample {
      Objects.requireNonNull(at, "at");
      deadLettersByGroup = java.util.Collections.unmodifiableMap(
          new LinkedHashMap<>(deadLettersByGroup));
      subscriptions = List.copyOf(subscriptions);
      failedParts = List.copyOf(failedParts);
    }
  }

  private final int capacity;
  private final InstantSource clock;
  private final BacklogMonitor monitor;
  private final BacklogReader reader;
  private final LongSupplier deadLetterTotal;
  private final Map<String, DeadLetterStore> stores;
  private final List<SubscriptionStatusSource> subscriptionSources;
  private final Instant since;
  private final ArrayDeque<Sample> ring;
  private long evicted;
  private long failedReads;

  private ConsoleHistory(Builder b) {
    this.capacity = b.capacity;
    this.clock = b.clock;
    this.monitor = b.monitor;
    this.reader = b.reader;
    this.deadLetterTotal = b.deadLetterTotal;
    this.stores = new LinkedHashMap<>(b.stores);
    this.subscriptionSources = List.copyOf(b.subscriptionSources);
    this.since = clock.instant();
    this.ring = new ArrayDeque<>(Math.min(capacity, 1024));
  }

  /**
   * A builder: an hour of samples on the system clock, reading nothing until sources are given.
   *
   * @return a new builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Takes one sample. Never throws an exception: a failed read is counted; a failed backlog read
   * leaves no sample.
   *
   * @return whether a sample was added
   */
  public boolean tick() {
    Instant now;
    try {
      now = clock.instant();
    } catch (RuntimeException e) {
      failed("clock", e);
      return false;
    }
    OutboxStats stats = null;
    if (reader != null) {
      try {
        stats = Objects.requireNonNull(reader.read(now), "backlog read");
      } catch (Exception e) {
        if (e instanceof InterruptedException) {
          Thread.currentThread().interrupt();
        }
        failed("backlog", e);
        return false;
      }
    }
    List<String> failedParts = new ArrayList<>();
    Map<GroupKey, Long> byGroup = new LinkedHashMap<>();
    long sum = 0;
    boolean countsComplete = true;
    for (Map.Entry<String, DeadLetterStore> s : stores.entrySet()) {
      try {
        List<DeadLetterCount> counts = s.getValue().countBySource(MAX_GROUPS);
        for (int i = 0; i < counts.size() && i < MAX_GROUPS; i++) {
          DeadLetterCount c = counts.get(i);
          byGroup.put(new GroupKey(s.getKey(), c.source(), c.group()), c.count());
          sum += c.count();
        }
      } catch (RuntimeException e) {
        countsComplete = false;
        failedParts.add("dead letters of " + s.getKey());
        failed("dead letters of " + s.getKey(), e);
      }
    }
    List<SubscriptionStatus> subscriptions = new ArrayList<>();
    for (SubscriptionStatusSource source : subscriptionSources) {
      try {
        List<SubscriptionStatus> read = source.read();
        for (SubscriptionStatus st : read) {
          if (subscriptions.size() < MAX_SUBSCRIPTIONS) {
            subscriptions.add(st);
          }
        }
      } catch (Exception e) {
        if (e instanceof InterruptedException) {
          Thread.currentThread().interrupt();
        }
        failedParts.add("subscriptions");
        failed("subscriptions", e);
      }
    }
    long total;
    if (deadLetterTotal != null) {
      try {
        total = deadLetterTotal.getAsLong();
      } catch (RuntimeException e) {
        failed("dead-letter total", e);
        failedParts.add("dead-letter total");
        total = -1;
      }
    } else {
      total = countsComplete ? sum : -1;
    }
    // One lock for record + verdict + append, so concurrent ticks keep the ring in time order.
    synchronized (this) {
      long backlog = -1;
      long age = -1;
      BacklogVerdict verdict = null;
      if (stats != null) {
        try {
          monitor.record(new BacklogSample(now, stats.unsent(), stats.oldestUnsentAge()));
        } catch (RuntimeException e) {
          // The clock stepped back behind the monitor's latest sample: no sample, a gap.
          failedReads++;
          logFailure("backlog verdict", e, failedReads);
          return false;
        }
        verdict = monitor.verdict();
        backlog = stats.unsent();
        age = stats.oldestUnsentAge().toMillis();
      }
      if (ring.size() == capacity) {
        ring.removeFirst();
        evicted++;
      }
      ring.addLast(new Sample(now, backlog, age, verdict, total, byGroup, subscriptions,
          failedParts));
    }
    return true;
  }

  private void failed(String what, Exception e) {
    long failed;
    synchronized (this) {
      failed = ++failedReads;
    }
    logFailure(what, e, failed);
  }

  private static void logFailure(String what, Exception e, long failed) {
    // The first failure and then one in a hundred: a database that stays down does not flood
    // the log once a second.
    if (failed == 1 || failed % 100 == 0) {
      LOG.log(System.Logger.Level.WARNING, "console history: read of " + what + " failed ("
          + failed + " failed reads so far): " + e);
    }
  }

  /** {@return the samples, oldest first (a copy)} */
  public synchronized List<Sample> samples() {
    return List.copyOf(ring);
  }

  /** {@return the latest sample, or null before the first} */
  public synchronized Sample latest() {
    return ring.peekLast();
  }

  /** {@return samples evicted because the ring was full} */
  public synchronized long evicted() {
    return evicted;
  }

  /** {@return reads that failed (a tick may count several)} */
  public synchronized long failedReads() {
    return failedReads;
  }

  /** {@return the most samples kept} */
  public int capacity() {
    return capacity;
  }

  /** {@return when this history started: it knows nothing before} */
  public Instant since() {
    return since;
  }

  /** {@return the names of the dead-letter stores it counts, in order} */
  public List<String> storeNames() {
    return List.copyOf(stores.keySet());
  }

  /**
   * Dead letters per minute at each sample: how much the total rose from the earliest sample at
   * most a minute older to this one (over the samples held: what happened before the oldest one is
   * not known, so the first minute undercounts); -1 where a total is unknown. O(n).
   *
   * @param samples oldest first
   * @return one value per sample, in the same order
   */
  public static long[] deadLettersPerMinute(List<Sample> samples) {
    long[] out = new long[samples.size()];
    int from = 0;
    for (int i = 0; i < samples.size(); i++) {
      Instant horizon = samples.get(i).at().minus(MINUTE);
      while (samples.get(from).at().isBefore(horizon)) {
        from++;
      }
      long now = samples.get(i).deadLetters();
      // The total at the window's first sample with a known total (the earliest no more than a
      // minute back).
      int k = from;
      while (k < i && samples.get(k).deadLetters() < 0) {
        k++;
      }
      long then = samples.get(k).deadLetters();
      out[i] = now < 0 || then < 0 ? -1 : Math.max(0, now - then);
    }
    return out;
  }

  /**
   * The history as a JSON-ready tree: {@code periodMs}, {@code since}, {@code capacity}, {@code
   * evicted}, {@code failedReads} and {@code samples} (each with {@code at}, {@code atMs}, {@code
   * backlog}, {@code oldestPendingMs}, {@code verdict}, {@code deadLetters}, {@code
   * deadLettersPerMinute}).
   *
   * @param period the sampling period, as reported
   * @return maps, lists, strings and numbers only
   */
  public Map<String, Object> json(Duration period) {
    List<Sample> s = samples();
    long[] perMinute = deadLettersPerMinute(s);
    List<Map<String, Object>> list = new ArrayList<>(s.size());
    for (int i = 0; i < s.size(); i++) {
      Sample x = s.get(i);
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("at", x.at().toString());
      m.put("atMs", x.at().toEpochMilli());
      m.put("backlog", x.backlog());
      m.put("oldestPendingMs", x.oldestPendingMs());
      m.put("verdict", x.verdict() == null ? null : x.verdict().name());
      m.put("deadLetters", x.deadLetters());
      m.put("deadLettersPerMinute", perMinute[i]);
      list.add(m);
    }
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("periodMs", period.toMillis());
    m.put("since", since.toString());
    m.put("capacity", capacity);
    m.put("evicted", evicted());
    m.put("failedReads", failedReads());
    m.put("samples", list);
    return m;
  }

  /**
   * The history as a chart with root id {@code history-svg}; see {@link #svg(String)}.
   *
   * @return SVG text
   */
  public String svg() {
    return svg("history-svg");
  }

  /**
   * The history as a chart: outbox backlog (with the verdict marked where it was first seen and
   * wherever it changed), oldest pending age and dead letters per minute over the samples held,
   * and, when subscriptions were read, their summed lag and in-flight work.
   *
   * @param id the chart's root id
   * @return SVG text
   */
  public String svg(String id) {
    List<Sample> s = samples();
    long[] perMinute = deadLettersPerMinute(s);
    List<TimeChart.Point> depth = new ArrayList<>(s.size());
    List<TimeChart.Point> age = new ArrayList<>(s.size());
    List<TimeChart.Point> dead = new ArrayList<>(s.size());
    List<TimeChart.Point> lag = new ArrayList<>(s.size());
    List<TimeChart.Point> inFlight = new ArrayList<>(s.size());
    boolean anySubscriptions = false;
    TimeChart.Builder chart = TimeChart.builder(id).width(860).panelHeight(110);
    BacklogVerdict last = null;
    for (int i = 0; i < s.size(); i++) {
      Sample x = s.get(i);
      long t = x.at().toEpochMilli();
      depth.add(new TimeChart.Point(t, x.backlog()));
      age.add(new TimeChart.Point(t, x.oldestPendingMs()));
      dead.add(new TimeChart.Point(t, perMinute[i]));
      long lagSum = sum(x, true);
      long inFlightSum = sum(x, false);
      anySubscriptions |= !x.subscriptions().isEmpty();
      lag.add(new TimeChart.Point(t, lagSum));
      inFlight.add(new TimeChart.Point(t, inFlightSum));
      if (x.verdict() != null && x.verdict() != last) {
        chart.mark(new TimeChart.Mark("verdict", color(x.verdict()), t, x.verdict().name(),
            Map.of("verdict", x.verdict().name())));
        last = x.verdict();
      }
    }
    if (s.size() >= 2) {
      long end = s.get(s.size() - 1).at().toEpochMilli();
      long start = s.get(0).at().toEpochMilli();
      // Ticks are a tenth of the span apart: whole seconds once that is at least 2 s, whole
      // minutes once it is at least 2 min.
      chart.timeRange(start, Math.max(end, start + 1)).timeLabel(t -> t >= end ? "now"
          : end - start >= 1_200_000 ? String.format(Locale.ROOT, "-%.0f min",
              (end - t) / 60_000.0)
          : String.format(Locale.ROOT, end - start >= 20_000 ? "-%.0f s" : "-%.1f s",
              (end - t) / 1000.0));
    }
    String verdict = last == null ? "no samples yet" : "verdict " + last.name();
    chart.panel("outbox backlog (" + verdict + ")",
            new TimeChart.Line("backlog", "#9467bd", "unsent rows", depth))
        .panel("oldest pending age (ms)",
            new TimeChart.Line("age", "#8c564b", "oldest unsent row", age))
        .panel("dead letters per minute",
            new TimeChart.Line("dead-letters", "#d62728", "dead-lettered in the last minute",
                dead));
    if (anySubscriptions) {
      chart.panel("consumer lag and in-flight (all subscriptions)",
          new TimeChart.Line("lag", "#1f77b4", "lag", lag),
          new TimeChart.Line("in-flight", "#ff7f0e", "in flight", inFlight));
    }
    return chart.build().svg();
  }

  /** The summed lag (or in-flight) of a sample; -1 when none is known. */
  private static long sum(Sample x, boolean lag) {
    long sum = -1;
    for (SubscriptionStatus st : x.subscriptions()) {
      long v = lag ? st.lag() : st.inFlight();
      if (v >= 0) {
        sum = Math.max(sum, 0) + v;
      }
    }
    return sum;
  }

  private static String color(BacklogVerdict v) {
    return switch (v) {
      case HEALTHY -> "#2ca02c";
      case DRAINING_SPIKE -> "#ff7f0e";
      default -> "#d62728";
    };
  }

  /** Configures a {@link ConsoleHistory}; every setting is optional. */
  public static final class Builder {
    private int capacity = DEFAULT_CAPACITY;
    private InstantSource clock = InstantSource.system();
    private BacklogMonitor monitor;
    private BacklogReader reader;
    private LongSupplier deadLetterTotal;
    private final Map<String, DeadLetterStore> stores = new LinkedHashMap<>();
    private final List<SubscriptionStatusSource> subscriptionSources = new ArrayList<>();

    private Builder() {}

    /**
     * Most samples kept; default {@value #DEFAULT_CAPACITY}.
     *
     * @param capacity 2 to 100 000
     * @return this builder
     * @throws IllegalArgumentException if {@code capacity} is out of range
     */
    public Builder capacity(int capacity) {
      if (capacity < 2 || capacity > 100_000) {
        throw new IllegalArgumentException("capacity must be in 2..100000, was " + capacity);
      }
      this.capacity = capacity;
      return this;
    }

    /**
     * The clock that stamps the samples and {@link #since()}; default the system's.
     *
     * @param clock the clock
     * @return this builder
     * @throws NullPointerException if {@code clock} is null
     */
    public Builder clock(InstantSource clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /**
     * The outbox backlog, judged by {@code monitor} (fed with every sample; its verdict is
     * recorded). Without it samples have no backlog.
     *
     * @param reader reads the backlog
     * @param monitor judges it
     * @return this builder
     * @throws NullPointerException if an argument is null
     */
    public Builder backlog(BacklogReader reader, BacklogMonitor monitor) {
      this.reader = Objects.requireNonNull(reader, "reader");
      this.monitor = Objects.requireNonNull(monitor, "monitor");
      return this;
    }

    /**
     * A running total of dead letters (a count of dead-lettering events) recorded as each
     * sample's {@code deadLetters} instead of the stores' sum.
     *
     * @param total the running total
     * @return this builder
     * @throws NullPointerException if {@code total} is null
     */
    public Builder deadLetterTotal(LongSupplier total) {
      this.deadLetterTotal = Objects.requireNonNull(total, "total");
      return this;
    }

    /**
     * A dead-letter store counted per destination and group at each sample.
     *
     * @param name the store's name as shown
     * @param store the store
     * @return this builder
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if a store of that name was already added
     */
    public Builder deadLetters(String name, DeadLetterStore store) {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(store, "store");
      if (stores.putIfAbsent(name, store) != null) {
        throw new IllegalArgumentException("dead-letter store " + name + " was already added");
      }
      return this;
    }

    /**
     * A source of subscription lag and in-flight figures, read at each sample.
     *
     * @param source the source
     * @return this builder
     * @throws NullPointerException if {@code source} is null
     */
    public Builder subscriptions(SubscriptionStatusSource source) {
      subscriptionSources.add(Objects.requireNonNull(source, "source"));
      return this;
    }

    /**
     * Builds the history; it starts empty, {@link #since()} now.
     *
     * @return the history
     */
    public ConsoleHistory build() {
      return new ConsoleHistory(this);
    }
  }
}
