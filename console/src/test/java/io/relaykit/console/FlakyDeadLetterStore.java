package io.relaykit.console;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterCount;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.deadletter.InMemoryDeadLetterStore;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;

/** An in-memory store whose reads fail while {@link #failure} holds an exception. */
final class FlakyDeadLetterStore implements DeadLetterStore {
  final InMemoryDeadLetterStore delegate;
  final AtomicReference<RuntimeException> failure = new AtomicReference<>();

  FlakyDeadLetterStore(InMemoryDeadLetterStore delegate) {
    this.delegate = delegate;
  }

  private void check() {
    RuntimeException e = failure.get();
    if (e != null) {
      throw e;
    }
  }

  @Override
  public void add(DeadLetter deadLetter) {
    delegate.add(deadLetter);
  }

  @Override
  public Optional<DeadLetter> find(String id) {
    check();
    return delegate.find(id);
  }

  @Override
  public List<DeadLetter> list(DeadLetterQuery query) {
    check();
    return delegate.list(query);
  }

  @Override
  public long count(DeadLetterQuery query) {
    check();
    return delegate.count(query);
  }

  @Override
  public List<DeadLetterCount> countBySource(int maxRows) {
    check();
    return delegate.countBySource(maxRows);
  }

  @Override
  public Optional<DeadLetter> remove(String id) {
    check();
    return delegate.remove(id);
  }

  @Override
  public long purge(DeadLetterQuery query) {
    check();
    return delegate.purge(query);
  }

  @Override
  public boolean marksReplays() {
    return delegate.marksReplays();
  }

  @Override
  public Optional<DeadLetter> beginReplay(String id, String token, Duration lease) {
    check();
    return delegate.beginReplay(id, token, lease);
  }

  @Override
  public boolean finishReplay(String id, String token) {
    check();
    return delegate.finishReplay(id, token);
  }

  @Override
  public boolean abandonReplay(String id, String token) {
    return delegate.abandonReplay(id, token);
  }
}
