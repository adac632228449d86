package io.relaykit.message;

import java.util.Objects;

/**
 * The broker's confirm for one published message.
 *
 * @param messageId the confirmed message's id
 * @param destination where it was published (topic, exchange, queue)
 * @param position where the broker put it, in the transport's terms ({@code "orders-3@1042"} for
 *     Kafka partition 3 offset 1042, a publish sequence number for RabbitMQ); informational
 */
public record PublishReceipt(String messageId, String destination, String position) {
  /**
   * Checks that no component is null.
   *
   * @param messageId the confirmed message's id; not null
   * @param destination where it was published; not null
   * @param position where the broker put it; not null
   * @throws NullPointerException naming the component that is null
   */
  public PublishReceipt {
    Objects.requireNonNull(messageId, "messageId");
    Objects.requireNonNull(destination, "destination");
    Objects.requireNonNull(position, "position");
  }
}
