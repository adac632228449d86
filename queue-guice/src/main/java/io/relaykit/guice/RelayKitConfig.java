package io.relaykit.guice;

import io.relaykit.config.ConfigRegistry;
import io.relaykit.config.CoreKeys;
import io.relaykit.config.IdempotencySettings;
import io.relaykit.config.RelaySettings;
import io.relaykit.config.RetrySettings;
import io.relaykit.config.Settings;
import io.relaykit.retry.Jitter;
import io.relaykit.retry.RetryPolicy;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Properties;

/**
 * The configuration of one Guice-wired relaykit deployment: which storage and transport backends
 * to use, the retry policy, the outbox relay's pace, and every adapter's own keys ({@code
 * relaykit.h2.url}, {@code relaykit.redis.uri}, ...). A thin layer over queue-core's {@link
 * Settings}, which adapters read through {@link #settings()}: see there for sources, precedence
 * (an environment variable, then a property, then the default), relaxed names ({@code
 * relaykit.retry.max-attempts} ↔ {@code RELAYKIT_RETRY_MAX_ATTEMPTS}), the duration syntax, secret
 * masking, and why an undeclared {@code relaykit.*} key fails while an undeclared {@code
 * RELAYKIT_*} variable is only warned about.
 *
 * <p>Immutable and thread-safe; every value is parsed and checked when the config is built, so a
 * bad value fails at startup with an {@link IllegalArgumentException} naming the key and the
 * value, never later on the delivery path.
 */
public final class RelayKitConfig {

  /** The built-in backend, for storage and transport alike: everything in this JVM's memory. */
  public static final String MEMORY = "memory";

  /** The storage backend's name; see {@link CoreKeys#STORAGE}. */
  public static final String STORAGE = CoreKeys.STORAGE;
  /** The transport backend's name; see {@link CoreKeys#TRANSPORT}. */
  public static final String TRANSPORT = CoreKeys.TRANSPORT;
  /** Total attempts including the first; see {@link RetrySettings}. */
  public static final String RETRY_MAX_ATTEMPTS = CoreKeys.RETRY_MAX_ATTEMPTS;
  /** The wait after the first failure; see {@link RetrySettings}. */
  public static final String RETRY_INITIAL_BACKOFF = CoreKeys.RETRY_INITIAL_BACKOFF;
  /** The cap on a wait; see {@link RetrySettings}. */
  public static final String RETRY_MAX_BACKOFF = CoreKeys.RETRY_MAX_BACKOFF;
  /** How waits are spread; see {@link RetrySettings}. */
  public static final String RETRY_JITTER = CoreKeys.RETRY_JITTER;
  /** The age limit of a failing message; see {@link RetrySettings}. */
  public static final String RETRY_MAX_AGE = CoreKeys.RETRY_MAX_AGE;
  /** Rows a relay claims at a time; see {@link RelaySettings}. */
  public static final String RELAY_BATCH_SIZE = CoreKeys.RELAY_BATCH_SIZE;
  /** A relay's lease on its rows; see {@link RelaySettings}. */
  public static final String RELAY_LEASE = CoreKeys.RELAY_LEASE;
  /** An idle relay's poll interval; see {@link RelaySettings}. */
  public static final String RELAY_POLL_INTERVAL = CoreKeys.RELAY_POLL_INTERVAL;
  /** How long a DONE key is kept; see {@link IdempotencySettings}. */
  public static final String IDEMPOTENCY_RETENTION = CoreKeys.IDEMPOTENCY_RETENTION;
  /** The idempotency fast tier's backend; see {@link IdempotencySettings}. */
  public static final String IDEMPOTENCY_FAST_TIER = CoreKeys.IDEMPOTENCY_FAST_TIER;

  /** The value of {@value #IDEMPOTENCY_FAST_TIER} that means no fast tier (the default). */
  public static final String NONE = IdempotencySettings.NONE;

  /** The largest {@value #RELAY_BATCH_SIZE} an {@code OutboxRelay} accepts. */
  public static final int MAX_RELAY_BATCH_SIZE = RelaySettings.MAX_BATCH_SIZE;

