package io.relaykit.guice;

import java.time.Duration;

/**
 * The lease and sent-row retention of the {@link io.relaykit.outbox.OutboxRelay} that {@link
 * RelayKitModule} binds. By default the lease is {@code relaykit.relay.lease} and the retention 7
 * days; a storage backend whose own settings say otherwise (the JDBC backend's {@code
 * relaykit.jdbc.lease} and {@code relaykit.jdbc.retention}) overrides this binding with {@link
 * RelayKitModule#override}, so the relay keeps rows as long as the storage was configured to.
 *
 * @param lease how long the relay holds claimed rows (renewed while a batch is in flight)
 * @param retention how long sent rows are kept before the relay purges them
 */
public record OutboxRelaySettings(Duration lease, Duration retention) {

  /** The default retention of sent rows: 7 days. */
  public static final Duration DEFAULT_RETENTION = Duration.ofDays(7);

  /**
   * Checks both durations.
   *
   * @param lease how long the relay holds claimed rows, positive
   * @param retention how long sent rows are kept, positive
   * @throws IllegalArgumentException naming the field: a null or non-positive duration
   */
  public OutboxRelaySettings {
    requirePositive("lease", lease);
    requirePositive("retention", retention);
  }

  private static void requirePositive(String field, Duration d) {
    if (d == null || d.isZero() || d.isNegative()) {
      throw new IllegalArgumentException(field + " must be a positive duration, was " + d);
    }
  }
}
