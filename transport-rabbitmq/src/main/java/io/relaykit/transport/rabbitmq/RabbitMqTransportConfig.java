package io.relaykit.transport.rabbitmq;

import io.relaykit.config.Settings;
import io.relaykit.internal.Secrets;
import java.net.URI;
import java.net.URISyntaxException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * Everything the RabbitMQ transport needs to know: where the broker is, how far the publisher may
 * run ahead of its confirms, how long it waits for them, the retry delay levels and how queues are
 * named. Immutable; {@link Builder#build()} validates every field and names the one that is wrong.
 *
 * <p>Defaults (pinned by a test): URI from {@code RELAYKIT_RABBITMQ_URI} or {@code
 * amqp://guest:guest@127.0.0.1:5672} (vhost /); connection name {@code relaykit}; prefetch 0 (use the
 * subscription's {@code maxInFlight}); confirm window 1024; confirm timeout 30 s; close timeout
 * 30 s; maximum message 16 MiB; delay levels 1 s, 10 s, 1 min, 10 min, 1 h; recovery interval 1 s;
 * no name prefix.
 */
public final class RabbitMqTransportConfig {

  /** Environment variable that overrides the default broker URI. */
  public static final String URI_ENV = "RELAYKIT_RABBITMQ_URI";
  /** The broker URI used when neither the builder nor {@value #URI_ENV} sets one. */
  public static final String DEFAULT_URI = "amqp://guest:guest@127.0.0.1:5672";
  /** The heartbeat requested unless configured otherwise, in seconds. */
  public static final int DEFAULT_HEARTBEAT_SECONDS = 10;
  /** RabbitMQ refuses messages above 512 MiB whatever its configuration says. */
  public static final int BROKER_HARD_LIMIT_BYTES = 512 * 1024 * 1024;
  /** Queue and exchange names are at most 255 bytes in AMQP 0-9-1. */
  static final int MAX_NAME_LENGTH = 255;

  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9._:-]*");

  private final String uri;
  private final String connectionName;
  private final int prefetch;
  private final int confirmWindow;
  private final Duration confirmTimeout;
  private final Duration closeTimeout;
  private final int maxMessageBytes;
  private final List<Duration> delayLevels;
  private final Duration recoveryInterval;
  private final Duration heartbeat;
  private final Duration metricsInterval;
  private final String namePrefix;

  private RabbitMqTransportConfig(Builder b) {
    this.uri = b.uri;
    this.connectionName = b.connectionName;
    this.prefetch = b.prefetch;
    this.confirmWindow = b.confirmWindow;
    this.confirmTimeout = b.confirmTimeout;
    this.closeTimeout = b.closeTimeout;
    this.maxMessageBytes = b.maxMessageBytes;
    this.delayLevels = List.copyOf(b.delayLevels);
    this.recoveryInterval = b.recoveryInterval;
    this.heartbeat = b.resolvedHeartbeat;
    this.metricsInterval = b.metricsInterval;
    this.namePrefix = b.namePrefix;
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
   * A builder holding what the {@code relaykit.rabbitmq.*} keys of {@code settings} say (see
   * {@link RabbitMqConfigKeys}); unset keys keep the builder's defaults.
   *
   * @param settings the deployment's settings
   * @return a builder; {@link Builder#build()} validates it
   * @throws IllegalArgumentException naming the key and value of an invalid setting
   */
  public static Builder builderFrom(Settings settings) {
    Builder b = builder();
    settings.get(RabbitMqConfigKeys.URI).map(String::strip).ifPresent(b::uri);
    settings.get(RabbitMqConfigKeys.CONNECTION_NAME).ifPresent(b::connectionName);
    settings.get(RabbitMqConfigKeys.NAME_PREFIX).ifPresent(b::namePrefix);
    b.prefetch(settings.getInt(RabbitMqConfigKeys.PREFETCH, b.prefetch));
    b.confirmWindow(settings.getInt(RabbitMqConfigKeys.CONFIRM_WINDOW, b.confirmWindow));
    b.maxMessageBytes(settings.getInt(RabbitMqConfigKeys.MAX_MESSAGE_BYTES, b.maxMessageBytes));
    b.confirmTimeout(settings.getDuration(RabbitMqConfigKeys.CONFIRM_TIMEOUT, b.confirmTimeout));
    b.closeTimeout(settings.getDuration(RabbitMqConfigKeys.CLOSE_TIMEOUT, b.closeTimeout));
    b.recoveryInterval(settings.getDuration(RabbitMqConfigKeys.RECOVERY_INTERVAL,
        b.recoveryInterval));
    // Set only when the key is present: a heartbeat in the URI's query applies otherwise.
    Duration heartbeat = settings.getDuration(RabbitMqConfigKeys.HEARTBEAT, null);
    if (heartbeat != null) {
      b.heartbeat(heartbeat);
    }
    b.delayLevels(settings.getDurations(RabbitMqConfigKeys.DELAY_LEVELS, b.delayLevels));
    b.metricsInterval(settings.getDuration(RabbitMqConfigKeys.METRICS_INTERVAL,
        b.metricsInterval));
    return b;
  }

  /**
   * The config the {@code relaykit.rabbitmq.*} keys of {@code settings} describe; see {@link
   * #builderFrom(Settings)}.
   *
   * @param settings the deployment's settings
   * @return the validated config
   * @throws IllegalArgumentException naming the key and value that are invalid, or what {@link
   *     Builder#build()} rejects, prefixed with {@code relaykit.rabbitmq:}
   */
  public static RabbitMqTransportConfig from(Settings settings) {
    Builder b = builderFrom(settings);
    try {
      return b.build();
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("relaykit.rabbitmq: " + e.getMessage(), e);
    }
  }

  /**
   * A builder holding this config's values, to derive a changed copy.
   *
   * @return a new builder with every field of this config
   */
  public Builder toBuilder() {
    return new Builder()
        .uri(uri)
        .connectionName(connectionName)
        .prefetch(prefetch)
        .confirmWindow(confirmWindow)
        .confirmTimeout(confirmTimeout)
        .closeTimeout(closeTimeout)
        .maxMessageBytes(maxMessageBytes)
        .delayLevels(delayLevels)
        .recoveryInterval(recoveryInterval)
        .heartbeat(heartbeat)
        .metricsInterval(metricsInterval)
        .namePrefix(namePrefix);
  }

  /**
   * The broker URI, {@code amqp://user:password@host:port/vhost} (or {@code amqps://}).
   *
   * @return the URI
   */
  public String uri() {
    return uri;
  }

  /**
   * Shown in the broker's connection list, suffixed with the role (publisher, subscriber).
   *
   * @return the connection name
   */
  public String connectionName() {
    return connectionName;
  }

  /**
   * Unacknowledged deliveries per consumer; 0 means the subscription's {@code maxInFlight}.
   *
   * @return the prefetch count, 0 to 65535
   */
  public int prefetch() {
    return prefetch;
  }

  /**
   * Messages a publisher may have unconfirmed at once; a full window blocks {@code publish}.
   *
   * @return the window, at least 1
   */
  public int confirmWindow() {
    return confirmWindow;
  }

  /**
   * How long a publish may wait for its confirm (and for room in the window) before it fails with
   * a retryable {@link io.relaykit.message.PublishException}.
   *
   * @return the confirm timeout
   */
  public Duration confirmTimeout() {
    return confirmTimeout;
  }

  /**
   * How long {@code close()} waits for outstanding confirms and in-flight handlers.
   *
   * @return the close timeout
   */
  public Duration closeTimeout() {
    return closeTimeout;
  }

  /**
   * Largest encoded message (body plus headers) a publisher accepts.
   *
   * @return the limit in bytes
   */
  public int maxMessageBytes() {
    return maxMessageBytes;
  }

  /**
   * The retry delays, ascending; each has its own delay queue per subscriber group.
   *
   * @return the delay levels, ascending, immutable
   */
  public List<Duration> delayLevels() {
    return delayLevels;
  }

  /**
   * Pause between reconnect attempts after a connection loss.
   *
   * @return the recovery interval
   */
  public Duration recoveryInterval() {
    return recoveryInterval;
  }

  /**
   * The heartbeat timeout each connection requests from the broker (the broker's own setting
   * wins when it is lower). A path that silently stops carrying bytes (a dropped NAT entry, a
   * blackholed route) is noticed by amqp-client after about two heartbeat periods without a
   * frame, and the connection is then recovered (subscribers, the mover) or reopened (the
   * publisher); the broker likewise closes the connection on its side and requeues what it had
   * delivered unacknowledged.
   *
   * @return the requested heartbeat, whole seconds: the one set, else the URI's {@code heartbeat}
   *     query parameter, else {@value #DEFAULT_HEARTBEAT_SECONDS} s
   */
  public Duration heartbeat() {
    return heartbeat;
  }

  /**
   * How often each subscription samples its consumer lag and in-flight count for its metrics
   * listener (one passive queue declare per sample, see {@link RabbitMqSubscriber}).
   *
   * @return the sampling interval
   */
  public Duration metricsInterval() {
    return metricsInterval;
  }

  /**
   * Put in front of every exchange and queue name the transport declares.
   *
   * @return the prefix, possibly empty
   */
  public String namePrefix() {
    return namePrefix;
  }

  @Override
  public String toString() {
    return "RabbitMqTransportConfig[uri=" + redactedUri() + ", connectionName=" + connectionName
        + ", prefetch=" + prefetch + ", confirmWindow=" + confirmWindow
        + ", confirmTimeout=" + confirmTimeout + ", closeTimeout=" + closeTimeout
        + ", maxMessageBytes=" + maxMessageBytes + ", delayLevels=" + delayLevels
        + ", recoveryInterval=" + recoveryInterval + ", heartbeat=" + heartbeat
        + ", metricsInterval=" + metricsInterval
        + ", namePrefix=" + namePrefix + "]";
  }

  /** The URI without its password, for logs and error messages. */
  String redactedUri() {
    return redact(uri);
  }

  static String redact(String uri) {
    return Secrets.mask(uri);
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) {
      return true;
    }
    if (!(o instanceof RabbitMqTransportConfig)) {
      return false;
    }
    RabbitMqTransportConfig c = (RabbitMqTransportConfig) o;
    return prefetch == c.prefetch && confirmWindow == c.confirmWindow
        && maxMessageBytes == c.maxMessageBytes && uri.equals(c.uri)
        && connectionName.equals(c.connectionName) && confirmTimeout.equals(c.confirmTimeout)
        && closeTimeout.equals(c.closeTimeout) && delayLevels.equals(c.delayLevels)
        && recoveryInterval.equals(c.recoveryInterval) && heartbeat.equals(c.heartbeat)
        && metricsInterval.equals(c.metricsInterval) && namePrefix.equals(c.namePrefix);
  }

  @Override
  public int hashCode() {
    return Objects.hash(uri, connectionName, prefetch, confirmWindow, confirmTimeout,
        closeTimeout, maxMessageBytes, delayLevels, recoveryInterval, heartbeat, metricsInterval,
        namePrefix);
  }

  /** Builds a validated {@link RabbitMqTransportConfig}. */
  public static final class Builder {
    private String uri = defaultUri();
    private String connectionName = "relaykit";
    private int prefetch = 0;
    private int confirmWindow = 1024;
    private Duration confirmTimeout = Duration.ofSeconds(30);
    private Duration closeTimeout = Duration.ofSeconds(30);
    private int maxMessageBytes = 16 * 1024 * 1024;
    private List<Duration> delayLevels = List.of(Duration.ofSeconds(1), Duration.ofSeconds(10),
        Duration.ofMinutes(1), Duration.ofMinutes(10), Duration.ofHours(1));
    private Duration recoveryInterval = Duration.ofSeconds(1);
    private Duration heartbeat = Duration.ofSeconds(DEFAULT_HEARTBEAT_SECONDS);
    /** Whether {@link #heartbeat(Duration)} was called (else the URI's may apply). */
    private boolean heartbeatSet;
    /** What {@link #build()} resolved: the set heartbeat, else the URI's, else the default. */
    private Duration resolvedHeartbeat;
    private Duration metricsInterval = Duration.ofSeconds(5);
    private String namePrefix = "";

    private Builder() {}

    /**
     * The last {@code heartbeat} query parameter of {@code uri} (the one amqp-client applies), or
     * null when there is none.
     *
     * @throws IllegalArgumentException if it is not a whole number of seconds in 1..65535 (0,
     *     which turns heartbeats off, included)
     */
    private static Duration uriHeartbeat(String uri) {
      String query;
      try {
        query = new URI(uri).getRawQuery();
      } catch (URISyntaxException checkedBefore) {
        return null;
      }
      if (query == null) {
        return null;
      }
      String value = null;
      for (String param : query.split("&")) {
        int eq = param.indexOf('=');
        String name = java.net.URLDecoder.decode(eq < 0 ? param : param.substring(0, eq),
            java.nio.charset.StandardCharsets.UTF_8);
        if (name.equals("heartbeat")) {
          value = eq < 0 ? "" : java.net.URLDecoder.decode(param.substring(eq + 1),
              java.nio.charset.StandardCharsets.UTF_8);
        }
      }
      if (value == null) {
        return null;
      }
      int seconds;
      try {
        seconds = Integer.parseInt(value.strip());
      } catch (NumberFormatException e) {
        seconds = -1;
      }
      if (seconds < 1 || seconds > 65_535) {
        throw new IllegalArgumentException("the uri's heartbeat parameter must be whole seconds"
            + " in 1..65535, was '" + (value.length() > 16 ? value.substring(0, 16) + "..." : value)
            + "' in " + redact(uri));
      }
      return Duration.ofSeconds(seconds);
    }

    private static String defaultUri() {
      String env = System.getenv(URI_ENV);
      return env == null || env.isBlank() ? DEFAULT_URI : env;
    }

    /**
     * The broker URI, {@code amqp://} or {@code amqps://}. Default: {@value #URI_ENV}, else
     * {@value #DEFAULT_URI}.
     *
     * @param uri the URI
     * @return this builder
     */
    public Builder uri(String uri) {
      this.uri = uri;
      return this;
    }

    /**
     * Shown in the broker's connection list. Default {@code relaykit}.
     *
     * @param connectionName a non-blank name
     * @return this builder
     */
    public Builder connectionName(String connectionName) {
      this.connectionName = connectionName;
      return this;
    }

    /**
     * Unacknowledged deliveries per consumer; 0 (the default) means the subscription's
     * {@code maxInFlight}.
     *
     * @param prefetch 0 to 65535
     * @return this builder
     */
    public Builder prefetch(int prefetch) {
      this.prefetch = prefetch;
      return this;
    }

    /**
     * Messages a publisher may have unconfirmed at once. Default 1024.
     *
     * @param confirmWindow at least 1
     * @return this builder
     */
    public Builder confirmWindow(int confirmWindow) {
      this.confirmWindow = confirmWindow;
      return this;
    }

    /**
     * How long a publish may wait for its confirm. Default 30 s.
     *
     * @param confirmTimeout a positive duration
     * @return this builder
     */
    public Builder confirmTimeout(Duration confirmTimeout) {
      this.confirmTimeout = confirmTimeout;
      return this;
    }

    /**
     * How long {@code close()} waits for confirms and handlers. Default 30 s.
     *
     * @param closeTimeout a positive duration
     * @return this builder
     */
    public Builder closeTimeout(Duration closeTimeout) {
      this.closeTimeout = closeTimeout;
      return this;
    }

    /**
     * Largest encoded message a publisher accepts. Default 16 MiB.
     *
     * @param maxMessageBytes from 1 KiB to {@value #BROKER_HARD_LIMIT_BYTES}
     * @return this builder
     */
    public Builder maxMessageBytes(int maxMessageBytes) {
      this.maxMessageBytes = maxMessageBytes;
      return this;
    }

    /**
     * The retry delays; sorted ascending on build, duplicates rejected.
     *
     * @param delayLevels positive, distinct, at most 24 days each
     * @return this builder
     */
    public Builder delayLevels(List<Duration> delayLevels) {
      this.delayLevels = delayLevels == null ? null : new ArrayList<>(delayLevels);
      return this;
    }

    /**
     * The retry delays, as {@link #delayLevels(List)}.
     *
     * @param delayLevels positive, distinct, at most 24 days each
     * @return this builder
     */
    public Builder delayLevels(Duration... delayLevels) {
      return delayLevels(delayLevels == null ? null : List.of(delayLevels));
    }

    /**
     * Pause between reconnect attempts after a connection loss. Default 1 s.
     *
     * @param recoveryInterval a positive duration
     * @return this builder
     */
    public Builder recoveryInterval(Duration recoveryInterval) {
      this.recoveryInterval = recoveryInterval;
      return this;
    }

    /**
     * The heartbeat timeout to request from the broker, in whole seconds. Default 10 s, so a
     * connection whose path silently stopped carrying bytes is noticed within about 20 to 25 s
     * and recovered (amqp-client's own default, 60 s, took about two minutes). Each heartbeat
     * costs one 8-byte frame per direction per half period on an idle connection. The broker's
     * {@code heartbeat} setting caps it when lower. A {@code heartbeat} query parameter of the URI
     * (amqp-client reads it, in seconds) applies when this is not called; when both are given
     * they must agree, else {@link #build()} fails naming both.
     *
     * @param heartbeat 1 s to 65535 s, whole seconds
     * @return this builder
     */
    public Builder heartbeat(Duration heartbeat) {
      this.heartbeat = heartbeat;
      this.heartbeatSet = true;
      return this;
    }

    /**
     * How often each subscription samples its consumer lag (the group queue's ready messages,
     * from one passive queue declare on a channel of its own) and its in-flight deliveries for
     * its metrics listener. Sampling runs on the subscriber's one sampling thread, never on a
     * delivery thread, and only for a subscription whose listener is not {@link
     * io.relaykit.monitor.MetricsListener#noop()}. Default 5 s.
     *
     * @param metricsInterval a positive duration, at least 10 ms
     * @return this builder
     */
    public Builder metricsInterval(Duration metricsInterval) {
      this.metricsInterval = metricsInterval;
      return this;
    }

    /**
     * Put in front of every exchange and queue name. Default empty.
     *
     * @param namePrefix letters, digits and {@code . _ : -} only
     * @return this builder
     */
    public Builder namePrefix(String namePrefix) {
      this.namePrefix = namePrefix;
      return this;
    }

    /**
     * Checks the settings and builds the configuration.
     *
     * @return the validated config
     * @throws IllegalArgumentException naming the field and value: a URI that is not {@code
     *     amqp://} or {@code amqps://}, a URI {@code heartbeat} parameter that is not 1..65535
     *     seconds or disagrees with {@link #heartbeat(Duration)}, a blank connection name, a negative prefetch or one above
     *     65535, a confirm window below 1, a non-positive timeout or interval, a maximum message
     *     size below 1 KiB or above {@value #BROKER_HARD_LIMIT_BYTES}, no delay levels, a delay
     *     level that is not positive, a duplicate delay level or one above 24 days, or a name
     *     prefix with characters other than letters, digits and {@code . _ : -}
     */
    public RabbitMqTransportConfig build() {
      if (uri == null || uri.isBlank()) {
        throw new IllegalArgumentException("uri must not be blank");
      }
      try {
        String scheme = new URI(uri).getScheme();
        if (!"amqp".equalsIgnoreCase(scheme) && !"amqps".equalsIgnoreCase(scheme)) {
          throw new IllegalArgumentException(
              "uri must start with amqp:// or amqps://, was " + redact(uri));
        }
      } catch (URISyntaxException e) {
        // The exception's message and input hold the whole URI, password included: report only
        // its reason and index, and chain no cause.
        throw new IllegalArgumentException("uri is not a valid URI: " + redact(uri) + " ("
            + e.getReason() + " at index " + e.getIndex() + ")");
      }
      Duration fromUri = uriHeartbeat(uri);
      if (fromUri != null) {
        if (heartbeatSet && !fromUri.equals(heartbeat)) {
          throw new IllegalArgumentException("heartbeat (" + heartbeat + ") and the uri's"
              + " heartbeat parameter (" + fromUri.toSeconds() + " s) disagree: set one of them,"
              + " uri " + redact(uri));
        }
      }
      resolvedHeartbeat = fromUri != null ? fromUri : heartbeat;
      if (connectionName == null || connectionName.isBlank()) {
        throw new IllegalArgumentException("connectionName must not be blank");
      }
      if (prefetch < 0 || prefetch > 65_535) {
        throw new IllegalArgumentException("prefetch must be in 0..65535, was " + prefetch);
      }
      if (confirmWindow < 1) {
        throw new IllegalArgumentException("confirmWindow must be >= 1, was " + confirmWindow);
      }
      positive("confirmTimeout", confirmTimeout);
      positive("closeTimeout", closeTimeout);
      positive("recoveryInterval", recoveryInterval);
      if (heartbeat == null || heartbeat.compareTo(Duration.ofSeconds(1)) < 0
          || heartbeat.compareTo(Duration.ofSeconds(65_535)) > 0
          || !heartbeat.equals(Duration.ofSeconds(heartbeat.toSeconds()))) {
        throw new IllegalArgumentException("heartbeat must be whole seconds in 1s..65535s, was "
            + heartbeat);
      }
      positive("metricsInterval", metricsInterval);
      if (metricsInterval.compareTo(Duration.ofMillis(10)) < 0) {
        throw new IllegalArgumentException("metricsInterval must be at least 10ms, was "
            + metricsInterval);
      }
      if (maxMessageBytes < 1024 || maxMessageBytes > BROKER_HARD_LIMIT_BYTES) {
        throw new IllegalArgumentException("maxMessageBytes must be in 1024.."
            + BROKER_HARD_LIMIT_BYTES + ", was " + maxMessageBytes);
      }
      if (delayLevels == null || delayLevels.isEmpty()) {
        throw new IllegalArgumentException("delayLevels must hold at least one delay, was "
            + delayLevels);
      }
      for (Duration level : delayLevels) {
        positive("delayLevels", level);
        // x-message-ttl is a 32-bit signed millisecond count on the broker.
        if (level.compareTo(Duration.ofMillis(Integer.MAX_VALUE)) > 0) {
          throw new IllegalArgumentException(
              "delayLevels must not exceed " + Duration.ofMillis(Integer.MAX_VALUE) + ", was "
                  + level);
        }
        if (level.toMillis() < 1) {
          throw new IllegalArgumentException("delayLevels must be at least 1 ms, was " + level);
        }
      }
      List<Duration> sorted = new ArrayList<>(delayLevels);
      sorted.sort(null);
      for (int i = 1; i < sorted.size(); i++) {
        if (sorted.get(i).toMillis() == sorted.get(i - 1).toMillis()) {
          throw new IllegalArgumentException(
              "delayLevels must not repeat a level, " + sorted.get(i) + " appears twice");
        }
      }
      delayLevels = sorted;
      if (namePrefix == null || !NAME.matcher(namePrefix).matches()) {
        throw new IllegalArgumentException("namePrefix may hold only letters, digits and . _ : -,"
            + " was " + namePrefix);
      }
      if (namePrefix.length() > 100) {
        throw new IllegalArgumentException(
            "namePrefix must be at most 100 characters, was " + namePrefix.length());
      }
      return new RabbitMqTransportConfig(this);
    }

    private static void positive(String field, Duration value) {
      if (value == null || value.isZero() || value.isNegative()) {
        throw new IllegalArgumentException(field + " must be a positive duration, was " + value);
      }
    }
  }
}
