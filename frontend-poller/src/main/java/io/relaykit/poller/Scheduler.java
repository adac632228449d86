package io.relaykit.poller;

import java.time.Duration;

/**
 * Runs a task after a delay. The poller's only way to wait, so tests can replace real waiting with
 * a fake clock that jumps ahead.
 */
@FunctionalInterface
public interface Scheduler {
  /**
   * Runs {@code task} once, {@code delay} from now, on the scheduler's own thread.
   *
   * @param delay how long to wait, zero or positive
   * @param task what to run then
   */
  void schedule(Duration delay, Runnable task);
}
