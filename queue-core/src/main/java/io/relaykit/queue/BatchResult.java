package io.relaykit.queue;

import io.relaykit.internal.Checks;
import java.time.Duration;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * The per-event outcome of one {@link BatchSender#send}: {@link Outcome#OK} acks the event,
 * {@link Outcome#RETRY} requeues it with backoff (never sooner than an optional Retry-After),
 * {@link Outcome#REJECT} makes it a dead letter with the given reason. Immutable.
 */
public final class BatchResult {

  /** What became of one event. */
  public enum Outcome {
    /** The server has it; the event is acked. */
    OK,
    /** A transient failure; the event is retried with backoff. */
    RETRY,
    /** The server will never take it; the event becomes a dead letter. */
    REJECT
  }

  /**
   * One event's outcome.
   *
   * @param outcome what became of it
   * @param retryAfter for {@code RETRY}, the least the retry must wait (a server's Retry-After)
   * @param reason for {@code REJECT}, why; recorded with the dead letter
   */
  public record EventResult(Outcome outcome, Optional<Duration> retryAfter, String reason) {
    /**
     * Checks the components; a null {@code reason} becomes {@code ""}.
     *
     * @param outcome what became of the event; not null
     * @param retryAfter the least wait before a retry; not null, not negative when present
     * @param reason why it was rejected, or null
     * @throws IllegalArgumentException if {@code outcome} or {@code retryAfter} is null, or the
     *     wait is negative
     */
    public EventResult {
      Checks.requireNonNull("outcome", outcome);
      Checks.requireNonNull("retryAfter", retryAfter);
      retryAfter.ifPresent(d -> {
        if (d.isNegative()) {
          throw new IllegalArgumentException("retryAfter must not be negative, was " + d);
        }
      });
      reason = reason == null ? "" : reason;
    }
  }

  private static final EventResult OK_RESULT = new EventResult(Outcome.OK, Optional.empty(), "");
  private static final EventResult RETRY_RESULT =
      new EventResult(Outcome.RETRY, Optional.empty(), "");

  private final Map<String, EventResult> results;

  private BatchResult(Map<String, EventResult> results) {
    this.results = Map.copyOf(results);
  }

  /**
   * Every event in {@code batch} was accepted.
   *
   * @param batch the events sent
   * @return a result with {@link Outcome#OK} for each of them
   */
  public static BatchResult allOk(Collection<QueuedEvent> batch) {
    Builder b = builder();
    batch.forEach(e -> b.ok(e.eventId()));
    return b.build();
  }

  /**
   * Every event in {@code batch} should be retried, not before {@code retryAfter} (null for the
   * backoff alone).
   *
   * @param batch the events sent
   * @param retryAfter the least wait before the retries, or null
   * @return a result with {@link Outcome#RETRY} for each of them
   * @throws IllegalArgumentException if {@code retryAfter} is negative
   */
  public static BatchResult allRetry(Collection<QueuedEvent> batch, Duration retryAfter) {
    Builder b = builder();
    batch.forEach(e -> b.retry(e.eventId(), retryAfter));
    return b.build();
  }

  /**
   * A builder for a result; an event it does not mention is retried.
   *
   * @return a new, empty builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * The outcome for {@code eventId}; empty if the sender did not mention it (it is retried).
   *
   * @param eventId the event's id
   * @return the outcome, or empty
   */
  public Optional<EventResult> resultFor(String eventId) {
    return Optional.ofNullable(results.get(eventId));
  }

  /**
   * Every outcome the sender reported, by event id.
   *
   * @return an immutable map
   */
  public Map<String, EventResult> results() {
    return results;
  }

  @Override
  public String toString() {
    return "BatchResult" + results;
  }

  /** Collects per-event outcomes; a later outcome for the same id replaces an earlier one. */
  public static final class Builder {
    private final Map<String, EventResult> results = new LinkedHashMap<>();

    private Builder() {
    }

    /**
     * The server has the event: ack it.
     *
     * @param eventId the event's id; not blank
     * @return this builder
     * @throws IllegalArgumentException if {@code eventId} is blank
     */
    public Builder ok(String eventId) {
      results.put(Checks.requireNonBlank("eventId", eventId), OK_RESULT);
      return this;
    }

    /**
     * Retry the event with the backoff alone.
     *
     * @param eventId the event's id; not blank
     * @return this builder
     * @throws IllegalArgumentException if {@code eventId} is blank
     */
    public Builder retry(String eventId) {
      results.put(Checks.requireNonBlank("eventId", eventId), RETRY_RESULT);
      return this;
    }

    /**
     * Retry, waiting at least {@code retryAfter} (null: the backoff alone).
     *
     * @param eventId the event's id; not blank
     * @param retryAfter the least wait, or null; not negative
     * @return this builder
     * @throws IllegalArgumentException if {@code eventId} is blank or {@code retryAfter} negative
     */
    public Builder retry(String eventId, Duration retryAfter) {
      results.put(Checks.requireNonBlank("eventId", eventId),
          new EventResult(Outcome.RETRY, Optional.ofNullable(retryAfter), ""));
      return this;
    }

    /**
     * The server will never take the event: it becomes a dead letter.
     *
     * @param eventId the event's id; not blank
     * @param reason why, recorded with the dead letter; null means empty
     * @return this builder
     * @throws IllegalArgumentException if {@code eventId} is blank
     */
    public Builder reject(String eventId, String reason) {
      results.put(Checks.requireNonBlank("eventId", eventId),
          new EventResult(Outcome.REJECT, Optional.empty(), reason));
      return this;
    }

    /**
     * Builds the result; a later outcome for the same id replaced an earlier one.
     *
     * @return an immutable result
     */
    public BatchResult build() {
      return new BatchResult(results);
    }
  }
}
