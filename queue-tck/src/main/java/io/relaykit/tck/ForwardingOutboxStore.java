package io.relaykit.tck;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.outbox.OutboxBound;
import io.relaykit.outbox.OutboxRecord;
import io.relaykit.outbox.OutboxStats;
import io.relaykit.outbox.OutboxStore;
import io.relaykit.outbox.OutboxWakeup;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * A test fixture: an {@link OutboxStore} that hands every call, the default methods included, to
 * another store, so a test can break one method by overriding it (a renewal that cannot reach the
 * database, a relay process that died) and keep the rest real. The store's {@link #wakeup()} is
 * forwarded too, so a relay built on the wrapper is woken by commits exactly as one built on the
 * real store, and {@link #committed()} reaches the real store's relays. Costs one extra call per
 * operation.
 */
public class ForwardingOutboxStore implements OutboxStore {

  private final OutboxStore delegate;

  /**
   * Forwards every call to {@code delegate}.
   *
   * @param delegate the real store
   * @throws NullPointerException if {@code delegate} is null
   */
  public ForwardingOutboxStore(OutboxStore delegate) {
    this.delegate = Objects.requireNonNull(delegate, "delegate");
  }

  /**
   * The store every call is handed to, for overrides that call through.
   *
   * @return the store given to the constructor
   */
  protected final OutboxStore delegate() {
    return delegate;
  }

  @Override
  public List<OutboxRecord> claim(String owner, int max, Duration lease, Instant now) {
    return delegate.claim(owner, max, lease, now);
  }

  @Override
  public List<OutboxRecord> claim(String owner, int max, int maxRun, Duration lease,
      Instant now) {
    return delegate.claim(owner, max, maxRun, lease, now);
  }

  @Override
  public int release(String owner, Collection<Long> sequences) {
    return delegate.release(owner, sequences);
  }

  @Override
  public int markSent(String owner, Collection<Long> sequences, Instant now) {
    return delegate.markSent(owner, sequences, now);
  }

  @Override
  public boolean reschedule(String owner, long sequence, int attempts, Instant failedAt,
      Instant notBefore, String error) {
    return delegate.reschedule(owner, sequence, attempts, failedAt, notBefore, error);
  }

  @Override
  public boolean markDead(String owner, long sequence) {
    return delegate.markDead(owner, sequence);
  }

  @Override
  public boolean moveToDeadLetters(String owner, long sequence, DeadLetter deadLetter,
      DeadLetterStore deadLetters) {
    return delegate.moveToDeadLetters(owner, sequence, deadLetter, deadLetters);
  }

  @Override
  public Set<Long> renewLease(String owner, Collection<Long> sequences, Duration lease,
      Instant now) {
    return delegate.renewLease(owner, sequences, lease, now);
  }

  @Override
  public int purgeSent(Instant sentBefore) {
    return delegate.purgeSent(sentBefore);
  }

  @Override
  public int purgeSentOlderThan(Duration retention, int max, Instant now) {
    return delegate.purgeSentOlderThan(retention, max, now);
  }

  @Override
  public OutboxStats stats(Instant now) {
    return delegate.stats(now);
  }

  @Override
  public OutboxBound bound() {
    return delegate.bound();
  }

  @Override
  public Optional<OutboxWakeup> wakeup() {
    return delegate.wakeup();
  }

  @Override
  public void committed() {
    delegate.committed();
  }

  @Override
  public long refusedAppends() {
    return delegate.refusedAppends();
  }

  @Override
  public long overBoundAppends() {
    return delegate.overBoundAppends();
  }
}
