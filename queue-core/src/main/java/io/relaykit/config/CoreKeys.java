package io.relaykit.config;

import static io.relaykit.config.ConfigKey.Type.DURATION;
import static io.relaykit.config.ConfigKey.Type.INTEGER;
import static io.relaykit.config.ConfigKey.Type.NAME;

import java.util.List;

/**
 * queue-core's own settings: the backend choice, and the retry, relay and idempotency blocks
 * ({@link RetrySettings}, {@link RelaySettings}, {@link IdempotencySettings}). Every {@link
 * ConfigRegistry} includes them; they need no service registration.
 */
public final class CoreKeys implements ConfigKeys {

  /**
   * The storage backend's name: {@code memory} (the default), {@code jdbc} (aliases {@code h2},
   * {@code postgres}), {@code redis}.
   */
  public static final String STORAGE = "relaykit.storage";
  /** The transport backend's name: {@code memory} (the default), {@code kafka}, ... */
  public static final String TRANSPORT = "relaykit.transport";
  /** Total attempts including the first. */
  public static final String RETRY_MAX_ATTEMPTS = "relaykit.retry.max-attempts";
  /** The wait after the first failure. */
  public static final String RETRY_INITIAL_BACKOFF = "relaykit.retry.initial-backoff";
  /** The cap on a wait, applied before jitter. */
  public static final String RETRY_MAX_BACKOFF = "relaykit.retry.max-backoff";
  /** How waits are spread: none, full, equal. */
  public static final String RETRY_JITTER = "relaykit.retry.jitter";
  /** Give up this long after the first failure. */
  public static final String RETRY_MAX_AGE = "relaykit.retry.max-age";
  /** Outbox rows one relay claims at a time. */
  public static final String RELAY_BATCH_SIZE = "relaykit.relay.batch-size";
  /** How long a relay owns the rows it claimed. */
  public static final String RELAY_LEASE = "relaykit.relay.lease";
  /** How often an idle relay looks for new rows. */
  public static final String RELAY_POLL_INTERVAL = "relaykit.relay.poll-interval";
  /** How long a completed idempotency key stays DONE. */
  public static final String IDEMPOTENCY_RETENTION = "relaykit.idempotency.retention";
  /** The backend whose idempotency store answers repeats first, or {@code none}. */
  public static final String IDEMPOTENCY_FAST_TIER = "relaykit.idempotency.fast-tier";

  /** Creates the provider; it holds no state. */
  public CoreKeys() {}

  @Override
  public String module() {
    return "relaykit-core";
  }

  @Override
  public List<String> namespaces() {
    return List.of(STORAGE, TRANSPORT, "relaykit.retry", "relaykit.relay",
        "relaykit.idempotency");
  }

  @Override
  public List<ConfigKey> keys() {
    return List.of(
        ConfigKey.of(STORAGE, NAME, "memory", "the storage backend's name"),
        ConfigKey.of(TRANSPORT, NAME, "memory", "the transport backend's name"),
        ConfigKey.of(RETRY_MAX_ATTEMPTS, INTEGER, "5", "total attempts, the first included"),
        ConfigKey.of(RETRY_INITIAL_BACKOFF, DURATION, "1s", "the wait after the first failure"),
        ConfigKey.of(RETRY_MAX_BACKOFF, DURATION, "5m", "the cap on a wait, before jitter"),
        ConfigKey.choice(RETRY_JITTER, "full", "how waits are spread", "none", "full", "equal"),
        ConfigKey.of(RETRY_MAX_AGE, DURATION, null,
            "give up this long after the first failure; unset: no age limit"),
        ConfigKey.of(RELAY_BATCH_SIZE, INTEGER, "100",
            "rows one relay claims at a time; set: fixed, unset: adaptive from 100"),
        ConfigKey.of(RELAY_LEASE, DURATION, "30s", "how long a relay owns the rows it claimed"),
        ConfigKey.of(RELAY_POLL_INTERVAL, DURATION, "500ms",
            "how often an idle relay looks for new rows"),
        ConfigKey.of(IDEMPOTENCY_RETENTION, DURATION, "1d",
            "how long a completed idempotency key stays DONE"),
        ConfigKey.of(IDEMPOTENCY_FAST_TIER, NAME, "none",
            "the storage backend whose idempotency store answers repeats first"));
  }
}
