package io.relaykit.deadletter;

import io.relaykit.internal.Checks;
import io.relaykit.message.Message;
import java.time.Instant;

/**
 * A message that gave up, with everything needed to understand and replay it: the original message
 * (payload, headers, trace id), where it came from, why it failed, the last exception, how many
 * attempts it made, and when it first and last failed.
 *
 * <p>A dead letter's id is its message's id: dead-lettering the same message again (after a replay
 * that failed again) replaces the entry instead of adding a twin.
 *
 * @param message the original message, unchanged
 * @param source where it was being delivered or consumed (topic, queue, {@code "outbox"})
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
    String reason,
    String exceptionClass,
    String exceptionMessage,
    int attempts,
    Instant firstFailureAt,
    Instant lastFailureAt) {

  public DeadLetter {
    Checks.requireNonNull("message", message);
    Checks.requireNonBlank("source", source);
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

  /** A dead letter for {@code failure} (may be null) after {@code attempts} attempts. */
  public static DeadLetter of(Message message, String source, String reason, Throwable failure,
      int attempts, Instant firstFailureAt, Instant lastFailureAt) {
    return new DeadLetter(message, source, reason,
        failure == null ? null : failure.getClass().getName(),
        failure == null ? null : failure.getMessage(),
        attempts, firstFailureAt, lastFailureAt);
  }

  /** The dead letter's id: its message's id. */
  public String id() {
    return message.id();
  }
}
