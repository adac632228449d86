package io.relaykit.queue;

import io.relaykit.internal.Checks;
import java.time.Instant;

/**
 * An event a client reports, as handed to {@link ReportQueue#enqueue}. The {@code eventId} is
 * chosen by the producer once and kept across every retry, so the server can drop repeats.
 *
 * @param eventId stable, producer-chosen id; not blank
 * @param name what happened ({@code "payment.captured"}); not blank
 * @param payload the event body; not empty
 * @param priority not null
 * @param expiresAt after this instant the event is worthless and is never sent; null for never
 */
public record ReportEvent(
    String eventId, String name, String payload, Priority priority, Instant expiresAt) {

  /**
   * @throws IllegalArgumentException naming the field when {@code eventId} or {@code name} is
   *     blank, {@code payload} is null or empty, or {@code priority} is null
   */
  public ReportEvent {
    Checks.requireNonBlank("eventId", eventId);
    Checks.requireNonBlank("name", name);
    Checks.requireNonNull("payload", payload);
    if (payload.isEmpty()) {
      throw new IllegalArgumentException("payload must not be empty");
    }
    Checks.requireNonNull("priority", priority);
  }

  /** A {@link Priority#NORMAL} event that never expires. */
  public ReportEvent(String eventId, String name, String payload) {
    this(eventId, name, payload, Priority.NORMAL, null);
  }

  /** Whether the event is worthless at {@code now}. */
  public boolean isExpiredAt(Instant now) {
    return expiresAt != null && !now.isBefore(expiresAt);
  }
}
