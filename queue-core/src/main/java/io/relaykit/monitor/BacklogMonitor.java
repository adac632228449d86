package io.relaykit.monitor;

import io.relaykit.internal.Checks;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayDeque;
import java.util.List;

/**
 * Judges a backlog's shape from periodic samples of (time, depth, oldest age): is it {@linkplain
 * BacklogVerdict#HEALTHY healthy}, a {@linkplain BacklogVerdict#DRAINING_SPIKE spike being worked
 * off}, {@linkplain BacklogVerdict#SUSTAINED_GROWTH growing} or {@linkplain BacklogVerdict#STALLED
 * stalled}. Depth alone cannot tell a harmless burst from a dead consumer; the trend and the oldest
 * message's age can.
 *
 * <p>Feed it from a timer (every few seconds) with a queue's depth and oldest age, an outbox's
 * unsent count, or a consumer group's lag. It keeps the samples of the last {@link
 * Config#window()} (at most {@link Config#maxSamples()}), so memory is bounded; {@link #record} is
 * O(1) amortized and {@link #verdict()} O(samples in the window). Thread-safe.
 *
 * <h2>Rules</h2>
 * {@link BacklogVerdict#OVER_BOUND} whenever the latest depth is over {@link Config#maxDepth()};
 * otherwise, with at least {@link Config#minSamples()} samples in the window (fewer: {@link
 * BacklogVerdict#HEALTHY}, no evidence), checked in this order:
 * <ol>
 *   <li>{@link BacklogVerdict#STALLED}: over the latest run of samples in which the depth was above
 *       zero and never fell (at least {@code minSamples} of them), the oldest age rose by at least
 *       90% of the time that passed, never fell, and now is at least {@link Config#stallAge()}: the
 *       oldest message is not moving.
 *   <li>{@link BacklogVerdict#SUSTAINED_GROWTH}: the depth's least-squares trend is at least {@link
 *       Config#growthPerSecond()} in both the older and the newer half of the window: it keeps
 *       rising, it did not just step up once.
 *   <li>{@link BacklogVerdict#DRAINING_SPIKE}: the latest depth is at least {@link
 *       Config#highDepth()} and its trend over the newer half of the window is downward.
 *   <li>otherwise {@link BacklogVerdict#HEALTHY}.
 * </ol>
 */
public final class BacklogMonitor {

  /** How much of the elapsed time the oldest age must gain for the head to count as not moving. */
  private static final double STALL_AGE_RATIO = 0.9;

  private final Config config;
  private final InstantSource clock;
  private final ArrayDeque<BacklogSample> samples = new ArrayDeque<>();

  /**
   * A monitor whose {@link #record(long, Duration)} stamps samples with the system clock.
   *
   * @param config the thresholds; not null
   * @throws IllegalArgumentException if {@code config} is null
   */
  public BacklogMonitor(Config config) {
    this(config, InstantSource.system());
  }

  /**
   * A monitor whose {@link #record(long, Duration)} stamps samples with {@code clock}.
   *
   * @param config the thresholds; not null
   * @param clock the source of the timestamps {@link #record(long, Duration)} stamps; not null
   * @throws IllegalArgumentException if {@code config} or {@code clock} is null
   */
  public BacklogMonitor(Config config, InstantSource clock) {
    this.config = Checks.requireNonNull("config", config);
    this.clock = Checks.requireNonNull("clock", clock);
  }

  /**
   * Adds a sample and forgets those that fell out of the window.
   *
   * @param sample the observation; its time must not be before the latest sample's
   * @throws IllegalArgumentException if {@code sample} is null or older than the latest sample
   */
  public synchronized void record(BacklogSample sample) {
    Checks.requireNonNull("sample", sample);
    BacklogSample latest = samples.peekLast();
    if (latest != null && sample.at().isBefore(latest.at())) {
      throw new IllegalArgumentException("sample at " + sample.at()
          + " is older than the latest sample at " + latest.at());
    }
    samples.addLast(sample);
    Instant horizon = sample.at().minus(config.window());
    while (samples.size() > config.maxSamples() || samples.peekFirst().at().isBefore(horizon)) {
      samples.removeFirst();
    }
  }

  /**
   * Adds a sample taken now by the monitor's clock.
   *
   * @param depth messages waiting, {@code >= 0}
   * @param oldestAge how long the oldest waiting message has waited; not negative
   * @throws IllegalArgumentException if {@code oldestAge} is null or negative, {@code depth} is
   *     negative, or the clock went back behind the latest sample
   */
  public void record(long depth, Duration oldestAge) {
    record(new BacklogSample(clock.instant(), depth, oldestAge));
  }

  /**
   * The backlog's shape over the window, by the rules in the class comment.
   *
   * @return the verdict; {@link BacklogVerdict#HEALTHY} while fewer than {@code minSamples} samples
   *     are in the window
   */
  public synchronized BacklogVerdict verdict() {
    return judge(samples.toArray(new BacklogSample[0]));
  }

