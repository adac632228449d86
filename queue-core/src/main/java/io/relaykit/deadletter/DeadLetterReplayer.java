package io.relaykit.deadletter;

import io.relaykit.internal.Checks;
import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleListener;
import java.time.Duration;
import java.time.InstantSource;
import java.util.Optional;
import java.util.UUID;
import java.util.function.Supplier;

/**
 * Replays dead letters: resends one from a {@link DeadLetterStore} through a {@link ReplayTarget}.
 *
 * <h2>A store with replay marks ({@link DeadLetterStore#marksReplays()}: in-memory, JDBC, Redis)</h2>
 * The dead letter stays in the store until its resend is confirmed: the replay marks it with a
 * fresh token for the {@linkplain #DEFAULT_REPLAY_LEASE replay lease} ({@link
 * DeadLetterStore#beginReplay}), resends it, then removes it fenced by the token ({@link
 * DeadLetterStore#finishReplay}). Each store call is tried up to {@value #STORE_ATTEMPTS} times
 * with the same token, so a call whose reply was lost is repeated harmlessly. What the caller sees:
 * <ul>
 *   <li>Marking fails: {@link IllegalStateException} from the store; nothing was resent; the dead
 *       letter stays (perhaps marked until the lease lapses: a replay then takes it over).
 *   <li>Another replay's mark is live: {@link ReplayInProgressException}; nothing was resent. So
 *       concurrent replays of one id resend it once.
 *   <li>The resend fails: {@link ReplayException}; the mark is cleared, the dead letter stays.
 *   <li>The resend succeeded but the removal keeps failing: {@link ReplayException} saying so; the
 *       message was resent, and the dead letter stays, marked until the lease lapses; a replay after
 *       that resends it once more (at-least-once: the message keeps its id, so consumers that
 *       deduplicate drop the repeat).
 *   <li>The resend succeeded but the mark had lapsed (the resend outlasted the lease on the
 *       store's clock, and another replay took the dead letter over or finished it): {@link
 *       ReplayMarkLapsedException}, "mark lapsed; another replay may also have sent it". This
 *       replay checks its mark after the resend (one more store call, renewing the mark with its
 *       token) and never reports success then; it leaves the other replay's mark alone. The check
 *       sees only the mark as it is now: if the replay that took over has itself let its lease
 *       lapse before its own check (it stalled, or crashed), this replay takes the mark back,
 *       removes the dead letter and reports success, and the other replay's check reports the
 *       lapse instead (a crashed one reports nothing: the crash case below).
 *   <li>A crash at any step leaves the dead letter in the store; at worst it is resent twice.
 * </ul>
 * A message dead-lettered again while its replay runs replaces the entry and its mark, so the
 * replay never removes the newer dead letter.
 *
 * <h2>A store without marks (RabbitMQ)</h2>
 * The store hands the dead letter out once ({@link DeadLetterStore#remove}), it is resent, and put
 * back ({@link DeadLetterStore#add}) if the resend fails. A crash between the removal and the
 * resend, or a removal whose reply was lost, loses it: prefer a store with marks for replays, or
 * one transaction where target and store share a database (the JDBC store's {@code
 * replayToOutbox}).
 *
 * <p>The message keeps its id and trace id; a consumer that deduplicates by business key treats
 * the replay like any redelivery.
 */
public final class DeadLetterReplayer {

  /** How long a replay's mark keeps other replays off: 1 minute. */
  public static final Duration DEFAULT_REPLAY_LEASE = Duration.ofMinutes(1);

  /** How often each store call of a replay is tried before the replay gives up. */
  public static final int STORE_ATTEMPTS = 3;

  private final DeadLetterStore store;
  private final ReplayTarget target;
  private final LifecycleListener listener;
  private final InstantSource clock;
  private final Duration replayLease;

  /**
   * A replayer taking dead letters out of {@code store} and resending them to {@code target}, with
   * the {@linkplain #DEFAULT_REPLAY_LEASE default replay lease}.
   *
   * @param store where the dead letters are
   * @param target where they are resent
   * @param listener told of each successful replay ({@code REPLAYED})
   * @param clock the time stamped on those events
   * @throws IllegalArgumentException if an argument is null
   */
  public DeadLetterReplayer(DeadLetterStore store, ReplayTarget target,
      LifecycleListener listener, InstantSource clock) {
    this(store, target, listener, clock, DEFAULT_REPLAY_LEASE);
  }

  /**
   * A replayer whose marks keep other replays off for {@code replayLease}: longer than the
   * target's longest resend.
   *
   * @param store where the dead letters are
   * @param target where they are resent
   * @param listener told of each successful replay ({@code REPLAYED})
   * @param clock the time stamped on those events
   * @param replayLease how long a replay's mark keeps others off; positive
   * @throws IllegalArgumentException if an argument is null or the lease is not positive
   */
  public DeadLetterReplayer(DeadLetterStore store, ReplayTarget target,
      LifecycleListener listener, InstantSource clock, Duration replayLease) {
    this.store = Checks.requireNonNull("store", store);
    this.target = Checks.requireNonNull("target", target);
    this.listener = Checks.requireNonNull("listener", listener);
    this.clock = Checks.requireNonNull("clock", clock);
    this.replayLease = Checks.requirePositive("replayLease", replayLease);
  }

