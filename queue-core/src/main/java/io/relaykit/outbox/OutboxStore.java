package io.relaykit.outbox;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterStore;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Set;

/**
 * The storage side of the transactional outbox. Messages are appended in the caller's business
 * transaction (how depends on the backend: {@code append(Connection, ...)} for JDBC); relays then
 * {@link #claim} them with a lease, publish, and {@link #markSent} after the broker confirms.
 *
 * <h2>Contract</h2>
 * <ul>
 *   <li>Leases: a claimed row is invisible to other claims until its lease expires; an expired
 *       lease's row can be claimed by any relay (a crashed relay's work is taken over). Several
 *       relays may claim concurrently; while leases hold, no row is claimed twice.
 *   <li>Per-key order: a row whose message has a key is claimable only when no earlier row
 *       (lower sequence) with the same key is unsent. So a key's next message is not published
 *       before its previous one is confirmed, and a failing key parks its own later messages,
 *       nothing else. Rows without a key have no order.
 *   <li>Ready time: a row rescheduled by {@link #reschedule} is not claimed before its time.
 *   <li>{@link #markSent}, {@link #reschedule} and {@link #markDead} act only on rows the caller
 *       still holds (owner matches and the lease has not been claimed by another relay); they
 *       return how many rows they changed, so a relay whose lease was taken over knows.
 *   <li>Sent rows are kept until {@link #purgeSentOlderThan} (or {@link #purgeSent}) removes
 *       them; dead rows leave the outbox (the relay has stored them as dead letters first).
 * </ul>
 *
 * <h2>Time: one clock for shared decisions</h2>
 * Whether a row is ready, whether a lease ran out so that another relay may take the row over, and
 * whether a sent row has outlived its retention are decided by one clock for all relays: a store
 * shared by several hosts uses a clock of its own (a database's, through the JDBC store's {@code
 * DatabaseClock}), never the time a caller passes in, so a relay whose host clock runs 31 s fast
 * cannot take a fresh lease of another relay, and one 8 days fast cannot purge rows that are not
 * old enough. Such a store reads the {@code now} arguments as the caller's view only and keeps the
 * durations: a lease lasts {@code lease} from the store's now ({@link OutboxRecord#leaseExpiresAt}
 * is on the store's clock), a rescheduled row becomes ready {@code notBefore - failedAt} after the
 * store's now, a row is sent at the store's now, and {@link #purgeSentOlderThan} measures the
 * retention on the store's clock. A store without a clock of its own (the no-argument {@link
 * InMemoryOutboxStore}, for one process whose relays share one clock) uses the caller's {@code now}
 * for all of it. Failure times ({@code failedAt}, {@link OutboxRecord#firstFailureAt}) are the
 * failing relay's and only feed its {@link io.relaykit.retry.RetryPolicy}.
 *
 * <p>Thread-safe.
 */
public interface OutboxStore {

  /**
   * Claims up to {@code max} ready rows for {@code owner} for {@code lease}, oldest first, at most
   * one per key; "ready" and "lease ran out" on the store's clock ({@code now} for a store without
   * one), and the lease lasts until that clock's now plus {@code lease}.
   *
   * @param owner the claiming relay's owner id; not blank
   * @param max the most rows to claim, {@code >= 1}
   * @param lease how long the claim hides the rows; positive
   * @param now the caller's time, used only by a store without a clock of its own
   * @return the claimed rows in sequence order; empty when none is ready
   */
  List<OutboxRecord> claim(String owner, int max, Duration lease, Instant now);

  /**
   * {@link #claim(String, int, Duration, Instant)}, but a key whose oldest unsent row is claimed
   * may bring a run of up to {@code maxRun} of its rows: that row and the key's next unsent rows in
   * sequence order, each ready and not under another live lease, stopping at the first that is not
   * (so a run never skips a row of its key). The caller must publish a run in order and stop at
   * its first failure, handing the rest back with {@link #release} (the key's failed row then parks
   * its later rows as usual). {@code maxRun} 1 is the plain claim.
   *
   * <p>The default, for stores written before this method, ignores {@code maxRun} (one row per
   * key). A store that overrides it must override {@link #release} too.
   *
   * @param owner the claiming relay's owner id; not blank
   * @param max the most rows to claim, {@code >= 1}
   * @param maxRun the most rows of one key, {@code >= 1}
   * @param lease how long the claim hides the rows; positive
   * @param now the caller's time, used only by a store without a clock of its own
   * @return the claimed rows, a key's run in sequence order; empty when none is ready
   * @throws IllegalArgumentException on {@code maxRun} below 1, or what the plain claim refuses
   */
  default List<OutboxRecord> claim(String owner, int max, int maxRun, Duration lease,
      Instant now) {
    if (maxRun < 1) {
      throw new IllegalArgumentException("maxRun must be >= 1, was " + maxRun);
    }
    return claim(owner, max, lease, now);
  }