  /**
   * The verdict together with the latest numbers and the trend.
   *
   * @return the verdict, the latest sample's numbers (time null, zeros when there is none), how
   *     many samples the window holds, the span they cover and the depth trend per second
   */
  public synchronized BacklogSnapshot snapshot() {
    BacklogSample[] s = samples.toArray(new BacklogSample[0]);
    if (s.length == 0) {
      return new BacklogSnapshot(BacklogVerdict.HEALTHY, null, 0, Duration.ZERO, 0, Duration.ZERO,
          0.0);
    }
    BacklogSample last = s[s.length - 1];
    return new BacklogSnapshot(judge(s), last.at(), last.depth(), last.oldestAge(), s.length,
        Duration.between(s[0].at(), last.at()), slope(s, 0, s.length));
  }

  /**
   * The samples in the window, oldest first.
   *
   * @return an immutable copy, at most {@link Config#maxSamples()} long
   */
  public synchronized List<BacklogSample> samples() {
    return List.copyOf(samples);
  }

  /**
   * The thresholds this monitor judges by.
   *
   * @return the config given at construction
   */
  public Config config() {
    return config;
  }

  private BacklogVerdict judge(BacklogSample[] s) {
    int n = s.length;
    if (n > 0 && s[n - 1].depth() > config.maxDepth()) {
      return BacklogVerdict.OVER_BOUND;
    }
    if (n < config.minSamples()) {
      return BacklogVerdict.HEALTHY;
    }
    if (stalled(s)) {
      return BacklogVerdict.STALLED;
    }
    int mid = (n - 1) / 2;
    double older = slope(s, 0, mid + 1);
    double newer = slope(s, mid, n);
    if (older >= config.growthPerSecond() && newer >= config.growthPerSecond()) {
      return BacklogVerdict.SUSTAINED_GROWTH;
    }
    if (s[n - 1].depth() >= config.highDepth() && newer < 0) {
      return BacklogVerdict.DRAINING_SPIKE;
    }
    return BacklogVerdict.HEALTHY;
  }

  private boolean stalled(BacklogSample[] s) {
    int end = s.length - 1;
    BacklogSample last = s[end];
    if (last.depth() == 0 || last.oldestAge().compareTo(config.stallAge()) < 0) {
      return false;
    }
    int start = end;
    while (start > 0) {
      BacklogSample prev = s[start - 1];
      BacklogSample cur = s[start];
      if (prev.depth() == 0 || prev.depth() > cur.depth()
          || prev.oldestAge().compareTo(cur.oldestAge()) > 0) {
        break;
      }
      start--;
    }
    if (end - start + 1 < config.minSamples()) {
      return false;
    }
    long elapsed = Duration.between(s[start].at(), last.at()).toMillis();
    long gained = last.oldestAge().minus(s[start].oldestAge()).toMillis();
    return elapsed > 0 && gained >= STALL_AGE_RATIO * elapsed;
  }

  /** Least-squares slope of depth over time, per second, for samples {@code [from, to)}. */
  private static double slope(BacklogSample[] s, int from, int to) {
    int n = to - from;
    if (n < 2) {
      return 0.0;
    }
    Instant origin = s[from].at();
    double sumX = 0;
    double sumY = 0;
    for (int i = from; i < to; i++) {
      sumX += seconds(origin, s[i].at());
      sumY += s[i].depth();
    }
    double meanX = sumX / n;
    double meanY = sumY / n;
    double num = 0;
    double den = 0;
    for (int i = from; i < to; i++) {
      double dx = seconds(origin, s[i].at()) - meanX;
      num += dx * (s[i].depth() - meanY);
      den += dx * dx;
    }
    return den == 0 ? 0.0 : num / den;
  }

  private static double seconds(Instant from, Instant to) {
    return Duration.between(from, to).toNanos() / 1e9;
  }

  @Override
  public synchronized String toString() {
    return "BacklogMonitor[samples=" + samples.size() + ", " + config + "]";
  }

