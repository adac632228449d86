package io.relaykit.guice;

import com.google.inject.AbstractModule;
import com.google.inject.Key;
import com.google.inject.Module;
import com.google.inject.Provides;
import com.google.inject.Singleton;
import io.relaykit.idempotency.Claim;
import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.idempotency.IdempotencyUnavailableException;
import io.relaykit.idempotency.InMemoryIdempotencyStore;
import java.time.Duration;
import java.time.InstantSource;
import java.util.Optional;

/**
 * A storage backend that can serve as an idempotency fast tier, the way {@code storage-redis}
 * does, on an in-memory store that a test can take down. Not registered in META-INF/services:
 * tests pass it to {@link Backends#of}.
 */
final class CacheTierBackend implements BackendModuleProvider {

  @Override
  public Kind kind() {
    return Kind.STORAGE;
  }

  @Override
  public String name() {
    return "cache";
  }

  @Override
  public Module module(RelayKitConfig config) {
    return binder -> { };
  }

  @Override
  public Optional<Module> idempotencyFastTier(RelayKitConfig config, Key<IdempotencyStore> key) {
    Duration retention = config.idempotencyRetention();
    return Optional.of(new AbstractModule() {
      @Override
      protected void configure() {
        bind(key).to(SwitchableStore.class);
      }

      @Provides
      @Singleton
      SwitchableStore store(InstantSource clock) {
        return new SwitchableStore(new InMemoryIdempotencyStore(clock, retention));
      }
    });
  }

  /** An in-memory store that fails like an unreachable Redis while {@link #down} is set. */
  static final class SwitchableStore implements IdempotencyStore {
    final InMemoryIdempotencyStore delegate;
    volatile boolean down;

    SwitchableStore(InMemoryIdempotencyStore delegate) {
      this.delegate = delegate;
    }

    private void check() {
      if (down) {
        throw new IdempotencyUnavailableException("cache is down", null);
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
    public Optional<Claim.Status> status(String key) {
      check();
      return delegate.status(key);
    }
  }
}
