package io.relaykit.idempotency;

import io.relaykit.internal.Checks;
import io.relaykit.message.Delivery;
import io.relaykit.message.MalformedMessageException;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHandler;
import io.relaykit.retry.Backoff;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * Makes a {@link MessageHandler} run its work at most once per business key, however often the
 * message is delivered: claim the key, run the handler, complete the key.
 *
 * <ul>
 *   <li>CLAIMED: runs the handler; on success completes the key and returns (ack); on failure
 *       releases the key, so the runtime's retry can claim it again at once, and rethrows.
 *   <li>IN_PROGRESS: another delivery holds the key. The claim is tried again up to {@link
 *       Builder#inProgressRetries} times, pausing by the builder's back-off in between (on the
 *       injected {@link Pause}); if the holder completes meanwhile the answer becomes DONE (ack),
 *       if it releases or its lease lapses this delivery claims it and runs. Still IN_PROGRESS
 *       after the last retry: throws {@link WorkInProgressException} (retryable), so the runtime
 *       tries again later. Work held elsewhere is never acknowledged as done: the holder may still
 *       fail and release it.
 *   <li>DONE: the work was done; returns normally (ack) without running the handler.
 * </ul>
 *
 * A business key the function cannot produce (null or blank) is a {@link MalformedMessageException}
 * (permanent: dead-lettered). If another consumer took the key over while the handler ran (its
 * lease had lapsed), {@code complete} reports it: the work is acknowledged, since it did run here,
 * and logged as possibly duplicated. Costs one claim and one complete (or release) on the store per
 * delivery, plus one claim per IN_PROGRESS retry. The pauses block the calling consumer thread:
 * at most the sum of the back-off's first {@code inProgressRetries} delays.
 */
public final class IdempotentHandler implements MessageHandler {

  private static final System.Logger LOG = System.getLogger(IdempotentHandler.class.getName());

  /** Waits for a duration; the seam tests replace with a fake clock's advance. */
  @FunctionalInterface
  public interface Pause {
    /** Blocks for {@code duration}, or less if interrupted. */
    void pause(Duration duration) throws InterruptedException;

    /** Sleeps the calling thread: the default. */
    static Pause sleep() {
      return d -> TimeUnit.NANOSECONDS.sleep(d.toNanos());
    }
  }

  /** Default IN_PROGRESS retries: 3, so four claims in all. */
  public static final int DEFAULT_IN_PROGRESS_RETRIES = 3;

  /** Default pause between IN_PROGRESS claims: 100 ms, doubling, at most 1 s. */
  public static final Backoff DEFAULT_IN_PROGRESS_BACKOFF =
      Backoff.exponential(Duration.ofMillis(100)).withMax(Duration.ofSeconds(1));

  private final IdempotencyStore store;
  private final Function<Message, String> businessKey;
  private final Duration lease;
  private final MessageHandler delegate;
  private final int inProgressRetries;
  private final Backoff inProgressBackoff;
  private final Pause pause;

  /**
   * A handler with the default IN_PROGRESS retries ({@link #DEFAULT_IN_PROGRESS_RETRIES}, {@link
   * #DEFAULT_IN_PROGRESS_BACKOFF}, sleeping); see {@link #builder} for the others.
   *
   * @param store where claims are kept
   * @param businessKey the unit of work a message stands for ({@code m -> "order-" + orderId +
   *     ":sms"}); not the message id, so a republished message maps to the same key
   * @param lease how long one delivery may hold the key; longer than the handler's timeout
   * @param delegate the handler doing the work
   * @throws IllegalArgumentException naming the argument that is null or not positive
   */
  public IdempotentHandler(IdempotencyStore store, Function<Message, String> businessKey,
      Duration lease, MessageHandler delegate) {
    this(builder(store, businessKey, lease, delegate));
  }

  private IdempotentHandler(Builder b) {
    this.store = b.store;
    this.businessKey = b.businessKey;
    this.lease = b.lease;
    this.delegate = b.delegate;
    this.inProgressRetries = b.inProgressRetries;
    this.inProgressBackoff = b.inProgressBackoff;
    this.pause = b.pause;
  }

