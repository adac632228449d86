package io.relaykit.queue;

import io.relaykit.internal.Utf8;
import java.time.Instant;
import java.util.List;

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
 * <h2>Replay semantics: one rule per case</h2>
 * {@link #load()} returns the state the recorded changes produce, applying them in order. Every
 * backend applies these rules, and {@code QueueJournalContract} checks each:
 * <ul>
 *   <li>{@code append(e)} of an unknown id: {@code e} is pending, after every pending event, and
 *       its id is seen at {@code e.enqueuedAt()}. Of an id that is only seen (acked, expired,
 *       purged): the same, and the id keeps its first-seen time.
 *   <li>{@code append(e)} of a pending id: {@code e} replaces the pending event in its place (a
 *       repeated append, as after a retry whose first attempt was recorded, changes nothing).
 *   <li>{@code append(e)} of a dead id: a replay. The dead letter and its reason are gone, {@code
 *       e} is pending after every pending event, and the id keeps its first-seen time. One record,
 *       so a replay is atomic in every backend.
 *   <li>{@code remove(id, ACKED | EXPIRED | PURGED)}: the event leaves pending, or else dead; its
 *       id stays seen.
 *   <li>{@code remove(id, DROPPED)}: a pending event leaves and is forgotten too, because a dropped
 *       event was never delivered and may be reported again. A dead id is left alone: dead letters
 *       are never dropped for capacity, only purged.
 *   <li>{@code reschedule(id, attempts, at)}: the pending event's attempts and next attempt time.
 *       Ignored for an id that is not pending.
 *   <li>{@code deadLetter(id, attempts, reason)}: the event moves from pending to dead, after every
 *       dead letter, with its attempts and reason. Ignored for an id that is not pending (a dead
 *       id keeps its first death). The reason must not be blank.
 *   <li>{@code forget(id)}: a seen id that is not pending (acked, expired, purged, or dead) is no
 *       longer seen. Ignored for a pending id.
 * </ul>
 * A change that names an unknown id is ignored on replay (it may follow a compaction that already
 * dropped the event). Every change is idempotent: recording it twice in a row yields the state of
 * recording it once, so a caller may retry a change whose outcome was {@linkplain
 * JournalException.Outcome#UNKNOWN unknown}.
 *
 * <h2>Bad input</h2>
 * Every method refuses, with an {@link IllegalArgumentException} naming the field and before
 * anything is recorded: a null argument, a blank event id, an event id longer than {@link
 * #MAX_EVENT_ID_LENGTH} chars, a blank dead reason, negative attempts,
 * any id, name, payload or reason holding an unpaired surrogate, which has no UTF-8 form, and
 * any id, name or reason holding U+0000, which a PostgreSQL text column cannot hold ({@link
 * Utf8#requireStorable}; a payload is stored as bytes everywhere and may hold it): every backend
 * refuses the same input, so a record that one backend accepts cannot wedge another's batches.
 * A backend may refuse more (an id or payload
 * over its size limits), the same way.
 *
 * <h2>Failures</h2>
 * Write failures surface as {@link JournalException}, whose {@link JournalException#outcome()}
 * says whether the change may have been recorded; a journal whose buffer for its backend is full
 * throws {@link JournalFullException} and records nothing. After a failed sync or commit a journal
 * never reports durability it cannot prove.
 *
 * <p>Implementations are thread-safe. A {@link ReportQueue} calls them under its own lock, so a
 * journal sees one change at a time per queue, in the queue's order.
 */
public interface QueueJournal extends AutoCloseable {

  /**
   * The longest event id, in chars, that every journal records: ids are stored, and remembered for
   * the dedupe window, outside the queue's byte bound ({@code maxBytes} counts payloads), so their
   * length is bounded the same way by every backend.
   */
  int MAX_EVENT_ID_LENGTH = 512;

  /** Why an event left the queue. */
  enum Removal {
    /** Delivered and acknowledged; the id stays seen for the dedupe window. */
    ACKED,
    /** Evicted or rejected for capacity before delivery; the id is forgotten. */
    DROPPED,
    /** Past its expiry, never sent; the id stays seen. */
    EXPIRED,
    /** A dead letter removed by an operator, or pushed out of full dead letters; the id stays seen. */
    PURGED
  }

  /**
   * One change, as {@link #recordAtomically} takes several. Each validates its arguments as every
   * journal method does (see "Bad input" above), so a list of changes is checked whole before any
   * of it is recorded.
   */
  sealed interface Change {

    /**
     * {@link QueueJournal#append}.
     *
     * @param event the accepted event
     */
    record Append(QueuedEvent event) implements Change {
      /**
       * Checks the components.
       *
       * @param event the accepted event
       * @throws IllegalArgumentException if {@code event} is null or holds malformed strings
       */
      public Append {
        requireEvent(event);
      }
    }

    /**
     * {@link QueueJournal#remove}.
     *
     * @param eventId the event's id
     * @param removal why it left
     */
    record Remove(String eventId, Removal removal) implements Change {
      /**
       * Checks the components.
       *
       * @param eventId the event's id
       * @param removal why it left; not null
       * @throws IllegalArgumentException for a bad id or a null removal
       */
      public Remove {
        requireEventId(eventId);
        if (removal == null) {
          throw new IllegalArgumentException("removal must not be null");
        }
      }
    }

    /**
     * {@link QueueJournal#reschedule}.
     *
     * @param eventId the event's id
     * @param attempts the failed attempts so far
     * @param nextAttemptAt when it may be sent again
     */
    record Reschedule(String eventId, int attempts, Instant nextAttemptAt) implements Change {
      /**
       * Checks the components.
       *
       * @param eventId the event's id
       * @param attempts the failed attempts so far, {@code >= 0}
       * @param nextAttemptAt when it may be sent again; not null
       * @throws IllegalArgumentException for a bad id, negative attempts or a null time
       */
      public Reschedule {
        requireEventId(eventId);
        requireAttempts(attempts);
        if (nextAttemptAt == null) {
          throw new IllegalArgumentException("nextAttemptAt must not be null");
        }
      }
    }

    /**
     * {@link QueueJournal#deadLetter}.
     *
     * @param eventId the event's id
     * @param attempts the attempts it made
     * @param reason why it gave up
     */
    record DeadLetter(String eventId, int attempts, String reason) implements Change {
      /**
       * Checks the components.
       *
       * @param eventId the event's id
       * @param attempts the attempts it made, {@code >= 0}
       * @param reason why it gave up; not blank
       * @throws IllegalArgumentException for a bad id, negative attempts or a blank reason
       */
      public DeadLetter {
        requireEventId(eventId);
        requireAttempts(attempts);
        requireDeadReason(reason);
      }
    }

    /**
     * {@link QueueJournal#forget}.
     *
     * @param eventId the forgotten id
     */
    record Forget(String eventId) implements Change {
      /**
       * Checks the components.
       *
       * @param eventId the forgotten id
       * @throws IllegalArgumentException for a bad id
       */
      public Forget {
        requireEventId(eventId);
      }
    }
  }

  /**
   * Records a newly accepted event. Durable before return when it is {@code CRITICAL}.
   *
   * @param event the event; see {@link #requireEvent} for what is accepted
   * @throws IllegalArgumentException if {@link #requireEvent} refuses {@code event}
   * @throws JournalFullException if the journal's buffer for its backend is full; nothing recorded
   * @throws JournalException if it could not be recorded, or made durable for a critical event
   */
  void append(QueuedEvent event);

  /**
   * Records a newly accepted event like {@link #append}, but may return before a {@code CRITICAL}
   * event is durable; the caller then calls {@link #awaitDurable(long)} with the returned ticket
   * before it reports the event accepted. This lets a queue record changes in order under its own
   * lock and wait for the disk outside it, so that concurrent critical producers share one sync.
   * The default calls {@link #append} (durable on return) and returns 0.
   *
   * @param event the event; see {@link #requireEvent} for what is accepted
   * @return a ticket for {@link #awaitDurable(long)}
   */
  default long appendDeferringSync(QueuedEvent event) {
    append(event);
    return 0L;
  }

  /**
   * Returns once every change recorded up to the {@link #appendDeferringSync} or {@link
   * #recordAtomically} call that returned {@code ticket} is durable. The default has nothing to
   * wait for.
   *
   * @param ticket what {@link #appendDeferringSync} or {@link #recordAtomically} returned
   * @throws JournalException if the sync or commit failed: the changes were recorded but are not
   *     proven durable ({@link JournalException.Outcome#UNKNOWN})
   */
  default void awaitDurable(long ticket) {
  }

  /**
   * Records {@code changes}, in order, as one change: after a restart a reload replays all of them
   * or none. A {@link ReportQueue} uses it where one change of its state takes several records (an
   * enqueue that evicts pending events; an ack, expiry or purge of an id that already left the
   * dedupe window, which forgets it too; a dead letter that pushes the oldest out of full dead
   * letters), and orders them so that any prefix of the list loses nothing either (the new event
   * before the removals it causes; forgets last).
   *
   * <p>Durability is that of the single changes: when an {@link Change.Append} of a {@code
   * CRITICAL} event is among them, every change of the list is durable once {@link
   * #awaitDurable(long)} returns for the returned ticket; otherwise they may be group-committed.
   * If this throws, the {@link JournalException#outcome()} covers the whole list.
   *
   * <p>The default records the changes one by one through the single-change methods and is
   * <em>not</em> atomic: a crash between two keeps the ones before it (which, in the queue's
   * orders, loses nothing), and a failure after the first was recorded throws a {@link
   * JournalException} whose outcome is {@code UNKNOWN}. Backends that can write several changes at
   * once (one transaction, one script, one framed record) override it.
   *
   * @param changes the changes, in order; checked whole before any is recorded
   * @return a ticket for {@link #awaitDurable(long)}
   * @throws IllegalArgumentException if {@code changes} is null or empty, or holds null; nothing
   *     is recorded
   */
  default long recordAtomically(List<Change> changes) {
    requireChanges(changes);
    long ticket = 0L;
    for (int i = 0; i < changes.size(); i++) {
      Change change = changes.get(i);
      try {
        if (change instanceof Change.Append a) {
          ticket = Math.max(ticket, appendDeferringSync(a.event()));
        } else if (change instanceof Change.Remove r) {
          remove(r.eventId(), r.removal());
        } else if (change instanceof Change.Reschedule r) {
          reschedule(r.eventId(), r.attempts(), r.nextAttemptAt());
        } else if (change instanceof Change.DeadLetter d) {
          deadLetter(d.eventId(), d.attempts(), d.reason());
        } else if (change instanceof Change.Forget f) {
          forget(f.eventId());
        }
      } catch (RuntimeException e) {
        if (i == 0) {
          throw e;
        }
        throw new JournalException(this + " recorded " + i + " of " + changes.size()
            + " changes, then failed on " + change + ": " + e.getMessage(), e,
            JournalException.Outcome.UNKNOWN);
      }
    }
    return ticket;
  }

  /**
   * Records that an event left the queue for {@code removal}.
   *
   * @param eventId the event's id
   * @param removal why it left
   * @throws IllegalArgumentException if {@code eventId} is not storable or {@code removal} is null
   * @throws JournalException if the change could not be recorded
   */
  void remove(String eventId, Removal removal);

  /**
   * Records a failed attempt: the event is pending again, not before {@code nextAttemptAt}.
   *
   * @param eventId the event's id
   * @param attempts the failed attempts so far, {@code >= 0}
   * @param nextAttemptAt when it may be sent again; not null
   * @throws IllegalArgumentException if an argument is invalid (see {@link Change.Reschedule})
   * @throws JournalException if the change could not be recorded
   */
  void reschedule(String eventId, int attempts, Instant nextAttemptAt);

  /**
   * Records that an event gave up and is now a dead letter, with the (non-blank) reason.
   *
   * @param eventId the event's id
   * @param attempts the attempts it made, {@code >= 0}
   * @param reason why it gave up; not blank
   * @throws IllegalArgumentException if an argument is invalid (see {@link Change.DeadLetter})
   * @throws JournalException if the change could not be recorded
   */
  void deadLetter(String eventId, int attempts, String reason);

  /**
   * Records that a seen id (no longer pending) left the dedupe window.
   *
   * @param eventId the forgotten id
   * @throws IllegalArgumentException if {@code eventId} is not storable
   * @throws JournalException if the change could not be recorded
   */
  void forget(String eventId);

  /**
   * Replays the recorded changes. Called once, before any change is recorded through this
   * instance.
   *
   * @return the pending and dead events and the seen ids, as of the last recorded change
   * @throws JournalException when the stored data is corrupt beyond a torn tail, or unreadable
   */
  JournalState load();

  /** Makes every change recorded so far durable before returning. */
  void flush();

  /** Flushes and releases the journal's resources. Further calls fail. */
  @Override
  void close();

  // -----------------------------------------------------------------------------------------------
  // Checks every backend applies before it records anything.

  /**
   * Returns {@code eventId} if a journal may record it: not null, not blank, well-formed UTF-16,
   * no U+0000.
   *
   * @param eventId the id to check
   * @return {@code eventId}
   * @throws IllegalArgumentException naming {@code eventId} otherwise
   */
  static String requireEventId(String eventId) {
    if (eventId == null) {
      throw new IllegalArgumentException("eventId must not be null");
    }
    if (eventId.isBlank()) {
      throw new IllegalArgumentException("eventId must not be blank, was '" + eventId + "'");
    }
    requireIdLength(eventId);
    return Utf8.requireStorable("eventId", eventId);
  }

  /**
   * Throws unless {@code eventId} has at most {@link #MAX_EVENT_ID_LENGTH} chars.
   *
   * @param eventId a non-null id
   * @throws IllegalArgumentException naming {@code eventId} and the bound otherwise
   */
  static void requireIdLength(String eventId) {
    if (eventId.length() > MAX_EVENT_ID_LENGTH) {
      throw new IllegalArgumentException("eventId must be at most " + MAX_EVENT_ID_LENGTH
          + " characters, was " + eventId.length() + " ('" + eventId.substring(0, 32) + "...')");
    }
  }

  /**
   * Returns {@code reason} if a journal may record it as a dead letter's reason: not null, not
   * blank, well-formed UTF-16, no U+0000.
   *
   * @param reason the reason to check
   * @return {@code reason}
   * @throws IllegalArgumentException naming {@code reason} otherwise
   */
  static String requireDeadReason(String reason) {
    if (reason == null || reason.isBlank()) {
      throw new IllegalArgumentException("reason must not be blank, was "
          + (reason == null ? "null" : "'" + reason + "'"));
    }
    return Utf8.requireStorable("reason", reason);
  }

  /**
   * Returns {@code event} if a journal may record it: not null, with an id, name and payload that
   * are well-formed UTF-16, and an id and name without U+0000 (a payload is stored as bytes by
   * every backend, so it may hold U+0000; a {@link QueuedEvent} already has a non-blank id and
   * name).
   *
   * @param event the event to check
   * @return {@code event}
   * @throws IllegalArgumentException naming the field otherwise
   */
  static QueuedEvent requireEvent(QueuedEvent event) {
    if (event == null) {
      throw new IllegalArgumentException("event must not be null");
    }
    requireIdLength(event.eventId());
    Utf8.requireStorable("eventId", event.eventId());
    Utf8.requireStorable("name", event.name());
    Utf8.requireWellFormed("payload", event.payload()); // bytes in every backend: U+0000 is fine
    return event;
  }

  /**
   * Returns {@code attempts} if it is not negative.
   *
   * @param attempts the count to check
   * @return {@code attempts}
   * @throws IllegalArgumentException naming {@code attempts} otherwise
   */
  static int requireAttempts(int attempts) {
    if (attempts < 0) {
      throw new IllegalArgumentException("attempts must be >= 0, was " + attempts);
    }
    return attempts;
  }

  /**
   * Returns {@code changes} if {@link #recordAtomically} may record them: not null, not empty, no
   * null element.
   *
   * @param changes the list to check; each change was checked when it was made
   * @return {@code changes}
   * @throws IllegalArgumentException naming {@code changes} otherwise
   */
  static List<Change> requireChanges(List<Change> changes) {
    if (changes == null || changes.isEmpty()) {
      throw new IllegalArgumentException("changes must not be null or empty, was " + changes);
    }
    for (Change c : changes) {
      if (c == null) {
        throw new IllegalArgumentException("changes must not hold null, was " + changes);
      }
    }
    return changes;
  }
}
