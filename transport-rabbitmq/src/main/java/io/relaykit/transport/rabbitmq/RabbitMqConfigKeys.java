package io.relaykit.transport.rabbitmq;

import static io.relaykit.config.ConfigKey.Type.DURATION;
import static io.relaykit.config.ConfigKey.Type.DURATION_LIST;
import static io.relaykit.config.ConfigKey.Type.INTEGER;
import static io.relaykit.config.ConfigKey.Type.STRING;

import io.relaykit.config.ConfigKey;
import io.relaykit.config.ConfigKeys;
import java.util.List;

/**
 * The {@code relaykit.rabbitmq.*} keys the RabbitMQ transport reads, registered with {@link
 * java.util.ServiceLoader} so {@link io.relaykit.config.Settings} knows them; see {@link
 * RabbitMqTransportConfig#from(io.relaykit.config.Settings)}. The password in the URI is masked
 * wherever settings are shown.
 */
public final class RabbitMqConfigKeys implements ConfigKeys {

  /** The broker URI; its variable {@code RELAYKIT_RABBITMQ_URI} is also the builder's default. */
  public static final String URI = "relaykit.rabbitmq.uri";
  /** The connection name the broker shows. */
  public static final String CONNECTION_NAME = "relaykit.rabbitmq.connection-name";
  /** Unacknowledged deliveries per consumer. */
  public static final String PREFETCH = "relaykit.rabbitmq.prefetch";
  /** Unconfirmed publishes in flight. */
  public static final String CONFIRM_WINDOW = "relaykit.rabbitmq.confirm-window";
  /** How long a publish waits for its confirm. */
  public static final String CONFIRM_TIMEOUT = "relaykit.rabbitmq.confirm-timeout";
  /** How long closing may wait. */
  public static final String CLOSE_TIMEOUT = "relaykit.rabbitmq.close-timeout";
  /** The largest message body accepted. */
  public static final String MAX_MESSAGE_BYTES = "relaykit.rabbitmq.max-message-bytes";
  /** The delayed-retry queues' delays, comma-separated. */
  public static final String DELAY_LEVELS = "relaykit.rabbitmq.delay-levels";
  /** The wait between reconnect attempts. */
  public static final String RECOVERY_INTERVAL = "relaykit.rabbitmq.recovery-interval";
  /** The heartbeat timeout requested from the broker (whole seconds, default 10 s). */
  public static final String HEARTBEAT = "relaykit.rabbitmq.heartbeat";
  /** How often a subscription samples its consumer lag and in-flight count. */
  public static final String METRICS_INTERVAL = "relaykit.rabbitmq.metrics-interval";
  /** A prefix of every queue and exchange name this transport declares. */
  public static final String NAME_PREFIX = "relaykit.rabbitmq.name-prefix";

  /** For ServiceLoader. */
  public RabbitMqConfigKeys() {}

  @Override
  public String module() {
    return "relaykit-rabbitmq";
  }

  @Override
  public List<String> namespaces() {
    return List.of("relaykit.rabbitmq");
  }

  @Override
  public List<ConfigKey> keys() {
    return List.of(
        ConfigKey.of(URI, STRING, RabbitMqTransportConfig.DEFAULT_URI,
            "the broker URI, amqp:// or amqps://; the password in it is masked"),
        ConfigKey.of(CONNECTION_NAME, STRING, "relaykit", "the connection name the broker shows"),
        ConfigKey.of(PREFETCH, INTEGER, "the subscription's maxInFlight",
            "unacknowledged deliveries per consumer"),
        ConfigKey.of(CONFIRM_WINDOW, INTEGER, "1024", "unconfirmed publishes in flight"),
        ConfigKey.of(CONFIRM_TIMEOUT, DURATION, "30s", "how long a publish waits for its confirm"),
        ConfigKey.of(CLOSE_TIMEOUT, DURATION, "30s", "how long closing may wait"),
        ConfigKey.of(MAX_MESSAGE_BYTES, INTEGER, "16777216", "the largest message body accepted"),
        ConfigKey.of(DELAY_LEVELS, DURATION_LIST, "1s,10s,1m,10m,1h",
            "the delayed-retry queues' delays"),
        ConfigKey.of(RECOVERY_INTERVAL, DURATION, "1s", "the wait between reconnect attempts"),
        ConfigKey.of(HEARTBEAT, DURATION, "10s", "the heartbeat timeout requested from the"
            + " broker, whole seconds; a silent path is noticed after about two periods"),
        ConfigKey.of(METRICS_INTERVAL, DURATION, "5s",
            "how often a subscription samples its consumer lag and in-flight count"),
        ConfigKey.of(NAME_PREFIX, STRING, "", "a prefix of every queue and exchange name"));
  }
}
