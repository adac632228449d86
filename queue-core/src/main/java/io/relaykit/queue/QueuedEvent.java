package io.relaykit.queue;

import io.relaykit.internal.Checks;
import io.relaykit.internal.Utf8;
import java.time.Instant;

/**
 * An event as the queue holds it: the reported event plus when it was accepted, how many delivery
 * attempts have failed, and when it may next be sent. Immutable; the queue replaces it on change.
 *
 * @param eventId stable, producer-chosen id
 * @param name what happened
 * @param payload the event body
 * @param priority drain and eviction rank
 * @param enqueuedAt when the queue accepted it; also the time its id was first seen
 * @param attempts failed delivery attempts so far (0 for a fresh event)
 * @param nextAttemptAt not sent before this instant
 * @param expiresAt never sent at or after this instant; null for never
 */
public record QueuedEvent(
    String eventId,
    String name,
    String payload,
    Priority priority,
    Instant enqueuedAt,
    int attempts,
    Instant nextAttemptAt,
    Instant expiresAt) {

  /**
   * Checks the components.
   *
   * @param eventId stable, producer-chosen id; not blank
   * @param name what happened; not blank
   * @param payload the event body; not null
   * @param priority drain and eviction rank; not null
   * @param enqueuedAt when the queue accepted it; not null
   * @param attempts failed attempts so far, {@code >= 0}
   * @param nextAttemptAt not sent before this; not null
   * @param expiresAt never sent at or after this, or null
   * @throws IllegalArgumentException naming the component that is null, blank or negative
   */
  public QueuedEvent {
    Checks.requireNonBlank("eventId", eventId);
    Checks.requireNonBlank("name", name);
    Checks.requireNonNull("payload", payload);
    Checks.requireNonNull("priority", priority);
    Checks.requireNonNull("enqueuedAt", enqueuedAt);
    Checks.requireNonNull("nextAttemptAt", nextAttemptAt);
    if (attempts < 0) {
      throw new IllegalArgumentException("attempts must be >= 0, was " + attempts);
    }
  }

  /**
   * A fresh event accepted at {@code now}: no attempts, ready at once.
   *
   * @param event the reported event
   * @param now when the queue accepted it
   * @return the queued event
   */
  public static QueuedEvent accepted(ReportEvent event, Instant now) {
    return new QueuedEvent(
        event.eventId(), event.name(), event.payload(), event.priority(),
        now, 0, now, event.expiresAt());
  }

  /**
   * This event after a failed attempt, not to be sent before {@code nextAttemptAt}.
   *
   * @param attempts the failed attempts, this one included
   * @param nextAttemptAt when it may be sent again
   * @return a copy with those two fields replaced
   */
  public QueuedEvent rescheduled(int attempts, Instant nextAttemptAt) {
    return new QueuedEvent(
        eventId, name, payload, priority, enqueuedAt, attempts, nextAttemptAt, expiresAt);
  }

  /**
   * Whether the event is worthless at {@code now}.
   *
   * @param now the time to judge at; not null
   * @return true if it has an expiry and {@code now} is at or after it
   */
  public boolean isExpiredAt(Instant now) {
    return expiresAt != null && !now.isBefore(expiresAt);
  }

  /**
   * The payload's size in UTF-8 bytes ({@link Utf8#length}), what {@code maxBytes} capacity
   * counts; {@link Integer#MAX_VALUE} for a payload larger than that.
   *
   * @return the size in bytes; O(payload length), computed on each call
   */
  public int payloadBytes() {
    return bytesOf(payload);
  }

  /** {@link Utf8#length} of {@code payload}, capped at {@link Integer#MAX_VALUE}. */
  static int bytesOf(String payload) {
    return (int) Math.min(Integer.MAX_VALUE, Utf8.length(payload));
  }

  @Override
  public String toString() {
    // Payloads are not logged by default: they may hold personal data.
    return "QueuedEvent[eventId=" + eventId + ", name=" + name + ", priority=" + priority
        + ", payloadBytes=" + payloadBytes()
        + ", enqueuedAt=" + enqueuedAt + ", attempts=" + attempts
        + ", nextAttemptAt=" + nextAttemptAt + ", expiresAt=" + expiresAt + "]";
  }
}
