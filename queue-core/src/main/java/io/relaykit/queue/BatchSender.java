package io.relaykit.queue;

import java.util.List;

/**
 * Sends one batch of report events to the server and says, per event, what became of it. Called
 * by a {@link ReportDispatcher} from its sender threads, at most {@code maxInFlightBatches} at a
 * time.
 *
 * <p>An event the result does not mention is retried, and anything thrown from {@link #send} (a
 * runtime exception, an {@link Error}, a checked exception thrown sneakily) retries the whole
 * batch: nothing is lost or stranded because a sender forgot an event or failed. A send that does
 * not return within the dispatcher's {@code sendTimeout} is given up and its events retried; its
 * answer, when it comes, is ignored.
 */
@FunctionalInterface
public interface BatchSender {

  /**
   * Sends {@code batch} (never empty) and reports the outcome of each event.
   *
   * @param batch the events, in drain order; never empty
   * @return the outcome of each event; an event it leaves out is retried
   */
  BatchResult send(List<QueuedEvent> batch);
}