  /**
   * Gives claimed rows back unpublished: each row {@code owner} still holds loses its lease and is
   * claimable again at once (attempts and failure times unchanged), subject to per-key order.
   * Rows the caller no longer holds are left alone.
   *
   * <p>The default throws {@link UnsupportedOperationException}; it is needed only by stores that
   * hand out runs ({@link #claim(String, int, int, Duration, Instant)}).
   *
   * @param owner the relay giving the rows back
   * @param sequences the rows' sequences
   * @return how many rows were released
   * @throws UnsupportedOperationException from this default
   */
  default int release(String owner, Collection<Long> sequences) {
    throw new UnsupportedOperationException(getClass().getName()
        + " hands out no runs and cannot release rows");
  }

  /**
   * Marks the rows sent, at the store's now ({@code now} for a store without a clock of its own).
   * Returns how many the caller still held.
   *
   * @param owner the relay that claimed the rows
   * @param sequences the rows' sequences
   * @param now the caller's time, used only by a store without a clock of its own
   * @return how many rows were marked; fewer when the lease of some was taken over
   */
  int markSent(String owner, Collection<Long> sequences, Instant now);

  /**
   * Records a failed attempt: releases the claim, sets attempts, the first failure time (if not
   * set yet) and when the row may be claimed again: {@code notBefore} for a store without a clock
   * of its own; a store with one keeps the retry delay, {@code notBefore - failedAt} ({@code
   * failedAt} being the caller's now), and starts it at its own now.
   *
   * @param owner the relay that claimed the row
   * @param sequence the row's sequence
   * @param attempts the failed attempts so far, this one included
   * @param failedAt when this attempt failed, on the caller's clock
   * @param notBefore when the row may be claimed again, on the caller's clock
   * @param error the failure, kept for diagnostics
   * @return whether the caller still held the row
   */
  boolean reschedule(String owner, long sequence, int attempts, Instant failedAt,
      Instant notBefore, String error);

  /**
   * Removes a row that gave up (already stored as a dead letter).
   *
   * @param owner the relay that claimed the row
   * @param sequence the row's sequence
   * @return whether the caller still held the row and it was removed
   */
  boolean markDead(String owner, long sequence);

  /**
   * Moves a row {@code owner} still holds to dead letters: the row leaves the outbox and {@code
   * deadLetter} is stored in {@code deadLetters}, fenced by the lease. A relay that lost the row
   * to another relay (which may have sent it) stores nothing and gets false, so a replay can
   * never publish a row that went out; and the row never leaves the outbox without its dead
   * letter, so nothing is lost.
   *
   * <p>relaykit's stores make it one step: the JDBC store deletes the row and upserts the dead
   * letter in one transaction when {@code deadLetters} is the dead-letter table of the same
   * database, and otherwise stores the dead letter while its DELETE holds the row's lock, before
   * it commits (so no other relay can claim, send or take over the row meanwhile; a commit that
   * fails after the dead letter was stored leaves the row to retry beside its dead letter); the
   * in-memory store does it under its lock. This default, for stores written before this method,
   * removes the row first ({@link #markDead}) and stores the dead letter only if that won; if
   * storing it then fails, the message exists nowhere but in the exception and the log.
   *
   * @param owner the relay that claimed the row; not blank
   * @param sequence the row's sequence
   * @param deadLetter the row's dead letter; not null
   * @param deadLetters where to store it; not null
   * @return whether the caller still held the row (and so moved it)
   * @throws IllegalArgumentException on a blank owner or a null dead letter or store, or what
   *     {@code deadLetters} refuses (a dead letter too large for it): the row stays, still held
   * @throws RuntimeException what the store or {@code deadLetters} throws: the row stays, still
   *     held, and no dead letter was stored (except as described for a failed commit above)
   */
  default boolean moveToDeadLetters(String owner, long sequence, DeadLetter deadLetter,
      DeadLetterStore deadLetters) {
    if (deadLetter == null || deadLetters == null) {
      throw new IllegalArgumentException((deadLetter == null ? "deadLetter" : "deadLetters")
          + " must not be null");
    }
    if (!markDead(owner, sequence)) {
      return false;
    }
    try {
      deadLetters.add(deadLetter);
    } catch (RuntimeException e) {
      throw new IllegalStateException("outbox row " + sequence + " (message "
          + deadLetter.messageId() + " for " + deadLetter.source() + ") left the outbox but its"
          + " dead letter could not be stored: " + e, e);
    }
    return true;
  }

