package io.relaykit.queue;

import java.time.Instant;

/**
 * The journal of a {@link ReportQueue} built without one: memory only, so it records nothing and
 * {@link #load()} finds nothing. Every call is free; stateless, so one instance serves every queue.
 */
final class NoJournal implements QueueJournal {

  static final NoJournal INSTANCE = new NoJournal();

  private NoJournal() {
  }

  @Override
  public void append(QueuedEvent event) {
  }

  @Override
  public void remove(String eventId, Removal removal) {
  }

  @Override
  public void reschedule(String eventId, int attempts, Instant nextAttemptAt) {
  }

  @Override
  public void deadLetter(String eventId, int attempts, String reason) {
  }

  @Override
  public void forget(String eventId) {
  }

  @Override
  public JournalState load() {
    return JournalState.empty();
  }

  @Override
  public void flush() {
  }

  @Override
  public void close() {
  }

  @Override
  public String toString() {
    return "NoJournal";
  }
}
