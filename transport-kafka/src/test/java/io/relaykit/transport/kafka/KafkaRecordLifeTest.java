package io.relaykit.transport.kafka;

import static io.relaykit.transport.kafka.KafkaTestSupport.committedOffsets;
import static io.relaykit.transport.kafka.KafkaTestSupport.newTopic;
import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.message.Delivery;
import io.relaykit.message.InboundMapping;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHandler;
import io.relaykit.message.MessageHeaders;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.ordering.OrderingMode;
import io.relaykit.retry.Backoff;
import io.relaykit.retry.RetryPolicy;
import io.relaykit.tck.Await;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A record's life through both Kafka runtimes when what arrives is bad, when keys are mapped from
 * a header, when a share member closes with records acquired, and when a share lock is lost: every
 * record ends handled, retried or dead-lettered with a reason, in the order of its mapped key.
 */
@DisplayName("Kafka record life: bad relaykit headers, mapped keys, share closes, lock loss")
class KafkaRecordLifeTest {

  private static final Duration WAIT = Duration.ofSeconds(60);

  @RegisterExtension
  final KafkaClients clients = new KafkaClients();

  static void send(List<ProducerRecord<String, byte[]>> records) throws Exception {
    try (KafkaProducer<String, byte[]> raw = new KafkaProducer<>(Map.of(
        "bootstrap.servers", KafkaTestBroker.bootstrapServers()), new StringSerializer(),
        new ByteArraySerializer())) {
      for (ProducerRecord<String, byte[]> r : records) {
        raw.send(r).get(30, TimeUnit.SECONDS);
      }
    }
  }

  /** A relaykit record of {@code message} with {@code extra} headers set over its envelope. */
  static ProducerRecord<String, byte[]> relaykit(String topic, Message message,
      String... extra) {
    Map<String, String> wire = new java.util.LinkedHashMap<>(MessageHeaders.toWire(message));
    for (int i = 0; i < extra.length; i += 2) {
      wire.put(extra[i], extra[i + 1]);
    }
    return new ProducerRecord<>(topic, 0, message.key().orElse(null), message.payload(),
        KafkaRecords.toHeaders(wire));
  }

  /** A foreign record (no relaykit envelope) with {@code headers}. */
  static ProducerRecord<String, byte[]> foreign(String topic, String key, String value,
      String... headers) {
    ProducerRecord<String, byte[]> r = new ProducerRecord<>(topic, 0, key,
        value.getBytes(StandardCharsets.UTF_8));
    for (int i = 0; i < headers.length; i += 2) {
      r.headers().add(headers[i], headers[i + 1].getBytes(StandardCharsets.UTF_8));
    }
    return r;
  }

  static RetryPolicy quick(int attempts) {
    return RetryPolicy.builder().maxAttempts(attempts)
        .backoff(Backoff.fixed(Duration.ofMillis(100))).build();
  }

  static KafkaTransportConfig.Builder shareConfig() {
    return KafkaTestSupport.config().groupType(KafkaTransportConfig.GroupType.SHARE)
        .closeTimeout(Duration.ofSeconds(5));
  }

  static void setGroupConfig(String group, String name, String value) throws Exception {
    ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
    KafkaTestBroker.admin().incrementalAlterConfigs(Map.of(resource, List.of(new AlterConfigOp(
        new ConfigEntry(name, value), AlterConfigOp.OpType.SET)))).all()
        .get(30, TimeUnit.SECONDS);
  }

  /** Counts of {@code dropped} by reason. */
  static final class Drops implements MetricsListener {
    final Map<String, AtomicLong> byReason = new ConcurrentHashMap<>();

    @Override
    public void dropped(String destination, String reason, long count) {
      byReason.computeIfAbsent(reason, k -> new AtomicLong()).addAndGet(count);
    }

    long of(String reason) {
      AtomicLong n = byReason.get(reason);
      return n == null ? 0 : n.get();
    }
  }

  /** Three records: a non-numeric attempt, a bad first-failure time, then a good one. */
  static List<ProducerRecord<String, byte[]>> poisonedHeaders(String topic) {
    return List.of(
        relaykit(topic, KafkaTestSupport.message("k", 0), MessageHeaders.ATTEMPT, "two"),
        relaykit(topic, KafkaTestSupport.message("k", 1), MessageHeaders.ATTEMPT, "1",
            MessageHeaders.FIRST_FAILURE_AT, "yesterday"),
        relaykit(topic, KafkaTestSupport.message("k", 2)));
  }

