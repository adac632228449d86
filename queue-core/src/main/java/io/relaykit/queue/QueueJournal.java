package io.relaykit.queue;

import java.time.Instant;

/**
 * Where a {@link ReportQueue} records its changes so that a new queue on the same journal (after a
 * restart or a crash) recovers them. The journal is <em>incremental</em>: each call records one
 * change (an append, a removal, an attempt change, a dead letter), never a rewrite of the whole
 * state. Draining writes nothing: on recovery every event that was in flight is pending again.
 *
 * <h2>Durability</h2>
 * {@link #append} of a {@link Priority#CRITICAL} event is durable (on disk, committed, or
 * acknowledged by the server, as the backend defines it) before it returns. Every other change may
 * be group-committed: it becomes durable within the backend's commit interval, or at {@link
 * #flush()} or {@link #close()}. A change that was not yet durable may be lost in a crash; no
 * change may be applied out of order, and no durable change may be lost.
 *
 * <h2>Replay semantics</h2>
 * {@link #load()} returns the state the recorded changes produce, applying them in order:
 * <ul>
 *   <li>{@code append(e)}: {@code e} is pending and its id is seen (at {@code e.enqueuedAt()}).
 *   <li>{@code remove(id, ACKED | EXPIRED | PURGED)}: the event leaves pending (or dead); its id
 *       stays seen. {@code remove(id, DROPPED)}: it leaves pending and is forgotten too, because a
 *       dropped event was never delivered and may be reported again.
 *   <li>{@code reschedule(id, attempts, at)}: the pending event's attempts and next attempt time.
 *   <li>{@code deadLetter(id, attempts, reason)}: the event moves from pending to dead.
 *   <li>{@code forget(id)}: a seen id that is no longer pending left the dedupe window.
 * </ul>
 * A change that names an unknown id is ignored on replay (it may follow a compaction that already
 * dropped the event).
 *
 * <p>Implementations are thread-safe. A {@link ReportQueue} calls them under its own lock, so a
 * journal sees one change at a time per queue, in the queue's order. Write failures surface as
 * {@link JournalException}.
 */
public interface QueueJournal extends AutoCloseable {

  /** Why an event left the queue. */
  enum Removal {
    /** Delivered and acknowledged; the id stays seen for the dedupe window. */
    ACKED,
    /** Evicted or rejected for capacity before delivery; the id is forgotten. */
    DROPPED,
    /** Past its expiry, never sent; the id stays seen. */
    EXPIRED,
    /** A dead letter removed by an operator; the id stays seen. */
    PURGED
  }

  /** Records a newly accepted event. Durable before return when it is {@code CRITICAL}. */
  void append(QueuedEvent event);

  /**
   * Records a newly accepted event like {@link #append}, but may return before a {@code CRITICAL}
   * event is durable; the caller then calls {@link #awaitDurable(long)} with the returned ticket
   * before it reports the event accepted. This lets a queue record changes in order under its own
   * lock and wait for the disk outside it, so that concurrent critical producers share one sync.
   * The default calls {@link #append} (durable on return) and returns 0.
   *
   * @return a ticket for {@link #awaitDurable(long)}
   */
  default long appendDeferringSync(QueuedEvent event) {
    append(event);
    return 0L;
  }

  /**
   * Returns once every change recorded up to the {@link #appendDeferringSync} call that returned
   * {@code ticket} is durable. The default has nothing to wait for.
   */
  default void awaitDurable(long ticket) {
  }

  /** Records that an event left the queue for {@code removal}. */
  void remove(String eventId, Removal removal);

  /** Records a failed attempt: the event is pending again, not before {@code nextAttemptAt}. */
  void reschedule(String eventId, int attempts, Instant nextAttemptAt);

  /** Records that an event gave up and is now a dead letter, with the reason. */
  void deadLetter(String eventId, int attempts, String reason);

  /** Records that a seen id (no longer pending) left the dedupe window. */
  void forget(String eventId);

  /**
   * Replays the recorded changes. Called once, before any change is recorded through this
   * instance.
   *
   * @throws JournalException when the stored data is corrupt beyond a torn tail, or unreadable
   */
  JournalState load();

  /** Makes every change recorded so far durable before returning. */
  void flush();

  /** Flushes and releases the journal's resources. Further calls fail. */
  @Override
  void close();
}