  private final Settings settings;
  private final String storage;
  private final String transport;
  private final RetrySettings retry;
  private final RelaySettings relay;
  private final IdempotencySettings idempotency;

  private RelayKitConfig(Settings settings) {
    this.settings = settings;
    this.storage = settings.getName(STORAGE, MEMORY);
    this.transport = settings.getName(TRANSPORT, MEMORY);
    this.retry = RetrySettings.from(settings);
    this.relay = RelaySettings.from(settings);
    this.idempotency = IdempotencySettings.from(settings);
  }

  /**
   * All defaults: in-memory storage and transport.
   *
   * @return the default configuration
   */
  public static RelayKitConfig defaults() {
    return builder().build();
  }

  /**
   * A builder that checks keys against {@link ConfigRegistry#discover()} unless given another.
   *
   * @return a new builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * The configuration {@code settings} describe.
   *
   * @param settings core settings, already merged and checked
   * @return the configuration
   * @throws IllegalArgumentException naming the key and value of an invalid block setting
   */
  public static RelayKitConfig from(Settings settings) {
    return new RelayKitConfig(Objects.requireNonNull(settings, "settings"));
  }

  /**
   * Reads the {@code relaykit.*} entries of {@code properties} and the {@code RELAYKIT_*} entries
   * of {@code environment}; a variable overrides the property of the same key.
   *
   * @param properties explicit values; an undeclared {@code relaykit.*} key is rejected
   * @param environment variables; an undeclared {@code RELAYKIT_*} one is warned about, ignored
   * @return the configuration
   * @throws IllegalArgumentException naming the key and value of the first invalid entry
   */
  public static RelayKitConfig from(Properties properties, Map<String, String> environment) {
    return builder().properties(properties).environment(environment).build();
  }

  /**
   * Reads {@code properties} only.
   *
   * @param properties explicit values
   * @return the configuration
   * @throws IllegalArgumentException naming the key and value of the first invalid entry
   */
  public static RelayKitConfig from(Properties properties) {
    return builder().properties(properties).build();
  }

  /**
   * Reads the JVM's system properties and this process's environment (which wins); an undeclared
   * key in either is warned about and ignored (see {@link Settings#fromSystem()}).
   *
   * @return the configuration
   * @throws IllegalArgumentException naming the key and value of the first invalid entry
   */
  public static RelayKitConfig fromSystem() {
    return from(Settings.fromSystem());
  }

  /**
   * The environment variable that overrides {@code key}: {@code relaykit.a-b.c} → {@code
   * RELAYKIT_A_B_C}.
   *
   * @param key a key
   * @return its variable
   */
  public static String environmentName(String key) {
    return Settings.environmentName(key);
  }

  /**
   * The core settings this configuration reads, for adapters and plain-Java wiring.
   *
   * @return the settings
   */
  public Settings settings() {
    return settings;
  }

  /**
   * The storage backend's name ({@value #STORAGE}); default {@value #MEMORY}.
   *
   * @return the name, lower case
   */
  public String storage() {
    return storage;
  }

  /**
   * The transport backend's name ({@value #TRANSPORT}); default {@value #MEMORY}.
   *
   * @return the name, lower case
   */
  public String transport() {
    return transport;
  }

  /**
   * The {@code relaykit.retry.*} block.
   *
   * @return the retry settings
   */
  public RetrySettings retry() {
    return retry;
  }

  /**
   * The {@code relaykit.relay.*} block.
   *
   * @return the relay settings
   */
  public RelaySettings relay() {
    return relay;
  }

  /**
   * The {@code relaykit.idempotency.*} block.
   *
   * @return the idempotency settings
   */
  public IdempotencySettings idempotency() {
    return idempotency;
  }

  /**
   * Total attempts including the first ({@value #RETRY_MAX_ATTEMPTS}); default 5.
   *
   * @return the attempt limit
   */
  public int retryMaxAttempts() {
    return retry.maxAttempts();
  }

