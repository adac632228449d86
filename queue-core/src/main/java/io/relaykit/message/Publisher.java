package io.relaykit.message;

import java.util.concurrent.CompletableFuture;

/**
 * Hands messages to a transport and reports, per message, when the broker has durably accepted it.
 *
 * <h2>Contract</h2>
 * <ul>
 *   <li>The returned future completes normally only after the broker's confirm (Kafka {@code
 *       acks=all}, RabbitMQ publisher confirm, the in-process transport's enqueue). A caller that
 *       marks work done on completion loses nothing.
 *   <li>It completes exceptionally with {@link PublishException} (retryable: the message may or may
 *       not be on the broker) or {@link MessageRejectedException} (permanent). It never completes
 *       normally for a message that was dropped.
 *   <li>Messages with the same key published from one thread, each after the previous future
 *       completed, are delivered in that order. Messages published without waiting may be batched
 *       and are confirmed independently.
 *   <li>Invalid arguments (null or blank destination, null message) throw {@link
 *       IllegalArgumentException} at once rather than failing the future.
 *   <li>Thread-safe. {@link #close()} waits for outstanding confirms up to the implementation's
 *       close timeout, fails the rest with {@link PublishException}, and rejects later publishes.
 * </ul>
 */
public interface Publisher extends AutoCloseable {

  /**
   * Publishes {@code message} to {@code destination}.
   *
   * @param destination the topic, exchange or queue; not blank
   * @param message the message; not null
   * @return a future completed with the broker's receipt, or exceptionally as described above
   * @throws IllegalArgumentException if {@code destination} is blank or {@code message} is null
   */
  CompletableFuture<PublishReceipt> publish(String destination, Message message);

  /**
   * The messaging system this publisher sends to, as the OpenTelemetry messaging conventions name
   * it ({@code kafka}, {@code rabbitmq}; relaykit's in-process transport says {@code
   * relaykit-inprocess}): recorded on spans by a {@link io.relaykit.trace.TracePropagation}. The
   * default is the empty string (unknown). Must be cheap and must not throw.
   *
   * @return the system's name, or "" when unknown
   */
  default String messagingSystem() {
    return "";
  }

  @Override
  void close();
}
