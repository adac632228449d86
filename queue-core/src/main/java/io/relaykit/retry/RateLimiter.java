package io.relaykit.retry;

import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.concurrent.locks.LockSupport;

/**
 * A token bucket that holds a sender or consumer to the pace its downstream can take ("at most 500
 * per second"): tokens accrue at {@code permitsPerSecond} up to {@code burst}; each permit takes
 * one. The bucket starts full, so a quiet caller may spend a whole burst at once.
 *
 * <pre>{@code
 * RateLimiter limiter = RateLimiter.builder().permitsPerSecond(500).burst(50).build();
 * limiter.acquire();            // parks until a token is due
 * if (limiter.tryAcquire()) {}  // never waits
 * }</pre>
 *
 * <p>Time comes from the injected {@link InstantSource}; if it steps back, no tokens accrue until it
 * passes its previous reading again. The rate is kept as a whole number of nanoseconds per permit
 * (so rates above 10^9/s are capped there). Every operation is O(1), allocation-light, under one
 * short lock. Thread-safe, not
 * fair: waiting {@link #acquire()} callers make no reservation, so whoever checks first after a
 * token is due takes it.
 */
public final class RateLimiter {

  private static final double MAX_CAPACITY_NANOS = 100 * 365.25 * 24 * 3600 * 1e9;

  private final double permitsPerSecond;
  private final int burst;
  /** The cost of one permit. */
  private final long nanosPerPermit;
  /** The bucket's capacity in time: {@code burst * nanosPerPermit}. */
  private final long capacityNanos;
  private final InstantSource clock;
  private final Instant origin;

  /*
   * Implementation note: instead of a fractional token count refilled on every call, the state is
   * the instant the bucket is full again (the "theoretical arrival time" of GCRA). Taking n permits
   * moves it n * nanosPerPermit later; a request fits if that leaves it at most capacityNanos
   * ahead of now. Integer nanoseconds make the waits exact: no rounding drift over a long run.
   */

  /** When the bucket is full again, in nanoseconds since {@link #origin}; guarded by this. */
  private long fullAt;
  /** The latest clock reading, so that a clock stepping back does not mint tokens. */
  private long lastNow;

  private RateLimiter(Builder b, long nanosPerPermit, int burst) {
    this.permitsPerSecond = b.permitsPerSecond;
    this.burst = burst;
    this.nanosPerPermit = nanosPerPermit;
    this.capacityNanos = burst * nanosPerPermit;
    this.clock = b.clock;
    this.origin = clock.instant();
  }

  /**
   * {@code permitsPerSecond} with a burst of one second's worth, on the system clock.
   *
   * @param permitsPerSecond the sustained rate; a finite number {@code > 0}
   * @return a new, full limiter
   * @throws IllegalArgumentException if {@code permitsPerSecond} is not a finite number {@code > 0}
   */
  public static RateLimiter perSecond(double permitsPerSecond) {
    return builder().permitsPerSecond(permitsPerSecond).build();
  }

  /**
   * A builder; {@link Builder#permitsPerSecond} is required.
   *
   * @return a new builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Takes one permit if one is available now.
   *
   * @return true if a permit was taken; false, taking nothing, if none is available now. Never
   *     waits
   */
  public boolean tryAcquire() {
    return tryAcquire(1);
  }

  /**
   * Takes {@code permits} permits if that many are available now; takes none otherwise.
   *
   * @param permits how many to take at once
   * @return true if they were taken; false, taking none, if fewer are available now. Never waits
   * @throws IllegalArgumentException if {@code permits} is less than 1 or more than the burst (it
   *     could never succeed)
   */
  public synchronized boolean tryAcquire(int permits) {
    checkPermits(permits);
    long now = now();
    long next = Math.max(fullAt, now) + permits * nanosPerPermit;
    if (next - now <= capacityNanos) {
      fullAt = next;
      return true;
    }
    return false;
  }

  /**
   * Takes one permit, parking until one is due.
   *
   * @throws InterruptedException if interrupted while parked; no permit is then taken
   */
  public void acquire() throws InterruptedException {
    acquire(1);
  }

  /**
   * Takes {@code permits} permits, parking until that many are due.
   *
   * @param permits how many to take at once
   * @throws IllegalArgumentException if {@code permits} is less than 1 or more than the burst
   * @throws InterruptedException if interrupted while parked; no permit is then taken
   */
  public void acquire(int permits) throws InterruptedException {
    checkPermits(permits);
    while (true) {
      long wait;
      synchronized (this) {
        if (tryAcquire(permits)) {
          return;
        }
        wait = waitNanos(now(), permits);
      }
      if (Thread.interrupted()) {
        throw new InterruptedException("interrupted while waiting for " + permits + " permit(s)");
      }
      LockSupport.parkNanos(this, wait);
      if (Thread.interrupted()) {
        throw new InterruptedException("interrupted while waiting for " + permits + " permit(s)");
      }
    }
  }