  /**
   * A builder with the required parts; the arguments are as for the constructor.
   *
   * @throws IllegalArgumentException naming the argument that is null or not positive
   */
  public static Builder builder(IdempotencyStore store, Function<Message, String> businessKey,
      Duration lease, MessageHandler delegate) {
    return new Builder(store, businessKey, lease, delegate);
  }

  @Override
  public void handle(Delivery delivery) throws Exception {
    String key = businessKey.apply(delivery.message());
    if (key == null || key.isBlank() || key.length() > IdempotencyStore.MAX_KEY_LENGTH) {
      throw new MalformedMessageException("message " + delivery.message().id()
          + " has no valid business key (null, blank or longer than "
          + IdempotencyStore.MAX_KEY_LENGTH + " characters): " + abbreviate(key));
    }
    Claim claim = claimWaitingOutOthers(key);
    if (claim.status() == Claim.Status.DONE) {
      return;
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
      LOG.log(System.Logger.Level.WARNING, "business key {0} was taken over by another consumer"
          + " while message {1} was handled (its lease had lapsed); its effect may be duplicated",
          key, delivery.message().id());
    }
  }

  /** CLAIMED or DONE; IN_PROGRESS after the last retry throws {@link WorkInProgressException}. */
  private Claim claimWaitingOutOthers(String key) {
    for (int retry = 1; ; retry++) {
      Claim claim = store.claim(key, lease);
      switch (claim.status()) {
        case DONE:
        case CLAIMED:
          return claim;
        case IN_PROGRESS:
          break;
        default:
          throw new IllegalStateException("unknown claim status " + claim.status());
      }
      if (retry > inProgressRetries) {
        throw new WorkInProgressException("business key " + key + " is being processed by"
            + " another delivery until " + claim.leaseExpiresAt() + " (still after "
            + inProgressRetries + " retries)");
      }
      try {
        pause.pause(inProgressBackoff.delay(retry));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        WorkInProgressException w = new WorkInProgressException("business key " + key
            + " is being processed by another delivery; interrupted while waiting for it");
        w.initCause(e);
        throw w;
      }
    }
  }

  private static String abbreviate(String key) {
    if (key == null) {
      return "null";
    }
    return key.length() <= 40 ? "\"" + key + "\"" : "\"" + key.substring(0, 40) + "...\" ("
        + key.length() + " characters)";
  }

  /** Builds an {@link IdempotentHandler}; validated as it goes. Not thread-safe. */
  public static final class Builder {
    private final IdempotencyStore store;
    private final Function<Message, String> businessKey;
    private final Duration lease;
    private final MessageHandler delegate;
    private int inProgressRetries = DEFAULT_IN_PROGRESS_RETRIES;
    private Backoff inProgressBackoff = DEFAULT_IN_PROGRESS_BACKOFF;
    private Pause pause = Pause.sleep();

    private Builder(IdempotencyStore store, Function<Message, String> businessKey,
        Duration lease, MessageHandler delegate) {
      this.store = Checks.requireNonNull("store", store);
      this.businessKey = Checks.requireNonNull("businessKey", businessKey);
      this.lease = Checks.requirePositive("lease", lease);
      this.delegate = Checks.requireNonNull("delegate", delegate);
    }

    /**
     * How often an IN_PROGRESS key is claimed again before the delivery fails retryably, and the
     * pause before retry n ({@code backoff.delay(n)}). Zero retries fails at once.
     *
     * @throws IllegalArgumentException if {@code retries} is negative or above 100, or {@code
     *     backoff} is null
     */
    public Builder inProgressRetries(int retries, Backoff backoff) {
      if (retries < 0 || retries > 100) {
        throw new IllegalArgumentException("inProgressRetries must be in 0..100, was " + retries);
      }
      this.inProgressRetries = retries;
      this.inProgressBackoff = Checks.requireNonNull("backoff", backoff);
      return this;
    }

    /**
     * How the handler waits between IN_PROGRESS claims; {@link Pause#sleep()} by default. Tests
     * pass a fake clock's advance.
     *
     * @throws IllegalArgumentException if {@code pause} is null
     */
    public Builder pause(Pause pause) {
      this.pause = Checks.requireNonNull("pause", pause);
      return this;
    }

    /** The handler. */
    public IdempotentHandler build() {
      return new IdempotentHandler(this);
    }
  }
}
