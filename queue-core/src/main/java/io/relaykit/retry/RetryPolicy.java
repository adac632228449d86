package io.relaykit.retry;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;

/**
 * Decides what happens to a message after a failed attempt: retry after a backoff, or give up and
 * dead-letter it with a reason. One policy serves the report queue, the outbox relay and every
 * consumer runtime, so "how many times, how long, which failures" is answered the same way
 * everywhere.
 *
 * <p>A message is dead-lettered when the failure is {@linkplain FailureClassifier.Kind#PERMANENT
 * permanent}, when {@code maxAttempts} attempts have failed, or when the next attempt would start
 * after {@code maxAge} has passed since the first failure. Immutable and thread-safe.
 */
public final class RetryPolicy {

  private final int maxAttempts;
  private final Duration maxAge;
  private final Backoff backoff;
  private final FailureClassifier classifier;

  private RetryPolicy(Builder b) {
    this.maxAttempts = b.maxAttempts;
    this.maxAge = b.maxAge;
    this.backoff = b.backoff;
    this.classifier = b.classifier;
  }

  /** Five attempts, no age limit, exponential backoff from 1 s capped at 5 min with full jitter. */
  public static RetryPolicy defaults() {
    return builder().build();
  }

  public static Builder builder() {
    return new Builder();
  }

  /**
   * What to do after attempt number {@code attempt} failed.
   *
   * @param attempt the attempt that just failed, counting from 1
   * @param firstFailureAt when the first attempt failed (equal to {@code now} on the first failure)
   * @param now the current time
   * @param failure what went wrong; may be null for a failure without an exception (a timeout)
   * @throws IllegalArgumentException if {@code attempt < 1} or a time is null
   */
  public Decision decide(int attempt, Instant firstFailureAt, Instant now, Throwable failure) {
    if (attempt < 1) {
      throw new IllegalArgumentException("attempt must be >= 1, was " + attempt);
    }
    if (firstFailureAt == null) {
      throw new IllegalArgumentException("firstFailureAt must not be null");
    }
    if (now == null) {
      throw new IllegalArgumentException("now must not be null");
    }
    if (classifier.classify(failure) == FailureClassifier.Kind.PERMANENT) {
      return Decision.deadLetter("permanent failure: " + describe(failure));
    }
    if (attempt >= maxAttempts) {
      return Decision.deadLetter(
          "attempts exhausted (" + attempt + " of " + maxAttempts + "): " + describe(failure));
    }
    Duration delay = backoff.delay(attempt);
    if (maxAge != null && now.plus(delay).isAfter(firstFailureAt.plus(maxAge))) {
      return Decision.deadLetter(
          "max age " + maxAge + " exceeded: " + describe(failure));
    }
    return Decision.retryAfter(delay);
  }

  /** Whether the failure is permanent under this policy's classifier. */
  public boolean isPermanent(Throwable failure) {
    return classifier.classify(failure) == FailureClassifier.Kind.PERMANENT;
  }

  public int maxAttempts() {
    return maxAttempts;
  }

  /** The age limit measured from the first failure; {@code null} when there is none. */
  public Duration maxAge() {
    return maxAge;
  }

  public Backoff backoff() {
    return backoff;
  }

  public FailureClassifier classifier() {
    return classifier;
  }

  static String describe(Throwable failure) {
    if (failure == null) {
      return "no exception";
    }
    String message = failure.getMessage();
    return failure.getClass().getName() + (message == null ? "" : ": " + message);
  }

  @Override
  public String toString() {
    return "RetryPolicy[maxAttempts=" + maxAttempts + ", maxAge=" + maxAge
        + ", backoff=" + backoff + "]";
  }

  /** The outcome of {@link #decide}: retry after {@link #delay()}, or dead-letter for a reason. */
  public record Decision(boolean retry, Duration delay, String reason) {
    public Decision {
      if (retry) {
        Objects.requireNonNull(delay, "delay");
      } else {
        Objects.requireNonNull(reason, "reason");
      }
    }

    public static Decision retryAfter(Duration delay) {
      return new Decision(true, delay, null);
    }

    public static Decision deadLetter(String reason) {
      return new Decision(false, null, reason);
    }
  }

  /** Builds a validated {@link RetryPolicy}; {@link #build()} names any invalid field. */
  public static final class Builder {
    private int maxAttempts = 5;
    private Duration maxAge;
    private Backoff backoff =
        Backoff.exponential(Duration.ofSeconds(1)).withMax(Duration.ofMinutes(5))
            .withJitter(Jitter.FULL);
    private FailureClassifier classifier = FailureClassifier.defaults();

    private Builder() {}

    /** Total attempts including the first; 1 means "never retry". Default 5. */
    public Builder maxAttempts(int maxAttempts) {
      this.maxAttempts = maxAttempts;
      return this;
    }

    /** Give up once this much time has passed since the first failure. Default: no limit. */
    public Builder maxAge(Duration maxAge) {
      this.maxAge = maxAge;
      return this;
    }

    public Builder backoff(Backoff backoff) {
      this.backoff = backoff;
      return this;
    }

    public Builder classifier(FailureClassifier classifier) {
      this.classifier = classifier;
      return this;
    }

    public RetryPolicy build() {
      if (maxAttempts < 1) {
        throw new IllegalArgumentException("maxAttempts must be >= 1, was " + maxAttempts);
      }
      if (maxAge != null && (maxAge.isZero() || maxAge.isNegative())) {
        throw new IllegalArgumentException("maxAge must be positive, was " + maxAge);
      }
      if (backoff == null) {
        throw new IllegalArgumentException("backoff must not be null");
      }
      if (classifier == null) {
        throw new IllegalArgumentException("classifier must not be null");
      }
      return new RetryPolicy(this);
    }
  }
}
