package io.relaykit.config;

import static io.relaykit.config.CoreKeys.RELAY_BATCH_SIZE;
import static io.relaykit.config.CoreKeys.RELAY_LEASE;
import static io.relaykit.config.CoreKeys.RELAY_POLL_INTERVAL;

import java.time.Duration;

/**
 * The {@code relaykit.relay.*} block: the outbox relay's pace.
 *
 * @param batchSize rows one relay claims at a time ({@value CoreKeys#RELAY_BATCH_SIZE}), 1 to
 *     {@value #MAX_BATCH_SIZE}; default 100
 * @param fixedBatchSize whether the batch size was set, fixing it; when false the relay adapts
 *     its batch size, starting at {@code batchSize}
 * @param lease how long a relay owns the rows it claimed ({@value CoreKeys#RELAY_LEASE});
 *     default 30 s
 * @param pollInterval how often an idle relay looks for new rows ({@value
 *     CoreKeys#RELAY_POLL_INTERVAL}); default 500 ms
 */
public record RelaySettings(int batchSize, boolean fixedBatchSize, Duration lease,
    Duration pollInterval) {

  /** The largest batch size an outbox relay accepts. */
  public static final int MAX_BATCH_SIZE = 10_000;

  /**
   * Checks the values.
   *
   * @param batchSize rows per claim
   * @param fixedBatchSize whether the size is fixed
   * @param lease the relay's lease
   * @param pollInterval the idle poll interval
   * @throws NullPointerException if a duration is null
   * @throws IllegalArgumentException naming the key when the batch size is outside 1 to {@value
   *     #MAX_BATCH_SIZE} or a duration is not positive
   */
  public RelaySettings {
    if (batchSize < 1 || batchSize > MAX_BATCH_SIZE) {
      throw new IllegalArgumentException(RELAY_BATCH_SIZE + " must be a whole number in 1.."
          + MAX_BATCH_SIZE + ", was '" + batchSize + "'");
    }
    RetrySettings.positive(RELAY_LEASE, lease);
    RetrySettings.positive(RELAY_POLL_INTERVAL, pollInterval);
  }

  /**
   * The defaults.
   *
   * @return adaptive batches from 100, a 30 s lease, a 500 ms poll interval
   */
  public static RelaySettings defaults() {
    return new RelaySettings(100, false, Duration.ofSeconds(30), Duration.ofMillis(500));
  }

  /**
   * Reads the block from {@code settings}; unset keys take the defaults.
   *
   * @param settings the deployment's settings
   * @return the block
   * @throws IllegalArgumentException naming the key and value that are invalid
   */
  public static RelaySettings from(Settings settings) {
    RelaySettings d = defaults();
    return new RelaySettings(
        settings.getInt(RELAY_BATCH_SIZE, d.batchSize()),
        settings.isSet(RELAY_BATCH_SIZE),
        settings.getDuration(RELAY_LEASE, d.lease()),
        settings.getDuration(RELAY_POLL_INTERVAL, d.pollInterval()));
  }

  /** The longest confirm wait of an outbox relay, whatever its lease. */
  public static final Duration MAX_CONFIRM_TIMEOUT = Duration.ofSeconds(10);

  /**
   * The confirm wait for a relay holding rows for {@code lease}: {@link #MAX_CONFIRM_TIMEOUT}, or
   * half the lease when that is shorter, since confirms must be awaited well inside the lease or
   * another relay would take the rows over while this one still waits for them.
   *
   * @param lease the relay's lease; positive
   * @return the confirm timeout
   * @throws NullPointerException if {@code lease} is null
   */
  public static Duration confirmTimeoutFor(Duration lease) {
    Duration half = lease.dividedBy(2);
    return half.compareTo(MAX_CONFIRM_TIMEOUT) < 0 ? half : MAX_CONFIRM_TIMEOUT;
  }
}
