package io.relaykit.examples;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.outbox.OutboxBound;
import io.relaykit.outbox.OutboxRecord;
import io.relaykit.outbox.OutboxStats;
import io.relaykit.outbox.OutboxStore;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Set;

/**
 * The relay's view of the outbox, with a pause: while paused, {@link #claim} hands out nothing, so
 * the relay idles and the backlog grows as orders arrive, as it would behind a relay that is down;
 * rows it already holds finish normally. Everything else goes straight to the store. Used by the
 * chart test to make a backlog the in-process transport would otherwise drain within milliseconds.
 */
final class PausableOutbox implements OutboxStore {
  private final OutboxStore store;
  private volatile boolean paused;

  PausableOutbox(OutboxStore store) {
    this.store = store;
  }

  void paused(boolean paused) {
    this.paused = paused;
  }

  boolean paused() {
    return paused;
  }

  @Override
  public List<OutboxRecord> claim(String owner, int max, Duration lease, Instant now) {
    return paused ? List.of() : store.claim(owner, max, lease, now);
  }

  @Override
  public List<OutboxRecord> claim(String owner, int max, int maxRun, Duration lease,
      Instant now) {
    return paused ? List.of() : store.claim(owner, max, maxRun, lease, now);
  }

  @Override
  public int release(String owner, Collection<Long> sequences) {
    return store.release(owner, sequences);
  }

  @Override
  public int markSent(String owner, Collection<Long> sequences, Instant now) {
    return store.markSent(owner, sequences, now);
  }

  @Override
  public boolean reschedule(String owner, long sequence, int attempts, Instant failedAt,
      Instant notBefore, String error) {
    return store.reschedule(owner, sequence, attempts, failedAt, notBefore, error);
  }

  @Override
  public boolean markDead(String owner, long sequence) {
    return store.markDead(owner, sequence);
  }

  @Override
  public boolean moveToDeadLetters(String owner, long sequence, DeadLetter deadLetter,
      DeadLetterStore deadLetters) {
    return store.moveToDeadLetters(owner, sequence, deadLetter, deadLetters);
  }

  @Override
  public Set<Long> renewLease(String owner, Collection<Long> sequences, Duration lease,
      Instant now) {
    return store.renewLease(owner, sequences, lease, now);
  }

  @Override
  public int purgeSent(Instant sentBefore) {
    return store.purgeSent(sentBefore);
  }

  @Override
  public int purgeSentOlderThan(Duration retention, int max, Instant now) {
    return store.purgeSentOlderThan(retention, max, now);
  }

  @Override
  public OutboxStats stats(Instant now) {
    return store.stats(now);
  }

  @Override
  public OutboxBound bound() {
    return store.bound();
  }

  @Override
  public long refusedAppends() {
    return store.refusedAppends();
  }

  @Override
  public long overBoundAppends() {
    return store.overBoundAppends();
  }
}