  /**
   * Nanoseconds until one permit is available; 0 if one is available now. Takes nothing.
   *
   * @return the wait in nanoseconds, {@code >= 0}
   */
  public long nanosUntilAvailable() {
    return nanosUntilAvailable(1);
  }

  /**
   * Nanoseconds until {@code permits} permits are available; 0 if they are now. Takes nothing.
   *
   * @param permits how many would be taken
   * @return the wait in nanoseconds, {@code >= 0}
   * @throws IllegalArgumentException if {@code permits} is less than 1 or more than the burst
   */
  public synchronized long nanosUntilAvailable(int permits) {
    checkPermits(permits);
    return waitNanos(now(), permits);
  }

  /**
   * Permits available now (whole ones).
   *
   * @return the whole permits available, between 0 and {@link #burst()}
   */
  public synchronized int availablePermits() {
    long now = now();
    long debt = Math.max(0, fullAt - now);
    return (int) ((capacityNanos - debt) / nanosPerPermit);
  }

  /**
   * The sustained rate this limiter was built with.
   *
   * @return permits per second, a finite number {@code > 0}
   */
  public double permitsPerSecond() {
    return permitsPerSecond;
  }

  /**
   * The most permits taken at once after a quiet spell.
   *
   * @return the bucket's size in permits, {@code >= 1}
   */
  public int burst() {
    return burst;
  }

  private long waitNanos(long now, int permits) {
    long wait = Math.max(fullAt, now) + permits * nanosPerPermit - capacityNanos - now;
    return Math.max(0, wait);
  }

  /** Nanoseconds since {@link #origin}, never less than the previous reading. */
  private long now() {
    Duration elapsed = Duration.between(origin, clock.instant());
    long n = elapsed.isNegative() ? 0 : saturatedNanos(elapsed);
    if (n > lastNow) {
      lastNow = n;
    }
    return lastNow;
  }

  private static long saturatedNanos(Duration d) {
    try {
      return d.toNanos();
    } catch (ArithmeticException e) {
      return Long.MAX_VALUE / 2;
    }
  }

  private void checkPermits(int permits) {
    if (permits < 1 || permits > burst) {
      throw new IllegalArgumentException(
          "permits must be between 1 and the burst (" + burst + "), was " + permits);
    }
  }

  private static int defaultBurst(double permitsPerSecond) {
    return (int) Math.max(1, Math.min(Integer.MAX_VALUE, Math.ceil(permitsPerSecond)));
  }

  @Override
  public String toString() {
    return "RateLimiter[" + permitsPerSecond + "/s, burst=" + burst + "]";
  }

  /** Configures a {@link RateLimiter}; {@link #build()} validates. */
  public static final class Builder {
    private double permitsPerSecond = Double.NaN;
    private Integer burst;
    private InstantSource clock = InstantSource.system();

    private Builder() {}

    /**
     * Required: the sustained rate, a finite number {@code > 0} (fractions allowed: 0.5 = one per 2 s).
     *
     * @param permitsPerSecond the rate; checked by {@link #build()}
     * @return this builder
     */
    public Builder permitsPerSecond(double permitsPerSecond) {
      this.permitsPerSecond = permitsPerSecond;
      return this;
    }

    /**
     * Most permits taken at once after a quiet spell; default one second's worth (at least 1).
     *
     * @param burst the bucket's size in permits; checked by {@link #build()}
     * @return this builder
     */
    public Builder burst(int burst) {
      this.burst = burst;
      return this;
    }

    /**
     * The time source; default the system clock.
     *
     * @param clock the time source; checked (not null) by {@link #build()}
     * @return this builder
     */
    public Builder clock(InstantSource clock) {
      this.clock = clock;
      return this;
    }

    /**
     * Checks the settings and builds the limiter.
     *
     * @return a new limiter, full
     * @throws IllegalArgumentException naming the field and value of an invalid setting
     */
    public RateLimiter build() {
      if (!(permitsPerSecond > 0) || Double.isInfinite(permitsPerSecond)) {
        throw new IllegalArgumentException(
            "permitsPerSecond must be a finite number > 0, was " + permitsPerSecond);
      }
      if (burst != null && burst < 1) {
        throw new IllegalArgumentException("burst must be >= 1, was " + burst);
      }
      if (clock == null) {
        throw new IllegalArgumentException("clock must not be null");
      }
      int b = burst != null ? burst : defaultBurst(permitsPerSecond);
      double perPermit = Math.max(1.0, Math.rint(1e9 / permitsPerSecond));
      if (perPermit * b > MAX_CAPACITY_NANOS) {
        throw new IllegalArgumentException("permitsPerSecond " + permitsPerSecond + " with burst "
            + b + " makes a bucket of more than 100 years; raise the rate or lower the burst");
      }
      return new RateLimiter(this, (long) perPermit, b);
    }
  }
}
