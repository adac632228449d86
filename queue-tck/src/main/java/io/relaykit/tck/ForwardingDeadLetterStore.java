package io.relaykit.tck;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.deadletter.DeadLetterStore;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * A test fixture: a {@link DeadLetterStore} that hands every call to another store, so a test can
 * break one method by overriding it and keep the rest real. Costs one extra call per operation.
 */
public class ForwardingDeadLetterStore implements DeadLetterStore {

  private final DeadLetterStore delegate;

  /**
   * Forwards every call to {@code delegate}.
   *
   * @param delegate the real store
   * @throws NullPointerException if {@code delegate} is null
   */
  public ForwardingDeadLetterStore(DeadLetterStore delegate) {
    this.delegate = Objects.requireNonNull(delegate, "delegate");
  }

  /**
   * The store every call is handed to, for overrides that call through.
   *
   * @return the store given to the constructor
   */
  protected final DeadLetterStore delegate() {
    return delegate;
  }

  @Override
  public void add(DeadLetter deadLetter) {
    delegate.add(deadLetter);
  }

  @Override
  public Optional<DeadLetter> find(String id) {
    return delegate.find(id);
  }

  @Override
  public List<DeadLetter> list(DeadLetterQuery query) {
    return delegate.list(query);
  }

  @Override
  public long count(DeadLetterQuery query) {
    return delegate.count(query);
  }

  @Override
  public java.util.List<io.relaykit.deadletter.DeadLetterCount> countBySource(int maxRows) {
    return delegate.countBySource(maxRows);
  }

  @Override
  public Optional<DeadLetter> remove(String id) {
    return delegate.remove(id);
  }

  @Override
  public long purge(DeadLetterQuery query) {
    return delegate.purge(query);
  }

  @Override
  public long purgeFailedBefore(java.time.Instant failedBefore, int max) {
    return delegate.purgeFailedBefore(failedBefore, max);
  }

  @Override
  public long purgeFailedOlderThan(java.time.Duration maxAge, int max, java.time.Instant now) {
    return delegate.purgeFailedOlderThan(maxAge, max, now);
  }

  @Override
  public long trimTo(long keep, int max) {
    return delegate.trimTo(keep, max);
  }

  @Override
  public boolean marksReplays() {
    return delegate.marksReplays();
  }

  @Override
  public Optional<DeadLetter> beginReplay(String id, String token, java.time.Duration lease) {
    return delegate.beginReplay(id, token, lease);
  }

  @Override
  public boolean finishReplay(String id, String token) {
    return delegate.finishReplay(id, token);
  }

  @Override
  public boolean abandonReplay(String id, String token) {
    return delegate.abandonReplay(id, token);
  }
}
