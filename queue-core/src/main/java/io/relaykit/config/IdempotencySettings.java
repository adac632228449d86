package io.relaykit.config;

import static io.relaykit.config.CoreKeys.IDEMPOTENCY_FAST_TIER;
import static io.relaykit.config.CoreKeys.IDEMPOTENCY_RETENTION;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * The {@code relaykit.idempotency.*} block.
 *
 * @param retention how long a completed key stays DONE, so a redelivery within it is skipped
 *     ({@value CoreKeys#IDEMPOTENCY_RETENTION}); default 1 day. Size it above the longest time a
 *     duplicate can arrive.
 * @param fastTier the storage backend whose idempotency store answers repeats in front of the
 *     storage backend's own ({@value CoreKeys#IDEMPOTENCY_FAST_TIER}), e.g. {@code redis}; empty
 *     for {@value #NONE}, the default
 */
public record IdempotencySettings(Duration retention, Optional<String> fastTier) {

  /** The value of {@value CoreKeys#IDEMPOTENCY_FAST_TIER} that means no fast tier. */
  public static final String NONE = "none";

  /**
   * Checks the values.
   *
   * @param retention how long a DONE key is kept
   * @param fastTier the fast tier's backend, or empty
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException naming the key when the retention is not positive or the
   *     fast tier is {@value #NONE} (use empty)
   */
  public IdempotencySettings {
    RetrySettings.positive(IDEMPOTENCY_RETENTION, retention);
    Objects.requireNonNull(fastTier, IDEMPOTENCY_FAST_TIER);
    if (fastTier.filter(NONE::equals).isPresent()) {
      throw new IllegalArgumentException(IDEMPOTENCY_FAST_TIER + " none means empty");
    }
  }

  /**
   * The defaults.
   *
   * @return a retention of one day, no fast tier
   */
  public static IdempotencySettings defaults() {
    return new IdempotencySettings(Duration.ofDays(1), Optional.empty());
  }

  /**
   * Reads the block from {@code settings}; unset keys take the defaults.
   *
   * @param settings the deployment's settings
   * @return the block
   * @throws IllegalArgumentException naming the key and value that are invalid
   */
  public static IdempotencySettings from(Settings settings) {
    String tier = settings.getName(IDEMPOTENCY_FAST_TIER, NONE);
    return new IdempotencySettings(
        settings.getDuration(IDEMPOTENCY_RETENTION, defaults().retention()),
        NONE.equals(tier) ? Optional.empty() : Optional.of(tier));
  }
}
