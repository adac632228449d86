package io.relaykit.queue;

import java.util.List;

/**
 * Sends one batch of report events to the server and says, per event, what became of it. Called
 * by a {@link ReportDispatcher} from its sender threads, at most {@code maxInFlightBatches} at a
 * time.
 *
 * <p>An event the result does not mention is retried, and a {@link RuntimeException} thrown from
 * {@link #send} retries the whole batch: nothing is lost because a sender forgot an event.
 */
@FunctionalInterface
public interface BatchSender {

  /** Sends {@code batch} (never empty) and reports the outcome of each event. */
  BatchResult send(List<QueuedEvent> batch);
}
