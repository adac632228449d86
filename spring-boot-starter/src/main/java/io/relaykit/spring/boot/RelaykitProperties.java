package io.relaykit.spring.boot;

import io.relaykit.config.Settings;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code relaykit.*} properties of a Spring application, with IDE metadata. Every value is
 * kept as the text the application gave and handed to core's {@link Settings} by {@link
 * #toSettings()}: the keys, defaults, syntax (durations as {@code 500ms}, {@code 30s}, {@code 5m})
 * and validation are core's, not duplicated here. An unset property is absent, so core's default
 * applies. A bad value fails the application context's start with core's message naming the key.
 *
 * <p>Mutable while Spring binds it; not thread-safe, read once at startup.
 */
@ConfigurationProperties(prefix = "relaykit")
public class RelaykitProperties {

  /**
   * The storage backend: {@code memory} (core's default) or {@code h2}, the JDBC backend (H2 or
   * PostgreSQL) on the application's DataSource.
   */
  private String storage;

  /** The transport backend's name; {@code memory} by default. */
  private String transport;

  private final Retry retry = new Retry();
  private final Relay relay = new Relay();
  private final Idempotency idempotency = new Idempotency();
  private final Jdbc h2 = new Jdbc();

  /** Creates empty properties (every key at core's default). */
  public RelaykitProperties() {
  }

  /**
   * The storage backend's name.
   *
   * @return the name, or null for core's default
   */
  public String getStorage() {
    return storage;
  }

  /**
   * Sets the storage backend's name.
   *
   * @param storage {@code memory} or {@code h2}
   */
  public void setStorage(String storage) {
    this.storage = storage;
  }

  /**
   * The transport backend's name.
   *
   * @return the name, or null for core's default
   */
  public String getTransport() {
    return transport;
  }

  /**
   * Sets the transport backend's name.
   *
   * @param transport the name
   */
  public void setTransport(String transport) {
    this.transport = transport;
  }

  /**
   * The {@code relaykit.retry.*} group.
   *
   * @return the group
   */
  public Retry getRetry() {
    return retry;
  }

  /**
   * The {@code relaykit.relay.*} group.
   *
   * @return the group
   */
  public Relay getRelay() {
    return relay;
  }

  /**
   * The {@code relaykit.idempotency.*} group.
   *
   * @return the group
   */
  public Idempotency getIdempotency() {
    return idempotency;
  }

  /**
   * The {@code relaykit.h2.*} group: the JDBC storage (H2 and PostgreSQL).
   *
   * @return the group
   */
  public Jdbc getH2() {
    return h2;
  }

  /**
   * The set properties under core's key names, sorted as given.
   *
   * @return key to value, only the set ones
   */
  public Map<String, String> toMap() {
    Map<String, String> m = new LinkedHashMap<>();
    put(m, "relaykit.storage", storage);
    put(m, "relaykit.transport", transport);
    put(m, "relaykit.retry.max-attempts", retry.maxAttempts);
    put(m, "relaykit.retry.initial-backoff", retry.initialBackoff);
    put(m, "relaykit.retry.max-backoff", retry.maxBackoff);
    put(m, "relaykit.retry.jitter", retry.jitter);
    put(m, "relaykit.retry.max-age", retry.maxAge);
    put(m, "relaykit.relay.batch-size", relay.batchSize);
    put(m, "relaykit.relay.lease", relay.lease);
    put(m, "relaykit.relay.poll-interval", relay.pollInterval);
    put(m, "relaykit.idempotency.retention", idempotency.retention);
    put(m, "relaykit.idempotency.fast-tier", idempotency.fastTier);
    put(m, "relaykit.h2.table-prefix", h2.tablePrefix);
    put(m, "relaykit.h2.retention", h2.retention);
    put(m, "relaykit.h2.migrate", h2.migrate);
    put(m, "relaykit.h2.outbox-max-unsent", h2.outboxMaxUnsent);
    put(m, "relaykit.h2.outbox-over-bound", h2.outboxOverBound);
    put(m, "relaykit.h2.outbox-order-scope", h2.outboxOrderScope);
    return m;
  }

  /**
   * Core's validated settings for these properties (no environment variables: Spring's own
   * relaxed binding has already applied {@code RELAYKIT_*} ones).
   *
   * @return the settings
   * @throws IllegalArgumentException naming the key and value of the first invalid property
   */
  public Settings toSettings() {
    Properties p = new Properties();
    p.putAll(toMap());
    return Settings.builder().properties(p).build();
  }

  private static void put(Map<String, String> m, String key, String value) {
    if (value != null) {
      m.put(key, value.trim());
    }
  }

  /** {@code relaykit.retry.*}: how failed deliveries are retried. */
  public static class Retry {
    /** Total attempts, the first included; core's default 5. */
    private String maxAttempts;
    /** The wait after the first failure; core's default 1s. */
    private String initialBackoff;
    /** The cap on a wait, before jitter; core's default 5m. */
    private String maxBackoff;
    /** The jitter applied to a wait; core's default. */
    private String jitter;
    /** How long a message is retried at most; unset means no age limit. */
    private String maxAge;

    /** Creates an empty group. */
    public Retry() {
    }

    /** @return total attempts, or null for core's default */
    public String getMaxAttempts() {
      return maxAttempts;
    }

