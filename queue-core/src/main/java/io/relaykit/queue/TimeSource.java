package io.relaykit.queue;

import io.relaykit.internal.Checks;
import java.time.Instant;
import java.time.InstantSource;

/**
 * The two clocks of the report queue: a wall-clock {@link #instant()} for what is stored or shown
 * (enqueue times, retry and expiry instants, the dedupe window's first-seen times), and a
 * monotonic {@link #nanoTime()} for every duration measured in this process (flush intervals, send
 * timeouts, pauses, backoffs of background work). The wall clock may step back or forward (NTP, a
 * suspended VM, an operator); the monotonic reading never goes back and only moves with elapsed
 * time, so no step of the wall clock makes a measured wait longer or shorter.
 *
 * <p>{@link #system()} reads {@link InstantSource#system()} and {@link System#nanoTime()}. Tests
 * pass queue-tck's {@code FakeClock}, which moves the two independently.
 */
public interface TimeSource extends InstantSource {

  /**
   * A monotonic reading in nanoseconds, as {@link System#nanoTime()}: only differences between
   * two readings of the same source mean anything.
   *
   * @return the reading
   */
  long nanoTime();

  /**
   * The system's wall clock and {@link System#nanoTime()}.
   *
   * @return the system time source
   */
  static TimeSource system() {
    return SystemTimeSource.INSTANCE;
  }

  /**
   * {@code wall} as a time source: itself when it is one, else its instants with {@link
   * System#nanoTime()} as the monotonic reading.
   *
   * @param wall the wall clock; not null
   * @return a time source reading {@code wall}
   * @throws NullPointerException if {@code wall} is null
   */
  static TimeSource of(InstantSource wall) {
    Checks.requireNonNull("clock", wall);
    if (wall instanceof TimeSource t) {
      return t;
    }
    return new TimeSource() {
      @Override
      public Instant instant() {
        return wall.instant();
      }

      @Override
      public long nanoTime() {
        return System.nanoTime();
      }

      @Override
      public String toString() {
        return "TimeSource[" + wall + ", System.nanoTime]";
      }
    };
  }
}

/** {@link TimeSource#system()}. */
final class SystemTimeSource implements TimeSource {
  static final SystemTimeSource INSTANCE = new SystemTimeSource();

  private SystemTimeSource() {
  }

  @Override
  public Instant instant() {
    return Instant.now();
  }

  @Override
  public long nanoTime() {
    return System.nanoTime();
  }

  @Override
  public String toString() {
    return "TimeSource.system()";
  }
}
