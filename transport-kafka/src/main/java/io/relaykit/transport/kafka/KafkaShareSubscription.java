package io.relaykit.transport.kafka;

import io.relaykit.message.Subscription;
import java.util.Optional;

/**
 * A running share-group subscription, as started by {@link KafkaShareSubscriber}: one share
 * consumer of the topic, plus the consumer-group reader of its retry topic.
 */
public interface KafkaShareSubscription extends Subscription {

  /**
   * The group's {@code share.delivery.count.limit}, read when the subscription started: after
   * that many deliveries of one record without an outcome the broker archives it.
   *
   * @return the limit (2 to 10)
   */
  int deliveryCountLimit();

  /**
   * Records acquired from the share group and not yet acknowledged. O(1).
   *
   * @return the count
   */
  int inFlight();

  /**
   * Records this member acknowledged with ACCEPT and the broker confirmed. O(1).
   *
   * @return the count since the start
   */
  long accepted();

  /**
   * Records this member gave back with RELEASE (a copy that could not be written, a close).
   *
   * @return the count since the start
   */
  long released();

  /**
   * Why the subscription stopped by itself, if it did (authorization, an unsupported broker).
   *
   * @return the fatal error; empty while it runs or after a plain {@link #close}
   */
  Optional<Throwable> failure();
}
