package io.relaykit.storage.jdbc;

import static io.relaykit.config.ConfigKey.Type.BOOLEAN;
import static io.relaykit.config.ConfigKey.Type.DURATION;
import static io.relaykit.config.ConfigKey.Type.INTEGER;
import static io.relaykit.config.ConfigKey.Type.LONG;
import static io.relaykit.config.ConfigKey.Type.STRING;

import io.relaykit.config.ConfigKey;
import io.relaykit.config.ConfigKeys;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The {@code relaykit.jdbc.*} keys the JDBC storage (H2 and PostgreSQL) reads, registered with
 * {@link java.util.ServiceLoader} so {@link io.relaykit.config.Settings} knows them; see {@link
 * JdbcStorageConfig#from(io.relaykit.config.Settings)}. Their former names {@code relaykit.h2.*}
 * are read for one more release as deprecated aliases ({@link #deprecatedKeys()}), each logging
 * one line naming the old and the new key.
 */
public final class JdbcConfigKeys implements ConfigKeys {

  /** The namespace of these keys. */
  public static final String NAMESPACE = "relaykit.jdbc";
  /** The keys' former namespace, read for one more release. */
  static final String DEPRECATED_NAMESPACE = "relaykit.h2";

  /** The JDBC URL; required. A {@code jdbc:postgresql:} URL selects PostgreSQL. */
  public static final String URL = "relaykit.jdbc.url";
  /** The database user. */
  public static final String USERNAME = "relaykit.jdbc.username";
  /** The database password; secret. */
  public static final String PASSWORD = "relaykit.jdbc.password";
  /** Connections in the pool. */
  public static final String POOL_SIZE = "relaykit.jdbc.pool-size";
  /** Prefix of every table and index. */
  public static final String TABLE_PREFIX = "relaykit.jdbc.table-prefix";
  /** How long a relay holds claimed rows; default {@code relaykit.relay.lease}. */
  public static final String LEASE = "relaykit.jdbc.lease";
  /** How long sent rows and DONE keys are kept; default {@code relaykit.idempotency.retention}. */
  public static final String RETENTION = "relaykit.jdbc.retention";
  /** The name of the report queue's journal. */
  public static final String JOURNAL_NAME = "relaykit.jdbc.journal-name";
  /** Whether opening creates or migrates the tables. */
  public static final String MIGRATE = "relaykit.jdbc.migrate";
  /** The most unsent outbox rows; unset: unbounded. */
  public static final String OUTBOX_MAX_UNSENT = "relaykit.jdbc.outbox-max-unsent";
  /** What an append over the bound does: refuse or accept. */
  public static final String OUTBOX_OVER_BOUND = "relaykit.jdbc.outbox-over-bound";
  /** What per-key order spans: key or key-per-destination. */
  public static final String OUTBOX_ORDER_SCOPE = "relaykit.jdbc.outbox-order-scope";
  /** PostgreSQL: whether appends NOTIFY and a listener wakes relays of other processes. */
  public static final String OUTBOX_NOTIFICATIONS = "relaykit.jdbc.outbox-notifications";
  /** PostgreSQL: the shortest time between two NOTIFYs of one storage's appends. */
  public static final String OUTBOX_WAKE_INTERVAL = "relaykit.jdbc.outbox-wake-interval";

  /** For ServiceLoader. */
  public JdbcConfigKeys() {}

  @Override
  public String module() {
    return "relaykit-jdbc";
  }

  @Override
  public List<String> namespaces() {
    return List.of(NAMESPACE, DEPRECATED_NAMESPACE);
  }

  /**
   * {@code relaykit.h2.<name>} for every {@code relaykit.jdbc.<name>}: the keys' former names.
   *
   * @return old key to new key
   */
  @Override
  public Map<String, String> deprecatedKeys() {
    Map<String, String> old = new TreeMap<>();
    for (ConfigKey k : keys()) {
      old.put(DEPRECATED_NAMESPACE + k.name().substring(NAMESPACE.length()), k.name());
    }
    return old;
  }

  @Override
  public List<ConfigKey> keys() {
    return List.of(
        ConfigKey.of(URL, STRING, null, "the JDBC URL, required; jdbc:postgresql: selects"
            + " PostgreSQL"),
        ConfigKey.of(USERNAME, STRING, null, "the database user"),
        ConfigKey.of(PASSWORD, STRING, null, "the database password").asSecret(),
        ConfigKey.of(POOL_SIZE, INTEGER, Integer.toString(JdbcStorageConfig.DEFAULT_POOL_SIZE),
            "connections in the pool, 1..200"),
        ConfigKey.of(TABLE_PREFIX, STRING, JdbcStorageConfig.DEFAULT_TABLE_PREFIX,
            "prefix of every table and index"),
        ConfigKey.of(LEASE, DURATION, "relaykit.relay.lease",
            "how long a relay holds claimed outbox rows"),
        ConfigKey.of(RETENTION, DURATION, "relaykit.idempotency.retention",
            "how long sent rows and DONE keys are kept"),
        ConfigKey.of(JOURNAL_NAME, STRING, "relaykit", "the report queue journal's name"),
        ConfigKey.of(MIGRATE, BOOLEAN, "true",
            "create or migrate the tables when opening; false only checks the version"),
        ConfigKey.of(OUTBOX_MAX_UNSENT, LONG, null, "the most unsent outbox rows; unset:"
            + " unbounded"),
        ConfigKey.choice(OUTBOX_OVER_BOUND, "refuse", "what an append at the bound does",
            "refuse", "accept"),
        ConfigKey.choice(OUTBOX_ORDER_SCOPE, "key", "what per-key order spans", "key",
            "key-per-destination"),
        ConfigKey.of(OUTBOX_NOTIFICATIONS, BOOLEAN, "true", "PostgreSQL: appends NOTIFY and a"
            + " listener wakes relays of other processes at once; false leaves them to their"
            + " poll"),
        ConfigKey.of(OUTBOX_WAKE_INTERVAL, DURATION, "10ms", "PostgreSQL: at most one NOTIFY per"
            + " interval per storage (the commits of notifying transactions are serialised)"));
  }
}
