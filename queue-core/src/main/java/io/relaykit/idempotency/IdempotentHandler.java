package io.relaykit.idempotency;

import io.relaykit.internal.Checks;
import io.relaykit.message.Delivery;
import io.relaykit.message.MalformedMessageException;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHandler;
import java.time.Duration;
import java.util.function.Function;

/**
 * Makes a {@link MessageHandler} run its work at most once per business key, however often the
 * message is delivered: claim the key, run the handler, complete the key.
 *
 * <ul>
 *   <li>CLAIMED: runs the handler; on success completes the key and returns (ack); on failure
 *       releases the key, so the runtime's retry can claim it again at once, and rethrows.
 *   <li>IN_PROGRESS: another delivery holds the key; throws {@link WorkInProgressException}
 *       (retryable), so the runtime tries again later instead of acknowledging work not yet done.
 *   <li>DONE: the work was done; returns normally (ack) without running the handler.
 * </ul>
 *
 * A business key the function cannot produce (null or blank) is a {@link MalformedMessageException}
 * (permanent: dead-lettered). If the lease lapsed while the handler ran and another consumer took
 * the key over, {@code complete} reports it: the work is acknowledged, and logged as possibly
 * duplicated. Costs one claim and one complete (or release) on the store per delivery.
 */
public final class IdempotentHandler implements MessageHandler {

  private static final System.Logger LOG = System.getLogger(IdempotentHandler.class.getName());

  private final IdempotencyStore store;
  private final Function<Message, String> businessKey;
  private final Duration lease;
  private final MessageHandler delegate;

  /**
   * @param store where claims are kept
   * @param businessKey the unit of work a message stands for ({@code m -> "order-" + orderId +
   *     ":sms"}); not the message id, so a republished message maps to the same key
   * @param lease how long one delivery may hold the key; longer than the handler's timeout
   * @param delegate the handler doing the work
   * @throws IllegalArgumentException naming the argument that is null or not positive
   */
  public IdempotentHandler(IdempotencyStore store, Function<Message, String> businessKey,
      Duration lease, MessageHandler delegate) {
    this.store = Checks.requireNonNull("store", store);
    this.businessKey = Checks.requireNonNull("businessKey", businessKey);
    this.lease = Checks.requirePositive("lease", lease);
    this.delegate = Checks.requireNonNull("delegate", delegate);
  }

  @Override
  public void handle(Delivery delivery) throws Exception {
    String key = businessKey.apply(delivery.message());
    if (key == null || key.isBlank() || key.length() > IdempotencyStore.MAX_KEY_LENGTH) {
      throw new MalformedMessageException("message " + delivery.message().id()
          + " has no valid business key (null, blank or longer than "
          + IdempotencyStore.MAX_KEY_LENGTH + " characters): " + abbreviate(key));
    }
    Claim claim = store.claim(key, lease);
    switch (claim.status()) {
      case DONE:
        return;
      case IN_PROGRESS:
        throw new WorkInProgressException("business key " + key + " is being processed by another"
            + " delivery until " + claim.leaseExpiresAt());
      case CLAIMED:
        break;
      default:
        throw new IllegalStateException("unknown claim status " + claim.status());
    }
    try {
      delegate.handle(delivery);
    } catch (Exception | Error failure) {
      try {
        store.release(claim);
      } catch (RuntimeException releaseFailure) {
        // The lease still expires on its own; the original failure is what matters.
        failure.addSuppressed(releaseFailure);
      }
      throw failure;
    }
    if (!store.complete(claim)) {
      LOG.log(System.Logger.Level.WARNING, "lease on business key {0} lapsed and was taken over"
          + " while message {1} was handled; its effect may be duplicated", key,
          delivery.message().id());
    }
  }

  private static String abbreviate(String key) {
    if (key == null) {
      return "null";
    }
    return key.length() <= 40 ? "\"" + key + "\"" : "\"" + key.substring(0, 40) + "...\" ("
        + key.length() + " characters)";
  }
}
