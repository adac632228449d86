package io.relaykit.queue;

import io.relaykit.internal.Checks;
import io.relaykit.internal.Utf8;
import java.time.Instant;

/**
 * An event a client reports, as handed to {@link ReportQueue#enqueue}. The {@code eventId} is
 * chosen by the producer once and kept across every retry, so the server can drop repeats.
 *
 * <p>The id, name and payload must be well-formed UTF-16: an unpaired surrogate has no UTF-8
 * form, so a journal would store it as {@code '?'} and two distinct ids would collide after a
 * restart. The id and name must not hold U+0000 either: a PostgreSQL text column cannot store
 * it, and a journal batch holding one would fail on every retry (payloads are stored as bytes, so
 * a payload may hold it). Checking costs one scan of the strings,
 * allocation-free.
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
   * A checked event.
   *
   * @param eventId stable, producer-chosen id; not blank
   * @param name what happened; not blank
   * @param payload the event body; not empty
   * @param priority the rank; not null
   * @param expiresAt the expiry, or null for never
   * @throws IllegalArgumentException naming the field when {@code eventId} or {@code name} is
   *     blank, {@code payload} is null or empty, {@code priority} is null, or the id, name or
   *     payload holds an unpaired surrogate, or the id or name holds U+0000 (naming its index),
   *     or the id is longer than {@link QueueJournal#MAX_EVENT_ID_LENGTH} (512) chars
   */
  public ReportEvent {
    Checks.requireNonBlank("eventId", eventId);
    Checks.requireNonBlank("name", name);
    Checks.requireNonNull("payload", payload);
    if (payload.isEmpty()) {
      throw new IllegalArgumentException("payload must not be empty");
    }
    Checks.requireNonNull("priority", priority);
    QueueJournal.requireIdLength(eventId);
    Utf8.requireStorable("eventId", eventId);
    Utf8.requireStorable("name", name);
    Utf8.requireWellFormed("payload", payload); // stored as bytes by every journal: NUL is fine
  }

  /**
   * A {@link Priority#NORMAL} event that never expires.
   *
   * @param eventId stable, producer-chosen id; not blank
   * @param name what happened; not blank
   * @param payload the event body; not empty
   * @throws IllegalArgumentException as for the canonical constructor
   */
  public ReportEvent(String eventId, String name, String payload) {
    this(eventId, name, payload, Priority.NORMAL, null);
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
}
