package io.relaykit.outbox;

import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.List;

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
 *   <li>Sent rows are kept until {@link #purgeSent} removes them; dead rows leave the outbox
 *       (the relay has stored them as dead letters first).
 * </ul>
 * Thread-safe.
 */
public interface OutboxStore {

  /**
   * Claims up to {@code max} ready rows for {@code owner} until {@code now + lease}, oldest first,
   * at most one per key.
   */
  List<OutboxRecord> claim(String owner, int max, Duration lease, Instant now);

  /** Marks the rows sent. Returns how many the caller still held. */
  int markSent(String owner, Collection<Long> sequences, Instant now);

  /**
   * Records a failed attempt: releases the claim, sets attempts, the first failure time (if not
   * set yet) and the time before which the row is not claimed again.
   *
   * @return whether the caller still held the row
   */
  boolean reschedule(String owner, long sequence, int attempts, Instant failedAt,
      Instant notBefore, String error);

  /** Removes a row that gave up (already stored as a dead letter). */
  boolean markDead(String owner, long sequence);

  /** Deletes sent rows sent before {@code sentBefore}; returns how many. */
  int purgeSent(Instant sentBefore);

  /** Unsent rows and the age of the oldest, at {@code now}. */
  OutboxStats stats(Instant now);
}
