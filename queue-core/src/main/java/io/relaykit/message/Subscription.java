package io.relaykit.message;

import java.time.Duration;

/**
 * A running consumer of one destination. Thread-safe.
 */
public interface Subscription extends AutoCloseable {

  /**
   * Graceful shutdown: stop taking new messages, let in-flight handlers finish up to {@code
   * deadline}, acknowledge or commit what finished, and close. Messages that did not finish are
   * not acknowledged and will be redelivered to the next consumer.
   *
   * @param deadline the longest wait for in-flight handlers
   * @return true if every in-flight handler finished before the deadline
   */
  boolean close(Duration deadline);

  /** {@link #close(Duration)} with a 30 second deadline. */
  @Override
  default void close() {
    close(Duration.ofSeconds(30));
  }

  /**
   * Whether the subscription is consuming (started and not closed or failed).
   *
   * @return false once closed, or once it stopped on an error it cannot recover from
   */
  boolean isRunning();
}
