package io.relaykit.config;

import static io.relaykit.config.CoreKeys.RETRY_INITIAL_BACKOFF;
import static io.relaykit.config.CoreKeys.RETRY_JITTER;
import static io.relaykit.config.CoreKeys.RETRY_MAX_AGE;
import static io.relaykit.config.CoreKeys.RETRY_MAX_ATTEMPTS;
import static io.relaykit.config.CoreKeys.RETRY_MAX_BACKOFF;

import io.relaykit.retry.Backoff;
import io.relaykit.retry.Jitter;
import io.relaykit.retry.RetryPolicy;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * The {@code relaykit.retry.*} block: how often and how patiently a failed message is retried.
 * {@link #toPolicy()} turns it into the {@link RetryPolicy} every runtime uses.
 *
 * @param maxAttempts total attempts, the first included ({@value CoreKeys#RETRY_MAX_ATTEMPTS});
 *     default 5
 * @param initialBackoff the wait after the first failure ({@value
 *     CoreKeys#RETRY_INITIAL_BACKOFF}); default 1 s
 * @param maxBackoff the cap on a wait, applied before jitter ({@value
 *     CoreKeys#RETRY_MAX_BACKOFF}); default 5 min
 * @param jitter how waits are spread ({@value CoreKeys#RETRY_JITTER}); default full
 * @param maxAge give up this long after the first failure ({@value CoreKeys#RETRY_MAX_AGE});
 *     default none
 */
public record RetrySettings(int maxAttempts, Duration initialBackoff, Duration maxBackoff,
    Jitter jitter, Optional<Duration> maxAge) {

  /**
   * Checks the values.
   *
   * @param maxAttempts total attempts
   * @param initialBackoff the first wait
   * @param maxBackoff the cap on a wait
   * @param jitter how waits are spread
   * @param maxAge the age limit, or empty
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException naming the key when a count or duration is not positive, or
   *     the max backoff is below the initial one
   */
  public RetrySettings {
    Objects.requireNonNull(jitter, RETRY_JITTER);
    Objects.requireNonNull(maxAge, RETRY_MAX_AGE);
    if (maxAttempts < 1) {
      throw new IllegalArgumentException(RETRY_MAX_ATTEMPTS + " must be >= 1, was " + maxAttempts);
    }
    positive(RETRY_INITIAL_BACKOFF, initialBackoff);
    positive(RETRY_MAX_BACKOFF, maxBackoff);
    maxAge.ifPresent(a -> positive(RETRY_MAX_AGE, a));
    if (maxBackoff.compareTo(initialBackoff) < 0) {
      throw new IllegalArgumentException(RETRY_MAX_BACKOFF + " must be >= "
          + RETRY_INITIAL_BACKOFF + " (" + initialBackoff + "), was " + maxBackoff);
    }
  }

  /**
   * The defaults, equal in every setting to {@link RetryPolicy#defaults()}.
   *
   * @return five attempts, 1 s to 5 min with full jitter, no age limit
   */
  public static RetrySettings defaults() {
    return new RetrySettings(5, Duration.ofSeconds(1), Duration.ofMinutes(5), Jitter.FULL,
        Optional.empty());
  }

  /**
   * Reads the block from {@code settings}; unset keys take the defaults.
   *
   * @param settings the deployment's settings
   * @return the block
   * @throws IllegalArgumentException naming the key and value that are invalid
   */
  public static RetrySettings from(Settings settings) {
    RetrySettings d = defaults();
    return new RetrySettings(
        settings.getInt(RETRY_MAX_ATTEMPTS, d.maxAttempts()),
        settings.getDuration(RETRY_INITIAL_BACKOFF, d.initialBackoff()),
        settings.getDuration(RETRY_MAX_BACKOFF, d.maxBackoff()),
        settings.getEnum(RETRY_JITTER, Jitter.class, d.jitter()),
        Optional.ofNullable(settings.getDuration(RETRY_MAX_AGE, null)));
  }

  /**
   * The retry policy: exponential backoff from {@link #initialBackoff()} capped at {@link
   * #maxBackoff()} with {@link #jitter()}, the default failure classifier.
   *
   * @return a new policy
   */
  public RetryPolicy toPolicy() {
    RetryPolicy.Builder b = RetryPolicy.builder()
        .maxAttempts(maxAttempts)
        .backoff(Backoff.exponential(initialBackoff).withMax(maxBackoff).withJitter(jitter));
    maxAge.ifPresent(b::maxAge);
    return b.build();
  }

  static void positive(String key, Duration value) {
    Objects.requireNonNull(value, key);
    if (value.isZero() || value.isNegative()) {
      throw new IllegalArgumentException(key + " must be a positive duration, was " + value);
    }
  }
}
