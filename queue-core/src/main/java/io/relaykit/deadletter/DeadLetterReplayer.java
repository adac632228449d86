package io.relaykit.deadletter;

import io.relaykit.internal.Checks;
import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleListener;
import java.time.InstantSource;
import java.util.Optional;

/**
 * Replays dead letters: takes one out of a {@link DeadLetterStore} and resends it through a {@link
 * ReplayTarget}. Idempotent: the store hands a dead letter out once, so replaying the same id twice
 * (two operators, a retried HTTP call) resends it once. If the resend fails the dead letter is put
 * back unchanged, so nothing is lost.
 *
 * <p>The message keeps its id and trace id; a consumer that deduplicates by business key treats
 * the replay like any redelivery.
 */
public final class DeadLetterReplayer {
  private final DeadLetterStore store;
  private final ReplayTarget target;
  private final LifecycleListener listener;
  private final InstantSource clock;

  /**
   * A replayer taking dead letters out of {@code store} and resending them to {@code target}.
   *
   * @param store where the dead letters are
   * @param target where they are resent
   * @param listener told of each successful replay ({@code REPLAYED})
   * @param clock the time stamped on those events
   * @throws IllegalArgumentException if an argument is null
   */
  public DeadLetterReplayer(DeadLetterStore store, ReplayTarget target,
      LifecycleListener listener, InstantSource clock) {
    this.store = Checks.requireNonNull("store", store);
    this.target = Checks.requireNonNull("target", target);
    this.listener = Checks.requireNonNull("listener", listener);
    this.clock = Checks.requireNonNull("clock", clock);
  }

  /**
   * Replays the dead letter with {@code id}.
   *
   * @param id the dead letter's {@linkplain DeadLetter#id() id}; not blank
   * @return the replayed dead letter, or empty if there was none (already replayed or purged)
   * @throws ReplayException if the resend failed; the dead letter is back in the store
   */
  public Optional<DeadLetter> replay(String id) {
    Checks.requireNonBlank("id", id);
    Optional<DeadLetter> taken = store.remove(id);
    if (taken.isEmpty()) {
      return taken;
    }
    DeadLetter d = taken.get();
    try {
      target.resend(d);
    } catch (Exception e) {
      store.add(d);
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
      throw new ReplayException("replay of dead letter " + id + " failed; it was put back", e);
    }
    LifecycleListener.safely(listener, new LifecycleEvent(LifecycleEvent.Stage.REPLAYED,
        d.messageId(), d.message().traceId(), d.source(), clock.instant(), "replayed"));
    return taken;
  }

  /** A replay's resend failed; the dead letter was put back. */
  public static final class ReplayException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * A failed replay.
     *
     * @param message names the dead letter
     * @param cause what the target threw
     */
    public ReplayException(String message, Throwable cause) {
      super(message, cause);
    }
  }
}
