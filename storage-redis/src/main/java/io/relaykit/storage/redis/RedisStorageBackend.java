package io.relaykit.storage.redis;

import com.google.inject.Key;
import com.google.inject.Module;
import com.google.inject.PrivateModule;
import com.google.inject.Provides;
import com.google.inject.Singleton;
import io.relaykit.guice.BackendModuleProvider;
import io.relaykit.guice.RelayKitConfig;
import io.relaykit.idempotency.IdempotencyStore;
import java.time.Duration;
import java.time.InstantSource;
import java.util.Map;
import java.util.Optional;

/**
 * The storage backend {@code relaykit.storage=redis} selects: a {@link RedisStorageModule}
 * configured from the {@code relaykit.redis.*} keys (or {@code RELAYKIT_REDIS_*} variables).
 *
 * <p>It also serves as the idempotency fast tier, {@code relaykit.idempotency.fast-tier=redis}
 * beside another storage backend ({@code relaykit.storage=h2}): then only its {@link
 * RedisIdempotencyStore} is bound, from the same keys, and relaykit puts it in front of the
 * storage backend's store, the final guard. Its {@link RedisStorage} is bound too: close it when
 * the application stops. Keep {@code relaykit.redis.retention} no longer than the durable tier's.
 *
 * <table>
 *   <caption>Keys</caption>
 *   <tr><th>key</th><th>default</th></tr>
 *   <tr><td>relaykit.redis.uri</td><td>redis://127.0.0.1:6379</td></tr>
 *   <tr><td>relaykit.redis.command-timeout</td><td>1s</td></tr>
 *   <tr><td>relaykit.redis.connect-timeout</td><td>5s</td></tr>
 *   <tr><td>relaykit.redis.reconnect-max-delay</td><td>1s</td></tr>
 *   <tr><td>relaykit.redis.key-prefix</td><td>relaykit:</td></tr>
 *   <tr><td>relaykit.redis.lease</td><td>30s</td></tr>
 *   <tr><td>relaykit.redis.retention</td><td>relaykit.idempotency.retention</td></tr>
 *   <tr><td>relaykit.redis.max-value-bytes</td><td>8388608</td></tr>
 *   <tr><td>relaykit.redis.cluster</td><td>false</td></tr>
 *   <tr><td>relaykit.redis.read-legacy-idempotency-keys</td><td>false</td></tr>
 *   <tr><td>relaykit.redis.journal</td><td>default</td></tr>
 *   <tr><td>relaykit.redis.dead-letters</td><td>default</td></tr>
 * </table>
 */
public final class RedisStorageBackend implements BackendModuleProvider {
  /** Created by {@link java.util.ServiceLoader}; holds no state. */
  public RedisStorageBackend() {}

  static final String PREFIX = "relaykit.redis.";

  /** Config field names as {@link RedisStorageConfig} reports them, and their keys. */
  private static final Map<String, String> KEYS = Map.of(
      "uri", PREFIX + "uri",
      "commandTimeout", PREFIX + "command-timeout",
      "connectTimeout", PREFIX + "connect-timeout",
      "reconnectMaxDelay", PREFIX + "reconnect-max-delay",
      "keyPrefix", PREFIX + "key-prefix",
      "lease", PREFIX + "lease",
      "retention", PREFIX + "retention",
      "maxValueBytes", PREFIX + "max-value-bytes",
      "name", PREFIX + "journal or " + PREFIX + "dead-letters");

  @Override
  public Kind kind() {
    return Kind.STORAGE;
  }

  @Override
  public String name() {
    return "redis";
  }

  /**
   * @throws IllegalArgumentException naming the {@code relaykit.redis.*} key and its value when a
   *     setting is invalid
   */
  @Override
  public Module module(RelayKitConfig config) {
    RedisStorageConfig redis = storageConfig(config);
    try {
      return new RedisStorageModule(redis,
          config.get(PREFIX + "journal").orElse("default"),
          config.get(PREFIX + "dead-letters").orElse("default"));
    } catch (IllegalArgumentException e) {
      throw withKey(e);
    }
  }

  /**
   * Binds the {@link RedisIdempotencyStore} (and its {@link RedisStorage}) alone, to {@code key}.
   *
   * @throws IllegalArgumentException naming the {@code relaykit.redis.*} key and its value when a
   *     setting is invalid
   */
  @Override
  public Optional<Module> idempotencyFastTier(RelayKitConfig config, Key<IdempotencyStore> key) {
    RedisStorageConfig redis = storageConfig(config);
    return Optional.of(new PrivateModule() {
      @Override
      protected void configure() {
        expose(RedisStorage.class);
        expose(key);
        bind(key).to(RedisIdempotencyStore.class);
      }

      @Provides
      @Singleton
      RedisStorage storage(InstantSource clock) {
        return RedisStorage.open(redis, clock);
      }

      @Provides
      @Singleton
      RedisIdempotencyStore idempotencyStore(RedisStorage storage) {
        return storage.idempotencyStore();
      }
    });
  }

  private static RedisStorageConfig storageConfig(RelayKitConfig config) {
    RedisStorageConfig defaults = RedisStorageConfig.builder().build();
    try {
      return RedisStorageConfig.builder()
          .uri(config.get(PREFIX + "uri").orElse(defaults.uri()))
          .commandTimeout(duration(config, "command-timeout", defaults.commandTimeout()))
          .connectTimeout(duration(config, "connect-timeout", defaults.connectTimeout()))
          .reconnectMaxDelay(duration(config, "reconnect-max-delay",
              defaults.reconnectMaxDelay()))
          .keyPrefix(config.get(PREFIX + "key-prefix").orElse(defaults.keyPrefix()))
          .lease(duration(config, "lease", defaults.lease()))
          .retention(duration(config, "retention", config.idempotencyRetention()))
          .maxValueBytes(config.getInt(PREFIX + "max-value-bytes", defaults.maxValueBytes()))
          .cluster(config.getBoolean(PREFIX + "cluster", defaults.cluster()))
          .readLegacyIdempotencyKeys(config.getBoolean(PREFIX + "read-legacy-idempotency-keys",
              defaults.readLegacyIdempotencyKeys()))
          .build();
    } catch (IllegalArgumentException e) {
      throw withKey(e);
    }
  }

  /** {@code e} with the config field its message starts with replaced by the key. */
  private static IllegalArgumentException withKey(IllegalArgumentException e) {
    String message = e.getMessage() == null ? "" : e.getMessage();
    for (Map.Entry<String, String> k : KEYS.entrySet()) {
      if (message.startsWith(k.getKey() + " ")) {
        return new IllegalArgumentException(k.getValue() + message.substring(k.getKey().length()),
            e);
      }
    }
    return e;
  }

  private static Duration duration(RelayKitConfig config, String key, Duration defaultValue) {
    return config.getDuration(PREFIX + key, defaultValue);
  }
}