  /**
   * Extends the lease of the rows among {@code sequences} that {@code owner} still holds to the
   * store's now plus {@code lease} (the caller's {@code now} for a store without a clock of its
   * own), so a relay whose batch is still in flight (a slow broker confirm, a publish that blocks)
   * keeps its rows. Fenced by the owner, not by time: a row whose lease ran out but that no other
   * relay claimed is still held and is renewed; a row another relay took over, or that was sent,
   * rescheduled or dead-lettered, is not.
   *
   * <p>The default, for stores written before this method, throws {@link
   * UnsupportedOperationException}: relays then cannot renew and keep their batch inside one lease.
   *
   * @param owner the relay that claimed the rows
   * @param sequences the rows' sequences
   * @param lease the new lease, from the store's now; positive
   * @param now the caller's time, used only by a store without a clock of its own
   * @return the sequences still held, now under the renewed lease
   * @throws IllegalArgumentException on a blank owner, null sequences, a non-positive lease or a
   *     null now
   * @throws UnsupportedOperationException from this default
   */
  default Set<Long> renewLease(String owner, Collection<Long> sequences, Duration lease,
      Instant now) {
    throw new UnsupportedOperationException(getClass().getName()
        + " cannot renew outbox leases");
  }

  /**
   * Deletes sent rows sent before {@code sentBefore}, an instant on the caller's clock; returns how
   * many. Relays use {@link #purgeSentOlderThan}, which cannot be skewed by the caller's clock.
   *
   * @param sentBefore the exclusive bound on the send time, on the caller's clock
   * @return how many rows it deleted
   */
  int purgeSent(Instant sentBefore);

  /**
   * Deletes at most {@code max} rows that were sent more than {@code retention} ago on the store's
   * clock ({@code now}, the caller's time, for a store without a clock of its own), in one short
   * step; call again while it returns {@code max}. So a relay whose clock runs ahead purges nothing
   * early.
   *
   * <p>The default, for stores written before this method, purges on the caller's clock and
   * ignores {@code max}; relaykit's stores override it.
   *
   * @param retention how long sent rows are kept, {@code >= 0}
   * @param max the most rows to delete in this call, {@code >= 1}
   * @param now the caller's time, used only by a store without a clock of its own
   * @return how many rows it deleted
   * @throws IllegalArgumentException naming the argument: a negative retention, {@code max} below
   *     1, a null {@code now}
   */
  default int purgeSentOlderThan(Duration retention, int max, Instant now) {
    if (retention == null || retention.isNegative()) {
      throw new IllegalArgumentException("retention must be a duration >= 0, was " + retention);
    }
    if (max < 1) {
      throw new IllegalArgumentException("max must be >= 1, was " + max);
    }
    if (now == null) {
      throw new IllegalArgumentException("now must not be null");
    }
    return purgeSent(now.minus(retention));
  }

  /**
   * Unsent rows and the age of the oldest, at {@code now}.
   *
   * @param now the caller's time, for a store without a clock of its own
   * @return the count of unsent rows and the oldest unsent message's age
   */
  OutboxStats stats(Instant now);

  /**
   * The bound appends are checked against ({@link OutboxBound#unbounded()} by default). A relay
   * over a bounded store judges its backlog against it: {@link
   * io.relaykit.monitor.BacklogVerdict#OVER_BOUND} while the unsent rows are over it.
   *
   * @return the bound; never null
   */
  default OutboxBound bound() {
    return OutboxBound.unbounded();
  }

  /**
   * The signal that wakes this JVM's relays when rows of this store commit ({@link OutboxWakeup}):
   * a relay built on this store subscribes to it by default. Empty for a store that has none; its
   * relays then find new rows by their poll alone.
   *
   * <p>The default, for stores written before this method, is empty.
   *
   * @return the store's wakeup, the same on every call; or empty
   */
  default java.util.Optional<OutboxWakeup> wakeup() {
    return java.util.Optional.empty();
  }

  /**
   * Says that the caller's transaction, which appended rows through this store, committed: wakes
   * this JVM's relays of the store at once ({@link OutboxWakeup#wake()}), so they claim the rows
   * now rather than after their poll interval. Call it after the commit returned, never before and
   * never after a rollback (a wake then costs one claim that finds nothing, harmless but wasted).
   * Not needed after an append on an auto-commit connection or after the Spring starter's
   * appends: those wake by themselves. A missing call costs latency only, never a message: the
   * relays' poll finds the rows within one poll interval.
   *
   * <p>Cost: no database access, never blocks, never throws. The default wakes {@link #wakeup()}
   * if the store has one.
   */
  default void committed() {
    wakeup().ifPresent(OutboxWakeup::wake);
  }

  /**
   * Rows whose append the {@link #bound()} refused (REFUSE); 0 for a store without a bound.
   *
   * @return the count since the store was created, {@code >= 0}
   */
  default long refusedAppends() {
    return 0;
  }

  /**
   * Rows appended over the {@link #bound()} (ACCEPT); 0 for a store without a bound.
   *
   * @return the count since the store was created, {@code >= 0}
   */
  default long overBoundAppends() {
    return 0;
  }
}
