package io.relaykit.storage.jdbc;

import com.google.inject.Binding;
import com.google.inject.Injector;
import com.google.inject.Key;
import com.google.inject.PrivateModule;
import com.google.inject.Provides;
import com.google.inject.Singleton;
import io.relaykit.monitor.LifecycleListener;
import java.time.InstantSource;
import java.util.List;

/**
 * Binds relaykit's JDBC storage from an {@link JdbcStorageConfig}: one {@link JdbcStorage} (its
 * HikariCP pool and the migrated tables) per injector, and the stores built on it. Exposes only
 * the store types — {@link JdbcOutboxStore}, {@link JdbcIdempotencyStore}, {@link
 * JdbcDeadLetterStore}, {@link JdbcVersionGuard}, {@link JdbcQueueJournal} — and {@link
 * JdbcStorage} itself, so the application can {@code append} in its own transactions and close the
 * pool when it stops. Needs an {@link InstantSource} binding (relaykit's {@code RelayKitModule}
 * provides one). Under {@code RelayKitModule}, choose it with {@code relaykit.storage=jdbc} (see
 * {@link JdbcStorageBackend}), which also binds relaykit's SPIs to these stores.
 *
 * <p>The outbox reports its lifecycle steps (ENQUEUED on append) to the injector's {@link
 * LifecycleListener} when one is bound (relaykit's {@code RelayKitModule} binds one, a no-op
 * unless overridden), and to the config's own {@link JdbcStorageConfig#listener()} if it has one;
 * with neither, nowhere.
 *
 * <p>The pool is opened when the injector first asks for a store (at injector creation in
 * {@code Stage.PRODUCTION}); an unreachable database or a newer schema fails there.
 */
public final class JdbcStorageModule extends PrivateModule {
  private final JdbcStorageConfig config;
  private final String journalName;

  /**
   * A module binding the storage {@code config} describes. Opens nothing until a store is first
   * injected.
   *
   * @param config the database, pool and table settings
   * @param journalName the name of the queue journal this module binds
   * @throws IllegalArgumentException if {@code config} is null or {@code journalName} is blank
   */
  public JdbcStorageModule(JdbcStorageConfig config, String journalName) {
    if (config == null) {
      throw new IllegalArgumentException("config must not be null");
    }
    if (journalName == null || journalName.isBlank()) {
      throw new IllegalArgumentException("journalName must not be blank");
    }
    this.config = config;
    this.journalName = journalName;
  }

  @Override
  protected void configure() {
    expose(JdbcStorage.class);
    expose(JdbcOutboxStore.class);
    expose(JdbcIdempotencyStore.class);
    expose(JdbcDeadLetterStore.class);
    expose(JdbcVersionGuard.class);
    expose(JdbcQueueJournal.class);
  }

  @Provides
  @Singleton
  JdbcStorage storage(InstantSource clock, Injector injector) {
    // Optional: the module also works in an injector without a listener binding.
    Binding<LifecycleListener> bound =
        injector.getExistingBinding(Key.get(LifecycleListener.class));
    if (bound == null) {
      return JdbcStorage.open(config, clock);
    }
    LifecycleListener fromGuice = bound.getProvider().get();
    LifecycleListener listener = config.listener()
        .map(own -> LifecycleListener.composite(List.of(own, fromGuice)))
        .orElse(fromGuice);
    return JdbcStorage.open(config.withListener(listener), clock);
  }

  @Provides
  @Singleton
  JdbcOutboxStore outbox(JdbcStorage storage) {
    return storage.outboxStore();
  }

  @Provides
  @Singleton
  JdbcIdempotencyStore idempotency(JdbcStorage storage) {
    return storage.idempotencyStore();
  }

  @Provides
  @Singleton
  JdbcDeadLetterStore deadLetters(JdbcStorage storage) {
    return storage.deadLetterStore();
  }

  @Provides
  @Singleton
  JdbcVersionGuard versionGuard(JdbcStorage storage) {
    return storage.versionGuard();
  }

  @Provides
  @Singleton
  JdbcQueueJournal journal(JdbcStorage storage) {
    return storage.queueJournal(journalName);
  }

  @Override
  public String toString() {
    return "JdbcStorageModule{" + config + ", journal=" + journalName + "}";
  }
}
