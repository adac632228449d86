package io.relaykit.poller;

import java.util.concurrent.CompletableFuture;

/**
 * One running poll of a status URL, started by {@link StatusPoller#poll}. Thread-safe.
 */
public interface Poll {

  /**
   * Completes once with the outcome; never exceptionally.
   *
   * @return the future of this poll's outcome, the same on every call
   */
  CompletableFuture<PollOutcome> outcome();

  /**
   * Stops polling: no further request is sent, a request in flight is abandoned, and {@link
   * #outcome()} completes with {@link PollOutcome.Result#CANCELLED}.
   *
   * @return true if this call stopped the poll, false if it had already finished
   */
  boolean cancel();
}
