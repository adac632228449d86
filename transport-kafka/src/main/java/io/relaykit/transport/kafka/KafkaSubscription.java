package io.relaykit.transport.kafka;

import io.relaykit.message.Subscription;
import io.relaykit.monitor.BacklogSnapshot;

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

  /**
   * The backlog verdict over recent samples (healthy, draining spike, sustained growth, stalled),
   * from a {@link io.relaykit.monitor.BacklogMonitor} fed with {@link ConsumerBacklog#toSample()}
   * every commit interval.
   */
  BacklogSnapshot backlogVerdict();
}
