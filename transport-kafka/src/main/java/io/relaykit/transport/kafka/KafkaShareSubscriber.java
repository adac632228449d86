package io.relaykit.transport.kafka;

import io.relaykit.message.MessageHandler;
import io.relaykit.message.Subscriber;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.ordering.OrderingMode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.common.config.ConfigResource;

/**
 * Starts share-group subscriptions (Kafka queues, KIP-932): any number of members read one
 * partition, each record is acknowledged on its own, so parallelism is not capped by the partition
 * count. Selected with {@code relaykit.kafka.group-type=share} ({@link
 * KafkaTransportConfig.GroupType#SHARE}). At-least-once; relaykit's retry with backoff, dead
 * letters and replay on top of what share groups lack.
 *
 * <p>Each subscription is one {@code KafkaShareConsumer} (explicit acknowledgement) in share group
 * {@code spec.group()}, owned by one poll thread that does every acknowledge and commit, and
 * {@code spec.concurrency()} workers fed through a bounded queue; at most {@code
 * spec.maxInFlight()} records are acquired at once ({@code max.poll.records} and {@code
 * share.acquire.mode=record_limit}, which the configuration refuses to change). Outcomes:
 *
 * <ul>
 *   <li>success: ACCEPT.
 *   <li>failure with attempts left: a copy goes to the retry topic (the same topic and headers as
 *       in consumer-group mode) and, once the broker confirmed it, the original is ACCEPTed, so
 *       the backoff holds no share lock. The retry topic is read by a consumer-group reader
 *       ({@link KafkaConsumerRuntime} on the retry topic only, group {@code
 *       <group>}{@value #RETRY_READER_SUFFIX}), started with the subscription: it waits for each
 *       copy's due time by pausing its partition, which a share consumer cannot do. Retries are
 *       therefore capped by the retry topic's partitions (one reader member per partition).
 *   <li>last attempt or permanent failure: a dead-letter copy, confirmed, then ACCEPT (not REJECT:
 *       the dead-letter topic holds it; the share group's own archive would only hide it). If even
 *       a reference dead letter is refused, the record is REJECTed and counted {@code
 *       dead-letter-refused}.
 *   <li>a copy whose send fails (broker down, timeout): RELEASE, so the broker redelivers it (maybe
 *       to another member) at the next delivery count; a record is never ACCEPTed before its copy
 *       is confirmed. On the group's last delivery ({@code deliveryCount >= }{@code
 *       share.delivery.count.limit}) RELEASE would make the broker archive it without a trace, so
 *       the copy is sent again every second while the lock is renewed, until it is confirmed or
 *       the subscription closes.
 * </ul>
 *
 * <p>Attempts: a record's attempt is its copy's attempt header plus {@code deliveryCount - 1}, so
 * broker redeliveries (lock expiry, a member that crashed, RELEASE) count as attempts. Retries go
 * through fresh copies whose delivery count starts at 1, so {@code maxAttempts} may exceed the
 * group's delivery count limit (default 5, at most 10): the limit only counts redeliveries of one
 * record. Past it the broker archives the record with no dead letter; that happens only when all
 * its deliveries ended without a result (members crashed or lost the lock each time). {@link
 * KafkaShareSubscription#deliveryCountLimit()} reports the limit read at subscribe.
 *
 * <p>Long handlers: a record still running at a third of its acquisition lock is renewed (RENEW) on
 * every turn, up to {@code spec.handlerTimeout()}, after which it is a retryable failure as in
 * consumer-group mode. A renewal the broker refuses (the lock was lost) makes the late result
 * count as {@code dropped(topic, "share-lock-lost")}, whether the handler succeeds or fails, and
 * whether the result came before or after the renewal was refused; the broker redelivers the
 * record. A group whose {@code share.renew.acknowledge.enable} is false is refused at subscribe.
 *
 * <p>Closing: no poll for new records once a close began (only renewed records are polled back, to
 * acknowledge them). Records acquired and not begun are RELEASEd, unless they are on their last
 * delivery ({@code deliveryCount >= share.delivery.count.limit}): those, and records whose handler
 * still runs at the close deadline on their last delivery, are dead-lettered with a reason saying
 * so and then ACCEPTed, since a RELEASE would let the broker archive them unhandled.
 *
 * <p>Meters (to the spec's or the config's {@link io.relaykit.monitor.MetricsListener}): in-flight
 * records and the oldest one's age every commit interval; the group's lag as the broker reports it
 * ({@code Admin.listShareGroupOffsets}, asked without waiting); acknowledgements the broker
 * confirmed by type ({@code shareAcknowledged}: accept, release, reject), renewals ({@code
 * shareRenewed}) and lost locks ({@code shareLockLost}).
 *
 * <p>Ordering: UNORDERED, and KEY inside one member (one record per key at a time, in the order the
 * member received them). Other members may run records of the same key at the same time, and a
 * record in retry does not hold its key back: use consumer-group mode ({@link KafkaSubscriber})
 * for strict per-key order. PARTITION is refused. A member takes its next batch only when every
 * record of the last one has an outcome (the share consumer refuses to poll before), so one slow
 * record holds its member's next batch (other members go on).
 *
 * <p>Configuration: the share consumer has its own passthrough ({@link
 * KafkaTransportConfig#shareConsumerProperties()}); where a new group starts ({@link
 * KafkaTransportConfig#shareAutoOffsetReset()}, {@code earliest} by default) is written to the
 * group's {@code share.auto.offset.reset} with the Admin client before the consumer joins. The
 * source topic must exist; retry and dead-letter topics are created as by {@link KafkaSubscriber}.
 * Thread-safe.
 */
