package io.relaykit.storage.redis;

import java.time.InstantSource;

/**
 * The entry point to relaykit's Redis backends: one Lettuce client and one shared connection that
 * every store it hands out uses. Opening does not connect; the first command does, and the
 * connection reconnects by itself after Redis restarts. Close it when done.
 *
 * <pre>{@code
 * try (RedisStorage redis = RedisStorage.open(RedisStorageConfig.builder()
 *     .uri("redis://127.0.0.1:6379").keyPrefix("shop:").build())) {
 *   IdempotencyStore fast = redis.idempotencyStore();
 *   ...
 * }
 * }</pre>
 */
public final class RedisStorage implements AutoCloseable {
  private final RedisConnector connector;
  private RedisStorage(RedisStorageConfig config) {
    this.connector = new RedisConnector(config);
  }

  /**
   * Storage on {@code config}.
   *
   * @param config the connection and key settings
   * @return the storage; it connects lazily, on the first command
   */
  public static RedisStorage open(RedisStorageConfig config) {
    return open(config, InstantSource.system());
  }

  /**
   * Storage on {@code config}. {@code clock} is this host's clock; no store decides anything on
   * it: leases, takeovers and retention run on the Redis server's clock ({@code TIME} in the
   * scripts, {@code PX} expiries), which also dates the lease expiries the answers report.
   *
   * @param config the connection and key settings
   * @param clock this host's clock
   * @return the storage; it connects lazily, on the first command
   * @throws IllegalArgumentException if {@code config} or {@code clock} is null
   */
  public static RedisStorage open(RedisStorageConfig config, InstantSource clock) {
    // Lettuce 6.8.2 is what Spring Boot 4.0 manages, and the oldest relaykit-redis compiles and
    // runs against; an older one fails here with one line.
    io.relaykit.internal.ClientVersions.require("relaykit-redis", "lettuce-core",
        io.relaykit.internal.ClientVersions.ofJar(io.lettuce.core.RedisClient.class).orElse(null),
        "6.8.2", null);
    if (config == null) {
      throw new IllegalArgumentException("config must not be null");
    }
    if (clock == null) {
      throw new IllegalArgumentException("clock must not be null");
    }
    return new RedisStorage(config);
  }

  /**
   * The settings this storage was opened with.
   *
   * @return the configuration
   */
  public RedisStorageConfig config() {
    return connector.config();
  }

  /**
   * The idempotency store under this storage's key prefix; cheap, stateless.
   *
   * @return the store
   */
  public RedisIdempotencyStore idempotencyStore() {
    return new RedisIdempotencyStore(connector);
  }

  /**
   * The version guard under this storage's key prefix; cheap, stateless.
   *
   * @return the guard
   */
  public RedisVersionGuard versionGuard() {
    return new RedisVersionGuard(connector);
  }

  /**
   * The dead-letter store named {@code "default"}; cheap, stateless.
   *
   * @return the store
   */
  public RedisDeadLetterStore deadLetterStore() {
    return deadLetterStore("default");
  }

  /**
   * The dead-letter store called {@code name} (one per source, say) under this storage's key
   * prefix; cheap, stateless.
   *
   * @param name the store's name; its keys live under it
   * @return the store
   * @throws IllegalArgumentException if {@code name} is blank, longer than {@link
   *     RedisDeadLetterStore#MAX_NAME_LENGTH} or holds a brace
   */
  public RedisDeadLetterStore deadLetterStore(String name) {
    return new RedisDeadLetterStore(connector, name);
  }

  /**
   * The journal called {@code name} under this storage's key prefix: a new handle on the same name
   * (after a restart) sees everything recorded before.
   *
   * @param name the journal's name; its keys live under it
   * @return the journal
   * @throws IllegalArgumentException if {@code name} is blank, longer than {@link
   *     RedisJournal#MAX_NAME_LENGTH} or holds a brace
   */
  public RedisJournal journal(String name) {
    return new RedisJournal(connector, name);
  }

  @Override
  public void close() {
    connector.close();
  }

  RedisConnector connector() {
    return connector;
  }
}
