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

  /**
   * Five attempts, no age limit, exponential backoff from 1 s capped at 5 min with full jitter.
   *
   * @return a new policy with every default of {@link #builder()}
   */
  public static RetryPolicy defaults() {
    return builder().build();
  }

  /**
   * A builder holding the defaults of {@link #defaults()}.
   *
   * @return a new builder
   */
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
   * @return retry after the backoff's delay for {@code attempt}, or dead-letter with a reason
   *     naming the failure (permanent, attempts exhausted, or max age exceeded)
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

  /**
   * Whether the failure is permanent under this policy's classifier.
   *
   * @param failure what went wrong; null counts as a timeout
   * @return true if the classifier says {@link FailureClassifier.Kind#PERMANENT}
   */
  public boolean isPermanent(Throwable failure) {
    return classifier.classify(failure) == FailureClassifier.Kind.PERMANENT;
  }

  /**
   * Total attempts including the first.
   *
   * @return the attempt limit, {@code >= 1}
   */
  public int maxAttempts() {
    return maxAttempts;
  }

  /**
   * The age limit measured from the first failure; {@code null} when there is none.
   *
   * @return the age limit, or null
   */
  public Duration maxAge() {
    return maxAge;
  }

  /**
   * The backoff between attempts.
   *
   * @return the backoff; never null
   */
  public Backoff backoff() {
    return backoff;
  }

  /**
   * Which failures are permanent.
   *
   * @return the classifier; never null
   */
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

  /**
   * The outcome of {@link #decide}: retry after {@link #delay()}, or dead-letter for a reason.
   *
   * @param retry true to retry after {@code delay}, false to dead-letter
   * @param delay the wait before the next attempt; null when dead-lettering
   * @param reason why the message is dead-lettered; null when retrying
   */
  public record Decision(boolean retry, Duration delay, String reason) {
    /**
     * Checks that a retry has a delay and a dead letter has a reason.
     *
     * @param retry true to retry, false to dead-letter
     * @param delay the wait before the retry; required when retrying
     * @param reason why the message is dead-lettered; required when not retrying
     * @throws NullPointerException if {@code delay} is null for a retry or {@code reason} is null
     *     for a dead letter
     */
    public Decision {
      if (retry) {
        Objects.requireNonNull(delay, "delay");
      } else {
        Objects.requireNonNull(reason, "reason");
      }
    }

    /**
     * A decision to retry.
     *
     * @param delay the wait before the next attempt; not null
     * @return a retry decision
     * @throws NullPointerException if {@code delay} is null
     */
    public static Decision retryAfter(Duration delay) {
      return new Decision(true, delay, null);
    }

    /**
     * A decision to give up and dead-letter.
     *
     * @param reason why; not null
     * @return a dead-letter decision
     * @throws NullPointerException if {@code reason} is null
     */
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

    /**
     * Total attempts including the first; 1 means "never retry". Default 5.
     *
     * @param maxAttempts the limit; checked ({@code >= 1}) by {@link #build()}
     * @return this builder
     */
    public Builder maxAttempts(int maxAttempts) {
      this.maxAttempts = maxAttempts;
      return this;
    }

    /**
     * Give up once this much time has passed since the first failure. Default: no limit.
     *
     * @param maxAge the limit, or null for none; checked (positive) by {@link #build()}
     * @return this builder
     */
    public Builder maxAge(Duration maxAge) {
      this.maxAge = maxAge;
      return this;
    }

    /**
     * Sets the backoff between attempts. Default exponential from 1 s, capped at 5 minutes, with
     * full jitter.
     *
     * @param backoff the backoff; checked (not null) by {@link #build()}
     * @return this builder
     */
    public Builder backoff(Backoff backoff) {
      this.backoff = backoff;
      return this;
    }

    /**
     * Sets which failures are permanent. Default {@link FailureClassifier#defaults()}.
     *
     * @param classifier the classifier; checked (not null) by {@link #build()}
     * @return this builder
     */
    public Builder classifier(FailureClassifier classifier) {
      this.classifier = classifier;
      return this;
    }

    /**
     * Builds an immutable, thread-safe policy.
     *
     * @return the policy
     * @throws IllegalArgumentException if {@code maxAttempts < 1}, {@code maxAge} is not positive,
     *     or {@code backoff} or {@code classifier} is null
     */
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
