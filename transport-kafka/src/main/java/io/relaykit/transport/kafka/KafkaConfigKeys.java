package io.relaykit.transport.kafka;

import static io.relaykit.config.ConfigKey.Type.BOOLEAN;
import static io.relaykit.config.ConfigKey.Type.DURATION;
import static io.relaykit.config.ConfigKey.Type.INTEGER;
import static io.relaykit.config.ConfigKey.Type.STRING;

import io.relaykit.config.ConfigKey;
import io.relaykit.config.ConfigKeys;
import java.util.List;

/**
 * The {@code relaykit.kafka.*} keys the Kafka transport reads, registered with {@link
 * java.util.ServiceLoader} so {@link io.relaykit.config.Settings} knows them; see {@link
 * KafkaTransportConfig#from(io.relaykit.config.Settings)}. Client settings pass through under
 * {@code relaykit.kafka.producer.*} and {@code relaykit.kafka.consumer.*} (from the environment,
 * {@code RELAYKIT_KAFKA_PRODUCER_LINGER_MS} is {@code linger.ms}).
 */
public final class KafkaConfigKeys implements ConfigKeys {

  /** The prefix of every key, with its dot. */
  static final String PREFIX = "relaykit.kafka.";
  /** {@code host:port[,host:port...]}; required. */
  public static final String BOOTSTRAP_SERVERS = PREFIX + "bootstrap-servers";
  /** Prefix of every client id. */
  public static final String CLIENT_ID_PREFIX = PREFIX + "client-id-prefix";
  /** The largest record the publisher accepts. */
  public static final String MAX_RECORD_BYTES = PREFIX + "max-record-bytes";
  /** Publish deadline: metadata wait plus confirm. */
  public static final String PUBLISH_TIMEOUT = PREFIX + "publish-timeout";
  /** Retry topic suffix. */
  public static final String RETRY_TOPIC_SUFFIX = PREFIX + "retry-topic-suffix";
  /** Dead-letter topic suffix. */
  public static final String DEAD_LETTER_TOPIC_SUFFIX = PREFIX + "dead-letter-topic-suffix";
  /** How often finished work is committed. */
  public static final String COMMIT_INTERVAL = PREFIX + "commit-interval";
  /** The poll thread's longest wait for records. */
  public static final String POLL_TIMEOUT = PREFIX + "poll-timeout";
  /** Kafka's {@code max.poll.interval.ms}. */
  public static final String MAX_POLL_INTERVAL = PREFIX + "max-poll-interval";
  /** How long closing a client may wait. */
  public static final String CLOSE_TIMEOUT = PREFIX + "close-timeout";
  /** How failed records reach the retry and dead-letter topics: confirmed or transactional. */
  public static final String HAND_OFF = PREFIX + "hand-off";
  /** This process's stable name among its groups' members. */
  public static final String MEMBER_ID = PREFIX + "member-id";
  /** {@code consumer} (a consumer group, the default) or {@code share} (a share group). */
  public static final String GROUP_TYPE = PREFIX + "group-type";
  /** Where a new share group starts: {@code earliest} or {@code latest}. */
  public static final String SHARE_AUTO_OFFSET_RESET = PREFIX + "share-auto-offset-reset";
  /** Whether a subscriber creates a missing source topic; see {@link KafkaTopics}. */
  public static final String TOPICS_CREATE = PREFIX + "topics.create";
  /** The partitions of a created source topic, the fewest expected of an existing one. */
  public static final String TOPICS_PARTITIONS = PREFIX + "topics.partitions";
  /** The replication factor of created source, retry and dead-letter topics. */
  public static final String TOPICS_REPLICATION_FACTOR = PREFIX + "topics.replication-factor";
  /** The retention of created source, retry and dead-letter topics. */
  public static final String TOPICS_RETENTION = PREFIX + "topics.retention";
  /** The family of share consumer client settings. */
  public static final String SHARE_CONSUMER = PREFIX + "share-consumer";
  /** The family of producer client settings. */
  public static final String PRODUCER = PREFIX + "producer";
  /** The family of consumer client settings. */
  public static final String CONSUMER = PREFIX + "consumer";

  /** For ServiceLoader. */
  public KafkaConfigKeys() {}

  @Override
  public String module() {
    return "relaykit-kafka";
  }

  @Override
  public List<String> namespaces() {
    return List.of("relaykit.kafka");
  }

  @Override
  public List<ConfigKey> keys() {
    return List.of(
        ConfigKey.of(BOOTSTRAP_SERVERS, STRING, null, "host:port[,host:port...]; required"),
        ConfigKey.of(CLIENT_ID_PREFIX, STRING, "relaykit", "prefix of every client id"),
        ConfigKey.of(MAX_RECORD_BYTES, INTEGER, "1048576",
            "the largest record (key, value, headers) the publisher accepts"),
        ConfigKey.of(PUBLISH_TIMEOUT, DURATION, "30s", "metadata wait plus confirm"),
        ConfigKey.of(RETRY_TOPIC_SUFFIX, STRING, ".retry", "retry topic suffix"),
        ConfigKey.of(DEAD_LETTER_TOPIC_SUFFIX, STRING, ".dlt", "dead-letter topic suffix"),
        ConfigKey.of(COMMIT_INTERVAL, DURATION, "1s", "how often finished work is committed"),
        ConfigKey.of(POLL_TIMEOUT, DURATION, "100ms", "the poll thread's longest wait"),
        ConfigKey.of(MAX_POLL_INTERVAL, DURATION, "5m", "Kafka's max.poll.interval.ms"),
        ConfigKey.of(CLOSE_TIMEOUT, DURATION, "10s", "how long closing a client may wait"),
        ConfigKey.choice(HAND_OFF, "confirmed",
            "how failed records reach the retry and dead-letter topics", "confirmed",
            "transactional"),
        ConfigKey.of(MEMBER_ID, STRING, null, "this process's stable member name"),
        ConfigKey.choice(GROUP_TYPE, "consumer", "which kind of Kafka group subscriptions join",
            "consumer", "share"),
        ConfigKey.choice(SHARE_AUTO_OFFSET_RESET, "earliest", "where a new share group starts",
            "earliest", "latest"),
        ConfigKey.of(TOPICS_CREATE, BOOLEAN, "false",
            "whether a subscriber creates a missing source topic"),
        ConfigKey.of(TOPICS_PARTITIONS, INTEGER, null,
            "partitions of a created source topic (unset: the broker's num.partitions); an"
            + " existing topic with fewer is reported, not changed"),
        ConfigKey.of(TOPICS_REPLICATION_FACTOR, INTEGER, null,
            "replication factor of created source, retry and dead-letter topics (unset: the"
            + " broker's default)"),
        ConfigKey.of(TOPICS_RETENTION, DURATION, null,
            "retention of created source, retry and dead-letter topics (unset: the broker's)"),
        ConfigKey.family(SHARE_CONSUMER, "share consumer client settings, passed through"),
        ConfigKey.family(PRODUCER, "producer client settings, passed through"),
        ConfigKey.family(CONSUMER, "consumer client settings, passed through"));
  }
}
