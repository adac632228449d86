package io.relaykit.transport.kafka;

import io.relaykit.message.Subscription;

/**
 * A running Kafka consumer of one topic (and its retry topic) in one group, as started by {@link
 * KafkaSubscriber}. Adds a view of the backlog to {@link Subscription}.
 */
public interface KafkaSubscription extends Subscription {

  /**
   * The latest backlog sample: consumer lag per partition, records in flight, age of the oldest.
   * Refreshed by the poll thread once per commit interval; O(1) to read.
   */
  ConsumerBacklog backlog();
}
