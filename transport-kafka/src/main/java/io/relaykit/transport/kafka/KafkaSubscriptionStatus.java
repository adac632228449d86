package io.relaykit.transport.kafka;

import io.relaykit.monitor.SubscriptionStatus;
import io.relaykit.monitor.SubscriptionStatusSource;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsOptions;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsOptions;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.errors.UnsupportedVersionException;

/**
 * Reads the lag of Kafka consumer groups and share groups from the brokers, per (topic, group),
 * with the Kafka Admin client: what the operator console shows for subscriptions of any process,
 * not only this one's (for those, {@link io.relaykit.monitor.SubscriptionGauges} has in-flight
 * counts too).
 *
 * <p>What one {@link #read()} reports:
 *
 * <ul>
 *   <li><b>Consumer groups</b> (kind {@value #KIND_GROUP}; classic and new-protocol groups): for
 *       each topic the group committed offsets on, the lag is the sum over its partitions of the
 *       log-end offset minus the committed offset (never below 0 per partition). A partition on
 *       which the group never committed is not counted: where the group would start there depends
 *       on the consumer's reset policy, which the broker does not know; a topic without any
 *       committed partition does not appear. A topic deleted since the group committed reads lag
 *       {@link SubscriptionStatus#UNKNOWN}. In-flight is {@link SubscriptionStatus#UNKNOWN}: the
 *       broker does not know what a member fetched and has not committed.
 *   <li><b>Share groups</b> (kind {@value #KIND_SHARE_GROUP}): for each topic whose share-partition
 *       state the broker holds, the lag is the sum of the lag the broker reports per partition
 *       ({@code Admin.listShareGroupOffsets}); when the broker reports no lag for one of them, the
 *       topic's lag is {@link SubscriptionStatus#UNKNOWN} rather than a partial sum. In-flight
 *       (records acquired and not yet acknowledged) is not offered by the Admin API of this client
 *       version: {@link SubscriptionStatus#UNKNOWN}.
 *   <li>Every entry's {@code readAt} is the clock's time when the read finished.
 * </ul>
 *
 * <p>Which groups: those named with {@link Builder#consumerGroups} and {@link Builder#shareGroups};
 * without either, every consumer and share group on the cluster is listed ({@code
 * Admin.listGroups}), in name order, up to {@code maxGroups}. A named group that does not exist
 * (or went away) reads no entries. A relaykit consumer group also commits on its retry topics,
 * which appear as topics of their own.
 *
 * <p>Bounds: at most {@code maxGroups} groups (default {@value #DEFAULT_MAX_GROUPS}) and at most
 * {@code maxPartitions} partitions (default {@value #DEFAULT_MAX_PARTITIONS}) per read; groups
 * past either bound (consumer groups in name order, then share groups in name order) are left out
 * and counted by {@link #leftOut()}. A single group's offsets are fetched whole before the
 * partition bound is applied to it.
 *
 * <p>Cost of one read, all requests under one deadline ({@code timeout}, default 10 s): with
 * discovery, one {@code ListGroups} request per broker for each kind; one {@code OffsetFetch}
 * per group coordinator for the consumer groups and one {@code DescribeShareGroupOffsets} per
 * coordinator for the share groups (both sent together); then one {@code ListOffsets} request
 * per partition leader for the consumer groups' partitions; plus the metadata the Admin client
 * needs. Memory is proportional to the partitions read.
 *
 * <p>When the brokers cannot be reached, are slow, or refuse a request (authorization, a
 * coordinator that keeps moving), {@link #read()} throws within about {@code timeout}: a {@link
 * TimeoutException} naming the request that did not finish, or an {@link IllegalStateException}
 * naming the request that failed, with the broker's error as its cause. No figures of that read
 * are returned; nothing is written to the cluster, ever, so a failed read leaves no state behind
 * and the next read starts afresh. Thread-safe: concurrent reads run side by side.
 */
public final class KafkaSubscriptionStatus implements SubscriptionStatusSource, AutoCloseable {