  static void assertPoisonDeadLettered(KafkaDeadLetterStore dlt) {
    Await.until(WAIT, "both poisoned records dead-lettered",
        () -> dlt.count(DeadLetterQuery.all()) == 2);
    List<String> reasons = dlt.list(DeadLetterQuery.all()).stream().map(DeadLetter::reason)
        .toList();
    assertThat(reasons).anySatisfy(r -> assertThat(r).contains(MessageHeaders.ATTEMPT));
    assertThat(reasons).anySatisfy(r -> assertThat(r).contains(MessageHeaders.FIRST_FAILURE_AT));
  }

  @Nested
  @DisplayName("malformed relaykit attempt headers")
  class MalformedHeaders {

    @Test
    @DisplayName("consumer group: each is dead-lettered naming the header, the partition goes on"
        + " and commits past them")
    void consumerGroup() throws Exception {
      String topic = newTopic("poison-attempt", 1);
      String group = topic + "-g";
      send(poisonedHeaders(topic));
      List<Integer> handled = new CopyOnWriteArrayList<>();
      clients.subscriber().subscribe(SubscriptionSpec.builder(topic, group)
          .retryPolicy(quick(3)).build(),
          d -> handled.add(Integer.parseInt(d.message().payloadUtf8())));
      assertPoisonDeadLettered(clients.deadLetterStore(topic, group));
      Await.until(WAIT, "the good record handled and everything committed",
          () -> handled.contains(2) && Long.valueOf(3).equals(committedOffsets(group, topic)
              .get(0)));
      assertThat(handled).containsExactly(2);
    }

    @Test
    @DisplayName("share group: each is dead-lettered naming the header and accepted; the member"
        + " keeps polling and holds nothing")
    void shareGroup() throws Exception {
      String topic = newTopic("poison-attempt-share", 1);
      String group = topic + "-g";
      send(poisonedHeaders(topic));
      List<Integer> handled = new CopyOnWriteArrayList<>();
      try (KafkaShareSubscriber subscriber = KafkaShareSubscriber.create(shareConfig().build())) {
        KafkaShareSubscription s = subscriber.subscribe(SubscriptionSpec.builder(topic, group)
            .retryPolicy(quick(3)).build(),
            d -> handled.add(Integer.parseInt(d.message().payloadUtf8())));
        assertPoisonDeadLettered(clients.deadLetterStore(topic, group));
        Await.until(WAIT, "all three accepted", () -> s.accepted() == 3);
        assertThat(handled).containsExactly(2);
        assertThat(s.inFlight()).isZero();
        assertThat(s.isRunning()).isTrue();
      }
    }
  }

  /**
   * Two foreign records with different Kafka keys but one mapped key: the first blocks until the
   * test lets it go; the second must not start before.
   */
  static void assertOrderedByMappedKey(java.util.function.Function<MessageHandler, AutoCloseable>
      subscribe, String topic) throws Exception {
    send(List.of(
        foreign(topic, "raw-a", "first", "order-id", "o-1"),
        foreign(topic, "raw-b", "second", "order-id", "o-1")));
    CountDownLatch letGo = new CountDownLatch(1);
    List<String> started = new CopyOnWriteArrayList<>();
    List<String> keys = new CopyOnWriteArrayList<>();
    try (AutoCloseable sub = subscribe.apply(d -> {
      started.add(d.message().payloadUtf8());
      keys.add(d.message().key().orElse(null));
      if (d.message().payloadUtf8().equals("first")) {
        letGo.await(60, TimeUnit.SECONDS);
      }
    })) {
      Await.until(WAIT, "the first record running", () -> started.contains("first"));
      Await.holds(Duration.ofMillis(1500), "the second waits for the first (same mapped key)",
          () -> started.size() == 1);
      letGo.countDown();
      Await.until(WAIT, "both handled", () -> started.size() == 2);
      assertThat(started).containsExactly("first", "second");
      assertThat(keys).containsOnly("o-1");
    }
  }

  static SubscriptionSpec mappedKeySpec(String topic) {
    return SubscriptionSpec.builder(topic, topic + "-g").ordering(OrderingMode.KEY)
        .concurrency(4).maxInFlight(8).retryPolicy(quick(3))
        .inbound(InboundMapping.foreign().keyHeader("order-id").build()).build();
  }

  @Nested
  @DisplayName("KEY mode orders by the key mapped from keyHeader")
  class MappedKeys {

    @Test
    @DisplayName("consumer group: two records of one mapped key never run at once")
    void consumerGroup() throws Exception {
      String topic = newTopic("mapped-key", 1);
      KafkaSubscriber subscriber = clients.subscriber();
      assertOrderedByMappedKey(h -> {
        KafkaSubscription s = subscriber.subscribe(mappedKeySpec(topic), h);
        return () -> s.close(Duration.ofSeconds(5));
      }, topic);
    }