  /**
   * The wait after the first failure ({@value #RETRY_INITIAL_BACKOFF}); default 1 s.
   *
   * @return the initial backoff
   */
  public Duration retryInitialBackoff() {
    return retry.initialBackoff();
  }

  /**
   * The cap on a wait, applied before jitter ({@value #RETRY_MAX_BACKOFF}); default 5 min.
   *
   * @return the maximum backoff
   */
  public Duration retryMaxBackoff() {
    return retry.maxBackoff();
  }

  /**
   * How waits are spread ({@value #RETRY_JITTER}: none, full, equal); default full.
   *
   * @return the jitter
   */
  public Jitter retryJitter() {
    return retry.jitter();
  }

  /**
   * Give up this long after the first failure ({@value #RETRY_MAX_AGE}); default none.
   *
   * @return the age limit, or empty
   */
  public Optional<Duration> retryMaxAge() {
    return retry.maxAge();
  }

  /**
   * Outbox rows one relay claims at a time ({@value #RELAY_BATCH_SIZE}), at most {@value
   * #MAX_RELAY_BATCH_SIZE}. When set, the relay claims exactly this many (a fixed size); when not
   * set (see {@link #relayBatchSizeFixed()}) the relay's adaptive batch size is used, which starts
   * at this default of 100 and moves between {@code OutboxRelay.DEFAULT_MIN_BATCH} and {@code
   * OutboxRelay.DEFAULT_MAX_BATCH}.
   *
   * @return the batch size
   */
  public int relayBatchSize() {
    return relay.batchSize();
  }

  /**
   * Whether {@value #RELAY_BATCH_SIZE} was set, fixing the relay's batch size.
   *
   * @return true when fixed
   */
  public boolean relayBatchSizeFixed() {
    return relay.fixedBatchSize();
  }

  /**
   * How long a relay owns the rows it claimed ({@value #RELAY_LEASE}); default 30 s.
   *
   * @return the lease
   */
  public Duration relayLease() {
    return relay.lease();
  }

  /**
   * How often an idle relay looks for new rows ({@value #RELAY_POLL_INTERVAL}); default 500 ms.
   *
   * @return the poll interval
   */
  public Duration relayPollInterval() {
    return relay.pollInterval();
  }

  /**
   * How long a completed idempotency key stays DONE, so a redelivery within it is skipped ({@value
   * #IDEMPOTENCY_RETENTION}); default 1 day. Size it above the longest time a duplicate can arrive.
   *
   * @return the retention
   */
  public Duration idempotencyRetention() {
    return idempotency.retention();
  }

  /**
   * The storage backend whose idempotency store answers repeats in front of the storage backend's
   * own ({@value #IDEMPOTENCY_FAST_TIER}), e.g. {@code redis} over {@code relaykit.storage=jdbc}:
   * Redis as the fast path, the database's unique key as the final guard. Empty for {@value
   * #NONE}, the default.
   *
   * @return the fast tier's backend name, or empty
   */
  public Optional<String> idempotencyFastTier() {
    return idempotency.fastTier();
  }

  /**
   * The retry policy these settings describe: exponential backoff from {@link
   * #retryInitialBackoff()} capped at {@link #retryMaxBackoff()} with {@link #retryJitter()}, the
   * default failure classifier.
   *
   * @return a new policy
   */
  public RetryPolicy retryPolicy() {
    return retry.toPolicy();
  }

  /**
   * The raw value of {@code key}, environment already applied; see {@link Settings#get}.
   *
   * @param key a full key
   * @return the value, or empty when unset
   */
  public Optional<String> get(String key) {
    return settings.get(key);
  }

  /**
   * The value of {@code key}; see {@link Settings#require}.
   *
   * @param key a full key
   * @return the value
   * @throws IllegalArgumentException naming the key (and its environment variable) when unset
   */
  public String require(String key) {
    return settings.require(key);
  }

