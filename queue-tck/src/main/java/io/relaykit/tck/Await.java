package io.relaykit.tck;

import java.time.Duration;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * Waits for a condition with a deadline, for tests that involve real time (a broker, a child
 * process). Polls with a short, growing pause; never a fixed sleep that hopes the work is done.
 */
public final class Await {
  private Await() {}

  /**
   * Returns as soon as {@code condition} holds; fails with {@code description} and the elapsed time
   * if it does not hold within {@code timeout}. The condition is polled on the calling thread,
   * first at once, then with pauses growing from 1 ms to 50 ms, so a condition that turns true is
   * seen within about 50 ms.
   *
   * @param timeout how long to wait at most
   * @param description what is awaited, for the failure message
   * @param condition polled until it returns true; an exception it throws propagates
   * @throws AssertionError if the condition does not hold in time, or the thread is interrupted
   *     (the interrupt flag is kept)
   */
  public static void until(Duration timeout, String description, BooleanSupplier condition) {
    long start = System.nanoTime();
    long deadline = start + timeout.toNanos();
    long pauseNanos = 1_000_000L;
    while (true) {
      if (condition.getAsBoolean()) {
        return;
      }
      long now = System.nanoTime();
      if (now - deadline >= 0) {
        throw new AssertionError("timed out after " + Duration.ofNanos(now - start).toMillis()
            + " ms waiting for: " + description);
      }
      LockSupport.parkNanos(Math.min(pauseNanos, deadline - now));
      if (Thread.interrupted()) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted while waiting for: " + description);
      }
      pauseNanos = Math.min(pauseNanos * 2, 50_000_000L);
    }
  }

  /**
   * Checks that {@code condition} keeps holding for the whole of {@code window}, for assertions of
   * absence ("B is not delivered while A holds the only in-flight slot"); fails as soon as it does
   * not. The window is a bound on how long a wrong implementation gets to show itself, not a wait
   * for work to finish.
   *
   * @param window how long the condition must keep holding; the call takes this long when it does
   * @param description what must hold, for the failure message
   * @param condition polled throughout the window
   * @throws AssertionError as soon as the condition is false, or if the thread is interrupted
   */
  public static void holds(Duration window, String description, BooleanSupplier condition) {
    long end = System.nanoTime() + window.toNanos();
    boolean[] broken = new boolean[1];
    until(window.plusSeconds(5), description, () -> {
      if (!condition.getAsBoolean()) {
        broken[0] = true;
        return true;
      }
      return System.nanoTime() - end >= 0;
    });
    if (broken[0]) {
      throw new AssertionError("no longer holds: " + description);
    }
  }

  /**
   * Waits until {@code duration} has passed on this JVM's monotonic clock. Only for the time hooks
   * of contract kits ({@code advance(Duration)}) on backends whose expiry runs on server time
   * (Redis {@code PX}, a database's {@code now()}), where time cannot be faked: never use it to wait
   * for work to finish, use {@link #until} with the condition instead.
   *
   * @param duration how long to wait
   * @throws AssertionError if the thread is interrupted
   */
  public static void elapsed(Duration duration) {
    long end = System.nanoTime() + duration.toNanos();
    until(duration.plusSeconds(5), duration + " to pass", () -> System.nanoTime() - end >= 0);
  }

  /**
   * Like {@link #until}, and describes the last value seen when it fails: {@code value} is polled
   * until {@code condition} accepts it.
   *
   * @param <T> the type of the polled value
   * @param timeout how long to wait at most
   * @param description what is awaited, for the failure message
   * @param value polled until the condition accepts what it returns
   * @param condition tests each polled value
   * @return the first value the condition accepted
   * @throws AssertionError if no value is accepted in time, naming the last value seen
   */
  public static <T> T value(Duration timeout, String description, Supplier<T> value,
      java.util.function.Predicate<T> condition) {
    Object[] last = new Object[1];
    try {
      until(timeout, description, () -> {
        T v = value.get();
        last[0] = v;
        return condition.test(v);
      });
    } catch (AssertionError e) {
      throw new AssertionError(e.getMessage() + " (last value: " + last[0] + ")", e);
    }
    @SuppressWarnings("unchecked")
    T result = (T) last[0];
    return result;
  }
}
