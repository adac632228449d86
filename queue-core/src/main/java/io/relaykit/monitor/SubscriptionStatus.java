package io.relaykit.monitor;

import io.relaykit.internal.Checks;
import java.time.Instant;

/**
 * What one subscription (a Kafka consumer group or share group on a topic, a RabbitMQ queue and
 * its consumers) trails and holds at one moment, as a {@link SubscriptionStatusSource} read it.
 * Figures a source cannot know are {@value #UNKNOWN}, never a guess.
 *
 * @param kind what the subscription is, e.g. {@code "kafka-group"}, {@code "kafka-share-group"},
 *     {@code "rabbitmq-queue"}, {@code "in-process"}; not blank
 * @param destination the topic or queue; not blank
 * @param group the consumer group, or null where the transport has none (a RabbitMQ queue)
 * @param lag messages not yet consumed (summed over partitions), or {@value #UNKNOWN}
 * @param inFlight messages delivered and not yet settled, or {@value #UNKNOWN}
 * @param readAt when the figures were read; not null
 */
public record SubscriptionStatus(String kind, String destination, String group, long lag,
    long inFlight, Instant readAt) {

  /** A figure the source cannot know. */
  public static final long UNKNOWN = -1;

  /**
   * Checks the figures.
   *
   * @param kind the kind; not blank
   * @param destination the topic or queue; not blank
   * @param group the group, or null
   * @param lag {@code >= 0} or {@value #UNKNOWN}
   * @param inFlight {@code >= 0} or {@value #UNKNOWN}
   * @param readAt when read; not null
   * @throws IllegalArgumentException if a part is missing or a figure is below {@value #UNKNOWN}
   */
  public SubscriptionStatus {
    Checks.requireNonBlank("kind", kind);
    Checks.requireNonBlank("destination", destination);
    Checks.requireNonNull("readAt", readAt);
    if (lag < UNKNOWN) {
      throw new IllegalArgumentException("lag must be >= 0 or UNKNOWN (-1), was " + lag);
    }
    if (inFlight < UNKNOWN) {
      throw new IllegalArgumentException("inFlight must be >= 0 or UNKNOWN (-1), was " + inFlight);
    }
  }
}
