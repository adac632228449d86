package io.relaykit.idempotency;

import io.relaykit.internal.Checks;
import io.relaykit.message.Delivery;
import io.relaykit.message.MalformedMessageException;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHandler;
import io.relaykit.retry.Backoff;
import java.time.Duration;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
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
 * <h2>Long handlers</h2>
 * Completion is fenced by the claim's token, not by time: a handler that outlasts its lease still
 * completes the key as long as nobody took it over. To keep others from taking it over, configure
 * a {@linkplain Builder#heartbeat heartbeat}: while the handler runs, the claim is renewed every
 * period on the given scheduler. If a renewal finds the claim taken over (the handler stalled past
 * its lease, say in a GC pause), the heartbeat stops and a warning is logged; the handler cannot
 * be stopped, so both consumers may be running the effect: a lease never fences an effect outside
 * the store (see {@link IdempotencyStore}, "What a takeover means"). A renewal that fails because
 * the store is unreachable is logged and tried again at the next beat.
 *
 * <h2>When complete fails</h2>
 * The effect has run when {@code complete} is called, so a failed complete is tried again: up to
 * {@link Builder#completeRetries} more times (default {@value #DEFAULT_COMPLETE_RETRIES}), pausing
 * by its back-off (default {@link #DEFAULT_COMPLETE_BACKOFF}: 200 ms doubling to 2 s, about 6 s in
 * all), each with the same claim, so a claim taken over meanwhile is never completed. A complete
 * that committed but whose reply was lost is recognised: the repeat answers false and the key reads
 * DONE. If every attempt fails, the delivery is still acknowledged (handle returns normally; the
 * effect ran, and a redelivery would run it a second time once the lease lapsed) and an ERROR is
 * logged; the key stays claimed until its lease lapses, and a copy of the message that arrives
 * after that (a republish, a replay) runs the effect again. An interrupt of the calling thread
 * (already set when the effect returns, or arriving during a pause) stops the retries at once and
 * ends the same way: acknowledged, the interrupt flag kept set for the caller, the key claimed
 * until its lease lapses unless an attempt that threw had committed.
 *
 * <p>A business key the function cannot produce (null or blank) is a {@link
 * MalformedMessageException} (permanent: dead-lettered). If another consumer took the key over
 * while the handler ran, {@code complete} reports it: the work is acknowledged, since it did run
 * here (a retry would only find the new holder's claim), and logged as possibly duplicated.
 *
 * <p>Costs one claim and one complete (or release) on the store per delivery, plus one claim per
 * IN_PROGRESS retry and one renew per heartbeat. The pauses block the calling consumer thread: at
 * most the sum of the back-off's first {@code inProgressRetries} delays.
 */
public final class IdempotentHandler implements MessageHandler {

  private static final System.Logger LOG = System.getLogger(IdempotentHandler.class.getName());

  /** Waits for a duration; the seam tests replace with a fake clock's advance. */
  @FunctionalInterface
  public interface Pause {
    /**
     * Blocks for {@code duration}, or less if interrupted.
     *
     * @param duration how long to wait; positive
     * @throws InterruptedException if interrupted while waiting; the delivery then fails retryably
     */
    void pause(Duration duration) throws InterruptedException;

    /**
     * Sleeps the calling thread: the default.
     *
     * @return a pause that sleeps with {@link TimeUnit#NANOSECONDS}
     */
    static Pause sleep() {
      return d -> TimeUnit.NANOSECONDS.sleep(d.toNanos());
    }
  }

  /** Runs a heartbeat; the seam tests replace with one they step by hand. */
  @FunctionalInterface
  public interface Scheduler {
    /**
     * Runs {@code beat} every {@code period}, the first time one period from now, until the
     * returned handle is run.
     *
     * @param period the time between beats; positive
     * @param beat what each beat runs; must not throw
     * @return a handle that stops further beats when run
     */
    Runnable every(Duration period, Runnable beat);

    /**
     * Beats on {@code executor} with a fixed delay; the handle cancels the task.
     *
     * @param executor the executor the beats run on; not shut down by the handle
     * @return a scheduler; its handles cancel the task without interrupting a running beat
     * @throws IllegalArgumentException if {@code executor} is null
     */
    static Scheduler of(ScheduledExecutorService executor) {
      Checks.requireNonNull("executor", executor);
      return (period, beat) -> {
        ScheduledFuture<?> f = executor.scheduleWithFixedDelay(beat, period.toNanos(),
            period.toNanos(), TimeUnit.NANOSECONDS);
        return () -> f.cancel(false);
      };
    }
  }

  /** Default IN_PROGRESS retries: 3, so four claims in all. */
  public static final int DEFAULT_IN_PROGRESS_RETRIES = 3;

  /** Default pause between IN_PROGRESS claims: 100 ms, doubling, at most 1 s. */
  public static final Backoff DEFAULT_IN_PROGRESS_BACKOFF =
      Backoff.exponential(Duration.ofMillis(100)).withMax(Duration.ofSeconds(1));

  /** Default retries of a failed complete: 5, so six attempts in all. */
  public static final int DEFAULT_COMPLETE_RETRIES = 5;

  /** Default pause between complete attempts: 200 ms, doubling, at most 2 s. */
  public static final Backoff DEFAULT_COMPLETE_BACKOFF =
      Backoff.exponential(Duration.ofMillis(200)).withMax(Duration.ofSeconds(2));

  private final IdempotencyStore store;
  private final Function<Message, String> businessKey;
  private final Duration lease;
  private final MessageHandler delegate;
  private final int inProgressRetries;
  private final Backoff inProgressBackoff;
  private final Pause pause;
  private final Duration heartbeatEvery;
  private final Scheduler heartbeatScheduler;
  private final int completeRetries;
  private final Backoff completeBackoff;

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
    this.heartbeatEvery = b.heartbeatEvery;
    this.heartbeatScheduler = b.heartbeatScheduler;
    this.completeRetries = b.completeRetries;
    this.completeBackoff = b.completeBackoff;
  }

  /**
   * A builder with the required parts; the arguments are as for the constructor.
   *
   * @param store where claims are kept
   * @param businessKey the unit of work a message stands for
   * @param lease how long one delivery may hold the key; positive
   * @param delegate the handler doing the work
   * @return a builder with the default IN_PROGRESS retries and no heartbeat
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
    Heartbeat heartbeat = startHeartbeat(claim, delivery.message().id());
    try {
      delegate.handle(delivery);
    } catch (Exception | Error failure) {
      heartbeat.stop();
      try {
        store.release(claim);
      } catch (RuntimeException releaseFailure) {
        // The lease still expires on its own; the original failure is what matters.
        failure.addSuppressed(releaseFailure);
      }
      throw failure;
    }
    heartbeat.stop();
    completeAfterEffect(claim, delivery.message().id());
  }

  /**
   * Completes the claim after the effect ran, trying again on failure (same claim, so fenced by its
   * token) up to {@code completeRetries} times with the back-off. An attempt that throws may still
   * have committed (a lost reply): the repeat then answers false, and the key's status DONE tells
   * that it did. Never throws: the effect ran, and failing the delivery would only make a
   * redelivery run it again once the lease lapses.
   */
  private void completeAfterEffect(Claim claim, String messageId) {
    RuntimeException failure = null;
    for (int attempt = 0; ; attempt++) {
      try {
        boolean completed = store.complete(claim);
        if (completed || (failure != null && isDone(claim.key()))) {
          return;
        }
        LOG.log(System.Logger.Level.WARNING, "business key {0} was taken over by another"
            + " consumer while message {1} was handled (its lease had lapsed); its effect may be"
            + " duplicated", claim.key(), messageId);
        return;
      } catch (RuntimeException e) {
        if (failure == null) {
          failure = e;
        } else {
          failure.addSuppressed(e);
        }
      }
      if (attempt >= completeRetries) {
        break;
      }
      try {
        pause.pause(completeBackoff.delay(attempt + 1));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    LOG.log(System.Logger.Level.ERROR, "the effect of message " + messageId + " ran, but"
        + " business key " + claim.key() + " could not be completed after " + (completeRetries + 1)
        + " attempts; the delivery is acknowledged, and the key stays claimed until its lease"
        + " lapses at " + claim.leaseExpiresAt() + ": a copy of the message arriving after that"
        + " runs the effect again", failure);
  }

  private boolean isDone(String key) {
    try {
      return store.status(key).orElse(null) == Claim.Status.DONE;
    } catch (RuntimeException e) {
      return false;
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

  private Heartbeat startHeartbeat(Claim claim, String messageId) {
    Heartbeat h = new Heartbeat(claim, messageId);
    if (heartbeatScheduler != null) {
      h.cancel = heartbeatScheduler.every(heartbeatEvery, h::beat);
    }
    return h;
  }

  /** One delivery's lease renewals; stopped before the claim is completed or released. */
  private final class Heartbeat {
    private final Claim claim;
    private final String messageId;
    private volatile boolean stopped;
    private volatile Runnable cancel;

    Heartbeat(Claim claim, String messageId) {
      this.claim = claim;
      this.messageId = messageId;
    }

    void beat() {
      if (stopped) {
        return;
      }
      boolean renewed;
      try {
        renewed = store.renew(claim, lease);
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "could not renew the lease on business key "
            + claim.key() + " (message " + messageId + "); trying again in " + heartbeatEvery, e);
        return;
      }
      if (!renewed && !stopped) {
        stop();
        LOG.log(System.Logger.Level.WARNING, "business key {0} was taken over by another consumer"
            + " while message {1} is still being handled (its lease had lapsed); both may run the"
            + " effect", claim.key(), messageId);
      }
    }

    void stop() {
      stopped = true;
      Runnable c = cancel;
      if (c != null) {
        try {
          c.run();
        } catch (RuntimeException e) {
          LOG.log(System.Logger.Level.WARNING, "could not cancel the heartbeat of business key "
              + claim.key(), e);
        }
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
    private int completeRetries = DEFAULT_COMPLETE_RETRIES;
    private Backoff completeBackoff = DEFAULT_COMPLETE_BACKOFF;
    private int inProgressRetries = DEFAULT_IN_PROGRESS_RETRIES;
    private Backoff inProgressBackoff = DEFAULT_IN_PROGRESS_BACKOFF;
    private Pause pause = Pause.sleep();
    private Duration heartbeatEvery;
    private Scheduler heartbeatScheduler;

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
     * @param retries claims after the first; 0 to 100
     * @param backoff the pauses between them
     * @return this builder
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
     * How often a complete that threw is tried again after the effect ran, and the pause before
     * retry n ({@code backoff.delay(n)}); the pauses use the builder's {@link #pause}. Zero
     * retries gives up after the first failure.
     *
     * @param retries attempts after the first; 0 to 100
     * @param backoff the pauses between them
     * @return this builder
     * @throws IllegalArgumentException if {@code retries} is negative or above 100, or {@code
     *     backoff} is null
     */
    public Builder completeRetries(int retries, Backoff backoff) {
      if (retries < 0 || retries > 100) {
        throw new IllegalArgumentException("completeRetries must be in 0..100, was " + retries);
      }
      this.completeRetries = retries;
      this.completeBackoff = Checks.requireNonNull("backoff", backoff);
      return this;
    }

    /**
     * How the handler waits between IN_PROGRESS claims; {@link Pause#sleep()} by default. Tests
     * pass a fake clock's advance.
     *
     * @param pause the wait between IN_PROGRESS claims
     * @return this builder
     * @throws IllegalArgumentException if {@code pause} is null
     */
    public Builder pause(Pause pause) {
      this.pause = Checks.requireNonNull("pause", pause);
      return this;
    }

    /**
     * Renews the claim every {@code every} on {@code scheduler} while the handler runs; off by
     * default. Choose {@code every} well below the lease (a third of it, say), so one late or
     * failed beat does not let the lease lapse.
     *
     * @param every the time between renewals; positive and shorter than the lease
     * @param scheduler runs the renewals
     * @return this builder
     * @throws IllegalArgumentException if {@code every} is not positive or not shorter than the
     *     lease, or {@code scheduler} is null
     */
    public Builder heartbeat(Duration every, Scheduler scheduler) {
      Checks.requirePositive("heartbeat", every);
      if (every.compareTo(lease) >= 0) {
        throw new IllegalArgumentException("heartbeat must be shorter than the lease " + lease
            + ", was " + every);
      }
      this.heartbeatEvery = every;
      this.heartbeatScheduler = Checks.requireNonNull("scheduler", scheduler);
      return this;
    }

    /**
     * The handler.
     *
     * @return a new handler; the builder may be changed and built again
     */
    public IdempotentHandler build() {
      return new IdempotentHandler(this);
    }
  }
}
