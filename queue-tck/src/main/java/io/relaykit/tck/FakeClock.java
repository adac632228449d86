package io.relaykit.tck;

import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A settable {@link InstantSource} for tests: time moves only when the test moves it. Thread-safe;
 * {@link #instant()} is a volatile read.
 */
public final class FakeClock implements InstantSource {

  /** A fixed, readable starting point: 2026-01-01T00:00:00Z. */
  public static final Instant EPOCH = Instant.parse("2026-01-01T00:00:00Z");

  private final AtomicReference<Instant> now;

  /** A clock at {@link #EPOCH}. */
  public FakeClock() {
    this(EPOCH);
  }

  /**
   * A clock at {@code start}.
   *
   * @param start the initial time
   * @throws NullPointerException if {@code start} is null
   */
  public FakeClock(Instant start) {
    this.now = new AtomicReference<>(Objects.requireNonNull(start, "start"));
  }

  @Override
  public Instant instant() {
    return now.get();
  }

  /**
   * Moves time forward by {@code duration} and returns the new time. Atomic: concurrent advances
   * add up.
   *
   * @param duration how far to move, zero or positive
   * @return the time after the move
   * @throws IllegalArgumentException if {@code duration} is negative: time does not go back
   */
  public Instant advance(Duration duration) {
    if (duration.isNegative()) {
      throw new IllegalArgumentException("duration must not be negative, was " + duration);
    }
    return now.updateAndGet(t -> t.plus(duration));
  }

  /**
   * Sets the time, which must not be earlier than now.
   *
   * @param instant the new time; equal to the current time is allowed and changes nothing
   * @throws IllegalArgumentException if {@code instant} is before the current time
   */
  public void set(Instant instant) {
    now.updateAndGet(t -> {
      if (instant.isBefore(t)) {
        throw new IllegalArgumentException("time does not go back: " + instant + " < " + t);
      }
      return instant;
    });
  }

  @Override
  public String toString() {
    return "FakeClock[" + now.get() + "]";
  }
}
