package io.relaykit.storage.h2;

import io.relaykit.config.Settings;
import io.relaykit.storage.jdbc.JdbcStorageConfig;
import java.time.Duration;

/**
 * Forwards to {@link JdbcStorageConfig}, which it was renamed to: its factories return the new
 * types, so {@code H2StorageConfig.builder()...build()} compiles where a {@code JdbcStorageConfig}
 * (or {@code var}) is expected. A variable declared as {@code H2StorageConfig} must be re-declared
 * as {@code JdbcStorageConfig}.
 *
 * @deprecated use {@link JdbcStorageConfig}; this class is removed in the next release.
 */
@Deprecated(since = "0.1.0", forRemoval = true)
public final class H2StorageConfig {
  /** See {@link JdbcStorageConfig#DEFAULT_POOL_SIZE}. */
  public static final int DEFAULT_POOL_SIZE = JdbcStorageConfig.DEFAULT_POOL_SIZE;
  /** See {@link JdbcStorageConfig#DEFAULT_TABLE_PREFIX}. */
  public static final String DEFAULT_TABLE_PREFIX = JdbcStorageConfig.DEFAULT_TABLE_PREFIX;
  /** See {@link JdbcStorageConfig#DEFAULT_LEASE}. */
  public static final Duration DEFAULT_LEASE = JdbcStorageConfig.DEFAULT_LEASE;
  /** See {@link JdbcStorageConfig#DEFAULT_RETENTION}. */
  public static final Duration DEFAULT_RETENTION = JdbcStorageConfig.DEFAULT_RETENTION;

  private H2StorageConfig() {}

  /**
   * See {@link JdbcStorageConfig#builder()}.
   *
   * @return a new builder of a {@link JdbcStorageConfig}
   */
  public static JdbcStorageConfig.Builder builder() {
    return JdbcStorageConfig.builder();
  }

  /**
   * See {@link JdbcStorageConfig#builderFrom(Settings)}.
   *
   * @param settings the deployment's settings
   * @return a builder; its {@code build()} validates it
   * @throws IllegalArgumentException naming the key when the URL is unset or a setting is invalid
   */
  public static JdbcStorageConfig.Builder builderFrom(Settings settings) {
    return JdbcStorageConfig.builderFrom(settings);
  }

  /**
   * See {@link JdbcStorageConfig#from(Settings)}.
   *
   * @param settings the deployment's settings
   * @return the validated config
   * @throws IllegalArgumentException naming the key and value that are missing or invalid
   */
  public static JdbcStorageConfig from(Settings settings) {
    return JdbcStorageConfig.from(settings);
  }
}
