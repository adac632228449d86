package io.relaykit.guice;

import io.relaykit.retry.Backoff;
import io.relaykit.retry.Jitter;
import io.relaykit.retry.RetryPolicy;
import java.time.Duration;
import java.util.Collections;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * The configuration of one relaykit deployment: which storage and transport backends to use, the
 * retry policy, the outbox relay's pace, and every adapter's own keys ({@code relaykit.h2.url},
 * {@code relaykit.redis.uri}, ...) for {@link #section(String)} to hand out.
 *
 * <p>Values come from {@link Properties} and from environment variables. Precedence, highest
 * first: an environment variable, then a property, then the default. A key maps to its variable
 * by upper-casing it and turning {@code .} and {@code -} into {@code _}: {@code relaykit.storage}
 * ↔ {@code RELAYKIT_STORAGE}, {@code relaykit.retry.max-attempts} ↔ {@code
 * RELAYKIT_RETRY_MAX_ATTEMPTS}. Only variables that start with {@code RELAYKIT_} are read.
 *
 * <p>Immutable and thread-safe; every value is parsed and checked when the config is built, so a
 * bad value fails at startup with an {@link IllegalArgumentException} naming the key and the
 * value, never later on the delivery path. Durations are written {@code 500ms}, {@code 30s},
 * {@code 5m}, {@code 1h}, {@code 2d} or ISO-8601 ({@code PT30S}).
 */
public final class RelayKitConfig {

  /** The built-in backend, for storage and transport alike: everything in this JVM's memory. */
  public static final String MEMORY = "memory";

  public static final String STORAGE = "relaykit.storage";
  public static final String TRANSPORT = "relaykit.transport";
  public static final String RETRY_MAX_ATTEMPTS = "relaykit.retry.max-attempts";
  public static final String RETRY_INITIAL_BACKOFF = "relaykit.retry.initial-backoff";
  public static final String RETRY_MAX_BACKOFF = "relaykit.retry.max-backoff";
  public static final String RETRY_JITTER = "relaykit.retry.jitter";
  public static final String RETRY_MAX_AGE = "relaykit.retry.max-age";
  public static final String RELAY_BATCH_SIZE = "relaykit.relay.batch-size";
  public static final String RELAY_LEASE = "relaykit.relay.lease";
  public static final String RELAY_POLL_INTERVAL = "relaykit.relay.poll-interval";
  public static final String IDEMPOTENCY_RETENTION = "relaykit.idempotency.retention";
  public static final String IDEMPOTENCY_FAST_TIER = "relaykit.idempotency.fast-tier";

  /** The value of {@value #IDEMPOTENCY_FAST_TIER} that means no fast tier (the default). */
  public static final String NONE = "none";

  /** The largest {@value #RELAY_BATCH_SIZE} an {@code OutboxRelay} accepts. */
  public static final int MAX_RELAY_BATCH_SIZE = 10_000;

  private static final String PREFIX = "relaykit.";
  private static final String ENV_PREFIX = "RELAYKIT_";
  private static final Pattern BACKEND_NAME = Pattern.compile("[a-z][a-z0-9-]*");
  private static final Pattern KEY = Pattern.compile("relaykit(\\.[a-z0-9][a-z0-9-]*)+");
  private static final Pattern USER_INFO = Pattern.compile("(://[^/@:]*:)[^/@]*@");
  private static final Pattern SHORT_DURATION = Pattern.compile("(\\d+)(ms|s|m|h|d)");

  /** Entries keyed by {@link #environmentName}, so a key and its variable are one entry. */
  private final Map<String, Entry> entries;
  /** The same entries by their display key, sorted. */
  private final Map<String, String> values;
  private final String storage;
  private final String transport;
  private final int retryMaxAttempts;
  private final Duration retryInitialBackoff;
  private final Duration retryMaxBackoff;
  private final Jitter retryJitter;
  private final Duration retryMaxAge;
  private final int relayBatchSize;
  private final Duration relayLease;
  private final Duration relayPollInterval;
  private final Duration idempotencyRetention;
  private final String idempotencyFastTier;

  private RelayKitConfig(Map<String, Entry> entries) {
    this.entries = Map.copyOf(entries);
    Map<String, String> byKey = new TreeMap<>();
    entries.values().forEach(e -> byKey.put(e.key(), e.value()));
    this.values = Collections.unmodifiableMap(byKey);
    this.storage = backendName(STORAGE);
    this.transport = backendName(TRANSPORT);
    this.retryMaxAttempts = getInt(RETRY_MAX_ATTEMPTS, 5);
    this.retryInitialBackoff = getDuration(RETRY_INITIAL_BACKOFF, Duration.ofSeconds(1));
    this.retryMaxBackoff = getDuration(RETRY_MAX_BACKOFF, Duration.ofMinutes(5));
    this.retryJitter = parseJitter();
    String maxAge = raw(RETRY_MAX_AGE);
    this.retryMaxAge = maxAge == null ? null : parseDuration(RETRY_MAX_AGE, maxAge);
    this.relayBatchSize = getInt(RELAY_BATCH_SIZE, 100);
    if (relayBatchSize > MAX_RELAY_BATCH_SIZE) {
      throw invalid(RELAY_BATCH_SIZE, raw(RELAY_BATCH_SIZE),
          "a whole number in 1.." + MAX_RELAY_BATCH_SIZE);
    }
    this.relayLease = getDuration(RELAY_LEASE, Duration.ofSeconds(30));
    this.relayPollInterval = getDuration(RELAY_POLL_INTERVAL, Duration.ofMillis(500));
    this.idempotencyRetention = getDuration(IDEMPOTENCY_RETENTION, Duration.ofDays(1));
    this.idempotencyFastTier = raw(IDEMPOTENCY_FAST_TIER) == null ? NONE
        : backendName(IDEMPOTENCY_FAST_TIER);
    if (retryMaxBackoff.compareTo(retryInitialBackoff) < 0) {
      throw new IllegalArgumentException(RETRY_MAX_BACKOFF + " must be >= " + RETRY_INITIAL_BACKOFF
          + " (" + retryInitialBackoff + "), was '" + raw(RETRY_MAX_BACKOFF) + "'");
    }
  }

  /** All defaults: in-memory storage and transport. */
  public static RelayKitConfig defaults() {
    return builder().build();
  }

  public static Builder builder() {
    return new Builder();
  }

  /**
   * Reads the {@code relaykit.*} entries of {@code properties} and the {@code RELAYKIT_*} entries
   * of {@code environment}; a variable overrides the property of the same key.
   *
   * @throws IllegalArgumentException naming the key and value of the first invalid entry
   */
  public static RelayKitConfig from(Properties properties, Map<String, String> environment) {
    return builder().properties(properties).environment(environment).build();
  }

  /** Reads {@code properties} only. */
  public static RelayKitConfig from(Properties properties) {
    return builder().properties(properties).build();
  }

  /** Reads the JVM's system properties and this process's environment (which wins). */
  public static RelayKitConfig fromSystem() {
    return from(System.getProperties(), System.getenv());
  }

  /**
   * The environment variable that overrides {@code key}: {@code relaykit.a-b.c} → {@code
   * RELAYKIT_A_B_C}.
   */
  public static String environmentName(String key) {
    return key.toUpperCase(Locale.ROOT).replace('.', '_').replace('-', '_');
  }

  /** The storage backend's name ({@value #STORAGE}); default {@value #MEMORY}. */
  public String storage() {
    return storage;
  }

  /** The transport backend's name ({@value #TRANSPORT}); default {@value #MEMORY}. */
  public String transport() {
    return transport;
  }

  /** Total attempts including the first ({@value #RETRY_MAX_ATTEMPTS}); default 5. */
  public int retryMaxAttempts() {
    return retryMaxAttempts;
  }

  /** The wait after the first failure ({@value #RETRY_INITIAL_BACKOFF}); default 1 s. */
  public Duration retryInitialBackoff() {
    return retryInitialBackoff;
  }

  /** The cap on a wait, applied before jitter ({@value #RETRY_MAX_BACKOFF}); default 5 min. */
  public Duration retryMaxBackoff() {
    return retryMaxBackoff;
  }

  /** How waits are spread ({@value #RETRY_JITTER}: none, full, equal); default full. */
  public Jitter retryJitter() {
    return retryJitter;
  }

  /** Give up this long after the first failure ({@value #RETRY_MAX_AGE}); default none. */
  public Optional<Duration> retryMaxAge() {
    return Optional.ofNullable(retryMaxAge);
  }

  /**
   * Outbox rows one relay claims at a time ({@value #RELAY_BATCH_SIZE}), at most {@value
   * #MAX_RELAY_BATCH_SIZE}. When set, the relay claims exactly this many (a fixed size); when not
   * set (see {@link #relayBatchSizeFixed()}) the relay's adaptive batch size is used, which starts
   * at this default of 100 and moves between {@code OutboxRelay.DEFAULT_MIN_BATCH} and {@code
   * OutboxRelay.DEFAULT_MAX_BATCH}.
   */
  public int relayBatchSize() {
    return relayBatchSize;
  }

  /** Whether {@value #RELAY_BATCH_SIZE} was set, fixing the relay's batch size. */
  public boolean relayBatchSizeFixed() {
    return raw(RELAY_BATCH_SIZE) != null;
  }

  /** How long a relay owns the rows it claimed ({@value #RELAY_LEASE}); default 30 s. */
  public Duration relayLease() {
    return relayLease;
  }

  /** How often an idle relay looks for new rows ({@value #RELAY_POLL_INTERVAL}); default 500 ms. */
  public Duration relayPollInterval() {
    return relayPollInterval;
  }

  /**
   * How long a completed idempotency key stays DONE, so a redelivery within it is skipped ({@value
   * #IDEMPOTENCY_RETENTION}); default 1 day. Size it above the longest time a duplicate can arrive.
   */
  public Duration idempotencyRetention() {
    return idempotencyRetention;
  }

  /**
   * The storage backend whose idempotency store answers repeats in front of the storage backend's
   * own ({@value #IDEMPOTENCY_FAST_TIER}), e.g. {@code redis} over {@code relaykit.storage=h2}:
   * Redis as the fast path, the database's unique key as the final guard. Empty for {@value
   * #NONE}, the default.
   */
  public Optional<String> idempotencyFastTier() {
    return NONE.equals(idempotencyFastTier) ? Optional.empty() : Optional.of(idempotencyFastTier);
  }

  /**
   * The retry policy these settings describe: exponential backoff from {@link
   * #retryInitialBackoff()} capped at {@link #retryMaxBackoff()} with {@link #retryJitter()}, the
   * default failure classifier.
   */
  public RetryPolicy retryPolicy() {
    RetryPolicy.Builder b = RetryPolicy.builder()
        .maxAttempts(retryMaxAttempts)
        .backoff(Backoff.exponential(retryInitialBackoff).withMax(retryMaxBackoff)
            .withJitter(retryJitter));
    if (retryMaxAge != null) {
      b.maxAge(retryMaxAge);
    }
    return b.build();
  }

  /** The raw value of {@code key}, environment already applied; empty when unset. */
  public Optional<String> get(String key) {
    return Optional.ofNullable(raw(key));
  }

  /**
   * The value of {@code key}.
   *
   * @throws IllegalArgumentException naming the key (and its environment variable) when unset
   */
  public String require(String key) {
    String value = raw(key);
    if (value == null) {
      throw new IllegalArgumentException(
          key + " is required (property " + key + " or environment " + environmentName(key) + ")");
    }
    return value;
  }

  /** {@code key} as an int, or {@code defaultValue} when unset; must be >= 1. */
  public int getInt(String key, int defaultValue) {
    String value = raw(key);
    if (value == null) {
      return defaultValue;
    }
    try {
      int parsed = Integer.parseInt(value.trim());
      if (parsed < 1) {
        throw invalid(key, value, "a whole number >= 1");
      }
      return parsed;
    } catch (NumberFormatException e) {
      throw invalid(key, value, "a whole number >= 1");
    }
  }

  /** {@code key} as a positive duration, or {@code defaultValue} when unset. */
  public Duration getDuration(String key, Duration defaultValue) {
    String value = raw(key);
    return value == null ? defaultValue : parseDuration(key, value);
  }

  /** {@code key} as {@code true}/{@code false}, or {@code defaultValue} when unset. */
  public boolean getBoolean(String key, boolean defaultValue) {
    String value = raw(key);
    if (value == null) {
      return defaultValue;
    }
    switch (value.trim().toLowerCase(Locale.ROOT)) {
      case "true":
        return true;
      case "false":
        return false;
      default:
        throw invalid(key, value, "true or false");
    }
  }

  /**
   * The entries under {@code prefix}, with the prefix and its dot removed: {@code
   * section("relaykit.h2")} maps {@code relaykit.h2.url} to {@code url}. Adapters read their own
   * keys this way. An entry set only by environment variable appears under its variable's name
   * lower-cased with {@code _} read as {@code .} ({@code RELAYKIT_H2_URL} → {@code url}), because
   * a variable name cannot tell a dot from a dash; {@link #get(String)} has no such ambiguity.
   */
  public Map<String, String> section(String prefix) {
    Objects.requireNonNull(prefix, "prefix");
    String p = prefix.endsWith(".") ? prefix : prefix + ".";
    Map<String, String> out = new TreeMap<>();
    values.forEach((k, v) -> {
      if (k.startsWith(p) && k.length() > p.length()) {
        out.put(k.substring(p.length()), v);
      }
    });
    return Collections.unmodifiableMap(out);
  }

  /** Every {@code relaykit.*} entry, sorted by key. */
  public Map<String, String> asMap() {
    return values;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof RelayKitConfig && ((RelayKitConfig) o).entries.equals(entries);
  }

  @Override
  public int hashCode() {
    return entries.hashCode();
  }

  /** Lists every entry; values of keys that look secret are masked. */
  @Override
  public String toString() {
    StringBuilder sb = new StringBuilder("RelayKitConfig{");
    String sep = "";
    for (Map.Entry<String, String> e : values.entrySet()) {
      sb.append(sep).append(e.getKey()).append('=').append(
          looksSecret(e.getKey()) ? "****" : maskUserInfo(e.getValue()));
      sep = ", ";
    }
    return sb.append('}').toString();
  }

  private static boolean looksSecret(String key) {
    return key.contains("password") || key.contains("secret") || key.contains("token")
        || key.contains("credential");
  }

  /** Hides the password in {@code scheme://user:password@host} values. */
  private static String maskUserInfo(String value) {
    return USER_INFO.matcher(value).replaceAll("$1****@");
  }

  private String backendName(String key) {
    String given = raw(key);
    String value = given == null ? MEMORY : given.trim().toLowerCase(Locale.ROOT);
    if (!BACKEND_NAME.matcher(value).matches()) {
      throw invalid(key, given, "a backend name such as memory, h2, redis, kafka");
    }
    return value;
  }

  private String raw(String key) {
    Objects.requireNonNull(key, "key");
    Entry e = entries.get(environmentName(key));
    return e == null ? null : e.value();
  }

  private Jitter parseJitter() {
    String value = raw(RETRY_JITTER);
    if (value == null) {
      return Jitter.FULL;
    }
    try {
      return Jitter.valueOf(value.trim().toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw invalid(RETRY_JITTER, value, "one of none, full, equal");
    }
  }

  static Duration parseDuration(String key, String value) {
    String v = value.trim();
    Duration d;
    var m = SHORT_DURATION.matcher(v);
    try {
      if (m.matches()) {
        long amount = Long.parseLong(m.group(1));
        switch (m.group(2)) {
          case "ms":
            d = Duration.ofMillis(amount);
            break;
          case "s":
            d = Duration.ofSeconds(amount);
            break;
          case "m":
            d = Duration.ofMinutes(amount);
            break;
          case "h":
            d = Duration.ofHours(amount);
            break;
          default:
            d = Duration.ofDays(amount);
            break;
        }
      } else {
        d = Duration.parse(v);
      }
    } catch (RuntimeException e) {
      // NumberFormatException, DateTimeParseException and ArithmeticException (overflow) alike.
      throw invalid(key, value, "a positive duration such as 500ms, 30s, 5m, 1h, 2d or PT30S");
    }
    if (d.isZero() || d.isNegative()) {
      throw invalid(key, value, "a positive duration such as 500ms, 30s, 5m, 1h, 2d or PT30S");
    }
    return d;
  }

  /** One setting: the key it is shown under and its raw value. */
  private record Entry(String key, String value) {}

  private static IllegalArgumentException invalid(String key, String value, String expected) {
    return new IllegalArgumentException(
        key + " must be " + expected + ", was '" + value + "'");
  }

  /**
   * Collects values, then {@link #build()} parses and checks all of them. Later calls override
   * earlier ones, so {@code properties(p).environment(env)} gives the documented precedence.
   */
  public static final class Builder {
    private final Map<String, Entry> entries = new TreeMap<>();

    private Builder() {}

    /**
     * Takes every {@code relaykit.*} entry of {@code properties} (defaults included).
     *
     * @throws IllegalArgumentException if two keys differ only in {@code .} versus {@code -}, as
     *     both would be the same environment variable
     */
    public Builder properties(Properties properties) {
      Objects.requireNonNull(properties, "properties");
      Map<String, String> seen = new TreeMap<>();
      for (String name : new TreeSet<>(properties.stringPropertyNames())) {
        if (name.startsWith(PREFIX)) {
          String other = seen.put(environmentName(name), name);
          if (other != null) {
            throw new IllegalArgumentException("properties " + other + " and " + name
                + " name the same setting (" + environmentName(name) + "); keep one");
          }
          set(name, properties.getProperty(name));
        }
      }
      return this;
    }

    /**
     * Takes every {@code RELAYKIT_*} variable of {@code environment}. A variable overrides the key
     * already set whose {@linkplain #environmentName(String) environment name} it is; a variable
     * that matches no such key is added under its name lower-cased, {@code _} read as {@code .}.
     */
    public Builder environment(Map<String, String> environment) {
      Objects.requireNonNull(environment, "environment");
      Map<String, String> known = new TreeMap<>();
      for (String key : knownKeys()) {
        known.put(environmentName(key), key);
      }
      new TreeMap<>(environment).forEach((name, value) -> {
        if (!name.startsWith(ENV_PREFIX) || value == null) {
          return;
        }
        Entry existing = entries.get(name);
        String key = existing != null ? existing.key()
            : known.getOrDefault(name, name.toLowerCase(Locale.ROOT).replace('_', '.'));
        if (!KEY.matcher(key).matches()) {
          throw new IllegalArgumentException("environment variable " + name
              + " does not name a relaykit setting (expected RELAYKIT_SECTION_NAME)");
        }
        entries.put(name, new Entry(key, value));
      });
      return this;
    }

    /**
     * Sets {@code key} to {@code value}; a null value unsets it.
     *
     * @throws IllegalArgumentException if {@code key} is not a {@code relaykit.} key made of
     *     lower-case letters, digits, dots and dashes
     */
    public Builder set(String key, String value) {
      if (key == null || !KEY.matcher(key).matches()) {
        throw new IllegalArgumentException("key must look like relaykit.section.name (lower case,"
            + " digits, dots, dashes), was '" + key + "'");
      }
      if (value == null) {
        entries.remove(environmentName(key));
      } else {
        entries.put(environmentName(key), new Entry(key, value));
      }
      return this;
    }

    public Builder storage(String name) {
      return set(STORAGE, name);
    }

    public Builder transport(String name) {
      return set(TRANSPORT, name);
    }

    public Builder retryMaxAttempts(int maxAttempts) {
      return set(RETRY_MAX_ATTEMPTS, Integer.toString(maxAttempts));
    }

    public Builder retryInitialBackoff(Duration initial) {
      return set(RETRY_INITIAL_BACKOFF, initial == null ? null : initial.toString());
    }

    public Builder retryMaxBackoff(Duration max) {
      return set(RETRY_MAX_BACKOFF, max == null ? null : max.toString());
    }

    public Builder retryJitter(Jitter jitter) {
      return set(RETRY_JITTER, jitter == null ? null : jitter.name().toLowerCase(Locale.ROOT));
    }

    public Builder retryMaxAge(Duration maxAge) {
      return set(RETRY_MAX_AGE, maxAge == null ? null : maxAge.toString());
    }

    public Builder relayBatchSize(int batchSize) {
      return set(RELAY_BATCH_SIZE, Integer.toString(batchSize));
    }

    public Builder relayLease(Duration lease) {
      return set(RELAY_LEASE, lease == null ? null : lease.toString());
    }

    public Builder relayPollInterval(Duration pollInterval) {
      return set(RELAY_POLL_INTERVAL, pollInterval == null ? null : pollInterval.toString());
    }

    public Builder idempotencyRetention(Duration retention) {
      return set(IDEMPOTENCY_RETENTION, retention == null ? null : retention.toString());
    }

    public Builder idempotencyFastTier(String backend) {
      return set(IDEMPOTENCY_FAST_TIER, backend);
    }

    /**
     * Parses and checks every value.
     *
     * @throws IllegalArgumentException naming the key and the value of the first invalid entry
     */
    public RelayKitConfig build() {
      return new RelayKitConfig(entries);
    }

    private static String[] knownKeys() {
      return new String[] {STORAGE, TRANSPORT, RETRY_MAX_ATTEMPTS, RETRY_INITIAL_BACKOFF,
          RETRY_MAX_BACKOFF, RETRY_JITTER, RETRY_MAX_AGE, RELAY_BATCH_SIZE, RELAY_LEASE,
          RELAY_POLL_INTERVAL, IDEMPOTENCY_RETENTION, IDEMPOTENCY_FAST_TIER};
    }
  }
}
