package io.relaykit.message;

/**
 * Starts consumers on a transport.
 *
 * <h2>Contract every transport keeps</h2>
 * <ul>
 *   <li>At-least-once: a message is acknowledged (committed) only after its handler returned
 *       normally, or after it was durably handed to a retry or dead-letter destination. A crash
 *       redelivers only what was not acknowledged.
 *   <li>Out-of-order completion is safe: the acknowledged position never passes an unfinished
 *       message.
 *   <li>{@link io.relaykit.ordering.OrderingMode#KEY}: one message per key at a time, in order.
 *   <li>Retries leave the main flow: a failing message waits in a delay stage (retry topic, delay
 *       queue, scheduled redelivery) and never blocks unrelated keys.
 *   <li>After {@link io.relaykit.retry.RetryPolicy} gives up, or on a permanent failure, the message
 *       goes to dead letters with its headers, reason, exception, attempts and first and last
 *       failure times. A message that cannot be decoded goes there too, with the reason.
 *   <li>In-flight work is bounded by {@link SubscriptionSpec#maxInFlight()}.
 * </ul>
 */
public interface Subscriber extends AutoCloseable {

  /**
   * Starts consuming {@code spec.destination()} with {@code handler}.
   *
   * @param spec what to consume and how
   * @param handler does the work for each message
   * @return a running subscription; close it to stop consuming
   * @throws IllegalArgumentException if the spec asks for something the transport cannot do
   */
  Subscription subscribe(SubscriptionSpec spec, MessageHandler handler);

  /**
   * The messaging system this subscriber receives from, as the OpenTelemetry messaging conventions
   * name it ({@code kafka}, {@code rabbitmq}; relaykit's in-process transport says {@code
   * relaykit-inprocess}): recorded on spans by a {@link io.relaykit.trace.TracePropagation}. The
   * default is the empty string (unknown). Must be cheap and must not throw.
   *
   * @return the system's name, or "" when unknown
   */
  default String messagingSystem() {
    return "";
  }

  /** Closes every subscription this subscriber started (with their default deadline). */
  @Override
  void close();
}
