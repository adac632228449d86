package io.relaykit.monitor;

import io.relaykit.internal.Checks;
import java.time.Instant;

/**
 * One step in a message's life, as seen by a {@link LifecycleListener}.
 *
 * @param stage what happened
 * @param messageId the message (or report event) id
 * @param traceId the trace id carried with it; null for report events, which have none
 * @param where the component or destination where it happened ({@code "outbox-relay"}, a topic)
 * @param at when it happened, by the reporting component's clock
 * @param detail a reason or position ("attempts exhausted (5 of 5): ...", "orders-3@1042"); may be
 *     empty, never a payload
 */
public record LifecycleEvent(
    Stage stage, String messageId, String traceId, String where, Instant at, String detail) {

  /**
   * Checks the components; a null {@code detail} becomes {@code ""}.
   *
   * @param stage what happened; not null
   * @param messageId the message id; not blank
   * @param traceId the trace id, or null when there is none
   * @param where where it happened; not blank
   * @param at when it happened; not null
   * @param detail a reason or position; null means empty
   * @throws IllegalArgumentException if {@code stage} or {@code at} is null, or {@code messageId}
   *     or {@code where} is null or blank
   */
  public LifecycleEvent {
    Checks.requireNonNull("stage", stage);
    Checks.requireNonBlank("messageId", messageId);
    Checks.requireNonBlank("where", where);
    Checks.requireNonNull("at", at);
    detail = detail == null ? "" : detail;
  }

  /** The steps of a message's life. */
  public enum Stage {
    /** Accepted into a queue or outbox. */
    ENQUEUED,
    /** Handed to the transport. */
    PUBLISHED,
    /** The broker confirmed it durably holds the message. */
    CONFIRMED,
    /** Given to a handler (or a batch sender). */
    DELIVERED,
    /** The handler or receiver finished it; it will not be delivered again. */
    ACKED,
    /** An attempt failed; another is scheduled. */
    RETRIED,
    /** Given up: moved to dead letters with a reason. */
    DEAD_LETTERED,
    /** Discarded for capacity before delivery. */
    DROPPED,
    /** Discarded because its expiry passed before delivery. */
    EXPIRED,
    /** Taken out of dead letters and sent again. */
    REPLAYED
  }
}
