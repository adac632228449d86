package io.relaykit.queue;

import io.relaykit.queue.QueueJournal.Removal;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The replay rules of {@link QueueJournal}, applied one change at a time to the state they
 * produce. Shared by the journals in this package; not thread-safe (callers lock). Every change is
 * O(1).
 */
final class ReplayState {
  final LinkedHashMap<String, QueuedEvent> pending = new LinkedHashMap<>();
  final LinkedHashMap<String, QueuedEvent> dead = new LinkedHashMap<>();
  final Map<String, String> deadReasons = new LinkedHashMap<>();
  final LinkedHashMap<String, Instant> seen = new LinkedHashMap<>();

  /**
   * Returns true when the id was newly seen. An append of a dead id is a replay: the dead letter
   * and its reason go, and the event is pending after the others.
   */
  boolean append(QueuedEvent event) {
    String id = event.eventId();
    if (dead.remove(id) != null) {
      deadReasons.remove(id);
    }
    pending.put(id, event);
    return seen.putIfAbsent(id, event.enqueuedAt()) == null;
  }

  /** Marks an id seen at {@code at} unless it already is (a compaction snapshot's record). */
  boolean seen(String eventId, Instant at) {
    return seen.putIfAbsent(eventId, at) == null;
  }

  /** What a removal took away, for size accounting. */
  record Removed(QueuedEvent event, boolean wasDead, boolean forgotten) {
  }

  /** Returns what was removed, or null when the id was neither pending nor dead. */
  Removed remove(String eventId, Removal removal) {
    QueuedEvent event = pending.remove(eventId);
    if (event != null) {
      boolean forgotten = removal == Removal.DROPPED && seen.remove(eventId) != null;
      return new Removed(event, false, forgotten);
    }
    if (removal != Removal.DROPPED) {
      event = dead.remove(eventId);
      if (event != null) {
        deadReasons.remove(eventId);
        return new Removed(event, true, false);
      }
    }
    return null;
  }

  boolean reschedule(String eventId, int attempts, Instant nextAttemptAt) {
    return pending.computeIfPresent(eventId, (id, e) -> e.rescheduled(attempts, nextAttemptAt))
        != null;
  }

  /** Returns the event that moved to dead, or null when it was not pending. */
  QueuedEvent deadLetter(String eventId, int attempts, String reason) {
    QueuedEvent event = pending.remove(eventId);
    if (event == null) {
      return null;
    }
    QueuedEvent died = event.rescheduled(attempts, event.nextAttemptAt());
    dead.put(eventId, died);
    deadReasons.put(eventId, reason == null ? "" : reason);
    return died;
  }

  /** Returns true when a seen id (not pending) was forgotten. */
  boolean forget(String eventId) {
    return !pending.containsKey(eventId) && seen.remove(eventId) != null;
  }

  /** A copy whose maps share the (immutable) events: O(n) references. */
  ReplayState copy() {
    ReplayState c = new ReplayState();
    c.pending.putAll(pending);
    c.dead.putAll(dead);
    c.deadReasons.putAll(deadReasons);
    c.seen.putAll(seen);
    return c;
  }

  JournalState toState() {
    return new JournalState(new ArrayList<>(pending.values()), new ArrayList<>(dead.values()),
        deadReasons, seen);
  }
}