public final class KafkaShareSubscriber implements Subscriber {

  /** The suffix of the consumer group that reads a share subscription's retry topic. */
  public static final String RETRY_READER_SUFFIX = ".retry-reader";

  private final KafkaTransportConfig config;
  private final UnaryOperator<CopyHandOff.Sender> senders;
  private final Set<KafkaShareRuntime> running = ConcurrentHashMap.newKeySet();

  private KafkaShareSubscriber(KafkaTransportConfig config,
      UnaryOperator<CopyHandOff.Sender> senders) {
    this.config = config;
    this.senders = senders;
  }

  /**
   * A share subscriber on {@code config}'s brokers. Creates no client until {@link #subscribe}.
   *
   * @param config the brokers, share consumer settings and retry and dead-letter topic naming
   * @return a new subscriber; it holds no resources until it subscribes
   * @throws IllegalArgumentException if {@code config} is null
   * @throws io.relaykit.internal.ClientVersionException if kafka-clients is older than 4.2.0
   */
  public static KafkaShareSubscriber create(KafkaTransportConfig config) {
    return create(config, UnaryOperator.identity());
  }

  /** As above, with the copies' sender wrapped by {@code senders} (fault injection in tests). */
  static KafkaShareSubscriber create(KafkaTransportConfig config,
      UnaryOperator<CopyHandOff.Sender> senders) {
    KafkaClientVersion.checkShareGroups();
    if (config == null) {
      throw new IllegalArgumentException("config must not be null");
    }
    return new KafkaShareSubscriber(config, senders);
  }

