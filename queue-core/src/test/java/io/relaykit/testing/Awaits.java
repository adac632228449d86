package io.relaykit.testing;

import java.time.Duration;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * Waits for a condition with a deadline, polling with a short growing pause: queue-core's tests
 * cannot see queue-tck's Await, and never sleep for a fixed time hoping work is done.
 */
public final class Awaits {
  private Awaits() {}

  public static void until(Duration timeout, String description, BooleanSupplier condition) {
    long start = System.nanoTime();
    long deadline = start + timeout.toNanos();
    long pause = 100_000L;
    while (!condition.getAsBoolean()) {
      long now = System.nanoTime();
      if (now - deadline >= 0) {
        throw new AssertionError("timed out after " + Duration.ofNanos(now - start).toMillis()
            + " ms waiting for: " + description);
      }
      LockSupport.parkNanos(Math.min(pause, deadline - now));
      if (Thread.currentThread().isInterrupted()) {
        throw new AssertionError("interrupted while waiting for: " + description);
      }
      pause = Math.min(pause * 2, 20_000_000L);
    }
  }

  /** Waits until {@code thread} is parked or blocked (waiting on a lock, condition or park). */
  public static void untilBlocked(Thread thread) {
    until(Duration.ofSeconds(10), thread.getName() + " blocks", () -> {
      Thread.State s = thread.getState();
      return s == Thread.State.WAITING || s == Thread.State.TIMED_WAITING
          || s == Thread.State.BLOCKED;
    });
  }
}
