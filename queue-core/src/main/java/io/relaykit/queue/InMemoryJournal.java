package io.relaykit.queue;

import io.relaykit.internal.Checks;
import java.time.Instant;
import java.util.List;

/**
 * A {@link QueueJournal} held in memory: it survives a new {@link ReportQueue} built on the same
 * instance (a simulated restart), not the process. Every change is O(1) and durable at once (there
 * is nothing to sync), so {@link #flush()} is free; memory is proportional to the live state, not
 * to the number of changes, because changes are applied to the replayed state as they arrive.
 * {@link #recordAtomically} is atomic: the list is checked whole, then applied under one lock.
 * Nothing here fails once its arguments passed their checks, except on a closed instance.
 *
 * <p>{@link #load()} may be called any number of times on this class, each time returning the
 * state the changes so far produce. {@link #reopen()} gives a second instance on the same storage,
 * as a restarted process would open it, so code written against the "one load per instance"
 * contract can be tested here too.
 */
public final class InMemoryJournal implements QueueJournal {

  private final ReplayState storage;
  private volatile boolean closed;

  /** An empty journal. */
  public InMemoryJournal() {
    this(new ReplayState());
  }

  private InMemoryJournal(ReplayState storage) {
    this.storage = storage;
  }

  /**
   * A new instance on this journal's storage, as a restarted process would open it. This instance
   * stays usable until closed; closing one does not close the other.
   *
   * @return a new journal sharing this one's storage
   */
  public InMemoryJournal reopen() {
    return new InMemoryJournal(storage);
  }

  @Override
  public void append(QueuedEvent event) {
    QueueJournal.requireEvent(event);
    synchronized (storage) {
      ensureOpen();
      storage.append(event);
    }
  }

  @Override
  public void remove(String eventId, Removal removal) {
    QueueJournal.requireEventId(eventId);
    Checks.requireNonNull("removal", removal);
    synchronized (storage) {
      ensureOpen();
      storage.remove(eventId, removal);
    }
  }

  @Override
  public void reschedule(String eventId, int attempts, Instant nextAttemptAt) {
    QueueJournal.requireEventId(eventId);
    QueueJournal.requireAttempts(attempts);
    Checks.requireNonNull("nextAttemptAt", nextAttemptAt);
    synchronized (storage) {
      ensureOpen();
      storage.reschedule(eventId, attempts, nextAttemptAt);
    }
  }

  @Override
  public void deadLetter(String eventId, int attempts, String reason) {
    QueueJournal.requireEventId(eventId);
    QueueJournal.requireAttempts(attempts);
    QueueJournal.requireDeadReason(reason);
    synchronized (storage) {
      ensureOpen();
      storage.deadLetter(eventId, attempts, reason);
    }
  }

  @Override
  public void forget(String eventId) {
    QueueJournal.requireEventId(eventId);
    synchronized (storage) {
      ensureOpen();
      storage.forget(eventId);
    }
  }

  @Override
  public long recordAtomically(List<Change> changes) {
    QueueJournal.requireChanges(changes);
    synchronized (storage) {
      ensureOpen();
      for (Change change : changes) {
        if (change instanceof Change.Append a) {
          storage.append(a.event());
        } else if (change instanceof Change.Remove r) {
          storage.remove(r.eventId(), r.removal());
        } else if (change instanceof Change.Reschedule r) {
          storage.reschedule(r.eventId(), r.attempts(), r.nextAttemptAt());
        } else if (change instanceof Change.DeadLetter d) {
          storage.deadLetter(d.eventId(), d.attempts(), d.reason());
        } else if (change instanceof Change.Forget f) {
          storage.forget(f.eventId());
        }
      }
    }
    return 0L;
  }

  @Override
  public JournalState load() {
    synchronized (storage) {
      ensureOpen();
      return storage.toState();
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
