package io.relaykit.transport.kafka;

import io.relaykit.message.MessageHandler;
import io.relaykit.message.Subscriber;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.retry.RateLimiter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

/**
 * Starts Kafka consumer runtimes: at-least-once, out-of-order completion with contiguous commits,
 * UNORDERED / KEY / PARTITION parallelism inside one partition, bounded in-flight work, retries
 * through a delay topic that never block the partition, and a dead-letter topic.
 *
 * <p>Each subscription is one Kafka consumer in {@code spec.group()} reading the topic and its
 * retry topic ({@link KafkaTransportConfig#retryTopic}), with {@code spec.concurrency()} worker
 * threads. The committed offset of a partition is its lowest unfinished record, so a crash or a
 * rebalance repeats only unfinished work. Handlers run on the workers, never on the poll thread,
 * so a slow handler cannot push the consumer out of its group; a handler past {@code
 * spec.handlerTimeout()} is a retryable failure (its late result is ignored).
 *
 * <p>{@link #subscribe} creates the retry and dead-letter topics, with the source topic's partition
 * count, if they are missing; the source topic must exist. Thread-safe.
 *
 * <p>Limits: a partition is consumed by one member of the group, so partitions cap the group's
 * parallelism across machines; inside a member, KEY mode runs one record per key at a time, so a
 * hot key caps its own throughput at one handler's speed. Key parking (later records of a key wait
 * for its record in retry) lives in the member that owns the partition; a retry copy goes to the
 * retry partition numbered like its source partition, which a range assignor gives the same
 * member. Where another member owns it, the park is released at once (no key stays parked, but a
 * record may overtake its key's retry then), as after a rebalance, whose new owner does not know
 * which keys were parked.
 *
 * <p>{@link #subscribe} refuses a retry topic with fewer partitions than the source, and a {@code
 * group.instance.id} that a running subscription of the same group in this JVM already uses.
 */
public final class KafkaSubscriber implements Subscriber {

  /**
   * Static members ({@code group.instance.id}) of running subscriptions in this JVM, group and id
   * to topic: a second subscription with the same id in the same group would fence the first.
   */
  private static final Map<String, String> STATIC_MEMBERS = new ConcurrentHashMap<>();
  private static final System.Logger LOG = System.getLogger(KafkaSubscriber.class.getName());

  private final KafkaTransportConfig config;
  private final Set<KafkaConsumerRuntime> running = ConcurrentHashMap.newKeySet();
  private final java.util.function.UnaryOperator<CopyHandOff.Sender> senders;

  private KafkaSubscriber(KafkaTransportConfig config,
      java.util.function.UnaryOperator<CopyHandOff.Sender> senders) {
    this.config = config;
    this.senders = senders;
  }

  /** The settings every subscription of this subscriber runs on (what a module wired in). */
  KafkaTransportConfig config() {
    return config;
  }

  /**
   * A subscriber on {@code config}'s brokers. Creates no client until {@link #subscribe}.
   *
   * @param config the brokers, consumer settings and retry and dead-letter topic naming
   * @return a new subscriber; it holds no resources until it subscribes
   * @throws IllegalArgumentException if {@code config} is null
   * @throws io.relaykit.internal.ClientVersionException if kafka-clients is older than 4.1.2
   */
  public static KafkaSubscriber create(KafkaTransportConfig config) {
    return create(config, java.util.function.UnaryOperator.identity());
  }

  /** As above, with the copies' sender wrapped by {@code senders} (fault injection in tests). */
  static KafkaSubscriber create(KafkaTransportConfig config,
      java.util.function.UnaryOperator<CopyHandOff.Sender> senders) {
    KafkaClientVersion.check();
    if (config == null) {
      throw new IllegalArgumentException("config must not be null");
    }
    return new KafkaSubscriber(config, senders);
  }

  /**
   * Starts consuming {@code spec.destination()} in {@code spec.group()}.
   *
   * @throws IllegalArgumentException if the spec or handler is null, the topic is not a legal
   *     topic name or does not exist, the group makes an illegal retry or dead-letter topic name,
   *     an existing retry topic has fewer partitions than the source, or the config's {@code
   *     group.instance.id} is in use by a running subscription of the same group in this JVM
   * @throws IllegalStateException if the brokers cannot be reached to check or create the topics
   */
  /**
   * The OpenTelemetry messaging system name.
   *
   * @return {@code "kafka"}
   */
  @Override
  public String messagingSystem() {
    return "kafka";
  }

  @Override
  public KafkaSubscription subscribe(SubscriptionSpec spec, MessageHandler handler) {
    return start(spec, handler, null);
  }