    /** @param v total attempts, the first included */
    public void setMaxAttempts(String v) {
      this.maxAttempts = v;
    }

    /** @return the first wait, or null for core's default */
    public String getInitialBackoff() {
      return initialBackoff;
    }

    /** @param v the first wait, e.g. {@code 1s} */
    public void setInitialBackoff(String v) {
      this.initialBackoff = v;
    }

    /** @return the wait cap, or null for core's default */
    public String getMaxBackoff() {
      return maxBackoff;
    }

    /** @param v the wait cap, e.g. {@code 5m} */
    public void setMaxBackoff(String v) {
      this.maxBackoff = v;
    }

    /** @return the jitter, or null for core's default */
    public String getJitter() {
      return jitter;
    }

    /** @param v the jitter */
    public void setJitter(String v) {
      this.jitter = v;
    }

    /** @return the age limit, or null for none */
    public String getMaxAge() {
      return maxAge;
    }

    /** @param v the age limit, e.g. {@code 1h} */
    public void setMaxAge(String v) {
      this.maxAge = v;
    }
  }

  /** {@code relaykit.relay.*}: how the outbox relay claims and publishes. */
  public static class Relay {
    /** Rows claimed per round; core's default 100. */
    private String batchSize;
    /** How long a relay owns the rows it claimed; core's default 30s. */
    private String lease;
    /** The wait between empty rounds; core's default 500ms. */
    private String pollInterval;

    /** Creates an empty group. */
    public Relay() {
    }

    /** @return rows per round, or null for core's default */
    public String getBatchSize() {
      return batchSize;
    }

    /** @param v rows per round */
    public void setBatchSize(String v) {
      this.batchSize = v;
    }

    /** @return the lease, or null for core's default */
    public String getLease() {
      return lease;
    }

    /** @param v the lease, e.g. {@code 30s} */
    public void setLease(String v) {
      this.lease = v;
    }

    /** @return the poll interval, or null for core's default */
    public String getPollInterval() {
      return pollInterval;
    }

    /** @param v the poll interval, e.g. {@code 500ms} */
    public void setPollInterval(String v) {
      this.pollInterval = v;
    }
  }

  /** {@code relaykit.idempotency.*}: how long processed keys are remembered. */
  public static class Idempotency {
    /** How long a completed key is kept; core's default 1d. */
    private String retention;
    /** The fast tier in front of the store; core's default none. */
    private String fastTier;

    /** Creates an empty group. */
    public Idempotency() {
    }

    /** @return the retention, or null for core's default */
    public String getRetention() {
      return retention;
    }

    /** @param v the retention, e.g. {@code 1d} */
    public void setRetention(String v) {
      this.retention = v;
    }

    /** @return the fast tier, or null for core's default */
    public String getFastTier() {
      return fastTier;
    }

    /** @param v the fast tier's name */
    public void setFastTier(String v) {
      this.fastTier = v;
    }
  }

  /**
   * {@code relaykit.h2.*}: the JDBC storage on the application's DataSource. The connection keys
   * of relaykit-jdbc ({@code url}, {@code username}, {@code password}, {@code pool-size}) are not
   * offered: the starter uses Spring's DataSource ({@code spring.datasource.*}).
   */
  public static class Jdbc {
    /** The prefix of every relaykit table and index; relaykit-jdbc's default relaykit_. */
    private String tablePrefix;
    /** How long sent rows and DONE keys are kept; default relaykit.idempotency.retention. */
    private String retention;
    /** Whether to create or migrate the tables at startup; default true. */
    private String migrate;
    /** The most unsent outbox rows; unset means unbounded. */
    private String outboxMaxUnsent;
    /** What an append over outbox-max-unsent does: REFUSE (default) or ACCEPT. */
    private String outboxOverBound;
    /** The scope of per-key order: KEY (default) or KEY_PER_DESTINATION. */
    private String outboxOrderScope;

    /** Creates an empty group. */
    public Jdbc() {
    }

    /** @return the table prefix, or null for the default */
    public String getTablePrefix() {
      return tablePrefix;
    }

    /** @param v the table prefix */
    public void setTablePrefix(String v) {
      this.tablePrefix = v;
    }

    /** @return the retention, or null for the default */
    public String getRetention() {
      return retention;
    }

    /** @param v the retention */
    public void setRetention(String v) {
      this.retention = v;
    }

    /** @return whether to migrate, or null for the default */
    public String getMigrate() {
      return migrate;
    }

    /** @param v {@code true} or {@code false} */
    public void setMigrate(String v) {
      this.migrate = v;
    }

    /** @return the bound, or null for none */
    public String getOutboxMaxUnsent() {
      return outboxMaxUnsent;
    }

    /** @param v the most unsent rows */
    public void setOutboxMaxUnsent(String v) {
      this.outboxMaxUnsent = v;
    }

    /** @return the over-bound action, or null for the default */
    public String getOutboxOverBound() {
      return outboxOverBound;
    }

    /** @param v the over-bound action */
    public void setOutboxOverBound(String v) {
      this.outboxOverBound = v;
    }

    /** @return the order scope, or null for the default */
    public String getOutboxOrderScope() {
      return outboxOrderScope;
    }

    /** @param v the order scope */
    public void setOutboxOrderScope(String v) {
      this.outboxOrderScope = v;
    }
  }
}
