package io.relaykit.monitor;

import io.relaykit.internal.Checks;
import java.time.Duration;
import java.time.Instant;

/**
 * One observation of a backlog, fed to a {@link BacklogMonitor}.
 *
 * @param at when it was taken
 * @param depth messages waiting (queued, unsent, or consumer lag), {@code >= 0}
 * @param oldestAge how long the oldest waiting message has waited; {@link Duration#ZERO} when
 *     nothing waits
 */
public record BacklogSample(Instant at, long depth, Duration oldestAge) {

  /**
   * One checked sample.
   *
   * @param at when it was taken; not null
   * @param depth messages waiting, {@code >= 0}
   * @param oldestAge how long the oldest waiting message has waited; not null, not negative
   * @throws IllegalArgumentException if {@code at} or {@code oldestAge} is null, or {@code depth}
   *     or {@code oldestAge} is negative
   */
  public BacklogSample {
    Checks.requireNonNull("at", at);
    Checks.requireNonNull("oldestAge", oldestAge);
    if (depth < 0) {
      throw new IllegalArgumentException("depth must be >= 0, was " + depth);
    }
    if (oldestAge.isNegative()) {
      throw new IllegalArgumentException("oldestAge must not be negative, was " + oldestAge);
    }
  }
}