  /**
   * Like {@link #subscribe}, with handler calls limited to {@code rateLimiter}'s rate (shared with
   * whatever else uses it), to protect a downstream that can take only so much. A worker waits for
   * its permit before calling the handler; the wait does not count against the handler timeout.
   *
   * @param spec the topic, group, concurrency, ordering and retry policy
   * @param handler called for each record, on a worker thread
   * @param rateLimiter the permits every handler call waits for
   * @return the running subscription; close it to stop consuming
   * @throws IllegalArgumentException as {@link #subscribe}, or if {@code rateLimiter} is null
   */
  public KafkaSubscription subscribe(SubscriptionSpec spec, MessageHandler handler,
      RateLimiter rateLimiter) {
    if (rateLimiter == null) {
      throw new IllegalArgumentException("rateLimiter must not be null");
    }
    return start(spec, handler, rateLimiter);
  }

  private KafkaSubscription start(SubscriptionSpec spec, MessageHandler handler,
      RateLimiter rateLimiter) {
    if (spec == null) {
      throw new IllegalArgumentException("spec must not be null");
    }
    if (handler == null) {
      throw new IllegalArgumentException("handler must not be null");
    }
    KafkaTransportConfig.requireTopicName("destination", spec.destination());
    String retryTopic = config.retryTopic(spec.destination(), spec.group());
    String deadLetterTopic = config.deadLetterTopic(spec.destination(), spec.group());
    String instanceId = config.consumerProperties().get("group.instance.id");
    String member = instanceId == null ? null : spec.group() + "\u0000" + instanceId;
    if (member != null && STATIC_MEMBERS.putIfAbsent(member, spec.destination()) != null) {
      throw new IllegalArgumentException("group.instance.id " + instanceId + " is already used by"
          + " a running subscription of group " + spec.group() + " (to "
          + STATIC_MEMBERS.get(member) + ") in this JVM: two members of one group sharing a static"
          + " id fence each other; give each subscription its own group.instance.id");
    }
    try {
      int retryPartitions = ensureTopics(config, spec.destination(), retryTopic,
          deadLetterTopic);
      KafkaConsumerRuntime[] self = new KafkaConsumerRuntime[1];
      KafkaConsumerRuntime runtime = new KafkaConsumerRuntime(spec, handler, config, retryTopic,
          retryPartitions, deadLetterTopic, rateLimiter, () -> {
            running.remove(self[0]);
            if (member != null) {
              STATIC_MEMBERS.remove(member);
            }
          }, spec.group(), false, senders);
      self[0] = runtime;
      running.add(runtime);
      runtime.start();
      return runtime;
    } catch (RuntimeException e) {
      if (member != null) {
        STATIC_MEMBERS.remove(member);
      }
      throw e;
    }
  }

  /**
   * Checks the source topic (creating it when missing and the config's {@link KafkaTopics#create()}
   * says so) and creates the missing retry and dead-letter topics, all with the config's {@link
   * KafkaTopics} replication and retention. Idempotent: existing topics are never changed; a
   * source with fewer partitions than {@link KafkaTopics#partitions()} is reported in a WARN line.
   *
   * @return the retry topic's partition count
   * @throws IllegalArgumentException if the source is missing and may not be created (the message
   *     names {@value KafkaConfigKeys#TOPICS_CREATE}), or an existing retry topic has fewer
   *     partitions than the source (retry copies go to the retry partition numbered like their
   *     source partition, where the key's park lives)
   */
  static int ensureTopics(KafkaTransportConfig config, String source, String retryTopic,
      String deadLetterTopic) {
    List<String> derived = List.of(retryTopic, deadLetterTopic);
    KafkaTopics topics = config.topics();
    try (Admin admin = Admin.create(adminProperties(config))) {
      int partitions;
      try {
        partitions = partitionsOf(admin, source, config.publishTimeout(), false);
      } catch (ExecutionException e) {
        if (!(e.getCause() instanceof UnknownTopicOrPartitionException)) {
          throw e;
        }
        if (!topics.create()) {
          throw new IllegalArgumentException("destination topic " + source + " does not exist;"
              + " create it (with the partitions the consumers need) before subscribing, or set "
              + KafkaConfigKeys.TOPICS_CREATE + "=true (with " + KafkaConfigKeys.TOPICS_PARTITIONS
              + ") to have relaykit create it", e);
        }
        NewTopic created = new NewTopic(source, topics.partitions() == 0 ? Optional.empty()
            : Optional.of(topics.partitions()), topics.replication())
            .configs(topics.configs(Map.of()));
        create(admin, List.of(created), config.publishTimeout());
        partitions = partitionsOf(admin, source, config.publishTimeout(), true);
        Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        for (int p = 0; p < partitions; p++) {
          latest.put(new TopicPartition(source, p), OffsetSpec.latest());
        }
        awaitLeaders(admin, latest, config.publishTimeout());
      }
      if (partitions < topics.partitions()) {
        LOG.log(System.Logger.Level.WARNING, "topic " + source + " has " + partitions
            + " partitions, fewer than the " + topics.partitions() + " of "
            + KafkaConfigKeys.TOPICS_PARTITIONS + "; it is left as it is (kafka-topics.sh --alter"
            + " --topic " + source + " --partitions " + topics.partitions() + " adds them, and"
            + " moves keys to other partitions)");
      }
      List<NewTopic> missing = new ArrayList<>();
      Set<String> existing = admin.listTopics().names()
          .get(config.publishTimeout().toMillis(), TimeUnit.MILLISECONDS);
      for (String name : derived) {
        if (!existing.contains(name)) {
          // Copies carry failure headers beside the original: room for them on the topic too.
          missing.add(new NewTopic(name, Optional.of(partitions), topics.replication())
              .configs(topics.configs(Map.of("max.message.bytes", Long.toString(
                  KafkaPublisher.copyLimit(config) + KafkaPublisher.FRAMING_BYTES)))));
        }
      }
      int retryPartitions = partitions;
      if (existing.contains(retryTopic)) {
        retryPartitions = admin.describeTopics(List.of(retryTopic)).allTopicNames()
            .get(config.publishTimeout().toMillis(), TimeUnit.MILLISECONDS).get(retryTopic)
            .partitions().size();
        if (retryPartitions < partitions) {
          throw new IllegalArgumentException("retry topic " + retryTopic + " has "
              + retryPartitions + " partitions, fewer than the " + partitions + " of " + source
              + ": a retry copy goes to the retry partition numbered like its source partition"
              + " (where its key is parked); add partitions (kafka-topics.sh --alter --topic "
              + retryTopic + " --partitions " + partitions + ")");
        }
      }
      if (missing.isEmpty()) {
        return retryPartitions;
      }
      create(admin, missing, config.publishTimeout());
      // A produce racing a new partition's leader start gets NOT_LEADER_OR_FOLLOWER; wait until
      // every new partition answers.
      Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
      for (NewTopic t : missing) {
        for (int p = 0; p < partitions; p++) {
          latest.put(new TopicPartition(t.name(), p), OffsetSpec.latest());
        }
      }
      awaitLeaders(admin, latest, config.publishTimeout());
      return retryPartitions;
    } catch (IllegalArgumentException | IllegalStateException e) {
      throw e;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while checking topics of " + source, e);
    } catch (Exception e) {
      throw new IllegalStateException("could not check or create the topics of " + source
          + " on " + config.bootstrapServers() + ": " + e, e);
    }
  }

