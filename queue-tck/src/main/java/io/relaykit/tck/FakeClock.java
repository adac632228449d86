package io.relaykit.tck;

import io.relaykit.queue.TimeSource;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;

/**
 * A settable {@link TimeSource} for tests: time moves only when the test moves it. It keeps the
 * two clocks of a time source apart: the wall clock ({@link #instant()}) and the monotonic reading
 * ({@link #nanoTime()}). {@link #advance} and {@link #set} move both, as elapsed time does; {@link
 * #stepWall} moves the wall clock alone, back or forward, as NTP or an operator does; {@link
 * #advanceMonotonic} moves the monotonic reading alone, as elapsed time during which the wall clock
 * was set back by as much would. Thread-safe; every read and move is atomic over both clocks.
 */
public final class FakeClock implements TimeSource {

  /** A fixed, readable starting point: 2026-01-01T00:00:00Z. */
  public static final Instant EPOCH = Instant.parse("2026-01-01T00:00:00Z");

  private Instant wall;
  /** Starts far from zero so that code that treats 0 as "unset" is caught. */
  private long nanos = 1_000_000_000_000L;

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
    this.wall = Objects.requireNonNull(start, "start");
  }

  @Override
  public synchronized Instant instant() {
    return wall;
  }

  @Override
  public synchronized long nanoTime() {
    return nanos;
  }

  /**
   * Moves time forward by {@code duration}, the wall clock and the monotonic reading alike, and
   * returns the new wall time. Atomic: concurrent advances add up.
   *
   * @param duration how far to move, zero or positive
   * @return the wall time after the move
   * @throws IllegalArgumentException if {@code duration} is negative: elapsed time does not go
   *     back (use {@link #stepWall} for a wall clock set back)
   */
  public synchronized Instant advance(Duration duration) {
    if (duration.isNegative()) {
      throw new IllegalArgumentException("duration must not be negative, was " + duration);
    }
    wall = wall.plus(duration);
    nanos += duration.toNanos();
    return wall;
  }

  /**
   * Sets the wall time, which must not be earlier than now; the monotonic reading moves by as
   * much (elapsed time).
   *
   * @param instant the new time; equal to the current time is allowed and changes nothing
   * @throws IllegalArgumentException if {@code instant} is before the current time
   */
  public synchronized void set(Instant instant) {
    if (instant.isBefore(wall)) {
      throw new IllegalArgumentException("time does not go back: " + instant + " < " + wall);
    }
    nanos += Duration.between(wall, instant).toNanos();
    wall = instant;
  }

  /**
   * Steps the wall clock alone by {@code step}, back (negative) or forward, as NTP, a resumed VM
   * or an operator does; the monotonic reading does not move.
   *
   * @param step how far to step the wall clock, either sign
   * @return the wall time after the step
   */
  public synchronized Instant stepWall(Duration step) {
    wall = wall.plus(step);
    return wall;
  }

  /**
   * Moves the monotonic reading alone forward by {@code elapsed}; the wall clock does not move
   * (time passed while the wall clock was held or set back by as much).
   *
   * @param elapsed how far, zero or positive
   * @return the monotonic reading after the move
   * @throws IllegalArgumentException if {@code elapsed} is negative: a monotonic clock never goes
   *     back
   */
  public synchronized long advanceMonotonic(Duration elapsed) {
    if (elapsed.isNegative()) {
      throw new IllegalArgumentException("a monotonic clock never goes back, was " + elapsed);
    }
    nanos += elapsed.toNanos();
    return nanos;
  }

  @Override
  public synchronized String toString() {
    return "FakeClock[" + wall + ", nanoTime " + nanos + "]";
  }
}
