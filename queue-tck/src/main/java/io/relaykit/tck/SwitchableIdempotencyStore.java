package io.relaykit.tck;

import io.relaykit.idempotency.Claim;
import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.idempotency.IdempotencyUnavailableException;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A test double for an idempotency tier that can go away: forwards to a real store, and while
 * {@linkplain #down(boolean) down} fails every call with {@link IdempotencyUnavailableException},
 * as an unreachable Redis does. Counts the calls it receives, up or down, so a test can check that
 * a caller backs off. Thread-safe as far as its delegate is.
 */
public final class SwitchableIdempotencyStore implements IdempotencyStore {
  private final IdempotencyStore delegate;
  private final String name;
  private final AtomicInteger calls = new AtomicInteger();
  private volatile boolean down;

  /**
   * Forwards to {@code delegate}; starts up.
   *
   * @param delegate the real store
   * @param name the tier's name, which appears in the failure's message
   * @throws IllegalArgumentException if {@code delegate} is null
   */
  public SwitchableIdempotencyStore(IdempotencyStore delegate, String name) {
    if (delegate == null) {
      throw new IllegalArgumentException("delegate must not be null");
    }
    this.delegate = delegate;
    this.name = name;
  }

  /**
   * The store behind this one, for checking what it holds.
   *
   * @return the store given to the constructor
   */
  public IdempotencyStore delegate() {
    return delegate;
  }

  /**
   * Takes the store down (every call fails) or brings it back. Seen by the next call on any
   * thread.
   *
   * @param down true to fail every call, false to forward again
   */
  public void down(boolean down) {
    this.down = down;
  }

  /**
   * Calls received so far, failed ones included.
   *
   * @return the count since construction
   */
  public int calls() {
    return calls.get();
  }

  private void check() {
    calls.incrementAndGet();
    if (down) {
      throw new IdempotencyUnavailableException(name + " is down", null);
    }
  }

  @Override
  public Claim claim(String key, Duration lease) {
    check();
    return delegate.claim(key, lease);
  }

  @Override
  public boolean complete(Claim claim) {
    check();
    return delegate.complete(claim);
  }

  @Override
  public boolean release(Claim claim) {
    check();
    return delegate.release(claim);
  }

  @Override
  public boolean renew(Claim claim, Duration lease) {
    check();
    return delegate.renew(claim, lease);
  }

  @Override
  public boolean markDone(String key) {
    check();
    return delegate.markDone(key);
  }

  @Override
  public Optional<Claim.Status> status(String key) {
    check();
    return delegate.status(key);
  }
}