    @Test
    @DisplayName("share group: two records of one mapped key never run at once")
    void shareGroup() throws Exception {
      String topic = newTopic("mapped-key-share", 1);
      KafkaShareSubscriber subscriber = KafkaShareSubscriber.create(shareConfig().build());
      try (subscriber) {
        assertOrderedByMappedKey(h -> {
          KafkaShareSubscription s = subscriber.subscribe(mappedKeySpec(topic), h);
          return () -> s.close(Duration.ofSeconds(5));
        }, topic);
      }
    }

    @Test
    @DisplayName("the retry copy and the dead letter of a foreign record carry its mapped key:"
        + " the handler sees it on every attempt, the dead-letter store lists it")
    void retryAndDeadLetterKeepTheMappedKey() throws Exception {
      String topic = newTopic("mapped-key-copy", 1);
      String group = topic + "-g";
      send(List.of(foreign(topic, "raw-a", "always-fails", "order-id", "o-7")));
      List<String> keys = new CopyOnWriteArrayList<>();
      clients.subscriber().subscribe(SubscriptionSpec.builder(topic, group)
          .ordering(OrderingMode.KEY).retryPolicy(quick(2))
          .inbound(InboundMapping.foreign().keyHeader("order-id").build()).build(), d -> {
            keys.add(d.attempt() + ":" + d.message().key().orElse(null));
            throw new IllegalStateException("fails");
          });
      KafkaDeadLetterStore dlt = clients.deadLetterStore(topic, group);
      Await.until(WAIT, "dead-lettered", () -> dlt.count(DeadLetterQuery.all()) == 1);
      assertThat(keys).containsExactly("1:o-7", "2:o-7");
      DeadLetter dead = dlt.list(DeadLetterQuery.all()).get(0);
      assertThat(dead.message().key()).contains("o-7");
      assertThat(dlt.find(dead.id())).hasValueSatisfying(
          d -> assertThat(d.message().key()).contains("o-7"));
    }
  }

  @Nested
  @DisplayName("share groups: closes and lock loss")
  class ShareLife {

    @Test
    @DisplayName("two graceful closes with a slow record in front (delivery count limit 2):"
        + " no record is archived unhandled; what never ran on its last delivery is"
        + " dead-lettered")
    void rollingClosesDeadLetterLastDeliveries() throws Exception {
      String topic = newTopic("share-rolling", 1);
      String group = topic + "-g";
      setGroupConfig(group, "share.delivery.count.limit", "2");
      List<ProducerRecord<String, byte[]>> records = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        records.add(relaykit(topic, KafkaTestSupport.message("k" + i, i)));
      }
      send(records);
      Set<Integer> handled = ConcurrentHashMap.newKeySet();
      SubscriptionSpec spec = SubscriptionSpec.builder(topic, group)
          .ordering(OrderingMode.UNORDERED).concurrency(1).maxInFlight(4)
          .handlerTimeout(Duration.ofMinutes(2)).retryPolicy(quick(3)).build();
      for (int round = 0; round < 2; round++) {
        CountDownLatch running = new CountDownLatch(1);
        try (KafkaShareSubscriber subscriber = KafkaShareSubscriber.create(shareConfig()
            .closeTimeout(Duration.ofSeconds(2)).build())) {
          KafkaShareSubscription s = subscriber.subscribe(spec, d -> {
            running.countDown();
            new CountDownLatch(1).await(60, TimeUnit.SECONDS); // slow: outlives the close
          });
          assertThat(running.await(60, TimeUnit.SECONDS)).as("a record runs").isTrue();
          s.close(Duration.ofMillis(300));
        }
      }
      KafkaDeadLetterStore dlt = clients.deadLetterStore(topic, group);
      try (KafkaShareSubscriber subscriber = KafkaShareSubscriber.create(shareConfig().build())) {
        subscriber.subscribe(spec, d -> handled.add(Integer.parseInt(d.message().payloadUtf8())));
        Await.until(WAIT, "every record handled or dead-lettered",
            () -> handled.size() + dlt.count(DeadLetterQuery.all()) == 4);
        Await.holds(Duration.ofSeconds(1), "nothing counted twice",
            () -> handled.size() + dlt.count(DeadLetterQuery.all()) == 4);
      }
    }

