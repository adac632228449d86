package io.relaykit.poller;

import java.time.Duration;

/**
 * Runs a task after a delay. The poller's only way to wait, so tests can replace real waiting with
 * a fake clock that jumps ahead.
 */
@FunctionalInterface
public interface Scheduler {
  void schedule(Duration delay, Runnable task);
}
