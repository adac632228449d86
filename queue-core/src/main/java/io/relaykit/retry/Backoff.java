package io.relaykit.retry;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Supplier;
import java.util.random.RandomGenerator;

/**
 * Capped exponential backoff with optional jitter: the wait before retry number {@code attempt}.
 *
 * <p>{@code delay(attempt) = jitter(min(max, initial * multiplier^(attempt - 1)))}; attempts count
 * from 1 (the wait after the first failure). The cap is applied before the jitter, so jitter still
 * spreads retries once the cap is reached. Instances are immutable and thread-safe; {@link
 * #delay(int)} is O(1), allocation-free apart from the returned {@link Duration}, and never
 * overflows (a delay saturates at the cap, or at {@code Long.MAX_VALUE} nanoseconds when uncapped).
 *
 * <pre>{@code
 * Backoff backoff = Backoff.exponential(Duration.ofMillis(200))
 *     .withMax(Duration.ofSeconds(30))
 *     .withJitter(Jitter.FULL);
 * }</pre>
 */
public final class Backoff {

  private static final Supplier<RandomGenerator> THREAD_LOCAL = ThreadLocalRandom::current;

  private final long initialNanos;
  private final double multiplier;
  private final long maxNanos;
  private final Jitter jitter;
  private final Supplier<RandomGenerator> random;

  private Backoff(
      long initialNanos,
      double multiplier,
      long maxNanos,
      Jitter jitter,
      Supplier<RandomGenerator> random) {
    this.initialNanos = initialNanos;
    this.multiplier = multiplier;
    this.maxNanos = maxNanos;
    this.jitter = jitter;
    this.random = random;
  }

  /**
   * Doubling delays from {@code initial}: {@code initial, 2*initial, 4*initial, ...}, uncapped and
   * without jitter.
   *
   * @param initial the first delay; positive
   * @return an immutable backoff; {@link #delay(int)} costs O(1)
   * @throws IllegalArgumentException if {@code initial} is null, zero or negative
   */
  public static Backoff exponential(Duration initial) {
    return exponential(initial, 2.0);
  }

  /**
   * Delays growing by {@code multiplier} from {@code initial}, uncapped and without jitter.
   *
   * @param initial the first delay; positive
   * @param multiplier the growth factor between consecutive delays; 1.0 gives fixed delays
   * @return an immutable backoff
   * @throws IllegalArgumentException if {@code initial} is not positive or {@code multiplier} is
   *     not a finite number {@code >= 1}
   */
  public static Backoff exponential(Duration initial, double multiplier) {
    long nanos = positiveNanos("initial", initial);
    if (!(multiplier >= 1.0) || Double.isInfinite(multiplier)) {
      throw new IllegalArgumentException(
          "multiplier must be a finite number >= 1, was " + multiplier);
    }
    return new Backoff(nanos, multiplier, Long.MAX_VALUE, Jitter.NONE, THREAD_LOCAL);
  }

  /**
   * The same delay for every attempt.
   *
   * @param delay the delay; positive
   * @return an immutable backoff, capped at {@code delay}
   * @throws IllegalArgumentException if {@code delay} is not positive
   */
  public static Backoff fixed(Duration delay) {
    long nanos = positiveNanos("delay", delay);
    return new Backoff(nanos, 1.0, nanos, Jitter.NONE, THREAD_LOCAL);
  }

  /**
   * This backoff with delays capped at {@code max} (before jitter).
   *
   * @param max the cap; positive and at least the initial delay
   * @return a new backoff; this one is unchanged
   * @throws IllegalArgumentException if {@code max} is not positive or is less than the initial
   *     delay
   */
  public Backoff withMax(Duration max) {
    long nanos = positiveNanos("max", max);
    if (nanos < initialNanos) {
      throw new IllegalArgumentException(
          "max must be >= initial (" + Duration.ofNanos(initialNanos) + "), was " + max);
    }
    return new Backoff(initialNanos, multiplier, nanos, jitter, random);
  }

  /**
   * This backoff with {@code jitter} applied after the cap.
   *
   * @param jitter how to spread each capped delay
   * @return a new backoff; this one is unchanged
   * @throws IllegalArgumentException if {@code jitter} is null
   */
  public Backoff withJitter(Jitter jitter) {
    if (jitter == null) {
      throw new IllegalArgumentException("jitter must not be null");
    }
    return new Backoff(initialNanos, multiplier, maxNanos, jitter, random);
  }

  /**
   * This backoff drawing jitter from {@code random}, for deterministic tests. The generator is used
   * from whatever thread calls {@link #delay(int)}: pass a thread-safe one if it is shared.
   *
   * @param random the generator jitter draws from; used as is, never copied
   * @return a new backoff; this one is unchanged
   * @throws IllegalArgumentException if {@code random} is null
   */
  public Backoff withRandom(RandomGenerator random) {
    if (random == null) {
      throw new IllegalArgumentException("random must not be null");
    }
    return new Backoff(initialNanos, multiplier, maxNanos, jitter, () -> random);
  }

  /**
   * The wait before retry number {@code attempt}.
   *
   * @param attempt the retry number, counting from 1
   * @return the delay, at most the cap (the jitter only shortens it); never negative
   * @throws IllegalArgumentException if {@code attempt < 1}
   */
  public Duration delay(int attempt) {
    if (attempt < 1) {
      throw new IllegalArgumentException("attempt must be >= 1, was " + attempt);
    }
    long capped = cappedNanos(attempt);
    switch (jitter) {
      case NONE:
        return Duration.ofNanos(capped);
      case FULL:
        return Duration.ofNanos(uniform(capped));
      case EQUAL:
        long half = capped / 2;
        return Duration.ofNanos(half + uniform(capped - half));
      default:
        throw new AssertionError(jitter);
    }
  }

  /** Uniform in {@code [0, bound]}, inclusive. */
  private long uniform(long bound) {
    if (bound == 0) {
      return 0;
    }
    return random.get().nextLong(bound == Long.MAX_VALUE ? bound : bound + 1);
  }

  /**
   * The cap applied before jitter; {@code null} when uncapped.
   *
   * @return the cap, or null
   */
  public Duration max() {
    return maxNanos == Long.MAX_VALUE ? null : Duration.ofNanos(maxNanos);
  }

  /**
   * The delay of the first retry, before jitter.
   *
   * @return the initial delay; positive
   */
  public Duration initial() {
    return Duration.ofNanos(initialNanos);
  }

  /**
   * How delays are spread after the cap.
   *
   * @return the jitter; {@link Jitter#NONE} unless {@link #withJitter} set another
   */
  public Jitter jitter() {
    return jitter;
  }

  private long cappedNanos(int attempt) {
    double raw = initialNanos * Math.pow(multiplier, attempt - 1);
    if (raw >= maxNanos || Double.isInfinite(raw)) {
      return maxNanos;
    }
    return (long) raw;
  }

  private static long positiveNanos(String field, Duration value) {
    if (value == null || value.isZero() || value.isNegative()) {
      throw new IllegalArgumentException(field + " must be a positive duration, was " + value);
    }
    try {
      return value.toNanos();
    } catch (ArithmeticException e) {
      return Long.MAX_VALUE;
    }
  }

  @Override
  public String toString() {
    return "Backoff[initial=" + Duration.ofNanos(initialNanos)
        + ", multiplier=" + multiplier
        + ", max=" + (maxNanos == Long.MAX_VALUE ? "none" : Duration.ofNanos(maxNanos))
        + ", jitter=" + jitter + "]";
  }
}