  /**
   * {@code key} as a whole number {@code >= 1}; see {@link Settings#getInt}.
   *
   * @param key a full key
   * @param defaultValue returned when unset
   * @return the value or the default
   * @throws IllegalArgumentException naming the key and value when it is not such a number
   */
  public int getInt(String key, int defaultValue) {
    return settings.getInt(key, defaultValue);
  }

  /**
   * {@code key} as a positive duration; see {@link Settings#getDuration}.
   *
   * @param key a full key
   * @param defaultValue returned when unset
   * @return the value or the default
   * @throws IllegalArgumentException naming the key and value when it is not a valid duration
   */
  public Duration getDuration(String key, Duration defaultValue) {
    return settings.getDuration(key, defaultValue);
  }

  /**
   * {@code key} as {@code true}/{@code false}; see {@link Settings#getBoolean}.
   *
   * @param key a full key
   * @param defaultValue returned when unset
   * @return the value or the default
   * @throws IllegalArgumentException naming the key and value when it is neither
   */
  public boolean getBoolean(String key, boolean defaultValue) {
    return settings.getBoolean(key, defaultValue);
  }

  /**
   * The entries under {@code prefix}, with the prefix and its dot removed: {@code
   * section("relaykit.jdbc")} maps {@code relaykit.jdbc.url} to {@code url}.
   *
   * @param prefix a key prefix, with or without the trailing dot
   * @return the entries, sorted; unmodifiable
   */
  public Map<String, String> section(String prefix) {
    return settings.section(prefix);
  }

  /**
   * Every {@code relaykit.*} entry, sorted by key; secrets in clear.
   *
   * @return the entries; unmodifiable
   */
  public Map<String, String> asMap() {
    return settings.asMap();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof RelayKitConfig c && c.settings.equals(settings);
  }

  @Override
  public int hashCode() {
    return settings.hashCode();
  }

  /** Lists every entry; values of keys that look secret are masked. */
  @Override
  public String toString() {
    return "RelayKitConfig" + settings.toString().substring("Settings".length());
  }

  /**
   * Collects values, then {@link #build()} parses and checks all of them. Later calls override
   * earlier ones, so {@code properties(p).environment(env)} gives the documented precedence.
   */
  public static final class Builder {
    private final Settings.Builder settings = Settings.builder();

    private Builder() {}

    /**
     * Checks keys against {@code registry} instead of {@link ConfigRegistry#discover()}.
     *
     * @param registry the declared keys
     * @return this builder
     */
    public Builder registry(ConfigRegistry registry) {
      settings.registry(registry);
      return this;
    }

    /**
     * Takes every {@code relaykit.*} entry of {@code properties} (defaults included).
     *
     * @param properties explicit values
     * @return this builder
     * @throws IllegalArgumentException if two keys differ only in {@code .} versus {@code -}, as
     *     both would be the same environment variable
     */
    public Builder properties(Properties properties) {
      settings.properties(properties);
      return this;
    }

    /**
     * Takes every {@code RELAYKIT_*} variable of {@code environment}; it overrides the value
     * already set for its key. A variable that names no declared setting is warned about and
     * ignored (see {@link Settings.Builder#environment}).
     *
     * @param environment variables
     * @return this builder
     */
    public Builder environment(Map<String, String> environment) {
      settings.environment(environment);
      return this;
    }

    /**
     * Sets {@code key} to {@code value}; a null value unsets it.
     *
     * @param key a {@code relaykit.} key
     * @param value its value, or null
     * @return this builder
     * @throws IllegalArgumentException if {@code key} is not a {@code relaykit.} key made of
     *     lower-case letters, digits, dots and dashes
     */
    public Builder set(String key, String value) {
      settings.set(key, value);
      return this;
    }

    /**
     * Sets {@value RelayKitConfig#STORAGE}.
     *
     * @param name a backend name, or null to unset
     * @return this builder
     */
    public Builder storage(String name) {
      return set(STORAGE, name);
    }