  /** The kind of a consumer group's entries. */
  public static final String KIND_GROUP = "kafka-group";
  /** The kind of a share group's entries. */
  public static final String KIND_SHARE_GROUP = "kafka-share-group";
  /** Default bound on the groups of one read. */
  public static final int DEFAULT_MAX_GROUPS = 100;
  /** Default bound on the partitions of one read. */
  public static final int DEFAULT_MAX_PARTITIONS = 10_000;
  /** Default deadline of one read. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(10);

  private final Admin admin;
  private final boolean ownsAdmin;
  private final String brokers;
  private final List<String> consumerGroups;
  private final List<String> shareGroups;
  private final boolean discover;
  private final int maxGroups;
  private final int maxPartitions;
  private final Duration timeout;
  private final InstantSource clock;
  private volatile int leftOut;

  private KafkaSubscriptionStatus(Builder b, Admin admin, boolean ownsAdmin, String brokers) {
    this.admin = admin;
    this.ownsAdmin = ownsAdmin;
    this.brokers = brokers;
    this.consumerGroups = List.copyOf(new TreeSet<>(b.consumerGroups));
    this.shareGroups = List.copyOf(new TreeSet<>(b.shareGroups));
    this.discover = b.consumerGroups.isEmpty() && b.shareGroups.isEmpty();
    this.maxGroups = b.maxGroups;
    this.maxPartitions = b.maxPartitions;
    this.timeout = b.timeout;
    this.clock = b.clock;
  }

  /**
   * A reader with its own Admin client on {@code config}'s brokers (with the consumer's security
   * settings), closed by {@link #close()}; its clock from {@code config}. Creating it contacts no
   * broker.
   *
   * @param config the transport's configuration; not null
   * @return a builder; {@link Builder#build()} creates the Admin client
   * @throws IllegalArgumentException if {@code config} is null
   */
  public static Builder builder(KafkaTransportConfig config) {
    if (config == null) {
      throw new IllegalArgumentException("config must not be null");
    }
    return new Builder(config, null);
  }

  /**
   * A reader on an Admin client the caller owns: {@link #close()} leaves it open. Its settings
   * (request timeouts) do not extend a read past {@code timeout}.
   *
   * @param admin the Admin client; not null
   * @return a builder
   * @throws IllegalArgumentException if {@code admin} is null
   */
  public static Builder builder(Admin admin) {
    if (admin == null) {
      throw new IllegalArgumentException("admin must not be null");
    }
    return new Builder(null, admin);
  }

  /**
   * Every consumer and share group's lag on {@code config}'s brokers, with the defaults.
   *
   * @param config the transport's configuration; not null
   * @return a reader owning its Admin client
   * @throws IllegalArgumentException if {@code config} is null
   */
  public static KafkaSubscriptionStatus create(KafkaTransportConfig config) {
    return builder(config).build();
  }

  /**
   * Reads the groups' lag now; see the class documentation for what, at what cost, and how it
   * fails.
   *
   * @return consumer groups' entries, then share groups', each sorted by group then topic; at
   *     most one per (topic, group)
   * @throws TimeoutException if the read did not finish within {@code timeout}
   * @throws IllegalStateException if a broker refused or failed a request
   * @throws InterruptedException if the calling thread was interrupted while waiting (its
   *     requests are cancelled)
   */
  @Override
  public List<SubscriptionStatus> read() throws TimeoutException, InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    List<String> groups = consumerGroups;
    List<String> shares = shareGroups;
    if (discover) {
      KafkaFuture<Collection<GroupListing>> consumers = admin.listGroups(
          ListGroupsOptions.forConsumerGroups().timeoutMs(remainingMs(deadline))).all();
      KafkaFuture<Collection<GroupListing>> shared = admin.listGroups(
          ListGroupsOptions.forShareGroups().timeoutMs(remainingMs(deadline))).all();
      groups = names(await(consumers, deadline, "listGroups (consumer groups)"));
      try {
        shares = names(await(shared, deadline, "listGroups (share groups)"));
      } catch (IllegalStateException e) {
        if (!(e.getCause() instanceof UnsupportedVersionException)) {
          throw e;
        }
        shares = List.of(); // brokers without share groups have none to list
      }
    }
    int skipped = 0;
    if (groups.size() > maxGroups) {
      skipped += groups.size() - maxGroups;
      groups = groups.subList(0, maxGroups);
    }
    int shareRoom = maxGroups - groups.size();
    if (shares.size() > shareRoom) {
      skipped += shares.size() - shareRoom;
      shares = shares.subList(0, shareRoom);
    }

