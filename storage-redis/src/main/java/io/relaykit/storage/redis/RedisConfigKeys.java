package io.relaykit.storage.redis;

import static io.relaykit.config.ConfigKey.Type.BOOLEAN;
import static io.relaykit.config.ConfigKey.Type.DURATION;
import static io.relaykit.config.ConfigKey.Type.INTEGER;
import static io.relaykit.config.ConfigKey.Type.STRING;

import io.relaykit.config.ConfigKey;
import io.relaykit.config.ConfigKeys;
import java.util.List;

/**
 * The {@code relaykit.redis.*} keys the Redis storage reads, registered with {@link
 * java.util.ServiceLoader} so {@link io.relaykit.config.Settings} knows them; see {@link
 * RedisStorageConfig#from(io.relaykit.config.Settings)}. A password in the URI is masked wherever
 * settings are shown.
 */
public final class RedisConfigKeys implements ConfigKeys {

  /** The Redis URI. */
  public static final String URI = "relaykit.redis.uri";
  /** How long one command may take. */
  public static final String COMMAND_TIMEOUT = "relaykit.redis.command-timeout";
  /** How long connecting may take. */
  public static final String CONNECT_TIMEOUT = "relaykit.redis.connect-timeout";
  /** The longest wait between reconnect attempts. */
  public static final String RECONNECT_MAX_DELAY = "relaykit.redis.reconnect-max-delay";
  /** The prefix of every key relaykit writes. */
  public static final String KEY_PREFIX = "relaykit.redis.key-prefix";
  /** How long an idempotency claim is held. */
  public static final String LEASE = "relaykit.redis.lease";
  /** How long a DONE key is kept; default {@code relaykit.idempotency.retention}. */
  public static final String RETENTION = "relaykit.redis.retention";
  /** The largest value written. */
  public static final String MAX_VALUE_BYTES = "relaykit.redis.max-value-bytes";
  /** Whether the URI is a Redis Cluster. */
  public static final String CLUSTER = "relaykit.redis.cluster";
  /** Whether idempotency keys of the old layout are still read. */
  public static final String READ_LEGACY_IDEMPOTENCY_KEYS =
      "relaykit.redis.read-legacy-idempotency-keys";
  /** The name of the journal Guice binds. */
  public static final String JOURNAL = "relaykit.redis.journal";
  /** The name of the dead-letter store Guice binds. */
  public static final String DEAD_LETTERS = "relaykit.redis.dead-letters";

  /** For ServiceLoader. */
  public RedisConfigKeys() {}

  @Override
  public String module() {
    return "relaykit-redis";
  }

  @Override
  public List<String> namespaces() {
    return List.of("relaykit.redis");
  }

  @Override
  public List<ConfigKey> keys() {
    RedisStorageConfig d = RedisStorageConfig.builder().build();
    return List.of(
        ConfigKey.of(URI, STRING, d.uri(), "the Redis URI; a password in it is masked"),
        ConfigKey.of(COMMAND_TIMEOUT, DURATION, "1s", "how long one command may take"),
        ConfigKey.of(CONNECT_TIMEOUT, DURATION, "5s", "how long connecting may take"),
        ConfigKey.of(RECONNECT_MAX_DELAY, DURATION, "1s", "the longest wait between reconnects"),
        ConfigKey.of(KEY_PREFIX, STRING, d.keyPrefix(), "the prefix of every key written"),
        ConfigKey.of(LEASE, DURATION, "30s", "how long an idempotency claim is held"),
        ConfigKey.of(RETENTION, DURATION, "relaykit.idempotency.retention",
            "how long a DONE key is kept; keep it no longer than the durable tier's"),
        ConfigKey.of(MAX_VALUE_BYTES, INTEGER, Integer.toString(d.maxValueBytes()),
            "the largest value written"),
        ConfigKey.of(CLUSTER, BOOLEAN, "false", "whether the URI is a Redis Cluster"),
        ConfigKey.of(READ_LEGACY_IDEMPOTENCY_KEYS, BOOLEAN, "false",
            "whether idempotency keys of the old layout are still read"),
        ConfigKey.of(JOURNAL, STRING, "default", "the name of the journal Guice binds"),
        ConfigKey.of(DEAD_LETTERS, STRING, "default",
            "the name of the dead-letter store Guice binds"));
  }
}