    /**
     * Sets {@value RelayKitConfig#TRANSPORT}.
     *
     * @param name a backend name, or null to unset
     * @return this builder
     */
    public Builder transport(String name) {
      return set(TRANSPORT, name);
    }

    /**
     * Sets {@value RelayKitConfig#RETRY_MAX_ATTEMPTS}; checked by {@link #build()}.
     *
     * @param maxAttempts total attempts
     * @return this builder
     */
    public Builder retryMaxAttempts(int maxAttempts) {
      return set(RETRY_MAX_ATTEMPTS, Integer.toString(maxAttempts));
    }

    /**
     * Sets {@value RelayKitConfig#RETRY_INITIAL_BACKOFF}; checked by {@link #build()}.
     *
     * @param initial the wait, or null to unset
     * @return this builder
     */
    public Builder retryInitialBackoff(Duration initial) {
      return set(RETRY_INITIAL_BACKOFF, text(initial));
    }

    /**
     * Sets {@value RelayKitConfig#RETRY_MAX_BACKOFF}; checked by {@link #build()}.
     *
     * @param max the cap, or null to unset
     * @return this builder
     */
    public Builder retryMaxBackoff(Duration max) {
      return set(RETRY_MAX_BACKOFF, text(max));
    }

    /**
     * Sets {@value RelayKitConfig#RETRY_JITTER}.
     *
     * @param jitter the jitter, or null to unset
     * @return this builder
     */
    public Builder retryJitter(Jitter jitter) {
      return set(RETRY_JITTER, jitter == null ? null : jitter.name().toLowerCase(Locale.ROOT));
    }

    /**
     * Sets {@value RelayKitConfig#RETRY_MAX_AGE}; checked by {@link #build()}.
     *
     * @param maxAge the age limit, or null to unset
     * @return this builder
     */
    public Builder retryMaxAge(Duration maxAge) {
      return set(RETRY_MAX_AGE, text(maxAge));
    }

    /**
     * Sets {@value RelayKitConfig#RELAY_BATCH_SIZE}, fixing the batch size; checked by {@link
     * #build()}.
     *
     * @param batchSize rows per claim
     * @return this builder
     */
    public Builder relayBatchSize(int batchSize) {
      return set(RELAY_BATCH_SIZE, Integer.toString(batchSize));
    }

    /**
     * Sets {@value RelayKitConfig#RELAY_LEASE}; checked by {@link #build()}.
     *
     * @param lease the lease, or null to unset
     * @return this builder
     */
    public Builder relayLease(Duration lease) {
      return set(RELAY_LEASE, text(lease));
    }

    /**
     * Sets {@value RelayKitConfig#RELAY_POLL_INTERVAL}; checked by {@link #build()}.
     *
     * @param pollInterval the interval, or null to unset
     * @return this builder
     */
    public Builder relayPollInterval(Duration pollInterval) {
      return set(RELAY_POLL_INTERVAL, text(pollInterval));
    }

    /**
     * Sets {@value RelayKitConfig#IDEMPOTENCY_RETENTION}; checked by {@link #build()}.
     *
     * @param retention the retention, or null to unset
     * @return this builder
     */
    public Builder idempotencyRetention(Duration retention) {
      return set(IDEMPOTENCY_RETENTION, text(retention));
    }

    /**
     * Sets {@value RelayKitConfig#IDEMPOTENCY_FAST_TIER}.
     *
     * @param backend a storage backend's name, {@value RelayKitConfig#NONE}, or null to unset
     * @return this builder
     */
    public Builder idempotencyFastTier(String backend) {
      return set(IDEMPOTENCY_FAST_TIER, backend);
    }

    /**
     * Parses and checks every value.
     *
     * @return the configuration
     * @throws IllegalArgumentException naming the key and the value of the first invalid entry,
     *     or an undeclared key with the nearest declared one
     */
    public RelayKitConfig build() {
      return new RelayKitConfig(settings.build());
    }

    /** ISO-8601, so a zero or negative duration still reaches build() and its message. */
    private static String text(Duration d) {
      return d == null ? null : d.toString();
    }
  }
}