    // Committed offsets and share-group offsets, asked together.
    Map<String, KafkaFuture<Map<TopicPartition, OffsetAndMetadata>>> committed = new TreeMap<>();
    if (!groups.isEmpty()) {
      Map<String, ListConsumerGroupOffsetsSpec> specs = new HashMap<>();
      groups.forEach(g -> specs.put(g, new ListConsumerGroupOffsetsSpec()));
      var result = admin.listConsumerGroupOffsets(specs,
          new ListConsumerGroupOffsetsOptions().timeoutMs(remainingMs(deadline)));
      groups.forEach(g -> committed.put(g, result.partitionsToOffsetAndMetadata(g)));
    }
    Map<String, KafkaFuture<Map<TopicPartition, SharePartitionOffsetInfo>>> shareOffsets =
        new TreeMap<>();
    if (!shares.isEmpty()) {
      Map<String, ListShareGroupOffsetsSpec> specs = new HashMap<>();
      shares.forEach(g -> specs.put(g, new ListShareGroupOffsetsSpec()));
      var result = admin.listShareGroupOffsets(specs,
          new ListShareGroupOffsetsOptions().timeoutMs(remainingMs(deadline)));
      shares.forEach(g -> shareOffsets.put(g, result.partitionsToOffsetInfo(g)));
    }

    int partitions = 0;
    Map<String, Map<TopicPartition, OffsetAndMetadata>> byGroup = new TreeMap<>();
    for (var e : committed.entrySet()) {
      Map<TopicPartition, OffsetAndMetadata> offsets =
          awaitGroup(e.getValue(), deadline, "listConsumerGroupOffsets", e.getKey());
      if (offsets == null) {
        continue; // the group does not exist (any more)
      }
      Map<TopicPartition, OffsetAndMetadata> present = new HashMap<>();
      offsets.forEach((tp, o) -> {
        if (o != null) {
          present.put(tp, o);
        }
      });
      if (partitions + present.size() > maxPartitions) {
        skipped++;
        continue;
      }
      partitions += present.size();
      byGroup.put(e.getKey(), present);
    }
    Map<String, Map<TopicPartition, SharePartitionOffsetInfo>> byShare = new TreeMap<>();
    for (var e : shareOffsets.entrySet()) {
      Map<TopicPartition, SharePartitionOffsetInfo> offsets =
          awaitGroup(e.getValue(), deadline, "listShareGroupOffsets", e.getKey());
      if (offsets == null) {
        continue;
      }
      if (partitions + offsets.size() > maxPartitions) {
        skipped++;
        continue;
      }
      partitions += offsets.size();
      byShare.put(e.getKey(), offsets);
    }

    // Log-end offsets of every committed partition, one request per leader.
    Set<TopicPartition> needEnds = new LinkedHashSet<>();
    byGroup.values().forEach(m -> needEnds.addAll(m.keySet()));
    Map<TopicPartition, Long> ends = new HashMap<>();
    Set<String> unknownTopics = new TreeSet<>();
    if (!needEnds.isEmpty()) {
      Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
      needEnds.forEach(tp -> latest.put(tp, OffsetSpec.latest()));
      ListOffsetsResult result = admin.listOffsets(latest,
          new ListOffsetsOptions().timeoutMs(remainingMs(deadline)));
      for (TopicPartition tp : needEnds) {
        try {
          ends.put(tp, await(result.partitionResult(tp), deadline, "listOffsets").offset());
        } catch (IllegalStateException e) {
          if (e.getCause() instanceof UnknownTopicOrPartitionException) {
            unknownTopics.add(tp.topic()); // deleted since the group committed on it
          } else {
            throw e;
          }
        }
      }
    }

