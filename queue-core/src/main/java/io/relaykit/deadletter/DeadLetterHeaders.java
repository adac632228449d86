package io.relaykit.deadletter;

import io.relaykit.message.Message;
import io.relaykit.message.MessageHeaders;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.Map;

/**
 * The header form of a {@link DeadLetter}, for transports that keep dead letters as broker
 * messages (a Kafka dead-letter topic, a RabbitMQ dead-letter queue): the message's own {@link
 * MessageHeaders#toWire wire headers} plus the failure — reason, exception, attempts, first and last
 * failure time, source — under the reserved names of {@link MessageHeaders}.
 *
 * <p>Reading is lenient on purpose: a dead-letter view must show every entry, including one a
 * foreign producer or an older version wrote. A missing or unreadable time becomes the caller's
 * fallback, unreadable attempts become 0, a missing source becomes the caller's default, a missing
 * reason says so. Costs one map of the headers per call. Stateless and thread-safe.
 */
public final class DeadLetterHeaders {

  private DeadLetterHeaders() {}

  /**
   * The headers of {@code deadLetter}: its message's wire headers, then the failure headers.
   * Returns a new mutable map in that order, so a transport may add its own headers.
   *
   * @param deadLetter the dead letter; not null
   * @return the header map: the message's envelope and user headers, then the reason, exception,
   *     attempt, failure-time, source and group headers
   * @throws IllegalArgumentException if {@code deadLetter} is null
   */
  public static Map<String, String> toWire(DeadLetter deadLetter) {
    if (deadLetter == null) {
      throw new IllegalArgumentException("deadLetter must not be null");
    }
    Map<String, String> h = MessageHeaders.toWire(deadLetter.message());
    h.put(MessageHeaders.DEAD_REASON, deadLetter.reason());
    if (deadLetter.exceptionClass() != null) {
      h.put(MessageHeaders.EXCEPTION_CLASS, deadLetter.exceptionClass());
    }
    if (deadLetter.exceptionMessage() != null) {
      h.put(MessageHeaders.EXCEPTION_MESSAGE, deadLetter.exceptionMessage());
    }
    h.put(MessageHeaders.ATTEMPT, Integer.toString(deadLetter.attempts()));
    h.put(MessageHeaders.FIRST_FAILURE_AT, deadLetter.firstFailureAt().toString());
    h.put(MessageHeaders.LAST_FAILURE_AT, deadLetter.lastFailureAt().toString());
    h.put(MessageHeaders.SOURCE, deadLetter.source());
    if (deadLetter.group() != null) {
      h.put(MessageHeaders.GROUP, deadLetter.group());
    }
    return h;
  }

  /**
   * As {@link #fromWire(Message, Map, String, String, Instant)} with no default group: the group
   * is the one {@code wire} names, if any.
   *
   * @param message the message, already decoded from {@code wire}
   * @param wire the record's headers
   * @param defaultSource the source when {@code wire} names none
   * @param fallbackTime the time that replaces a missing or unreadable failure time
   * @return the dead letter
   * @throws IllegalArgumentException if {@code wire} or {@code fallbackTime} is null
   */
  public static DeadLetter fromWire(Message message, Map<String, String> wire,
      String defaultSource, Instant fallbackTime) {
    return fromWire(message, wire, defaultSource, null, fallbackTime);
  }

  /**
   * The dead letter of {@code message} with the failure read from {@code wire}.
   *
   * @param message the message, already decoded from {@code wire} (or a stand-in for one that
   *     could not be)
   * @param defaultSource the source when {@code wire} names none (the dead-letter topic or queue)
   * @param defaultGroup the consumer group when {@code wire} names none (the group that owns the
   *     dead-letter topic or queue); may be null
   * @param fallbackTime a failure time that is missing or unreadable becomes this; a last failure
   *     before the first becomes the first
   * @param wire the record's headers, carrying the failure headers {@link #toWire} wrote
   * @return the dead letter
   * @throws IllegalArgumentException if {@code wire} or {@code fallbackTime} is null
   */
  public static DeadLetter fromWire(Message message, Map<String, String> wire,
      String defaultSource, String defaultGroup, Instant fallbackTime) {
    if (wire == null || fallbackTime == null) {
      throw new IllegalArgumentException("wire and fallbackTime must not be null");
    }
    Instant first = instant(wire.get(MessageHeaders.FIRST_FAILURE_AT), fallbackTime);
    Instant last = instant(wire.get(MessageHeaders.LAST_FAILURE_AT), fallbackTime);
    if (last.isBefore(first)) {
      last = first;
    }
    int attempts;
    try {
      attempts = Math.max(0, Integer.parseInt(wire.getOrDefault(MessageHeaders.ATTEMPT, "0")));
    } catch (NumberFormatException e) {
      attempts = 0;
    }
    String source = wire.get(MessageHeaders.SOURCE);
    String reason = wire.get(MessageHeaders.DEAD_REASON);
    String group = wire.get(MessageHeaders.GROUP);
    return new DeadLetter(message,
        source == null || source.isBlank() ? defaultSource : source,
        group == null || group.isBlank() ? defaultGroup : group,
        reason == null || reason.isBlank()
            ? "unknown (no " + MessageHeaders.DEAD_REASON + " header)" : reason,
        wire.get(MessageHeaders.EXCEPTION_CLASS), wire.get(MessageHeaders.EXCEPTION_MESSAGE),
        attempts, first, last);
  }

  private static Instant instant(String value, Instant fallback) {
    if (value == null) {
      return fallback;
    }
    try {
      return Instant.parse(value);
    } catch (DateTimeParseException e) {
      return fallback;
    }
  }
}
