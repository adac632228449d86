package io.relaykit.guice;

import com.google.inject.AbstractModule;
import com.google.inject.Key;
import com.google.inject.Module;
import com.google.inject.Provides;
import com.google.inject.Singleton;
import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.idempotency.InMemoryIdempotencyStore;
import io.relaykit.tck.SwitchableIdempotencyStore;
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
        bind(key).to(SwitchableIdempotencyStore.class);
      }

      @Provides
      @Singleton
      SwitchableIdempotencyStore store(InstantSource clock) {
        return new SwitchableIdempotencyStore(new InMemoryIdempotencyStore(clock, retention),
            "cache");
      }
    });
  }
}