    Instant at = clock.instant();
    List<SubscriptionStatus> out = new ArrayList<>();
    byGroup.forEach((group, offsets) -> {
      Map<String, Long> lagByTopic = new TreeMap<>();
      offsets.forEach((tp, o) -> {
        long lag = unknownTopics.contains(tp.topic()) ? SubscriptionStatus.UNKNOWN
            : Math.max(0, ends.get(tp) - o.offset());
        lagByTopic.merge(tp.topic(), lag, KafkaSubscriptionStatus::sum);
      });
      lagByTopic.forEach((topic, lag) -> out.add(new SubscriptionStatus(KIND_GROUP, topic, group,
          lag, SubscriptionStatus.UNKNOWN, at)));
    });
    byShare.forEach((group, offsets) -> {
      Map<String, Long> lagByTopic = new TreeMap<>();
      offsets.forEach((tp, info) -> {
        long lag = info == null || info.lag().isEmpty() ? SubscriptionStatus.UNKNOWN
            : Math.max(0, info.lag().get());
        lagByTopic.merge(tp.topic(), lag, KafkaSubscriptionStatus::sum);
      });
      lagByTopic.forEach((topic, lag) -> out.add(new SubscriptionStatus(KIND_SHARE_GROUP, topic,
          group, lag, SubscriptionStatus.UNKNOWN, at)));
    });
    leftOut = skipped;
    return out;
  }

  /**
   * Groups the latest successful {@link #read()} left out for its bounds ({@code maxGroups},
   * {@code maxPartitions}).
   *
   * @return how many groups were not read; 0 before the first read
   */
  public int leftOut() {
    return leftOut;
  }

  /**
   * Closes the Admin client if this reader created it, without waiting: a read running at the
   * same time fails (its requests are aborted). A no-op for a caller's Admin client. Idempotent.
   */
  @Override
  public void close() {
    if (ownsAdmin) {
      admin.close(Duration.ZERO);
    }
  }

  @Override
  public String toString() {
    return "KafkaSubscriptionStatus[" + brokers + (discover ? ", all groups" : ", groups="
        + consumerGroups + ", shareGroups=" + shareGroups) + ", timeout=" + timeout + "]";
  }

  /** UNKNOWN absorbs: one partition that cannot be counted makes the topic's sum unknown. */
  private static long sum(long a, long b) {
    return a < 0 || b < 0 ? SubscriptionStatus.UNKNOWN : a + b;
  }

  private static List<String> names(Collection<GroupListing> listings) {
    TreeSet<String> names = new TreeSet<>();
    listings.forEach(l -> names.add(l.groupId()));
    return new ArrayList<>(names);
  }

  /**
   * The Admin call's own timeout: past the read's deadline by a margin, so the read's deadline is
   * what the caller meets (a {@link TimeoutException}); the call is cancelled when it passes.
   */
  private static int remainingMs(long deadline) {
    long ms = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()) + ADMIN_MARGIN_MS;
    return (int) Math.max(1, Math.min(Integer.MAX_VALUE, ms));
  }

  private static final long ADMIN_MARGIN_MS = 1_000;

  /** The group's offsets, or null when the broker says the group does not exist. */
  private <T> T awaitGroup(KafkaFuture<T> future, long deadline, String request, String group)
      throws TimeoutException, InterruptedException {
    try {
      return await(future, deadline, request + " of group " + group);
    } catch (IllegalStateException e) {
      if (e.getCause() instanceof GroupIdNotFoundException) {
        return null;
      }
      throw e;
    }
  }

  private <T> T await(KafkaFuture<T> future, long deadline, String request)
      throws TimeoutException, InterruptedException {
    try {
      return future.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      future.cancel(true);
      throw timedOut(request);
    } catch (InterruptedException e) {
      future.cancel(true);
      Thread.currentThread().interrupt();
      throw e;
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof org.apache.kafka.common.errors.TimeoutException
          || deadline - System.nanoTime() <= 0) {
        TimeoutException t = timedOut(request);
        t.initCause(cause);
        throw t;
      }
      throw new IllegalStateException("could not read subscription status from Kafka at "
          + brokers + ": " + request + " failed: " + cause, cause);
    }
  }

  private TimeoutException timedOut(String request) {
    return new TimeoutException("could not read subscription status from Kafka at " + brokers
        + ": " + request + " did not finish within " + timeout);
  }

  /**
   * Builds {@link KafkaSubscriptionStatus}; {@link #build()} validates, naming the field and the
   * value.
   */
  public static final class Builder {
    private final KafkaTransportConfig config;
    private final Admin admin;
    private final Set<String> consumerGroups = new TreeSet<>();
    private final Set<String> shareGroups = new TreeSet<>();
    private int maxGroups = DEFAULT_MAX_GROUPS;
    private int maxPartitions = DEFAULT_MAX_PARTITIONS;
    private Duration timeout = DEFAULT_TIMEOUT;
    private InstantSource clock;

    private Builder(KafkaTransportConfig config, Admin admin) {
      this.config = config;
      this.admin = admin;
      this.clock = config == null ? InstantSource.system() : config.clock();
    }

    /**
     * Reads these consumer groups (and the share groups named with {@link #shareGroups}) instead
     * of every group on the cluster.
     *
     * @param groups group ids; not null, none blank
     * @return this builder
     * @throws IllegalArgumentException if {@code groups} is null or holds a null or blank id
     */
    public Builder consumerGroups(Collection<String> groups) {
      consumerGroups.addAll(checked("consumerGroups", groups));
      return this;
    }

    /**
     * Reads these share groups (and the consumer groups named with {@link #consumerGroups})
     * instead of every group on the cluster.
     *
     * @param groups group ids; not null, none blank
     * @return this builder
     * @throws IllegalArgumentException if {@code groups} is null or holds a null or blank id
     */
    public Builder shareGroups(Collection<String> groups) {
      shareGroups.addAll(checked("shareGroups", groups));
      return this;
    }

    /**
     * The most groups one read covers. Default {@value #DEFAULT_MAX_GROUPS}.
     *
     * @param maxGroups the bound; checked (1 to 10 000) by {@link #build()}
     * @return this builder
     */
    public Builder maxGroups(int maxGroups) {
      this.maxGroups = maxGroups;
      return this;
    }

    /**
     * The most partitions one read covers, over all its groups. Default {@value
     * #DEFAULT_MAX_PARTITIONS}.
     *
     * @param maxPartitions the bound; checked (1 to 1 000 000) by {@link #build()}
     * @return this builder
     */
    public Builder maxPartitions(int maxPartitions) {
      this.maxPartitions = maxPartitions;
      return this;
    }

    /**
     * The deadline of one read, over all its requests. Default 10 s.
     *
     * @param timeout the deadline; checked (positive, at most one hour) by {@link #build()}
     * @return this builder
     */
    public Builder timeout(Duration timeout) {
      this.timeout = timeout;
      return this;
    }

    /**
     * The clock of {@link SubscriptionStatus#readAt()}. Default: the transport config's clock,
     * or the system clock for a builder on an Admin client.
     *
     * @param clock the clock; checked (not null) by {@link #build()}
     * @return this builder
     */
    public Builder clock(InstantSource clock) {
      this.clock = clock;
      return this;
    }

    /**
     * Builds the reader; on a transport config, creates its Admin client (no broker contacted).
     *
     * @return the reader
     * @throws IllegalArgumentException if a bound or the timeout is out of range or the clock is
     *     null
     */
    public KafkaSubscriptionStatus build() {
      if (maxGroups < 1 || maxGroups > 10_000) {
        throw new IllegalArgumentException("maxGroups must be 1..10000, was " + maxGroups);
      }
      if (maxPartitions < 1 || maxPartitions > 1_000_000) {
        throw new IllegalArgumentException("maxPartitions must be 1..1000000, was "
            + maxPartitions);
      }
      if (timeout == null || timeout.isZero() || timeout.isNegative()
          || timeout.compareTo(Duration.ofHours(1)) > 0) {
        throw new IllegalArgumentException("timeout must be positive and at most 1 h, was "
            + timeout);
      }
      if (clock == null) {
        throw new IllegalArgumentException("clock must not be null");
      }
      if (admin != null) {
        return new KafkaSubscriptionStatus(this, admin, false, "the given Admin client");
      }
      Map<String, Object> props = KafkaSubscriber.adminProperties(config);
      int ms = (int) Math.min(Integer.MAX_VALUE, timeout.toMillis() + ADMIN_MARGIN_MS);
      props.put("default.api.timeout.ms", ms);
      props.put("request.timeout.ms", ms);
      return new KafkaSubscriptionStatus(this, Admin.create(props), true,
          config.bootstrapServers());
    }

    private static Collection<String> checked(String field, Collection<String> groups) {
      if (groups == null) {
        throw new IllegalArgumentException(field + " must not be null");
      }
      for (String g : groups) {
        if (g == null || g.isBlank()) {
          throw new IllegalArgumentException(field + " must not hold a null or blank id, was "
              + groups);
        }
      }
      return groups;
    }
  }
}