  /**
   * Starts consuming {@code spec.destination()} in share group {@code spec.group()}, with its retry
   * reader.
   *
   * @throws IllegalArgumentException if the spec or handler is null, the ordering is PARTITION,
   *     the topic is not a legal name or does not exist, the group makes an illegal retry or
   *     dead-letter topic name, or the group's {@code share.renew.acknowledge.enable} is false
   *     (the broker would refuse the renewals of long handlers)
   * @throws IllegalStateException if the brokers cannot be reached to check the topics or to read
   *     and set the group's configuration
   */
  @Override
  public KafkaShareSubscription subscribe(SubscriptionSpec spec, MessageHandler handler) {
    if (spec == null) {
      throw new IllegalArgumentException("spec must not be null");
    }
    if (handler == null) {
      throw new IllegalArgumentException("handler must not be null");
    }
    if (spec.ordering() == OrderingMode.PARTITION) {
      throw new IllegalArgumentException("ordering PARTITION is not possible in a share group:"
          + " its members share every partition; use UNORDERED or KEY (one member's order), or"
          + " a consumer group (relaykit.kafka.group-type=consumer) for partition order");
    }
    KafkaTransportConfig.requireTopicName("destination", spec.destination());
    String retryTopic = config.retryTopic(spec.destination(), spec.group());
    String deadLetterTopic = config.deadLetterTopic(spec.destination(), spec.group());
    int retryPartitions = KafkaSubscriber.ensureTopics(config, spec.destination(), retryTopic,
        deadLetterTopic);
    int limit = prepareGroup(spec.group());
    KafkaConsumerRuntime reader = new KafkaConsumerRuntime(spec, handler, config, retryTopic,
        retryPartitions, deadLetterTopic, null, () -> { }, spec.group() + RETRY_READER_SUFFIX,
        true, senders);
    KafkaShareRuntime[] self = new KafkaShareRuntime[1];
    KafkaShareRuntime runtime;
    try {
      runtime = new KafkaShareRuntime(spec, handler, config, retryTopic, retryPartitions,
          deadLetterTopic, limit, reader, senders, () -> running.remove(self[0]));
    } catch (RuntimeException e) {
      reader.close(Duration.ZERO);
      throw e;
    }
    self[0] = runtime;
    running.add(runtime);
    reader.start();
    runtime.start();
    return runtime;
  }

  /**
   * Sets the group's {@code share.auto.offset.reset} and reads its delivery count limit.
   *
   * @return the group's {@code share.delivery.count.limit} (the broker's default 5 if unset)
   */
  private int prepareGroup(String group) {
    ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
    long timeout = config.publishTimeout().toMillis();
    try (Admin admin = Admin.create(KafkaSubscriber.adminProperties(config))) {
      Collection<AlterConfigOp> ops = List.of(new AlterConfigOp(
          new ConfigEntry("share.auto.offset.reset", config.shareAutoOffsetReset()),
          AlterConfigOp.OpType.SET));
      admin.incrementalAlterConfigs(Map.of(resource, ops)).all()
          .get(timeout, TimeUnit.MILLISECONDS);
      Config described = admin.describeConfigs(List.of(resource)).all()
          .get(timeout, TimeUnit.MILLISECONDS).get(resource);
      ConfigEntry renew = described == null ? null
          : described.get("share.renew.acknowledge.enable");
      if (renew != null && renew.value() != null
          && "false".equalsIgnoreCase(renew.value().trim())) {
        throw new RenewRefused("share group " + group + " has"
            + " share.renew.acknowledge.enable=false: the broker refuses RENEW, so a handler"
            + " running past its acquisition lock would lose the record to another member; set it"
            + " to true (kafka-configs.sh --alter --entity-type groups --entity-name " + group
            + " --add-config share.renew.acknowledge.enable=true)");
      }
      ConfigEntry limit = described == null ? null : described.get("share.delivery.count.limit");
      if (limit == null || limit.value() == null) {
        return 5;
      }
      return Integer.parseInt(limit.value().trim());
    } catch (RenewRefused e) {
      throw new IllegalArgumentException(e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while configuring share group " + group, e);
    } catch (Exception e) {
      throw new IllegalStateException("could not set share.auto.offset.reset="
          + config.shareAutoOffsetReset() + " or read share.delivery.count.limit of share group "
          + group + " on " + config.bootstrapServers() + ": " + e, e);
    }
  }

  /** A group whose configuration refuses RENEW; turned into an IllegalArgumentException. */
  private static final class RenewRefused extends RuntimeException {
    private static final long serialVersionUID = 1L;

    RenewRefused(String message) {
      super(message, null, false, false);
    }
  }

  /** Closes every running subscription, each draining up to the config's close timeout. */
  @Override
  public void close() {
    for (KafkaShareRuntime r : new ArrayList<>(running)) {
      r.close(config.closeTimeout());
    }
  }
}
