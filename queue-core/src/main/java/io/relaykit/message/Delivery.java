package io.relaykit.message;

import io.relaykit.internal.Checks;
import io.relaykit.trace.TraceContext;
import java.time.Instant;
import java.util.Optional;

/**
 * One delivery of a message to a {@link MessageHandler}.
 *
 * @param message the message as published
 * @param source where it was consumed from (topic, queue)
 * @param attempt which attempt this is, counting from 1; a redelivery after a failure is 2 and up
 * @param firstFailureAt when the first attempt failed; null on the first attempt
 */
public record Delivery(Message message, String source, int attempt, Instant firstFailureAt) {
  /**
   * Checks the components.
   *
   * @param message the message; not null
   * @param source where it was consumed from; not blank
   * @param attempt the attempt, {@code >= 1}
   * @param firstFailureAt when the first attempt failed; null on the first attempt
   * @throws IllegalArgumentException naming the component that is null, blank or below 1
   */
  public Delivery {
    Checks.requireNonNull("message", message);
    Checks.requireNonBlank("source", source);
    if (attempt < 1) {
      throw new IllegalArgumentException("attempt must be >= 1, was " + attempt);
    }
  }

  /**
   * A first attempt.
   *
   * @param message the message; not null
   * @param source where it was consumed from; not blank
   * @return attempt 1 with no failure time
   * @throws IllegalArgumentException if {@code message} is null or {@code source} is blank
   */
  public static Delivery first(Message message, String source) {
    return new Delivery(message, source, 1, null);
  }

  /**
   * When the first attempt failed.
   *
   * @return the time, or empty on the first attempt
   */
  public Optional<Instant> firstFailure() {
    return Optional.ofNullable(firstFailureAt);
  }

  /**
   * The W3C trace context the publisher carried (from the outbox append through relay, broker,
   * retries and replay), empty when there is none or its header is malformed; a tracing
   * integration starts the handler's span as its child.
   *
   * @return the context, or empty; parsed from the headers on each call
   */
  public Optional<TraceContext> traceContext() {
    return message.traceContext().context();
  }

  /**
   * Whether an earlier attempt of this message failed.
   *
   * @return true if {@code attempt > 1}
   */
  public boolean isRetry() {
    return attempt > 1;
  }
}