  /**
   * Creates {@code topics}; one that exists by now (a twin subscriber created it first) is not an
   * error, and is left as that twin made it.
   */
  private static void create(Admin admin, List<NewTopic> topics, Duration timeout) {
    admin.createTopics(topics).values().forEach((name, f) -> {
      try {
        f.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      } catch (ExecutionException e) {
        if (!(e.getCause() instanceof TopicExistsException)) {
          throw new IllegalStateException("could not create topic " + name, e.getCause());
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while creating topic " + name, e);
      } catch (Exception e) {
        throw new IllegalStateException("could not create topic " + name, e);
      }
    });
  }

  /**
   * The partition count of {@code topic}; when {@code justCreated}, an unknown topic (metadata
   * not yet on the broker that answers) is asked again until {@code timeout}.
   */
  private static int partitionsOf(Admin admin, String topic, Duration timeout,
      boolean justCreated) throws Exception {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      try {
        TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames()
            .get(timeout.toMillis(), TimeUnit.MILLISECONDS).get(topic);
        return d.partitions().size();
      } catch (ExecutionException e) {
        if (!justCreated || !(e.getCause() instanceof UnknownTopicOrPartitionException)
            || System.nanoTime() - deadline > 0) {
          throw e;
        }
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
      }
    }
  }

  /**
   * Waits until every partition answers a list-offsets request: metadata of a topic created a
   * moment ago may not have reached the broker that answers, which fails the request at once.
   */
  static void awaitLeaders(Admin admin, Map<TopicPartition, OffsetSpec> partitions,
      Duration timeout) throws Exception {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      try {
        admin.listOffsets(partitions).all().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        return;
      } catch (ExecutionException e) {
        boolean retriable = e.getCause() instanceof RetriableException;
        if (!retriable || System.nanoTime() - deadline > 0) {
          throw e;
        }
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
      }
    }
  }

  /** Admin settings: the brokers plus the consumer's security settings. */
  static Map<String, Object> adminProperties(KafkaTransportConfig config) {
    Map<String, Object> props = new HashMap<>();
    config.consumerProperties().forEach((k, v) -> {
      if (k.startsWith("security.") || k.startsWith("sasl.") || k.startsWith("ssl.")) {
        props.put(k, v);
      }
    });
    props.put("bootstrap.servers", config.bootstrapServers());
    props.put("client.id", config.clientIdPrefix() + "-admin-" + Long.toHexString(
        System.nanoTime()));
    props.put("default.api.timeout.ms", (int) Math.min(Integer.MAX_VALUE,
        config.publishTimeout().toMillis()));
    props.put("request.timeout.ms", (int) Math.min(Integer.MAX_VALUE,
        config.publishTimeout().toMillis()));
    return props;
  }

  /**
   * Closes every running subscription, each draining up to the config's close timeout.
   */
  @Override
  public void close() {
    Duration deadline = config.closeTimeout();
    for (KafkaConsumerRuntime r : new ArrayList<>(running)) {
      r.close(deadline);
    }
  }
}
