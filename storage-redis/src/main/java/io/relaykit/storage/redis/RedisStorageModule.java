package io.relaykit.storage.redis;

import com.google.inject.AbstractModule;
import com.google.inject.Key;
import com.google.inject.PrivateModule;
import com.google.inject.Provides;
import com.google.inject.Singleton;
import com.google.inject.name.Named;
import com.google.inject.name.Names;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.guice.RelayKitModule;
import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.ordering.VersionGuard;
import io.relaykit.queue.QueueJournal;
import java.time.InstantSource;

/**
 * Guice wiring of the Redis stores: replaces relaykit's in-memory {@link IdempotencyStore}, {@link
 * VersionGuard}, {@link DeadLetterStore} and {@link QueueJournal} with the Redis ones, all on one
 * {@link RedisStorage} (one Lettuce client) built from a {@link RedisStorageConfig} and the
 * injector's {@link InstantSource}. Install it beside {@link RelayKitModule}, or let {@code
 * relaykit.storage=redis} pick it (see {@link RedisStorageBackend}). The outbox stays in memory:
 * it belongs in the database of the business transaction.
 *
 * <p>The helpers stay in a private module; besides the four SPIs it exposes the {@link
 * RedisStorage}, because Guice closes nothing: close it when the application stops.
 */
public final class RedisStorageModule extends AbstractModule {
  private static final String NAME = "redis";
  private static final Key<IdempotencyStore> IDEMPOTENCY =
      Key.get(IdempotencyStore.class, Names.named(NAME));
  private static final Key<VersionGuard> VERSIONS = Key.get(VersionGuard.class, Names.named(NAME));
  private static final Key<DeadLetterStore> DEAD_LETTERS =
      Key.get(DeadLetterStore.class, Names.named(NAME));
  private static final Key<QueueJournal> JOURNAL = Key.get(QueueJournal.class, Names.named(NAME));

  private final RedisStorageConfig config;
  private final String journalName;
  private final String deadLetterStoreName;

  /**
   * The stores on {@code config}, with the journal and dead-letter store named "default".
   *
   * @param config the connection and key settings
   */
  public RedisStorageModule(RedisStorageConfig config) {
    this(config, "default", "default");
  }

  /**
   * A module binding the Redis stores built from {@code config}.
   *
   * @param config the connection and key settings
   * @param journalName the name of the bound journal
   * @param deadLetterStoreName the name of the bound dead-letter store
   * @throws IllegalArgumentException if {@code config} is null or a name is blank, too long or
   *     holds a brace
   */
  public RedisStorageModule(RedisStorageConfig config, String journalName,
      String deadLetterStoreName) {
    if (config == null) {
      throw new IllegalArgumentException("config must not be null");
    }
    this.config = config;
    this.journalName = RedisJournal.requireName(journalName);
    this.deadLetterStoreName = RedisDeadLetterStore.requireName(deadLetterStoreName);
  }

  @Override
  protected void configure() {
    install(new PrivateModule() {
      @Override
      protected void configure() {
        expose(RedisStorage.class);
        expose(IDEMPOTENCY);
        expose(VERSIONS);
        expose(DEAD_LETTERS);
        expose(JOURNAL);
      }

      @Provides
      @Singleton
      RedisStorage storage(InstantSource clock) {
        return RedisStorage.open(config, clock);
      }

      @Provides
      @Singleton
      @Named(NAME)
      IdempotencyStore idempotencyStore(RedisStorage storage) {
        return storage.idempotencyStore();
      }

      @Provides
      @Singleton
      @Named(NAME)
      VersionGuard versionGuard(RedisStorage storage) {
        return storage.versionGuard();
      }

      @Provides
      @Singleton
      @Named(NAME)
      DeadLetterStore deadLetterStore(RedisStorage storage) {
        return storage.deadLetterStore(deadLetterStoreName);
      }

      @Provides
      @Singleton
      @Named(NAME)
      QueueJournal journal(RedisStorage storage) {
        return storage.journal(journalName);
      }
    });
    // The storage's store: the SPI itself, or the durable tier behind a configured fast tier.
    RelayKitModule.overrideStorageIdempotency(binder()).to(IDEMPOTENCY);
    RelayKitModule.override(binder(), VersionGuard.class).to(VERSIONS);
    RelayKitModule.override(binder(), DeadLetterStore.class).to(DEAD_LETTERS);
    RelayKitModule.override(binder(), QueueJournal.class).to(JOURNAL);
  }

  @Override
  public String toString() {
    return "RedisStorageModule{" + config + ", journal=" + journalName + ", deadLetters="
        + deadLetterStoreName + "}";
  }
}
