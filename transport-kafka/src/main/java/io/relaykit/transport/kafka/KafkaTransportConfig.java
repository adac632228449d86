package io.relaykit.transport.kafka;

import io.relaykit.config.Settings;
import io.relaykit.monitor.BacklogMonitor;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.monitor.MetricsListener;
import java.time.Duration;
import java.time.InstantSource;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * Everything the Kafka transport needs to know: where the brokers are, extra client settings,
 * how retry and dead-letter topics are named, and the consumer runtime's timings. Immutable;
 * {@link Builder#build()} validates every field and names the one that is wrong.
 *
 * <p>Retry and dead-letter topics belong to one consumer group (a failure in group A must not be
 * redelivered to group B): they are named {@code <topic>.<group><suffix>}, by default {@code
 * orders.billing.retry} and {@code orders.billing.dlt}.
 *
 * <p>Settings the transport's guarantees depend on cannot be overridden through the client
 * properties: {@code acks}, {@code enable.idempotence}, {@code enable.auto.commit}, serializers and
 * deserializers, {@code group.id} and {@code bootstrap.servers}.
 */
public final class KafkaTransportConfig {

  /** The default listener; the consumer runtime builds no events for it. */
  static final LifecycleListener NO_LISTENER = LifecycleListener.noop();

  /** Kafka refuses topic names longer than this. */
  static final int MAX_TOPIC_LENGTH = 249;

  private static final Set<String> PROTECTED = Set.of(
      "bootstrap.servers", "acks", "enable.idempotence", "enable.auto.commit", "group.id",
      "key.serializer", "value.serializer", "key.deserializer", "value.deserializer",
      "transactional.id");

  /**
   * Which kind of Kafka group a {@link io.relaykit.message.Subscriber} of this config joins; see
   * {@link KafkaConfigKeys#GROUP_TYPE}.
   */
  public enum GroupType {
    /** A consumer group: {@link KafkaSubscriber}, one member per partition, commits offsets. */
    CONSUMER,
    /**
     * A share group (KIP-932): {@link KafkaShareSubscriber}, any number of members per partition,
     * each record acknowledged on its own.
     */
    SHARE
  }

  /**
   * The consumer settings a {@code KafkaShareConsumer} (kafka-clients 4.3) refuses: they belong to
   * consumer groups (offsets, assignment, sessions) or are the share group's own configuration.
   */
  static final Set<String> SHARE_REFUSED = Set.of(
      "auto.offset.reset", "enable.auto.commit", "group.instance.id", "isolation.level",
      "partition.assignment.strategy", "interceptor.classes", "session.timeout.ms",
      "heartbeat.interval.ms", "group.protocol", "group.remote.assignor");

  /** Share consumer settings the transport sets itself. */
  private static final Set<String> SHARE_PROTECTED = Set.of("share.acknowledgement.mode",
      "max.poll.records");

  /**
   * How a consumer runtime hands a failed record to the retry or dead-letter topic.
   *
   * <ul>
   *   <li>{@link #CONFIRMED} (the default): the copy is sent with the idempotent producer and the
   *       record counts as done on the broker's confirm. Cheap; but a crash between the confirm
   *       and the next offset commit re-runs the record from its source at attempt 1 while its copy
   *       exists too: duplicates of a copy are possible (dead letters are deduplicated by message
   *       id per subscription when read through {@link KafkaDeadLetterStore}).
   *   <li>{@link #TRANSACTIONAL}: each runtime has a transactional producer; copies are written
   *       inside a transaction that also commits the source offsets ({@code
   *       sendOffsetsToTransaction}), and the runtime reads with {@code
   *       isolation.level=read_committed}. Either both the copies and the offsets past their
   *       records become visible, or neither: no duplicate copy, no record re-run at attempt 1
   *       after its copy was written. Costs a transaction commit per commit interval in which a
   *       copy was written, and latency: a transaction stays open until the partition's commit
   *       watermark passes every copy in it (or stops at a record waiting for a parked key), at
   *       most half of {@code transaction.timeout.ms} (default 60 s), so a retry can start only
   *       after that. A member with a stable {@link Builder#memberId} aborts the transaction its
   *       crashed predecessor left open when it starts.
   * </ul>
   */
  public enum HandOff {
    /** Copies are sent with the idempotent producer; a record is done on the broker's confirm. */
    CONFIRMED,
    /** Copies and source offsets are committed in one Kafka transaction. */
    TRANSACTIONAL
  }

  private final String bootstrapServers;
  private final String clientIdPrefix;
  private final Map<String, String> producerProperties;
  private final Map<String, String> consumerProperties;
  private final int maxRecordBytes;
  private final Duration publishTimeout;
  private final String retryTopicSuffix;
  private final String deadLetterTopicSuffix;
  private final Duration commitInterval;
  private final Duration pollTimeout;
  private final Duration maxPollInterval;
  private final Duration closeTimeout;
  private final InstantSource clock;
  private final LifecycleListener listener;
  private final MetricsListener metrics;
  private final BacklogMonitor.Config backlogMonitor;
  private final HandOff handOff;
  private final String memberId;
  private final Duration transactionTimeout;
  private final GroupType groupType;
  private final Map<String, String> shareConsumerProperties;
  private final String shareAutoOffsetReset;
  private final KafkaTopics topics;

  private KafkaTransportConfig(Builder b) {
    this.bootstrapServers = b.bootstrapServers;
    this.clientIdPrefix = b.clientIdPrefix;
    this.producerProperties = Collections.unmodifiableMap(new LinkedHashMap<>(b.producer));
    this.consumerProperties = Collections.unmodifiableMap(new LinkedHashMap<>(b.consumer));
    this.maxRecordBytes = b.maxRecordBytes;
    this.publishTimeout = b.publishTimeout;
    this.retryTopicSuffix = b.retryTopicSuffix;
    this.deadLetterTopicSuffix = b.deadLetterTopicSuffix;
    this.topics = b.topics;
    this.commitInterval = b.commitInterval;
    this.pollTimeout = b.pollTimeout;
    this.maxPollInterval = b.maxPollInterval;
    this.closeTimeout = b.closeTimeout;
    this.clock = b.clock;
    this.listener = b.listener;
    this.metrics = b.metrics;
    this.backlogMonitor = b.backlogMonitor;
    this.handOff = b.handOff;
    this.memberId = b.memberId;
    this.transactionTimeout = transactionTimeoutOf(b.producer);
    this.groupType = b.groupType;
    this.shareConsumerProperties = Collections.unmodifiableMap(
        new LinkedHashMap<>(b.shareConsumer));
    this.shareAutoOffsetReset = b.shareAutoOffsetReset;
  }

  /** The producer's {@code transaction.timeout.ms} (Kafka's default 60 s when unset). */
  private static Duration transactionTimeoutOf(Map<String, String> producer) {
    String value = producer.get(TRANSACTION_TIMEOUT);
    if (value == null) {
      return Duration.ofSeconds(60);
    }
    long ms;
    try {
      ms = Long.parseLong(value.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("producerProperty " + TRANSACTION_TIMEOUT
          + " must be a whole number of milliseconds, was " + quote(value), e);
    }
    if (ms < 1000) {
      throw new IllegalArgumentException("producerProperty " + TRANSACTION_TIMEOUT
          + " must be at least 1000 ms, was " + ms);
    }
    return Duration.ofMillis(ms);
  }

  static final String TRANSACTION_TIMEOUT = "transaction.timeout.ms";

  /**
   * A builder with the defaults documented on each setter; {@code bootstrapServers} is required.
   *
   * @return a new builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * A builder holding what the {@code relaykit.kafka.*} keys of {@code settings} say (see {@link
   * KafkaConfigKeys}), for code to add what settings cannot carry (a clock, listeners, a backlog
   * monitor). Client settings come from {@code relaykit.kafka.producer.<name>} and {@code
   * relaykit.kafka.consumer.<name>}.
   *
   * @param settings the deployment's settings
   * @return a builder; {@link Builder#build()} validates it
   * @throws IllegalArgumentException naming the key and its environment variable when {@value
   *     KafkaConfigKeys#BOOTSTRAP_SERVERS} is unset, or the key and value of an invalid setting
   */
  public static Builder builderFrom(Settings settings) {
    Builder d = builder();
    Builder b = builder()
        .bootstrapServers(settings.require(KafkaConfigKeys.BOOTSTRAP_SERVERS).strip())
        .clientIdPrefix(settings.getString(KafkaConfigKeys.CLIENT_ID_PREFIX, d.clientIdPrefix))
        .maxRecordBytes(settings.getInt(KafkaConfigKeys.MAX_RECORD_BYTES, d.maxRecordBytes))
        .publishTimeout(settings.getDuration(KafkaConfigKeys.PUBLISH_TIMEOUT, d.publishTimeout))
        .retryTopicSuffix(settings.getString(KafkaConfigKeys.RETRY_TOPIC_SUFFIX,
            d.retryTopicSuffix))
        .deadLetterTopicSuffix(settings.getString(KafkaConfigKeys.DEAD_LETTER_TOPIC_SUFFIX,
            d.deadLetterTopicSuffix))
        .commitInterval(settings.getDuration(KafkaConfigKeys.COMMIT_INTERVAL, d.commitInterval))
        .pollTimeout(settings.getDuration(KafkaConfigKeys.POLL_TIMEOUT, d.pollTimeout))
        .maxPollInterval(settings.getDuration(KafkaConfigKeys.MAX_POLL_INTERVAL,
            d.maxPollInterval))
        .closeTimeout(settings.getDuration(KafkaConfigKeys.CLOSE_TIMEOUT, d.closeTimeout))
        .handOff(settings.getEnum(KafkaConfigKeys.HAND_OFF, HandOff.class, d.handOff))
        .memberId(settings.getString(KafkaConfigKeys.MEMBER_ID, null))
        .groupType(settings.getEnum(KafkaConfigKeys.GROUP_TYPE, GroupType.class, d.groupType))
        .shareAutoOffsetReset(settings.getString(KafkaConfigKeys.SHARE_AUTO_OFFSET_RESET,
            d.shareAutoOffsetReset));
    b.topics(KafkaTopics.from(settings));
    settings.section(KafkaConfigKeys.SHARE_CONSUMER)
        .forEach((k, v) -> b.shareConsumerProperty(k, v.strip()));
    settings.section(KafkaConfigKeys.PRODUCER).forEach((k, v) -> b.producerProperty(k, v.strip()));
    settings.section(KafkaConfigKeys.CONSUMER).forEach((k, v) -> b.consumerProperty(k, v.strip()));
    return b;
  }

  /**
   * The config the {@code relaykit.kafka.*} keys of {@code settings} describe; see {@link
   * #builderFrom(Settings)}.
   *
   * @param settings the deployment's settings
   * @return the validated config
   * @throws IllegalArgumentException naming the key and value that are missing or invalid, or
   *     what {@link Builder#build()} rejects, prefixed with {@code invalid relaykit.kafka.*
   *     settings}
   */
  public static KafkaTransportConfig from(Settings settings) {
    Builder b = builderFrom(settings);
    try {
      return b.build();
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("invalid relaykit.kafka.* settings: " + e.getMessage(), e);
    }
  }

  /**
   * A builder holding this config's values, to derive a changed copy.
   *
   * @return a new builder with every field of this config
   */
  public Builder toBuilder() {
    Builder b = new Builder();
    b.bootstrapServers = bootstrapServers;
    b.clientIdPrefix = clientIdPrefix;
    b.producer.putAll(producerProperties);
    b.consumer.putAll(consumerProperties);
    b.maxRecordBytes = maxRecordBytes;
    b.publishTimeout = publishTimeout;
    b.retryTopicSuffix = retryTopicSuffix;
    b.deadLetterTopicSuffix = deadLetterTopicSuffix;
    b.topics = topics;
    b.commitInterval = commitInterval;
    b.pollTimeout = pollTimeout;
    b.maxPollInterval = maxPollInterval;
    b.closeTimeout = closeTimeout;
    b.clock = clock;
    b.listener = listener;
    b.metrics = metrics;
    b.backlogMonitor = backlogMonitor;
    b.handOff = handOff;
    b.memberId = memberId;
    b.groupType = groupType;
    b.shareConsumer.putAll(shareConsumerProperties);
    b.shareAutoOffsetReset = shareAutoOffsetReset;
    return b;
  }

  /**
   * Which group kind subscriptions of this config join; see {@link GroupType}.
   *
   * @return {@link GroupType#CONSUMER} unless configured otherwise
   */
  public GroupType groupType() {
    return groupType;
  }

  /**
   * The extra settings of the {@code KafkaShareConsumer} of a {@link KafkaShareSubscriber}: its own
   * passthrough, since the share consumer refuses several consumer settings.
   *
   * @return the settings, unmodifiable
   */
  public Map<String, String> shareConsumerProperties() {
    return shareConsumerProperties;
  }

  /**
   * Where a new share group starts: {@code earliest} (the default: records written before the
   * first member joined are delivered too) or {@code latest} (Kafka's default). A {@link
   * KafkaShareSubscriber} sets it as the group's {@code share.auto.offset.reset} through the Admin
   * client before its consumer joins.
   *
   * @return {@code earliest} or {@code latest}
   */
  public String shareAutoOffsetReset() {
    return shareAutoOffsetReset;
  }

  /**
   * The brokers to connect to.
   *
   * @return the {@code host:port[,host:port...]} list
   */
  public String bootstrapServers() {
    return bootstrapServers;
  }

  /**
   * How failed records are handed to the retry and dead-letter topics; see {@link HandOff}.
   *
   * @return the hand-off mode
   */
  public HandOff handOff() {
    return handOff;
  }

  /**
   * The stable name of this process among the members of its groups, used in transactional ids;
   * empty when not set (then {@code group.instance.id}, else a random id per subscription).
   *
   * @return the member id, or empty
   */
  public java.util.Optional<String> memberId() {
    return java.util.Optional.ofNullable(memberId);
  }

  /**
   * The producer's {@code transaction.timeout.ms}: bounds an open hand-off transaction.
   *
   * @return the transaction timeout
   */
  public Duration transactionTimeout() {
    return transactionTimeout;
  }

  /**
   * The prefix of every client id this transport creates.
   *
   * @return the prefix
   */
  public String clientIdPrefix() {
    return clientIdPrefix;
  }

  /**
   * Extra producer settings, applied under the transport's protected ones.
   *
   * @return the extra producer settings; unmodifiable
   */
  public Map<String, String> producerProperties() {
    return producerProperties;
  }

  /**
   * Extra consumer settings, applied under the transport's protected ones.
   *
   * @return the extra consumer settings; unmodifiable
   */
  public Map<String, String> consumerProperties() {
    return consumerProperties;
  }

  /**
   * The largest record (key, value and headers) the publisher accepts.
   *
   * @return the limit in bytes
   */
  public int maxRecordBytes() {
    return maxRecordBytes;
  }

  /**
   * How long a publish may wait for metadata and the broker's confirm before it fails.
   *
   * @return the publish deadline
   */
  public Duration publishTimeout() {
    return publishTimeout;
  }

  /**
   * The suffix of retry topics, {@code <topic>.<group><suffix>}.
   *
   * @return the suffix
   */
  public String retryTopicSuffix() {
    return retryTopicSuffix;
  }

  /**
   * The suffix of dead-letter topics, {@code <topic>.<group><suffix>}.
   *
   * @return the suffix
   */
  public String deadLetterTopicSuffix() {
    return deadLetterTopicSuffix;
  }

  /**
   * How subscribers provision their topics.
   *
   * @return the provisioning; {@link KafkaTopics#defaults()} unless set
   */
  public KafkaTopics topics() {
    return topics;
  }

  /**
   * How often finished work is committed (asynchronously).
   *
   * @return the interval
   */
  public Duration commitInterval() {
    return commitInterval;
  }

  /**
   * The poll thread's longest wait for records.
   *
   * @return the timeout
   */
  public Duration pollTimeout() {
    return pollTimeout;
  }

  /**
   * Kafka's {@code max.poll.interval.ms}: bounds only a stuck poll thread.
   *
   * @return the interval
   */
  public Duration maxPollInterval() {
    return maxPollInterval;
  }

  /**
   * How long closing a client may wait for it to flush.
   *
   * @return the timeout
   */
  public Duration closeTimeout() {
    return closeTimeout;
  }

  /**
   * The clock for failure times, retry due times and ages.
   *
   * @return the clock
   */
  public InstantSource clock() {
    return clock;
  }

  /**
   * What sees every message's steps.
   *
   * @return the listener
   */
  public LifecycleListener listener() {
    return listener;
  }

  /**
   * Receives consumer lag, backlog depth, oldest in-flight age, verdicts and drops.
   *
   * @return the metrics listener
   */
  public MetricsListener metrics() {
    return metrics;
  }

  /**
   * How each subscription's {@link BacklogMonitor} judges its backlog.
   *
   * @return the thresholds
   */
  public BacklogMonitor.Config backlogMonitor() {
    return backlogMonitor;
  }

  /**
   * The retry topic of {@code topic} for consumer {@code group}: {@code <topic>.<group><suffix>}.
   *
   * @param topic the source topic
   * @param group the consumer group
   * @return the retry topic's name
   * @throws IllegalArgumentException if the name is not a legal Kafka topic name (a group id with
   *     characters outside {@code [a-zA-Z0-9._-]}, or longer than 249 characters in all)
   */
  public String retryTopic(String topic, String group) {
    return derivedTopic("retry topic", topic, group, retryTopicSuffix);
  }

  /**
   * The dead-letter topic of {@code topic} for {@code group}; see {@link #retryTopic}.
   *
   * @param topic the source topic
   * @param group the consumer group
   * @return the dead-letter topic's name
   * @throws IllegalArgumentException if the name is not a legal Kafka topic name
   */
  public String deadLetterTopic(String topic, String group) {
    return derivedTopic("dead-letter topic", topic, group, deadLetterTopicSuffix);
  }

  private static String derivedTopic(String what, String topic, String group, String suffix) {
    requireTopicName("topic", topic);
    String name = topic + "." + group + suffix;
    if (!legalTopicChars(name) || name.length() > MAX_TOPIC_LENGTH) {
      throw new IllegalArgumentException(what + " name " + name + " (from topic " + topic
          + " and group " + group + ") is not a legal Kafka topic name: use only [a-zA-Z0-9._-] "
          + "and at most " + MAX_TOPIC_LENGTH + " characters");
    }
    return name;
  }

  /**
   * Checks that {@code name} is a legal Kafka topic name.
   *
   * @throws IllegalArgumentException naming {@code field} and the value otherwise
   */
  static String requireTopicName(String field, String name) {
    if (name == null || name.isBlank()) {
      throw new IllegalArgumentException(field + " must not be blank, was " + quote(name));
    }
    if (!legalTopicChars(name) || name.length() > MAX_TOPIC_LENGTH
        || name.equals(".") || name.equals("..")) {
      throw new IllegalArgumentException(field + " " + quote(name)
          + " is not a legal Kafka topic name: use only [a-zA-Z0-9._-], at most "
          + MAX_TOPIC_LENGTH + " characters");
    }
    return name;
  }

  /**
   * Kafka's own rule for topic name characters: one or more of {@code [a-zA-Z0-9._-]}. A loop, not a
   * regex: {@link KafkaPublisher#publish} checks every destination.
   */
  private static boolean legalTopicChars(String name) {
    if (name.isEmpty()) {
      return false;
    }
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
          || c == '.' || c == '_' || c == '-')) {
        return false;
      }
    }
    return true;
  }

  private static String quote(String s) {
    return s == null ? "null" : "'" + s + "'";
  }

  @Override
  public String toString() {
    return "KafkaTransportConfig[bootstrapServers=" + bootstrapServers
        + ", clientIdPrefix=" + clientIdPrefix
        + ", producerProperties=" + producerProperties.keySet()
        + ", consumerProperties=" + consumerProperties.keySet()
        + ", maxRecordBytes=" + maxRecordBytes + ", publishTimeout=" + publishTimeout
        + ", retryTopicSuffix=" + retryTopicSuffix
        + ", deadLetterTopicSuffix=" + deadLetterTopicSuffix
        + ", topics=" + topics
        + ", commitInterval=" + commitInterval + ", pollTimeout=" + pollTimeout
        + ", maxPollInterval=" + maxPollInterval + ", closeTimeout=" + closeTimeout
        + ", handOff=" + handOff + (memberId == null ? "" : ", memberId=" + memberId) + "]";
  }

  /** Builds a validated {@link KafkaTransportConfig}. */
  public static final class Builder {
    private String bootstrapServers;
    private String clientIdPrefix = "relaykit";
    private final Map<String, String> producer = new LinkedHashMap<>();
    private final Map<String, String> consumer = new LinkedHashMap<>();
    private int maxRecordBytes = 1024 * 1024;
    private Duration publishTimeout = Duration.ofSeconds(30);
    private String retryTopicSuffix = ".retry";
    private String deadLetterTopicSuffix = ".dlt";
    private KafkaTopics topics = KafkaTopics.defaults();
    private Duration commitInterval = Duration.ofSeconds(1);
    private Duration pollTimeout = Duration.ofMillis(100);
    private Duration maxPollInterval = Duration.ofMinutes(5);
    private Duration closeTimeout = Duration.ofSeconds(10);
    private InstantSource clock = InstantSource.system();
    private LifecycleListener listener = NO_LISTENER;
    private MetricsListener metrics = MetricsListener.noop();
    private BacklogMonitor.Config backlogMonitor = BacklogMonitor.Config.defaults();
    private HandOff handOff = HandOff.CONFIRMED;
    private String memberId;
    private GroupType groupType = GroupType.CONSUMER;
    private final Map<String, String> shareConsumer = new LinkedHashMap<>();
    private String shareAutoOffsetReset = "earliest";

    private Builder() {}

    /**
     * Which group kind subscriptions join: {@link GroupType#CONSUMER} (the default) or {@link
     * GroupType#SHARE} ({@link KafkaShareSubscriber}).
     *
     * @param groupType the group kind
     * @return this builder
     * @throws IllegalArgumentException if {@code groupType} is null (at {@link #build()})
     */
    public Builder groupType(GroupType groupType) {
      this.groupType = groupType;
      return this;
    }

    /**
     * An extra setting of the share consumer ({@code fetch.max.wait.ms}, security; {@code
     * share.acquire.mode} only as {@code record_limit}, which the transport sets). The settings a share consumer refuses ({@code auto.offset.reset},
     * {@code enable.auto.commit}, {@code group.instance.id}, {@code isolation.level}, {@code
     * partition.assignment.strategy}, {@code interceptor.classes}, {@code session.timeout.ms},
     * {@code heartbeat.interval.ms}, {@code group.protocol}, {@code group.remote.assignor}) and
     * those the transport sets ({@code share.acknowledgement.mode}, {@code max.poll.records},
     * {@code group.id}, the deserializers) are refused by {@link #build()}, naming the key.
     *
     * @param name the share consumer setting
     * @param value its value
     * @return this builder
     * @throws IllegalArgumentException at {@link #build()} for a refused or blank setting
     */
    public Builder shareConsumerProperty(String name, String value) {
      shareConsumer.put(name, value);
      return this;
    }

    /**
     * Where a new share group starts: {@code earliest} (the default) or {@code latest}; see
     * {@link KafkaTransportConfig#shareAutoOffsetReset()}.
     *
     * @param reset {@code earliest} or {@code latest}
     * @return this builder
     * @throws IllegalArgumentException at {@link #build()} for any other value
     */
    public Builder shareAutoOffsetReset(String reset) {
      this.shareAutoOffsetReset = reset;
      return this;
    }

    /**
     * How failed records are handed to the retry and dead-letter topics. Default {@link
     * HandOff#CONFIRMED}; {@link HandOff#TRANSACTIONAL} writes copies and source offsets in one
     * transaction (see {@link HandOff}), bounded by the producer's {@code transaction.timeout.ms}.
     *
     * @param handOff the mode
     * @return this builder
     */
    public Builder handOff(HandOff handOff) {
      this.handOff = handOff;
      return this;
    }

    /**
     * This process's stable name among the members of its consumer groups (e.g. the pod name),
     * used in the transactional id {@code <clientIdPrefix>-<group>-<topic>-<memberId>} of {@link
     * HandOff#TRANSACTIONAL}: a restarted member with the same id aborts the transaction its
     * predecessor left open at once and fences that predecessor, should it still run. It must be
     * unique among live members: two running members with one id fence each other (the older one
     * stops with an error). Unset: {@code group.instance.id} if set, else a random id per
     * subscription, and a transaction left open by a crash then holds back read_committed readers
     * of the retry topic until {@code transaction.timeout.ms} aborts it. Legal characters {@code
     * [a-zA-Z0-9._-]}.
     *
     * @param memberId the stable member name, or null
     * @return this builder
     */
    public Builder memberId(String memberId) {
      this.memberId = memberId;
      return this;
    }

    /**
     * {@code host:port[,host:port...]}; required.
     *
     * @param bootstrapServers the broker list
     * @return this builder
     */
    public Builder bootstrapServers(String bootstrapServers) {
      this.bootstrapServers = bootstrapServers;
      return this;
    }

    /**
     * Prefix of every client id this transport creates. Default {@code relaykit}.
     *
     * @param clientIdPrefix the prefix
     * @return this builder
     */
    public Builder clientIdPrefix(String clientIdPrefix) {
      this.clientIdPrefix = clientIdPrefix;
      return this;
    }

    /**
     * An extra producer setting (compression, linger, security).
     *
     * @param name the producer setting
     * @param value its value
     * @return this builder
     */
    public Builder producerProperty(String name, String value) {
      producer.put(name, value);
      return this;
    }

    /**
     * An extra consumer setting (fetch sizes, security, {@code group.protocol}).
     *
     * @param name the consumer setting
     * @param value its value
     * @return this builder
     */
    public Builder consumerProperty(String name, String value) {
      consumer.put(name, value);
      return this;
    }

    /**
     * The largest record the publisher accepts, key, value and headers included; larger ones fail
     * with {@link io.relaykit.message.MessageRejectedException}. Default 1 MiB, the broker's
     * default limit; raise both together.
     *
     * @param maxRecordBytes the limit in bytes, at least 1
     * @return this builder
     */
    public Builder maxRecordBytes(int maxRecordBytes) {
      this.maxRecordBytes = maxRecordBytes;
      return this;
    }

    /**
     * Publish deadline: metadata wait plus confirm. Default 30 s.
     *
     * @param publishTimeout a positive duration
     * @return this builder
     */
    public Builder publishTimeout(Duration publishTimeout) {
      this.publishTimeout = publishTimeout;
      return this;
    }

    /**
     * Retry topic suffix. Default {@code .retry}.
     *
     * @param retryTopicSuffix legal topic characters, not the dead-letter suffix
     * @return this builder
     */
    public Builder retryTopicSuffix(String retryTopicSuffix) {
      this.retryTopicSuffix = retryTopicSuffix;
      return this;
    }

    /**
     * How subscribers provision their topics. Default {@link KafkaTopics#defaults()}: a missing
     * source topic is refused.
     *
     * @param topics the provisioning; not null
     * @return this builder
     */
    public Builder topics(KafkaTopics topics) {
      this.topics = java.util.Objects.requireNonNull(topics, "topics");
      return this;
    }

    /**
     * Dead-letter topic suffix. Default {@code .dlt}.
     *
     * @param deadLetterTopicSuffix legal topic characters, not the retry suffix
     * @return this builder
     */
    public Builder deadLetterTopicSuffix(String deadLetterTopicSuffix) {
      this.deadLetterTopicSuffix = deadLetterTopicSuffix;
      return this;
    }

    /**
     * How often finished work is committed (asynchronously). Default 1 s.
     *
     * @param commitInterval a positive duration
     * @return this builder
     */
    public Builder commitInterval(Duration commitInterval) {
      this.commitInterval = commitInterval;
      return this;
    }

    /**
     * The poll thread's longest wait for records. Default 100 ms.
     *
     * @param pollTimeout a positive duration below the max poll interval
     * @return this builder
     */
    public Builder pollTimeout(Duration pollTimeout) {
      this.pollTimeout = pollTimeout;
      return this;
    }

    /**
     * Kafka's {@code max.poll.interval.ms}. The poll thread never waits for handlers, so this
     * bounds only a stuck poll thread. Default 5 min.
     *
     * @param maxPollInterval a positive duration
     * @return this builder
     */
    public Builder maxPollInterval(Duration maxPollInterval) {
      this.maxPollInterval = maxPollInterval;
      return this;
    }

    /**
     * How long closing a client may wait for it to flush. Default 10 s.
     *
     * @param closeTimeout a positive duration
     * @return this builder
     */
    public Builder closeTimeout(Duration closeTimeout) {
      this.closeTimeout = closeTimeout;
      return this;
    }

    /**
     * The clock for failure times, retry due times and ages. Default the system clock.
     *
     * @param clock the clock
     * @return this builder
     */
    public Builder clock(InstantSource clock) {
      this.clock = clock;
      return this;
    }

    /**
     * Sees every message's steps. Default: none.
     *
     * @param listener the listener
     * @return this builder
     */
    public Builder listener(LifecycleListener listener) {
      this.listener = listener;
      return this;
    }

    /**
     * Receives, once per commit interval per subscription, the consumer lag, backlog depth (lag
     * plus records in flight), oldest in-flight age and the backlog verdict; and drops of expired
     * and undecodable records. Default: none.
     *
     * @param metrics the metrics listener
     * @return this builder
     */
    public Builder metrics(MetricsListener metrics) {
      this.metrics = metrics;
      return this;
    }

    /**
     * Thresholds of each subscription's backlog verdict. Default {@code Config.defaults()}.
     *
     * @param backlogMonitor the thresholds
     * @return this builder
     */
    public Builder backlogMonitor(BacklogMonitor.Config backlogMonitor) {
      this.backlogMonitor = backlogMonitor;
      return this;
    }

    /**
     * Validates the fields and builds the config.
     *
     * @return the config
     * @throws IllegalArgumentException naming the field and value when the bootstrap servers or
     *     client id prefix are blank, a client property is blank, null or protected, a size or
     *     duration is not positive, the poll timeout is not below the max poll interval, or a topic
     *     suffix is blank, not made of legal topic characters, or equal to the other suffix
     */
    public KafkaTransportConfig build() {
      if (bootstrapServers == null || bootstrapServers.isBlank()) {
        throw new IllegalArgumentException(
            "bootstrapServers must not be blank, was " + quote(bootstrapServers));
      }
      if (clientIdPrefix == null || clientIdPrefix.isBlank()) {
        throw new IllegalArgumentException(
            "clientIdPrefix must not be blank, was " + quote(clientIdPrefix));
      }
      checkProperties("producerProperty", producer);
      checkProperties("consumerProperty", consumer);
      OffsetReset.parse(consumer.get(OffsetReset.SETTING));
      if (maxRecordBytes < 1) {
        throw new IllegalArgumentException("maxRecordBytes must be >= 1, was " + maxRecordBytes);
      }
      positive("publishTimeout", publishTimeout);
      positive("commitInterval", commitInterval);
      positive("pollTimeout", pollTimeout);
      positive("maxPollInterval", maxPollInterval);
      positive("closeTimeout", closeTimeout);
      if (pollTimeout.compareTo(maxPollInterval) >= 0) {
        throw new IllegalArgumentException("pollTimeout must be below maxPollInterval ("
            + maxPollInterval + "), was " + pollTimeout);
      }
      suffix("retryTopicSuffix", retryTopicSuffix);
      suffix("deadLetterTopicSuffix", deadLetterTopicSuffix);
      if (retryTopicSuffix.equals(deadLetterTopicSuffix)) {
        throw new IllegalArgumentException("deadLetterTopicSuffix must differ from "
            + "retryTopicSuffix, both were " + quote(retryTopicSuffix));
      }
      if (clock == null) {
        throw new IllegalArgumentException("clock must not be null");
      }
      if (listener == null) {
        throw new IllegalArgumentException("listener must not be null");
      }
      if (metrics == null) {
        throw new IllegalArgumentException("metrics must not be null");
      }
      if (backlogMonitor == null) {
        throw new IllegalArgumentException("backlogMonitor must not be null");
      }
      if (handOff == null) {
        throw new IllegalArgumentException("handOff must not be null");
      }
      if (memberId != null && (memberId.isBlank() || !legalTopicChars(memberId)
          || memberId.length() > 100)) {
        throw new IllegalArgumentException("memberId must be 1 to 100 of [a-zA-Z0-9._-], was "
            + quote(memberId));
      }
      if (handOff == HandOff.TRANSACTIONAL
          && "read_uncommitted".equalsIgnoreCase(consumer.get("isolation.level"))) {
        throw new IllegalArgumentException("consumerProperty isolation.level=read_uncommitted"
            + " contradicts handOff TRANSACTIONAL: retry copies of aborted transactions would be"
            + " read; remove it (the transactional hand-off reads read_committed)");
      }
      transactionTimeoutOf(producer);
      if (groupType == null) {
        throw new IllegalArgumentException("groupType must not be null");
      }
      checkProperties("shareConsumerProperty", shareConsumer);
      for (String key : shareConsumer.keySet()) {
        if (SHARE_REFUSED.contains(key)) {
          throw new IllegalArgumentException("shareConsumerProperty " + key + " is refused by"
              + " Kafka's share consumer (share groups have no offsets, assignment strategy or"
              + " consumer session settings; group-level settings are share.* group configs);"
              + " remove it");
        }
        if ("share.acquire.mode".equals(key)
            && !"record_limit".equalsIgnoreCase(String.valueOf(shareConsumer.get(key)).strip())) {
          throw new IllegalArgumentException("shareConsumerProperty share.acquire.mode="
              + quote(shareConsumer.get(key)) + " is refused: the share runtime acquires no more"
              + " records than it has free slots, which only record_limit guarantees (with"
              + " batch_optimized a poll may acquire more, and a close would give back records"
              + " whose delivery count it used up); remove it or set record_limit");
        }
        if (SHARE_PROTECTED.contains(key)) {
          throw new IllegalArgumentException("shareConsumerProperty " + key + " is set by the"
              + " transport and cannot be overridden (was " + quote(shareConsumer.get(key)) + ")");
        }
      }
      if (!"earliest".equals(shareAutoOffsetReset) && !"latest".equals(shareAutoOffsetReset)) {
        throw new IllegalArgumentException("shareAutoOffsetReset must be earliest or latest, was "
            + quote(shareAutoOffsetReset));
      }
      return new KafkaTransportConfig(this);
    }

    private static void checkProperties(String field, Map<String, String> props) {
      for (Map.Entry<String, String> p : props.entrySet()) {
        if (p.getKey() == null || p.getKey().isBlank()) {
          throw new IllegalArgumentException(field + " name must not be blank, was "
              + quote(p.getKey()));
        }
        if (p.getValue() == null) {
          throw new IllegalArgumentException(field + " " + p.getKey() + " must not be null");
        }
        if (PROTECTED.contains(p.getKey())) {
          throw new IllegalArgumentException(field + " " + p.getKey() + " is set by the "
              + "transport and cannot be overridden (was " + quote(p.getValue()) + ")");
        }
      }
    }

    private static void positive(String field, Duration value) {
      if (value == null || value.isZero() || value.isNegative()) {
        throw new IllegalArgumentException(field + " must be a positive duration, was " + value);
      }
    }

    private static void suffix(String field, String value) {
      if (value == null || value.isBlank() || !legalTopicChars(value)) {
        throw new IllegalArgumentException(field + " must be non-blank and use only "
            + "[a-zA-Z0-9._-], was " + quote(value));
      }
    }
  }
}
