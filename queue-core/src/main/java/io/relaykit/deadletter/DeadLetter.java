package io.relaykit.deadletter;

import io.relaykit.internal.Checks;
import io.relaykit.message.Message;
import java.time.Instant;

/**
 * A message that gave up, with everything needed to understand and replay it: the original message
 * (payload, headers, trace id), where it came from, why it failed, the last exception, how many
 * attempts it made, and when it first and last failed.
 *
 * <h2>Identity</h2>
 * A dead letter is identified by its message's id, its source and, for a consumer's dead letter,
 * its consumer group: one message appended to two outbox destinations, or consumed by two
 * subscriptions, gives two dead letters, and neither overwrites the other. Dead-lettering the same
 * message again at the same place (after a replay that failed again) replaces the entry instead of
 * adding a twin. {@link #id()} encodes the three parts into one string, so that distinct parts
 * never give the same id (see {@link #idOf}).
 *
 * @param message the original message, unchanged
 * @param source where it was being delivered or consumed: the outbox destination, the topic or
 *     queue
 * @param group the consumer group (subscription) that gave up on it; null when no consumer was
 *     involved (an outbox row that could not be published)
 * @param reason why it gave up, in words ("attempts exhausted (5 of 5): ...",
 *     "undecodable: missing header relaykit-type")
 * @param exceptionClass the last failure's class name; null when there was no exception
 * @param exceptionMessage the last failure's message; null when there was none
 * @param attempts attempts made, at least 1 (0 for a message that could not even be attempted,
 *     such as an undecodable one)
 * @param firstFailureAt when the first attempt failed
 * @param lastFailureAt when the last attempt failed; not before {@code firstFailureAt}
 */
public record DeadLetter(
    Message message,
    String source,
    String group,
    String reason,
    String exceptionClass,
    String exceptionMessage,
    int attempts,
    Instant firstFailureAt,
    Instant lastFailureAt) {

  /**
   * Checks the components.
   *
   * @param message the original message; not null
   * @param source where it was delivered or consumed; not blank
   * @param group the consumer group, or null; not blank when given
   * @param reason why it gave up; not blank
   * @param exceptionClass the last failure's class name, or null
   * @param exceptionMessage the last failure's message, or null
   * @param attempts attempts made, {@code >= 0}
   * @param firstFailureAt when the first attempt failed; not null
   * @param lastFailureAt when the last attempt failed; not null, not before {@code firstFailureAt}
   * @throws IllegalArgumentException naming the component that is null, blank or out of range
   */
  public DeadLetter {
    Checks.requireNonNull("message", message);
    Checks.requireNonBlank("source", source);
    if (group != null) {
      Checks.requireNonBlank("group", group);
    }
    Checks.requireNonBlank("reason", reason);
    if (attempts < 0) {
      throw new IllegalArgumentException("attempts must be >= 0, was " + attempts);
    }
    Checks.requireNonNull("firstFailureAt", firstFailureAt);
    Checks.requireNonNull("lastFailureAt", lastFailureAt);
    if (lastFailureAt.isBefore(firstFailureAt)) {
      throw new IllegalArgumentException("lastFailureAt (" + lastFailureAt
          + ") must not be before firstFailureAt (" + firstFailureAt + ")");
    }
  }

  /**
   * A dead letter that no consumer group was involved in (an outbox row, a report event).
   *
   * @param message the original message
   * @param source where it was being delivered
   * @param reason why it gave up
   * @param exceptionClass the last failure's class name, or null
   * @param exceptionMessage the last failure's message, or null
   * @param attempts attempts made, {@code >= 0}
   * @param firstFailureAt when the first attempt failed
   * @param lastFailureAt when the last attempt failed
   * @throws IllegalArgumentException as for the canonical constructor
   */
  public DeadLetter(Message message, String source, String reason, String exceptionClass,
      String exceptionMessage, int attempts, Instant firstFailureAt, Instant lastFailureAt) {
    this(message, source, null, reason, exceptionClass, exceptionMessage, attempts,
        firstFailureAt, lastFailureAt);
  }

  /**
   * A dead letter of no consumer group for {@code failure} (may be null) after {@code attempts}
   * attempts.
   *
   * @param message the original message
   * @param source where it was being delivered
   * @param reason why it gave up
   * @param failure the last failure, whose class name and message are kept; may be null
   * @param attempts attempts made, {@code >= 0}
   * @param firstFailureAt when the first attempt failed
   * @param lastFailureAt when the last attempt failed
   * @return the dead letter
   * @throws IllegalArgumentException as for the canonical constructor
   */
  public static DeadLetter of(Message message, String source, String reason, Throwable failure,
      int attempts, Instant firstFailureAt, Instant lastFailureAt) {
    return of(message, source, null, reason, failure, attempts, firstFailureAt, lastFailureAt);
  }

  /**
   * The dead letter of consumer group {@code group} (null for none) for {@code failure} (may be
   * null) after {@code attempts} attempts.
   *
   * @param message the original message
   * @param source where it was being delivered or consumed
   * @param group the consumer group, or null
   * @param reason why it gave up
   * @param failure the last failure, whose class name and message are kept; may be null
   * @param attempts attempts made, {@code >= 0}
   * @param firstFailureAt when the first attempt failed
   * @param lastFailureAt when the last attempt failed
   * @return the dead letter
   * @throws IllegalArgumentException as for the canonical constructor
   */
  public static DeadLetter of(Message message, String source, String group, String reason,
      Throwable failure, int attempts, Instant firstFailureAt, Instant lastFailureAt) {
    return new DeadLetter(message, source, group, reason,
        failure == null ? null : failure.getClass().getName(),
        failure == null ? null : failure.getMessage(),
        attempts, firstFailureAt, lastFailureAt);
  }

  /**
   * The dead letter's id: {@link #idOf} its message id, source and group.
   *
   * @return the id; computed on each call, O(length of the parts)
   */
  public String id() {
    return idOf(message.id(), source, group);
  }

  /**
   * The id of the message that gave up.
   *
   * @return the message id; never blank
   */
  public String messageId() {
    return message.id();
  }

  /**
   * The id of the dead letter of message {@code messageId} at {@code source} for consumer group
   * {@code group} (null for none): {@code <messageId>@<source>} or {@code
   * <messageId>@<source>#<group>}, with {@code %}, {@code @} and {@code #} inside each part
   * percent-encoded ({@code %25}, {@code %40}, {@code %23}). Distinct parts never give the same id,
   * and an id reads back as its parts. The form is stable: stores keep it, operators copy it.
   *
   * @param messageId the message id; not blank
   * @param source the source; not blank
   * @param group the consumer group, or null for none
   * @return the encoded id
   * @throws IllegalArgumentException if {@code messageId} or {@code source} is blank, or {@code
   *     group} is blank but not null
   */
  public static String idOf(String messageId, String source, String group) {
    Checks.requireNonBlank("messageId", messageId);
    Checks.requireNonBlank("source", source);
    StringBuilder id = new StringBuilder(messageId.length() + source.length() + 16);
    escape(id, messageId).append('@');
    escape(id, source);
    if (group != null) {
      Checks.requireNonBlank("group", group);
      escape(id.append('#'), group);
    }
    return id.toString();
  }

  private static StringBuilder escape(StringBuilder out, String part) {
    for (int i = 0; i < part.length(); i++) {
      char c = part.charAt(i);
      switch (c) {
        case '%' -> out.append("%25");
        case '@' -> out.append("%40");
        case '#' -> out.append("%23");
        default -> out.append(c);
      }
    }
    return out;
  }
}
