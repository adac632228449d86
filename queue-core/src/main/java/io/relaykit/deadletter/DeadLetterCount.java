package io.relaykit.deadletter;

import io.relaykit.internal.Checks;
import java.time.Instant;

/**
 * How many dead letters one source holds for one consumer group, and the span of their last
 * failures: one row of {@link DeadLetterStore#countBySource}.
 *
 * @param source the source (destination) the dead letters came from; not blank
 * @param group the consumer group, or null for dead letters of no group (a relay's)
 * @param count how many, {@code >= 1}
 * @param oldestFailureAt the earliest last failure among them; not null
 * @param newestFailureAt the latest last failure among them; not before {@code oldestFailureAt}
 */
public record DeadLetterCount(String source, String group, long count, Instant oldestFailureAt,
    Instant newestFailureAt) {

  /**
   * Checks the row.
   *
   * @param source the source; not blank
   * @param group the group, or null
   * @param count how many, {@code >= 1}
   * @param oldestFailureAt the earliest last failure; not null
   * @param newestFailureAt the latest last failure; not null, not before the earliest
   * @throws IllegalArgumentException if a part is missing or out of range
   */
  public DeadLetterCount {
    Checks.requireNonBlank("source", source);
    Checks.requireNonNull("oldestFailureAt", oldestFailureAt);
    Checks.requireNonNull("newestFailureAt", newestFailureAt);
    if (count < 1) {
      throw new IllegalArgumentException("count must be >= 1, was " + count);
    }
    if (newestFailureAt.isBefore(oldestFailureAt)) {
      throw new IllegalArgumentException("newestFailureAt (" + newestFailureAt
          + ") must not be before oldestFailureAt (" + oldestFailureAt + ")");
    }
  }
}
