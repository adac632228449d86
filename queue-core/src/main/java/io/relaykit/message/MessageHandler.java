package io.relaykit.message;

/**
 * Does the work for one message. The runtime acknowledges the message only after this returns
 * normally; never before.
 *
 * <p>Throwing means "not done": a {@link io.relaykit.retry.PermanentFailureException} (or a type
 * the subscription's classifier calls permanent) sends the message to dead letters at once; any
 * other exception schedules a delayed retry until the retry policy gives up. A handler may be
 * called more than once for the same message (at-least-once delivery; a retry after a timeout may
 * overlap a late first attempt), so make it idempotent, for example with an {@link
 * io.relaykit.idempotency.IdempotentHandler}.
 */
@FunctionalInterface
public interface MessageHandler {
  /**
   * Handles one delivery; returning normally means done, so the runtime acknowledges it.
   *
   * @param delivery the message and its attempt count
   * @throws Exception to say "not done": retried or dead-lettered as the class comment says
   */
  void handle(Delivery delivery) throws Exception;
}