    @Test
    @DisplayName("a missing source topic is refused at subscribe, on consumer and share groups,"
        + " naming the topic")
    void missingTopicIsRefused() {
      String topic = KafkaTestBroker.uniqueTopic("never-created");
      org.assertj.core.api.Assertions.assertThatThrownBy(() -> clients.subscriber().subscribe(
          SubscriptionSpec.builder(topic, topic + "-g").build(), d -> { }))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(topic)
          .hasMessageContaining("does not exist");
      try (KafkaShareSubscriber subscriber = KafkaShareSubscriber.create(shareConfig().build())) {
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> subscriber.subscribe(
            SubscriptionSpec.builder(topic, topic + "-g").build(), d -> { }))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(topic);
      }
    }

    @Test
    @DisplayName("a share group whose share.renew.acknowledge.enable is false is refused at"
        + " subscribe, naming the setting and the group")
    void renewDisabledIsRefused() throws Exception {
      String topic = newTopic("share-no-renew", 1);
      String group = topic + "-g";
      setGroupConfig(group, "share.renew.acknowledge.enable", "false");
      try (KafkaShareSubscriber subscriber = KafkaShareSubscriber.create(shareConfig().build())) {
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> subscriber.subscribe(
            SubscriptionSpec.builder(topic, group).build(), d -> { }))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("share.renew.acknowledge.enable")
            .hasMessageContaining(group);
      }
    }

    @Test
    @DisplayName("a record whose lock is lost while its handler runs, and whose handler then"
        + " fails, is settled: counted share-lock-lost once, inFlight drops, close is quick")
    void lockLostThenHandlerFails() throws Exception {
      String topic = newTopic("share-lost-fail", 1);
      String group = topic + "-g";
      send(List.of(relaykit(topic, KafkaTestSupport.message("k", 0))));
      Drops drops = new Drops();
      CountDownLatch running = new CountDownLatch(1);
      CountDownLatch letGo = new CountDownLatch(1);
      try (KafkaShareSubscriber subscriber = KafkaShareSubscriber.create(shareConfig().build())) {
        KafkaShareSubscription s = subscriber.subscribe(SubscriptionSpec.builder(topic, group)
            .metrics(drops).retryPolicy(quick(3)).build(), d -> {
              running.countDown();
              letGo.await(60, TimeUnit.SECONDS);
              throw new IllegalStateException("fails after its lock was lost");
            });
        assertThat(running.await(60, TimeUnit.SECONDS)).isTrue();
        assertThat(((KafkaShareRuntime) s).loseLocks().get(30, TimeUnit.SECONDS))
            .as("locks lost").isEqualTo(1);
        assertThat(((KafkaShareRuntime) s).locksLost()).isEqualTo(1);
        letGo.countDown();
        Await.until(WAIT, "the failed record settled", () -> s.inFlight() == 0);
        assertThat(drops.of("share-lock-lost")).isEqualTo(1);
        long t0 = System.nanoTime();
        s.close(Duration.ofSeconds(20));
        assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(10));
      }
    }
  }

  @Nested
  @DisplayName("share group meters")
  class ShareMeters {

    @Test
    @DisplayName("in-flight and oldest age while handlers run, the lag the broker reports,"
        + " renewals of long handlers, and acknowledgements by type")
    void reported() throws Exception {
      String topic = newTopic("share-meters", 1);
      String group = topic + "-g";
      setGroupConfig(group, "share.record.lock.duration.ms", "1000");
      List<ProducerRecord<String, byte[]>> records = new ArrayList<>();
      for (int i = 0; i < 6; i++) {
        records.add(relaykit(topic, KafkaTestSupport.message("k" + i, i)));
      }
      send(records);
      AtomicLong maxInFlight = new AtomicLong();
      AtomicLong maxAgeMs = new AtomicLong();
      AtomicLong maxLag = new AtomicLong(-1);
      AtomicLong renewals = new AtomicLong();
      Map<String, AtomicLong> acks = new ConcurrentHashMap<>();
      MetricsListener meters = new MetricsListener() {
        @Override
        public void inFlight(String destination, String g, long count) {
          maxInFlight.accumulateAndGet(count, Math::max);
        }

        @Override
        public void oldestInFlightAge(String destination, String g, Duration age) {
          maxAgeMs.accumulateAndGet(age.toMillis(), Math::max);
        }

        @Override
        public void consumerLag(String destination, String g, long lag) {
          maxLag.accumulateAndGet(lag, Math::max);
        }

        @Override
        public void shareRenewed(String destination, String g, long count) {
          renewals.addAndGet(count);
        }

        @Override
        public void shareAcknowledged(String destination, String g, String type, long count) {
          acks.computeIfAbsent(type, k -> new AtomicLong()).addAndGet(count);
        }
      };
      CountDownLatch letGo = new CountDownLatch(1);
      try (KafkaShareSubscriber subscriber = KafkaShareSubscriber.create(shareConfig().build())) {
        KafkaShareSubscription s = subscriber.subscribe(SubscriptionSpec.builder(topic, group)
            .concurrency(2).maxInFlight(2).metrics(meters).retryPolicy(quick(3))
            .handlerTimeout(Duration.ofMinutes(1)).build(), d -> letGo.await(60, TimeUnit.SECONDS));
        Await.until(WAIT, "in-flight, an age past a lock period, and a renewal reported",
            () -> maxInFlight.get() >= 1 && maxAgeMs.get() >= 1000 && renewals.get() >= 1);
        Await.until(WAIT, "the broker's lag reported", () -> maxLag.get() > 0);
        assertThat(((KafkaShareRuntime) s).renewed()).isGreaterThanOrEqualTo(renewals.get());
        letGo.countDown();
        Await.until(WAIT, "six ACCEPTs counted", () -> acks.containsKey("accept")
            && acks.get("accept").get() == 6);
        assertThat(s.accepted()).isEqualTo(6);
        assertThat(acks.keySet()).containsExactly("accept");
      }
    }
  }

  @Nested
  @DisplayName("size limit and timers")
  class Bounds {

    @Test
    @DisplayName("a record just under maxRecordBytes is retried after a transient failure, not"
        + " dead-lettered because its retry copy's failure headers push it over")
    void nearLimitRecordIsRetried() throws Exception {
      String topic = newTopic("near-limit", 1);
      String group = topic + "-g";
      int limit = 64 * 1024;
      KafkaTransportConfig.Builder config = KafkaTestSupport.config()
          .closeTimeout(Duration.ofSeconds(5)).maxRecordBytes(limit);
      Message big = Message.builder().type("test").key("k")
          .payload(new byte[limit - 1024]).build();
      try (KafkaPublisher p = KafkaPublisher.create(config.build())) {
        p.publish(topic, big).get(30, TimeUnit.SECONDS);
      }
      List<Integer> attempts = new CopyOnWriteArrayList<>();
      clients.subscriber(config).subscribe(SubscriptionSpec.builder(topic, group)
          .retryPolicy(quick(3)).build(), d -> {
            attempts.add(d.attempt());
            if (d.attempt() == 1) {
              throw new IllegalStateException("transient: "
                  + "x".repeat(io.relaykit.deadletter.FailureRoute.MAX_EXCEPTION_MESSAGE_BYTES));
            }
          });
      Await.until(WAIT, "retried", () -> attempts.contains(2));
      assertThat(clients.deadLetterStore(topic, group).count(DeadLetterQuery.all())).isZero();
    }

    @Test
    @DisplayName("share group: a retry send blocked on the shared timer does not delay another"
        + " handler's timeout")
    void blockedSendDoesNotDelayTimeouts() throws Exception {
      String topic = newTopic("share-timer", 1);
      String group = topic + "-g";
      CountDownLatch unblock = new CountDownLatch(1);
      AtomicInteger sends = new AtomicInteger();
      AtomicInteger timedOut = new AtomicInteger();
      MetricsListener timeouts = new MetricsListener() {
        @Override
        public void handlerTimedOut(String destination, String g, Duration duration) {
          timedOut.incrementAndGet();
        }
      };
      try (KafkaShareSubscriber subscriber = KafkaShareSubscriber.create(shareConfig().build(),
          real -> (w, copy, what) -> {
            if (sends.incrementAndGet() == 1) {
              try { // the first copy's send blocks (a producer waiting for metadata)
                unblock.await(30, TimeUnit.SECONDS);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            }
            return real.send(w, copy, what);
          })) {
        // One worker: b starts when a's timeout freed it, so b's deadline comes after a's send
        // began blocking.
        send(List.of(relaykit(topic, KafkaTestSupport.message("a", 0)),
            relaykit(topic, KafkaTestSupport.message("b", 1))));
        subscriber.subscribe(SubscriptionSpec.builder(topic, group).concurrency(1)
            .maxInFlight(4).metrics(timeouts).retryPolicy(quick(3))
            .handlerTimeout(Duration.ofMillis(500)).build(), d -> {
              if (d.attempt() == 1) {
                new CountDownLatch(1).await(60, TimeUnit.SECONDS); // hangs until interrupted
              }
            });
        Await.until(WAIT, "the first handler timed out and its send blocks",
            () -> timedOut.get() >= 1 && sends.get() == 1);
        Await.until(Duration.ofSeconds(10), "the second handler timed out while the first send"
            + " still blocks", () -> timedOut.get() == 2);
        assertThat(unblock.getCount()).as("the first send still blocks").isEqualTo(1);
      } finally {
        unblock.countDown();
      }
    }
  }
}
