package io.relaykit.deadletter;

import io.relaykit.internal.Texts;
import io.relaykit.message.Delivery;
import io.relaykit.message.MalformedMessageException;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHeaders;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.retry.RetryPolicy;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * What becomes of a delivery whose handler failed: retry after which delay, or dead-letter for which
 * reason, and the failure headers the retry or dead-letter copy carries. Every consumer runtime
 * (Kafka, RabbitMQ, the in-process transport) routes failures through {@link #decide}, so attempts,
 * delays, reasons and failure headers are the same on every transport by construction; a transport
 * only moves the bytes.
 *
 * <p>The failure headers are bounded: the reason, the exception class and the exception message are
 * cut (in UTF-8 bytes, marked with {@value Texts#CUT_MARK}) to {@link #MAX_REASON_BYTES}, {@link
 * #MAX_EXCEPTION_CLASS_BYTES} and {@link #MAX_EXCEPTION_MESSAGE_BYTES}, and {@link #headers}
 * replaces the failure headers of an earlier attempt instead of adding to them, so a copy is at most
 * {@link #MAX_HEADER_BYTES} plus the source's name larger than the record it was made from, however
 * often it failed and however long the exception's text.
 *
 * <p>Pure: no I/O, no clock of its own (the caller passes {@code now}), immutable and thread-safe.
 * {@link #decide} costs one {@link RetryPolicy#decide} call plus the cut of the exception text.
 */
public final class FailureRoute {

  /** Where the message goes next. */
  public enum Outcome {
    /** Another attempt after {@link #delay()}. */
    RETRY,
    /** Given up: to dead letters with {@link #reason()}. */
    DEAD_LETTER
  }

  /** The longest reason, in UTF-8 bytes; the full exception text is in its own header. */
  public static final int MAX_REASON_BYTES = 1024;
  /** The longest exception class name kept, in UTF-8 bytes. */
  public static final int MAX_EXCEPTION_CLASS_BYTES = 256;
  /** The longest exception message kept, in UTF-8 bytes. */
  public static final int MAX_EXCEPTION_MESSAGE_BYTES = 2048;
  /**
   * An upper bound, in UTF-8 bytes of names and values, of the failure headers {@link #headers}
   * writes, the {@link MessageHeaders#SOURCE} header excepted (its value is the source's name).
   */
  public static final int MAX_HEADER_BYTES = 4096;

  private final Outcome outcome;
  private final int attempt;
  private final Duration delay;
  private final String reason;
  private final String source;
  private final Instant firstFailureAt;
  private final Instant lastFailureAt;
  private final String exceptionClass;
  private final String exceptionMessage;

  private FailureRoute(Outcome outcome, int attempt, Duration delay, String reason, String source,
      Instant firstFailureAt, Instant lastFailureAt, String exceptionClass,
      String exceptionMessage) {
    this.outcome = outcome;
    this.attempt = attempt;
    this.delay = delay;
    this.reason = reason;
    this.source = source;
    this.firstFailureAt = firstFailureAt;
    this.lastFailureAt = lastFailureAt;
    this.exceptionClass = exceptionClass;
    this.exceptionMessage = exceptionMessage;
  }

  /**
   * Routes the failure of {@code delivery}: asks {@code spec}'s {@link RetryPolicy} with the
   * delivery's attempt and first failure time (now, on a first attempt). A policy that throws
   * dead-letters the message with a reason naming that failure, instead of leaving it unrouted.
   * A {@code now} before the first failure (a clock stepped back, another host's clock) counts as
   * the first failure time, so failure times never run backwards.
   *
   * @param failure what the handler threw; null for a failure without an exception
   * @param spec the subscription, whose retry policy decides
   * @param delivery the delivery that failed
   * @param now the failure's time
   * @return a retry after the policy's delay, or a dead-letter route with the policy's reason
   * @throws NullPointerException if {@code spec}, {@code delivery} or {@code now} is null
   */
  public static FailureRoute decide(SubscriptionSpec spec, Delivery delivery, Throwable failure,
      Instant now) {
    Objects.requireNonNull(spec, "spec");
    Objects.requireNonNull(delivery, "delivery");
    Objects.requireNonNull(now, "now");
    Instant first = delivery.firstFailureAt() != null ? delivery.firstFailureAt() : now;
    Instant last = now.isBefore(first) ? first : now;
    RetryPolicy.Decision decision;
    try {
      decision = spec.retryPolicy().decide(delivery.attempt(), first, last, failure);
    } catch (RuntimeException e) {
      decision = RetryPolicy.Decision.deadLetter("retry policy failed: " + e);
    }
    String exceptionClass = failure == null ? null
        : Texts.truncateUtf8(failure.getClass().getName(), MAX_EXCEPTION_CLASS_BYTES);
    String exceptionMessage = failure == null || failure.getMessage() == null ? null
        : Texts.truncateUtf8(failure.getMessage(), MAX_EXCEPTION_MESSAGE_BYTES);
    return decision.retry()
        ? new FailureRoute(Outcome.RETRY, delivery.attempt(), decision.delay(), null,
            delivery.source(), first, last, exceptionClass, exceptionMessage)
        : new FailureRoute(Outcome.DEAD_LETTER, delivery.attempt(), null,
            Texts.truncateUtf8(decision.reason(), MAX_REASON_BYTES), delivery.source(), first,
            last, exceptionClass, exceptionMessage);
  }

  /**
   * The route of a message that could not be decoded (missing or invalid envelope headers): to dead
   * letters after 0 attempts, reason {@code "undecodable: "} and the failure's message.
   *
   * @param source where the record was consumed; not blank
   * @param failure the decoding failure
   * @param now the failure's time
   * @return a dead-letter route with attempt 0 and both failure times {@code now}
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if {@code source} is blank
   */
  public static FailureRoute undecodable(String source, Throwable failure, Instant now) {
    Objects.requireNonNull(source, "source");
    Objects.requireNonNull(failure, "failure");
    Objects.requireNonNull(now, "now");
    if (source.isBlank()) {
      throw new IllegalArgumentException("source must not be blank");
    }
    String message = failure.getMessage();
    return new FailureRoute(Outcome.DEAD_LETTER, 0, null,
        Texts.truncateUtf8("undecodable: " + (message == null ? failure.getClass().getName()
            : message), MAX_REASON_BYTES),
        source, now, now,
        Texts.truncateUtf8(failure.getClass().getName(), MAX_EXCEPTION_CLASS_BYTES),
        message == null ? null : Texts.truncateUtf8(message, MAX_EXCEPTION_MESSAGE_BYTES));
  }

  /**
   * The route of a delivery given up without a failure of its handler (a share group closing on
   * the record's last delivery before it ran): to dead letters for {@code reason}, at the
   * delivery's attempt, its first failure time (now, if it has none) and no exception.
   *
   * @param delivery the delivery given up
   * @param reason why; not blank, cut to {@link #MAX_REASON_BYTES}
   * @param now the time of giving up
   * @return a dead-letter route
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if {@code reason} is blank
   */
  public static FailureRoute givenUp(Delivery delivery, String reason, Instant now) {
    Objects.requireNonNull(delivery, "delivery");
    Objects.requireNonNull(reason, "reason");
    Objects.requireNonNull(now, "now");
    if (reason.isBlank()) {
      throw new IllegalArgumentException("reason must not be blank");
    }
    Instant first = delivery.firstFailureAt() != null ? delivery.firstFailureAt() : now;
    return new FailureRoute(Outcome.DEAD_LETTER, delivery.attempt(), null,
        Texts.truncateUtf8(reason, MAX_REASON_BYTES), delivery.source(), first,
        now.isBefore(first) ? first : now, null, null);
  }

  /**
   * This failure sent to dead letters for {@code reason} instead (a retry copy the broker refused):
   * the same attempt, times and exception.
   *
   * @param reason the new reason; cut to {@link #MAX_REASON_BYTES}
   * @return a dead-letter route; this route is unchanged
   * @throws NullPointerException if {@code reason} is null
   * @throws IllegalArgumentException if {@code reason} is blank
   */
  public FailureRoute deadLetterInstead(String reason) {
    Objects.requireNonNull(reason, "reason");
    if (reason.isBlank()) {
      throw new IllegalArgumentException("reason must not be blank");
    }
    return new FailureRoute(Outcome.DEAD_LETTER, attempt, null,
        Texts.truncateUtf8(reason, MAX_REASON_BYTES), source, firstFailureAt, lastFailureAt,
        exceptionClass, exceptionMessage);
  }

  /**
   * The delivery a message carrying {@code wire}'s failure headers makes: attempt {@link
   * MessageHeaders#ATTEMPT} + 1 (1 without the header) and the first failure time of {@link
   * MessageHeaders#FIRST_FAILURE_AT} (none without it). The inverse of {@link #headers} for the
   * next attempt.
   *
   * @param message the decoded message
   * @param source where it was consumed; not blank
   * @param wire the record's headers
   * @return the delivery for the next attempt
   * @throws MalformedMessageException naming the header if the attempt is not a whole number from
   *     0 below {@link Integer#MAX_VALUE}, or the first failure time is not an instant
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if {@code source} is blank
   */
  public static Delivery delivery(Message message, String source, Map<String, String> wire) {
    Objects.requireNonNull(message, "message");
    Objects.requireNonNull(source, "source");
    Objects.requireNonNull(wire, "wire");
    String attempts = wire.get(MessageHeaders.ATTEMPT);
    int failedSoFar = 0;
    if (attempts != null) {
      try {
        failedSoFar = Integer.parseInt(attempts.trim());
      } catch (NumberFormatException e) {
        throw new MalformedMessageException("header " + MessageHeaders.ATTEMPT
            + " is not a whole number: " + Texts.truncateUtf8(attempts, 64), e);
      }
      if (failedSoFar < 0 || failedSoFar == Integer.MAX_VALUE) {
        throw new MalformedMessageException("header " + MessageHeaders.ATTEMPT
            + " is out of range: " + attempts);
      }
    }
    String first = wire.get(MessageHeaders.FIRST_FAILURE_AT);
    Instant firstFailure = null;
    if (first != null) {
      try {
        firstFailure = Instant.parse(first.trim());
      } catch (DateTimeParseException e) {
        throw new MalformedMessageException("header " + MessageHeaders.FIRST_FAILURE_AT
            + " is not an instant: " + Texts.truncateUtf8(first, 64), e);
      }
    }
    return new Delivery(message, source, failedSoFar + 1, failedSoFar == 0 ? null : firstFailure);
  }

  /**
   * {@code wire} with this route's failure headers: a new mutable map, {@code wire}'s headers in
   * their order with the failure headers set ({@link MessageHeaders#ATTEMPT}, first and last
   * failure, exception class and message, {@link MessageHeaders#SOURCE}, and {@link
   * MessageHeaders#RETRY_AT} for a retry or {@link MessageHeaders#DEAD_REASON} for a dead letter)
   * and those of an earlier attempt that no longer apply removed. The transport adds its own (a
   * source position) to the result.
   *
   * @param wire the record's headers; not changed
   * @return the new header map
   * @throws NullPointerException if {@code wire} is null
   */
  public Map<String, String> headers(Map<String, String> wire) {
    Objects.requireNonNull(wire, "wire");
    Map<String, String> h = new LinkedHashMap<>(wire);
    h.put(MessageHeaders.ATTEMPT, Integer.toString(attempt));
    h.put(MessageHeaders.FIRST_FAILURE_AT, firstFailureAt.toString());
    h.put(MessageHeaders.LAST_FAILURE_AT, lastFailureAt.toString());
    h.put(MessageHeaders.SOURCE, source);
    putOrRemove(h, MessageHeaders.EXCEPTION_CLASS, exceptionClass);
    putOrRemove(h, MessageHeaders.EXCEPTION_MESSAGE, exceptionMessage);
    if (outcome == Outcome.RETRY) {
      h.put(MessageHeaders.RETRY_AT, retryAt().toString());
      h.remove(MessageHeaders.DEAD_REASON);
    } else {
      h.put(MessageHeaders.DEAD_REASON, reason);
      h.remove(MessageHeaders.RETRY_AT);
    }
    return h;
  }

  private static void putOrRemove(Map<String, String> h, String name, String value) {
    if (value == null) {
      h.remove(name);
    } else {
      h.put(name, value);
    }
  }

  /**
   * The dead letter of {@code message} on this route, of no consumer group.
   *
   * @param message the message that gave up
   * @return the dead letter, with this route's reason, attempt and failure data
   * @throws IllegalStateException if this is a retry
   * @throws NullPointerException if {@code message} is null
   */
  public DeadLetter deadLetter(Message message) {
    return deadLetter(message, null);
  }

  /**
   * The dead letter of {@code message} on this route for consumer group {@code group} (null for
   * none): a consumer's dead letters carry its group, which is part of their identity.
   *
   * @param message the message that gave up
   * @param group the consumer group, or null for none
   * @return the dead letter, with this route's reason, attempt and failure data
   * @throws IllegalStateException if this is a retry
   * @throws NullPointerException if {@code message} is null
   * @throws IllegalArgumentException if {@code group} is blank
   */
  public DeadLetter deadLetter(Message message, String group) {
    Objects.requireNonNull(message, "message");
    if (outcome != Outcome.DEAD_LETTER) {
      throw new IllegalStateException("a retry route has no dead letter: " + this);
    }
    return new DeadLetter(message, source, group, reason, exceptionClass, exceptionMessage,
        attempt, firstFailureAt, lastFailureAt);
  }

  /**
   * Where the message goes next.
   *
   * @return {@link Outcome#RETRY} or {@link Outcome#DEAD_LETTER}
   */
  public Outcome outcome() {
    return outcome;
  }

  /**
   * Whether the message is to be attempted again.
   *
   * @return true for {@link Outcome#RETRY}
   */
  public boolean isRetry() {
    return outcome == Outcome.RETRY;
  }

  /**
   * The attempt that failed, counting from 1; 0 for an undecodable message.
   *
   * @return the attempt, {@code >= 0}
   */
  public int attempt() {
    return attempt;
  }

  /**
   * How long to wait before the next attempt; null for a dead letter.
   *
   * @return the delay, or null
   */
  public Duration delay() {
    return delay;
  }

  /**
   * When the next attempt is due: the last failure plus the delay; null for a dead letter.
   *
   * @return the instant, or null
   */
  public Instant retryAt() {
    return delay == null ? null : lastFailureAt.plus(delay);
  }

  /**
   * Why the message gave up, at most {@link #MAX_REASON_BYTES}; null for a retry.
   *
   * @return the reason, or null
   */
  public String reason() {
    return reason;
  }

  /**
   * Where the message was consumed from.
   *
   * @return the source; never blank
   */
  public String source() {
    return source;
  }

  /**
   * When the first attempt of the message failed.
   *
   * @return the instant; never null
   */
  public Instant firstFailureAt() {
    return firstFailureAt;
  }

  /**
   * This failure's time; not before {@link #firstFailureAt()}.
   *
   * @return the instant; never null
   */
  public Instant lastFailureAt() {
    return lastFailureAt;
  }

  /**
   * The failure's class name, cut to its bound; null for a failure without an exception.
   *
   * @return the class name, or null
   */
  public String exceptionClass() {
    return exceptionClass;
  }

  /**
   * The failure's message, cut to its bound; null when it has none.
   *
   * @return the message, or null
   */
  public String exceptionMessage() {
    return exceptionMessage;
  }

  @Override
  public String toString() {
    return "FailureRoute[" + outcome + ", attempt=" + attempt
        + (outcome == Outcome.RETRY ? ", delay=" + delay : ", reason=" + reason) + "]";
  }
}