  /**
   * Replays the dead letter with {@code id}; see the class comment for what each failure leaves.
   *
   * @param id the dead letter's {@linkplain DeadLetter#id() id}; not blank
   * @return the replayed dead letter, or empty if there was none (already replayed or purged)
   * @throws ReplayException if the resend failed (the dead letter is in the store), or the removal
   *     after a confirmed resend failed (the message was resent; the dead letter stays, marked)
   * @throws ReplayInProgressException if another replay of it is under way
   * @throws ReplayMarkLapsedException if it was resent but this replay's mark had lapsed and
   *     another replay took it over or finished it: another replay may also have sent it
   * @throws RuntimeException what the store throws when marking it: nothing was resent
   */
  public Optional<DeadLetter> replay(String id) {
    Checks.requireNonBlank("id", id);
    Optional<DeadLetter> replayed = store.marksReplays() ? replayMarked(id) : replayTaken(id);
    replayed.ifPresent(d -> LifecycleListener.safely(listener, new LifecycleEvent(
        LifecycleEvent.Stage.REPLAYED, d.messageId(), d.message().traceId(), d.source(),
        clock.instant(), "replayed")));
    return replayed;
  }

  private Optional<DeadLetter> replayMarked(String id) {
    String token = UUID.randomUUID().toString();
    Optional<DeadLetter> marked = retried("mark dead letter " + id + " for replay",
        () -> store.beginReplay(id, token, replayLease));
    if (marked.isEmpty()) {
      return marked;
    }
    DeadLetter d = marked.get();
    try {
      target.resend(d);
    } catch (Exception e) {
      try {
        store.abandonReplay(id, token);
      } catch (RuntimeException r) {
        // The mark lapses with its lease; the dead letter is in the store either way.
        e.addSuppressed(r);
      }
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
      throw new ReplayException("replay of dead letter " + id + " failed; it stays in the store",
          e);
    }
    try {
      // Confirm the mark is still this replay's before removing: renewing it with the same token
      // fails if another replay holds it (its lease lapsed during the resend), and finds nothing
      // if another replay finished it meanwhile. Either way this replay must not report success.
      Optional<DeadLetter> held;
      try {
        held = retried("confirm the replay mark of dead letter " + id,
            () -> store.beginReplay(id, token, replayLease));
      } catch (ReplayInProgressException e) {
        ReplayMarkLapsedException lapsed =
            new ReplayMarkLapsedException(d, "another replay holds it now");
        lapsed.addSuppressed(e);
        throw lapsed;
      }
      if (held.isEmpty()) {
        throw new ReplayMarkLapsedException(d, "it is no longer in the store: another replay"
            + " finished it, or it was removed or purged");
      }
      if (!held.get().equals(d)) {
        // Dead-lettered again while this replay resent the older one: the newer entry stays.
        try {
          store.abandonReplay(id, token);
        } catch (RuntimeException r) {
          // Its mark lapses with the lease; the newer dead letter stays either way.
        }
        return marked;
      }
      retried("remove replayed dead letter " + id, () -> store.finishReplay(id, token));
    } catch (ReplayMarkLapsedException e) {
      throw e;
    } catch (RuntimeException e) {
      throw new ReplayException("dead letter " + id + " was resent, but could not be removed;"
          + " it stays in the store, marked for " + replayLease + ", and a replay after that"
          + " resends it again", e, true);
    }
    return marked;
  }

  private Optional<DeadLetter> replayTaken(String id) {
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
    return taken;
  }

  /** Runs a store call up to {@link #STORE_ATTEMPTS} times; an in-progress answer is final. */
  private static <T> T retried(String what, Supplier<T> call) {
    RuntimeException first = null;
    for (int attempt = 1; attempt <= STORE_ATTEMPTS; attempt++) {
      try {
        return call.get();
      } catch (ReplayInProgressException | IllegalArgumentException e) {
        if (first != null) {
          e.addSuppressed(first);
        }
        throw e;
      } catch (RuntimeException e) {
        if (first == null) {
          first = e;
        } else {
          first.addSuppressed(e);
        }
      }
    }
    throw new IllegalStateException("could not " + what + " after " + STORE_ATTEMPTS
        + " attempts: " + first, first);
  }

  /** A replay failed: its resend, or the removal after a confirmed resend (the message says which). */
  public static final class ReplayException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** Whether the resend was confirmed before the failure. */
    private final boolean resent;

    /**
     * A failed replay.
     *
     * @param message names the dead letter
     * @param cause what the target threw
     */
    public ReplayException(String message, Throwable cause) {
      this(message, cause, false);
    }

    /**
     * A failed replay, saying whether the message was resent before it failed.
     *
     * @param message names the dead letter
     * @param cause what the target or the store threw
     * @param resent true if the resend was confirmed and only the removal failed
     */
    public ReplayException(String message, Throwable cause, boolean resent) {
      super(message, cause);
      this.resent = resent;
    }

    /**
     * Whether the message was resent: true when the resend was confirmed and only the removal
     * of the dead letter failed (it stays in the store, marked until the lease lapses, and a
     * replay after that resends it again); false when the resend failed and nothing was sent.
     *
     * @return whether the message went out
     */
    public boolean resent() {
      return resent;
    }
  }
}