  /**
   * A {@link BacklogMonitor}'s thresholds. Immutable; build with {@link #builder()}.
   *
   * @param window how far back samples count (default 5 minutes)
   * @param minSamples fewest samples for any verdict other than HEALTHY, and for a stall (default
   *     5, at least 3)
   * @param maxSamples most samples kept, whatever the window (default 600)
   * @param growthPerSecond the depth trend, in messages per second, that counts as growth (default
   *     1.0)
   * @param highDepth the depth from which a falling backlog is a draining spike (default 1000)
   * @param stallAge the oldest age from which a non-moving head is a stall (default 1 minute)
   * @param maxDepth the bound: a latest depth above it is {@link BacklogVerdict#OVER_BOUND}
   *     (default {@link Long#MAX_VALUE}, no bound)
   */
  public record Config(
      Duration window,
      int minSamples,
      int maxSamples,
      double growthPerSecond,
      long highDepth,
      Duration stallAge,
      long maxDepth) {

    /**
     * A config without a bound ({@code maxDepth} {@link Long#MAX_VALUE}).
     *
     * @param window how far back samples count; positive
     * @param minSamples fewest samples for a verdict other than HEALTHY; at least 3
     * @param maxSamples most samples kept; at least {@code minSamples}
     * @param growthPerSecond the depth trend that counts as growth; finite and {@code > 0}
     * @param highDepth the depth from which a falling backlog is a draining spike; {@code >= 1}
     * @param stallAge the oldest age from which a non-moving head is a stall; positive
     * @throws IllegalArgumentException naming the first invalid component and its value
     */
    public Config(Duration window, int minSamples, int maxSamples, double growthPerSecond,
        long highDepth, Duration stallAge) {
      this(window, minSamples, maxSamples, growthPerSecond, highDepth, stallAge, Long.MAX_VALUE);
    }

    /**
     * Validates; prefer {@link #builder()}.
     *
     * @param window how far back samples count; positive
     * @param minSamples fewest samples for a verdict other than HEALTHY; at least 3
     * @param maxSamples most samples kept; at least {@code minSamples}
     * @param growthPerSecond the depth trend that counts as growth; finite and {@code > 0}
     * @param highDepth the depth from which a falling backlog is a draining spike; {@code >= 1}
     * @param stallAge the oldest age from which a non-moving head is a stall; positive
     * @param maxDepth the bound for {@link BacklogVerdict#OVER_BOUND}; {@code >= 1}
     * @throws IllegalArgumentException naming the first invalid component and its value
     */
    public Config {
      Checks.requirePositive("window", window);
      if (minSamples < 3) {
        throw new IllegalArgumentException("minSamples must be >= 3, was " + minSamples);
      }
      if (maxSamples < minSamples) {
        throw new IllegalArgumentException(
            "maxSamples must be >= minSamples (" + minSamples + "), was " + maxSamples);
      }
      if (!(growthPerSecond > 0) || Double.isInfinite(growthPerSecond)) {
        throw new IllegalArgumentException(
            "growthPerSecond must be a finite number > 0, was " + growthPerSecond);
      }
      Checks.requirePositive("highDepth", highDepth);
      Checks.requirePositive("stallAge", stallAge);
      Checks.requirePositive("maxDepth", maxDepth);
    }

    /**
     * A builder holding every default; see the record's components for them.
     *
     * @return a new builder
     */
    public static Builder builder() {
      return new Builder();
    }

    /**
     * All defaults.
     *
     * @return the config of a new {@link #builder()}, built unchanged
     */
    public static Config defaults() {
      return builder().build();
    }

    /** Builds a {@link Config}; {@link #build()} validates, naming the field and the value. */
    public static final class Builder {
      private Duration window = Duration.ofMinutes(5);
      private int minSamples = 5;
      private int maxSamples = 600;
      private double growthPerSecond = 1.0;
      private long highDepth = 1000;
      private Duration stallAge = Duration.ofMinutes(1);
      private long maxDepth = Long.MAX_VALUE;

      private Builder() {}

      /**
       * The bound over which the verdict is OVER_BOUND. Default none.
       *
       * @param maxDepth the bound; checked ({@code >= 1}) by {@link #build()}
       * @return this builder
       */
      public Builder maxDepth(long maxDepth) {
        this.maxDepth = maxDepth;
        return this;
      }

      /**
       * Sets how far back samples count. Default 5 minutes.
       *
       * @param window the window; checked (positive) by {@link #build()}
       * @return this builder
       */
      public Builder window(Duration window) {
        this.window = window;
        return this;
      }

      /**
       * Sets the fewest samples for a verdict other than HEALTHY. Default 5.
       *
       * @param minSamples the count; checked (at least 3) by {@link #build()}
       * @return this builder
       */
      public Builder minSamples(int minSamples) {
        this.minSamples = minSamples;
        return this;
      }

      /**
       * Sets the most samples kept whatever the window, which bounds memory. Default 600.
       *
       * @param maxSamples the count; checked (at least {@code minSamples}) by {@link #build()}
       * @return this builder
       */
      public Builder maxSamples(int maxSamples) {
        this.maxSamples = maxSamples;
        return this;
      }

      /**
       * Sets the depth trend, in messages per second, that counts as growth. Default 1.0.
       *
       * @param growthPerSecond the trend; checked (finite, {@code > 0}) by {@link #build()}
       * @return this builder
       */
      public Builder growthPerSecond(double growthPerSecond) {
        this.growthPerSecond = growthPerSecond;
        return this;
      }

      /**
       * Sets the depth from which a falling backlog is a draining spike. Default 1000.
       *
       * @param highDepth the depth; checked ({@code >= 1}) by {@link #build()}
       * @return this builder
       */
      public Builder highDepth(long highDepth) {
        this.highDepth = highDepth;
        return this;
      }

      /**
       * Sets the oldest age from which a non-moving head is a stall. Default 1 minute.
       *
       * @param stallAge the age; checked (positive) by {@link #build()}
       * @return this builder
       */
      public Builder stallAge(Duration stallAge) {
        this.stallAge = stallAge;
        return this;
      }

      /**
       * Checks the settings and builds the config.
       *
       * @return a new, validated config
       * @throws IllegalArgumentException naming the invalid field and its value
       */
      public Config build() {
        return new Config(window, minSamples, maxSamples, growthPerSecond, highDepth, stallAge,
            maxDepth);
      }
    }
  }
}
