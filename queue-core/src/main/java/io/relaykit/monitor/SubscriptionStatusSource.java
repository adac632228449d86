package io.relaykit.monitor;

import java.util.List;

/**
 * Reads the status of subscriptions: from a broker (a Kafka admin client's group offsets, a
 * RabbitMQ queue's depth) or from the consumers of this process (their lag and in-flight gauges).
 * What the operator console and status pages show per subscription.
 *
 * <p>Implementations say in their Javadoc what one read costs (round trips) and bound how many
 * subscriptions one read returns.
 */
@FunctionalInterface
public interface SubscriptionStatusSource {

  /**
   * The subscriptions' status now.
   *
   * @return one entry per subscription this source knows, bounded by the implementation
   * @throws Exception if the backend cannot be read (down, timed out, refused); the caller shows
   *     the failure and keeps no figures from this read
   */
  List<SubscriptionStatus> read() throws Exception;
}
