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
   *
   * @return the most recent sample (one with no lag and nothing in flight until the first
   *     interval); after the subscription stopped, the last one it took
   */
  ConsumerBacklog backlog();

  /**
   * The backlog verdict over recent samples (healthy, draining spike, sustained growth, stalled),
   * from a {@link io.relaykit.monitor.BacklogMonitor} fed with {@link ConsumerBacklog#toSample()}
   * every commit interval.
   *
   * @return the monitor's current verdict
   */
  BacklogSnapshot backlogVerdict();

  /**
   * Why the subscription stopped by itself, if it did: a fatal consumer error (authorization,
   * fencing of its {@code group.instance.id}, a source partition without a committed offset under
   * {@code auto.offset.reset=none}, ...). The message names the partitions and the setting
   * involved. When present, {@link #isRunning()} is false and {@link
   * io.relaykit.monitor.MetricsListener#consumerFailed} was called once with it; {@link #close}
   * still releases the threads.
   *
   * @return the fatal error that stopped it; empty while it runs or after a plain {@link #close}
   */
  java.util.Optional<Throwable> failure();
}
