package io.relaykit.storage.redis;

import io.lettuce.core.RedisURI;
import io.relaykit.config.IdempotencySettings;
import io.relaykit.config.Settings;
import io.relaykit.internal.Secrets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Immutable settings for {@link RedisStorage}: where Redis is, how long to wait for it, how keys are
 * named, and how long idempotency records live. Build with {@link #builder()}; {@code build()}
 * rejects an invalid value with an {@link IllegalArgumentException} naming the field and the value.
 *
 * <table>
 *   <caption>Settings and defaults</caption>
 *   <tr><th>field</th><th>default</th><th>meaning</th></tr>
 *   <tr><td>uri</td><td>{@code redis://127.0.0.1:6379}</td><td>Lettuce Redis URI; with cluster,
 *       one or more seed node URIs separated by commas</td></tr>
 *   <tr><td>cluster</td><td>false</td><td>connect to a Redis Cluster (Lettuce's cluster client:
 *       slot routing, redirects, topology refresh) instead of one server</td></tr>
 *   <tr><td>commandTimeout</td><td>1 s</td><td>a command not answered in time fails (and a
 *       tiered idempotency store falls back to its durable tier)</td></tr>
 *   <tr><td>connectTimeout</td><td>5 s</td><td>connect and handshake timeout</td></tr>
 *   <tr><td>reconnectMaxDelay</td><td>1 s</td><td>cap of the reconnect back-off after Redis went
 *       away</td></tr>
 *   <tr><td>keyPrefix</td><td>{@code relaykit:}</td><td>prepended to every key; no braces</td></tr>
 *   <tr><td>lease</td><td>30 s</td><td>default idempotency lease for callers that do not choose
 *       one</td></tr>
 *   <tr><td>retention</td><td>7 days</td><td>how long a DONE idempotency record is kept</td></tr>
 *   <tr><td>maxValueBytes</td><td>8 MiB</td><td>largest encoded dead letter or journal event
 *       accepted</td></tr>
 *   <tr><td>readLegacyIdempotencyKeys</td><td>false</td><td>also honour idempotency records in the
 *       key format of earlier releases (see {@link RedisIdempotencyStore}); for one retention
 *       period after an upgrade</td></tr>
 * </table>
 */
public final class RedisStorageConfig {

  /** The longest key prefix accepted. */
  public static final int MAX_KEY_PREFIX_LENGTH = 128;

  private final String uri;
  private final Duration commandTimeout;
  private final Duration connectTimeout;
  private final Duration reconnectMaxDelay;
  private final String keyPrefix;
  private final Duration lease;
  private final Duration retention;
  private final int maxValueBytes;
  private final boolean readLegacyIdempotencyKeys;
  private final boolean cluster;

  private RedisStorageConfig(Builder b) {
    this.uri = b.uri;
    this.commandTimeout = b.commandTimeout;
    this.connectTimeout = b.connectTimeout;
    this.reconnectMaxDelay = b.reconnectMaxDelay;
    this.keyPrefix = b.keyPrefix;
    this.lease = b.lease;
    this.retention = b.retention;
    this.maxValueBytes = b.maxValueBytes;
    this.readLegacyIdempotencyKeys = b.readLegacyIdempotencyKeys;
    this.cluster = b.cluster;
  }

  /** Config field names as the builder reports them, and their keys. */
  private static final Map<String, String> KEYS = Map.of(
      "uri", RedisConfigKeys.URI,
      "commandTimeout", RedisConfigKeys.COMMAND_TIMEOUT,
      "connectTimeout", RedisConfigKeys.CONNECT_TIMEOUT,
      "reconnectMaxDelay", RedisConfigKeys.RECONNECT_MAX_DELAY,
      "keyPrefix", RedisConfigKeys.KEY_PREFIX,
      "lease", RedisConfigKeys.LEASE,
      "retention", RedisConfigKeys.RETENTION,
      "maxValueBytes", RedisConfigKeys.MAX_VALUE_BYTES);

  /**
   * The config the {@code relaykit.redis.*} keys of {@code settings} describe (see {@link
   * RedisConfigKeys}); unset keys keep the builder's defaults, except the retention, which
   * defaults to {@code relaykit.idempotency.retention}.
   *
   * @param settings the deployment's settings
   * @return the validated config
   * @throws IllegalArgumentException naming the {@code relaykit.redis.*} key and its value when a
   *     setting is invalid
   */
  public static RedisStorageConfig from(Settings settings) {
    RedisStorageConfig d = builder().build();
    try {
      return builder()
          .uri(settings.getString(RedisConfigKeys.URI, d.uri()))
          .commandTimeout(settings.getDuration(RedisConfigKeys.COMMAND_TIMEOUT, d.commandTimeout()))
          .connectTimeout(settings.getDuration(RedisConfigKeys.CONNECT_TIMEOUT, d.connectTimeout()))
          .reconnectMaxDelay(settings.getDuration(RedisConfigKeys.RECONNECT_MAX_DELAY,
              d.reconnectMaxDelay()))
          .keyPrefix(settings.getString(RedisConfigKeys.KEY_PREFIX, d.keyPrefix()))
          .lease(settings.getDuration(RedisConfigKeys.LEASE, d.lease()))
          .retention(settings.getDuration(RedisConfigKeys.RETENTION,
              IdempotencySettings.from(settings).retention()))
          .maxValueBytes(settings.getInt(RedisConfigKeys.MAX_VALUE_BYTES, d.maxValueBytes()))
          .cluster(settings.getBoolean(RedisConfigKeys.CLUSTER, d.cluster()))
          .readLegacyIdempotencyKeys(settings.getBoolean(
              RedisConfigKeys.READ_LEGACY_IDEMPOTENCY_KEYS, d.readLegacyIdempotencyKeys()))
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

  /**
   * A builder holding the defaults.
   *
   * @return a new builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * A builder holding this configuration's values, to derive a changed copy.
   *
   * @return a new builder with every field of this configuration
   */
  public Builder toBuilder() {
    return new Builder()
        .uri(uri)
        .commandTimeout(commandTimeout)
        .connectTimeout(connectTimeout)
        .reconnectMaxDelay(reconnectMaxDelay)
        .keyPrefix(keyPrefix)
        .lease(lease)
        .retention(retention)
        .maxValueBytes(maxValueBytes)
        .readLegacyIdempotencyKeys(readLegacyIdempotencyKeys)
        .cluster(cluster);
  }

  /**
   * The Lettuce Redis URI, or with {@link #cluster()} the seed node URIs separated by commas.
   *
   * @return the URI as configured
   */
  public String uri() {
    return uri;
  }

  /**
   * The URIs in {@link #uri()}: one, or the cluster's seed nodes.
   *
   * @return one URI, or one per seed node
   */
  public List<String> uris() {
    return splitUris(uri);
  }

  /**
   * Whether this is a Redis Cluster configuration.
   *
   * @return true for a Redis Cluster
   */
  public boolean cluster() {
    return cluster;
  }

  /**
   * How long a command may wait for its answer before it fails.
   *
   * @return the command timeout
   */
  public Duration commandTimeout() {
    return commandTimeout;
  }

  /**
   * The connect and handshake timeout.
   *
   * @return the connect timeout
   */
  public Duration connectTimeout() {
    return connectTimeout;
  }

  /**
   * The cap of the reconnect back-off after Redis went away.
   *
   * @return the largest reconnect delay
   */
  public Duration reconnectMaxDelay() {
    return reconnectMaxDelay;
  }

  /**
   * Prepended to every key; no braces.
   *
   * @return the key prefix
   */
  public String keyPrefix() {
    return keyPrefix;
  }

  /**
   * The idempotency lease for callers that do not choose one.
   *
   * @return the default lease
   */
  public Duration lease() {
    return lease;
  }

  /**
   * How long a DONE idempotency record is kept.
   *
   * @return the retention
   */
  public Duration retention() {
    return retention;
  }

  /**
   * The largest encoded dead letter or journal event accepted.
   *
   * @return the limit in bytes
   */
  public int maxValueBytes() {
    return maxValueBytes;
  }

  /**
   * Whether idempotency records in the earlier releases' key format are honoured too.
   *
   * @return true when the earlier key format is read too
   */
  public boolean readLegacyIdempotencyKeys() {
    return readLegacyIdempotencyKeys;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) {
      return true;
    }
    if (!(o instanceof RedisStorageConfig)) {
      return false;
    }
    RedisStorageConfig c = (RedisStorageConfig) o;
    return uri.equals(c.uri) && commandTimeout.equals(c.commandTimeout)
        && connectTimeout.equals(c.connectTimeout)
        && reconnectMaxDelay.equals(c.reconnectMaxDelay) && keyPrefix.equals(c.keyPrefix)
        && lease.equals(c.lease) && retention.equals(c.retention)
        && maxValueBytes == c.maxValueBytes
        && readLegacyIdempotencyKeys == c.readLegacyIdempotencyKeys && cluster == c.cluster;
  }

  @Override
  public int hashCode() {
    return Objects.hash(uri, commandTimeout, connectTimeout, reconnectMaxDelay, keyPrefix, lease,
        retention, maxValueBytes, readLegacyIdempotencyKeys, cluster);
  }

  @Override
  public String toString() {
    // The URI may carry a password: print it redacted.
    return "RedisStorageConfig[uri=" + redactedUri() + ", commandTimeout=" + commandTimeout
        + ", connectTimeout=" + connectTimeout + ", reconnectMaxDelay=" + reconnectMaxDelay
        + ", keyPrefix=" + keyPrefix + ", lease=" + lease + ", retention=" + retention
        + ", maxValueBytes=" + maxValueBytes + ", readLegacyIdempotencyKeys="
        + readLegacyIdempotencyKeys + ", cluster=" + cluster + "]";
  }

  String redactedUri() {
    return redact(uri);
  }

  static String redact(String uri) {
    return Secrets.mask(uri);
  }

  private static List<String> splitUris(String uri) {
    List<String> out = new ArrayList<>();
    for (String part : uri.split(",", -1)) {
      out.add(part.trim());
    }
    return out;
  }

  /** Collects settings; {@link #build()} validates them. */
  public static final class Builder {
    private String uri = "redis://127.0.0.1:6379";
    private Duration commandTimeout = Duration.ofSeconds(1);
    private Duration connectTimeout = Duration.ofSeconds(5);
    private Duration reconnectMaxDelay = Duration.ofSeconds(1);
    private String keyPrefix = "relaykit:";
    private Duration lease = Duration.ofSeconds(30);
    private Duration retention = Duration.ofDays(7);
    private int maxValueBytes = 8 * 1024 * 1024;
    private boolean readLegacyIdempotencyKeys;
    private boolean cluster;

    private Builder() {}

    /**
     * A Lettuce Redis URI, such as {@code redis://127.0.0.1:6379/0}.
     *
     * @param uri the URI (with cluster, seed node URIs separated by commas)
     * @return this builder
     */
    public Builder uri(String uri) {
      this.uri = uri;
      return this;
    }

    /**
     * How long a command may wait for its answer. Default 1 s.
     *
     * @param commandTimeout a positive duration
     * @return this builder
     */
    public Builder commandTimeout(Duration commandTimeout) {
      this.commandTimeout = commandTimeout;
      return this;
    }

    /**
     * The connect and handshake timeout. Default 5 s.
     *
     * @param connectTimeout a positive duration
     * @return this builder
     */
    public Builder connectTimeout(Duration connectTimeout) {
      this.connectTimeout = connectTimeout;
      return this;
    }

    /**
     * The cap of the reconnect back-off after Redis went away. Default 1 s.
     *
     * @param reconnectMaxDelay a positive duration
     * @return this builder
     */
    public Builder reconnectMaxDelay(Duration reconnectMaxDelay) {
      this.reconnectMaxDelay = reconnectMaxDelay;
      return this;
    }

    /**
     * Prepended to every key, so several applications can share one Redis; no braces.
     *
     * @param keyPrefix the prefix; default {@code relaykit:}
     * @return this builder
     */
    public Builder keyPrefix(String keyPrefix) {
      this.keyPrefix = keyPrefix;
      return this;
    }

    /**
     * The idempotency lease for callers that do not choose one. Default 30 s.
     *
     * @param lease a positive duration of at least 1 ms
     * @return this builder
     */
    public Builder lease(Duration lease) {
      this.lease = lease;
      return this;
    }

    /**
     * How long a DONE idempotency record is kept. Default 7 days.
     *
     * @param retention a positive duration of at least 1 ms
     * @return this builder
     */
    public Builder retention(Duration retention) {
      this.retention = retention;
      return this;
    }

    /**
     * The largest encoded dead letter or journal event accepted. Default 8 MiB.
     *
     * @param maxValueBytes at least 1 KiB
     * @return this builder
     */
    public Builder maxValueBytes(int maxValueBytes) {
      this.maxValueBytes = maxValueBytes;
      return this;
    }

    /**
     * Also honour idempotency records written in the key format of releases before the exact
     * encoding ({@code <prefix>idem:{key}}), read only; off by default. Turn it on for one
     * retention period after upgrading a Redis-only deployment, then off.
     *
     * @param read whether to read the earlier key format
     * @return this builder
     */
    public Builder readLegacyIdempotencyKeys(boolean read) {
      this.readLegacyIdempotencyKeys = read;
      return this;
    }

    /**
     * Connect to a Redis Cluster: {@link #uri} then names one or more seed nodes, separated by
     * commas ({@code redis://10.0.0.1:7000,redis://10.0.0.2:7000}). Off by default.
     *
     * @param cluster whether to use the cluster client
     * @return this builder
     */
    public Builder cluster(boolean cluster) {
      this.cluster = cluster;
      return this;
    }

    /**
     * Checks the settings and builds the configuration.
     *
     * @return the validated configuration
     * @throws IllegalArgumentException naming the field and value when the URI is blank or not a
     *     Redis URI, a duration is missing, zero or negative (or, for Redis expiries, below one
     *     millisecond), the key prefix is empty, too long or holds a brace or whitespace, or
     *     {@code maxValueBytes} is below 1 KiB
     */
    public RedisStorageConfig build() {
      if (uri == null || uri.isBlank()) {
        throw new IllegalArgumentException("uri must not be blank, was '" + uri + "'");
      }
      List<String> uris = splitUris(uri);
      if (uris.size() > 1 && !cluster) {
        throw new IllegalArgumentException("uri must be one Redis URI unless cluster is set, was '"
            + redact(uri) + "'");
      }
      for (String one : uris) {
        if (one.isEmpty()) {
          throw new IllegalArgumentException("uri is not a valid Redis URI: '" + redact(uri)
              + "' (empty URI in the list)");
        }
        try {
          RedisURI.create(one);
        } catch (RuntimeException e) {
          // Lettuce's message and cause quote the URI, password included: keep neither.
          throw new IllegalArgumentException("uri is not a valid Redis URI: '" + redact(uri)
              + "' (" + e.getClass().getSimpleName() + ")");
        }
      }
      requireMillis("commandTimeout", commandTimeout);
      requireMillis("connectTimeout", connectTimeout);
      requireMillis("reconnectMaxDelay", reconnectMaxDelay);
      requireMillis("lease", lease);
      requireMillis("retention", retention);
      if (keyPrefix == null || keyPrefix.isEmpty()) {
        throw new IllegalArgumentException("keyPrefix must not be empty, was '" + keyPrefix + "'");
      }
      if (keyPrefix.length() > MAX_KEY_PREFIX_LENGTH) {
        throw new IllegalArgumentException("keyPrefix must be at most " + MAX_KEY_PREFIX_LENGTH
            + " characters, was " + keyPrefix.length());
      }
      for (int i = 0; i < keyPrefix.length(); i++) {
        char c = keyPrefix.charAt(i);
        // Braces would change which part of a key Redis Cluster hashes.
        if (c == '{' || c == '}' || Character.isWhitespace(c) || Character.isISOControl(c)) {
          throw new IllegalArgumentException("keyPrefix must not contain braces, whitespace or "
              + "control characters, was '" + keyPrefix + "'");
        }
      }
      if (maxValueBytes < 1024) {
        throw new IllegalArgumentException(
            "maxValueBytes must be >= 1024, was " + maxValueBytes);
      }
      return new RedisStorageConfig(this);
    }

    private static void requireMillis(String field, Duration d) {
      if (d == null || d.isNegative() || d.toMillis() < 1) {
        throw new IllegalArgumentException(
            field + " must be a duration of at least 1 ms, was " + d);
      }
    }
  }
}
