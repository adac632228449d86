package io.relaykit.queue;

import io.relaykit.internal.Checks;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A {@link QueueJournal} held in memory: it survives a new {@link ReportQueue} built on the same
 * instance (a simulated restart), not the process. Every change is O(1) and durable at once (there
 * is nothing to sync), so {@link #flush()} is free; memory is proportional to the live state, not
 * to the number of changes, because changes are applied to the replayed state as they arrive.
 *
 * <p>{@link #load()} may be called any number of times on this class, each time returning the
 * state the changes so far produce. {@link #reopen()} gives a second instance on the same storage,
 * as a restarted process would open it, so code written against the "one load per instance"
 * contract can be tested here too.
 */
public final class InMemoryJournal implements QueueJournal {

  /** The replayed state, shared by every instance opened on the same storage. */
  private static final class Storage {
    final LinkedHashMap<String, QueuedEvent> pending = new LinkedHashMap<>();
    final LinkedHashMap<String, QueuedEvent> dead = new LinkedHashMap<>();
    final Map<String, String> deadReasons = new LinkedHashMap<>();
    final LinkedHashMap<String, Instant> seen = new LinkedHashMap<>();
  }

  private final Storage storage;
  private volatile boolean closed;

  /** An empty journal. */
  public InMemoryJournal() {
    this(new Storage());
  }

  private InMemoryJournal(Storage storage) {
    this.storage = storage;
  }

  /**
   * A new instance on this journal's storage, as a restarted process would open it. This instance
   * stays usable until closed; closing one does not close the other.
   */
  public InMemoryJournal reopen() {
    return new InMemoryJournal(storage);
  }

  @Override
  public void append(QueuedEvent event) {
    Checks.requireNonNull("event", event);
    synchronized (storage) {
      ensureOpen();
      storage.pending.put(event.eventId(), event);
      storage.seen.putIfAbsent(event.eventId(), event.enqueuedAt());
    }
  }

  @Override
  public void remove(String eventId, Removal removal) {
    Checks.requireNonBlank("eventId", eventId);
    Checks.requireNonNull("removal", removal);
    synchronized (storage) {
      ensureOpen();
      boolean wasPending = storage.pending.remove(eventId) != null;
      if (removal == Removal.DROPPED) {
        if (wasPending) {
          storage.seen.remove(eventId);
        }
      } else if (!wasPending && storage.dead.remove(eventId) != null) {
        storage.deadReasons.remove(eventId);
      }
    }
  }

  @Override
  public void reschedule(String eventId, int attempts, Instant nextAttemptAt) {
    Checks.requireNonBlank("eventId", eventId);
    Checks.requireNonNull("nextAttemptAt", nextAttemptAt);
    synchronized (storage) {
      ensureOpen();
      storage.pending.computeIfPresent(eventId, (id, e) -> e.rescheduled(attempts, nextAttemptAt));
    }
  }

  @Override
  public void deadLetter(String eventId, int attempts, String reason) {
    Checks.requireNonBlank("eventId", eventId);
    synchronized (storage) {
      ensureOpen();
      QueuedEvent event = storage.pending.remove(eventId);
      if (event != null) {
        storage.dead.put(eventId, event.rescheduled(attempts, event.nextAttemptAt()));
        storage.deadReasons.put(eventId, reason == null ? "" : reason);
      }
    }
  }

  @Override
  public void forget(String eventId) {
    Checks.requireNonBlank("eventId", eventId);
    synchronized (storage) {
      ensureOpen();
      if (!storage.pending.containsKey(eventId)) {
        storage.seen.remove(eventId);
      }
    }
  }

  @Override
  public JournalState load() {
    synchronized (storage) {
      ensureOpen();
      return new JournalState(
          new ArrayList<>(storage.pending.values()),
          new ArrayList<>(storage.dead.values()),
          storage.deadReasons,
          storage.seen);
    }
  }

  @Override
  public void flush() {
    ensureOpen();
  }

  @Override
  public void close() {
    closed = true;
  }

  private void ensureOpen() {
    if (closed) {
      throw new IllegalStateException("journal is closed");
    }
  }

  @Override
  public String toString() {
    synchronized (storage) {
      return "InMemoryJournal[pending=" + storage.pending.size() + ", dead=" + storage.dead.size()
          + ", seen=" + storage.seen.size() + (closed ? ", closed" : "") + "]";
    }
  }
}
