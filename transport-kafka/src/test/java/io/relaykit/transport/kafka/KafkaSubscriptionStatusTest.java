package io.relaykit.transport.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.message.SubscriptionSpec;
import io.relaykit.monitor.SubscriptionGauges;
import io.relaykit.monitor.SubscriptionStatus;
import io.relaykit.ordering.OrderingMode;
import io.relaykit.tck.Await;
import io.relaykit.tck.FaultProxy;
import java.net.ServerSocket;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

@DisplayName("KafkaSubscriptionStatus: group lag read from a real broker")
class KafkaSubscriptionStatusTest {

  private static final Instant AT = Instant.parse("2026-03-01T10:00:00Z");
  /** What a failing read may take beyond its timeout on a loaded 2-core machine. */
  private static final Duration SLACK = Duration.ofSeconds(5);

  private static KafkaSubscriptionStatus.Builder reader() {
    return KafkaSubscriptionStatus.builder(KafkaTestSupport.config().build())
        .clock(InstantSource.fixed(AT));
  }

  /** Commits {@code offsets} for {@code group} as a simple (assign-only) consumer would. */
  private static void commit(String group, Map<TopicPartition, Long> offsets) {
    try (KafkaConsumer<String, byte[]> c = new KafkaConsumer<>(Map.of(
        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, KafkaTestBroker.bootstrapServers(),
        ConsumerConfig.GROUP_ID_CONFIG, group,
        ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false"),
        new StringDeserializer(), new ByteArrayDeserializer())) {
      c.assign(offsets.keySet());
      Map<TopicPartition, OffsetAndMetadata> commit = new java.util.HashMap<>();
      offsets.forEach((tp, o) -> commit.put(tp, new OffsetAndMetadata(o)));
      c.commitSync(commit, Duration.ofSeconds(30));
    }
  }

  private static List<SubscriptionStatus> readOf(KafkaSubscriptionStatus r, String group)
      throws Exception {
    return r.read().stream().filter(s -> group.equals(s.group())).toList();
  }

  @Nested
  @DisplayName("consumer groups")
  class ConsumerGroups {

    @Test
    @DisplayName("lag per (topic, group) is log end minus committed offset summed over the"
        + " committed partitions; a partition never committed is not counted; more records raise"
        + " it; in-flight is UNKNOWN")
    void lagAfterProducingAndCommitting() throws Exception {
      String topic = KafkaTestSupport.newTopic("status-lag", 3);
      KafkaTestSupport.publishAll(topic, KafkaTestSupport.numberedMessages(60, i -> "k" + i));
      long e0 = KafkaTestSupport.endOffset(topic, 0);
      long e1 = KafkaTestSupport.endOffset(topic, 1);
      long e2 = KafkaTestSupport.endOffset(topic, 2);
      assertThat(e0 + e1 + e2).isEqualTo(60);
      assertThat(e0).isGreaterThanOrEqualTo(3);
      String group = topic + "-g";
      String other = topic + "-other";
      TopicPartition p0 = new TopicPartition(topic, 0);
      TopicPartition p1 = new TopicPartition(topic, 1);
      TopicPartition p2 = new TopicPartition(topic, 2);
      commit(group, Map.of(p0, 3L, p1, e1)); // p2 never committed
      commit(other, Map.of(p0, 0L, p1, 0L, p2, e2));

      try (KafkaSubscriptionStatus r = reader().consumerGroups(List.of(group, other)).build()) {
        List<SubscriptionStatus> read = r.read();
        assertThat(read).containsExactly(
            new SubscriptionStatus("kafka-group", topic, group, e0 - 3,
                SubscriptionStatus.UNKNOWN, AT),
            new SubscriptionStatus("kafka-group", topic, other, e0 + e1,
                SubscriptionStatus.UNKNOWN, AT));
        assertThat(r.leftOut()).isZero();

        KafkaTestSupport.publishAll(topic, KafkaTestSupport.numberedMessages(30, i -> "m" + i));
        long more = KafkaTestSupport.endOffset(topic, 0) - e0
            + KafkaTestSupport.endOffset(topic, 1) - e1;
        assertThat(readOf(r, group)).singleElement()
            .satisfies(s -> assertThat(s.lag()).isEqualTo(e0 - 3 + more));
      }
    }

    @Test
    @DisplayName("a relaykit subscriber that handled everything reads lag 0 from the broker, and"
        + " SubscriptionGauges given to it shows the same subscription with its in-flight count")
    void liveSubscriberAndGauges() throws Exception {
      String topic = KafkaTestSupport.newTopic("status-live", 2);
      String group = topic + "-g";
      SubscriptionGauges gauges = SubscriptionGauges.builder().kind("kafka-group").build();
      java.util.concurrent.atomic.AtomicInteger handled =
          new java.util.concurrent.atomic.AtomicInteger();
      try (KafkaSubscriber subscriber = KafkaSubscriber.create(
              KafkaTestSupport.config().metrics(gauges).build());
          KafkaSubscriptionStatus r = reader().consumerGroups(List.of(group)).build()) {
        subscriber.subscribe(SubscriptionSpec.builder(topic, group)
            .ordering(OrderingMode.UNORDERED).build(), d -> handled.incrementAndGet());
        KafkaTestSupport.publishAll(topic, KafkaTestSupport.numberedMessages(40, i -> "k" + i));
        Await.until(Duration.ofSeconds(60), "40 handled", () -> handled.get() >= 40);
        Await.until(Duration.ofSeconds(60), "the broker's lag of " + topic + " reads 0", () -> {
          try {
            return readOf(r, group).stream()
                .anyMatch(s -> s.destination().equals(topic) && s.lag() == 0);
          } catch (Exception e) {
            throw new IllegalStateException(e);
          }
        });
        Await.until(Duration.ofSeconds(30), "the gauges read lag 0 and in-flight 0",
            () -> gauges.read().stream().anyMatch(s -> s.destination().equals(topic)
                && group.equals(s.group()) && s.lag() == 0 && s.inFlight() == 0));
        assertThat(gauges.read()).allSatisfy(s -> assertThat(s.kind()).isEqualTo("kafka-group"));
      }
    }

    @Test
    @DisplayName("a group that goes away reads no entries, named or discovered; discovery finds"
        + " the groups on the cluster")
    void groupThatGoesAway() throws Exception {
      String topic = KafkaTestSupport.newTopic("status-gone", 1);
      KafkaTestSupport.publishAll(topic, KafkaTestSupport.numberedMessages(5, i -> "k"));
      String group = topic + "-g";
      commit(group, Map.of(new TopicPartition(topic, 0), 2L));
      try (KafkaSubscriptionStatus named = reader().consumerGroups(List.of(group)).build();
          KafkaSubscriptionStatus all = reader().maxGroups(10_000).build()) {
        assertThat(readOf(named, group)).singleElement()
            .satisfies(s -> assertThat(s.lag()).isEqualTo(3));
        assertThat(readOf(all, group)).singleElement()
            .satisfies(s -> assertThat(s.lag()).isEqualTo(3));
        KafkaTestBroker.admin().deleteConsumerGroups(List.of(group)).all()
            .get(30, TimeUnit.SECONDS);
        assertThat(readOf(named, group)).isEmpty();
        assertThat(readOf(all, group)).isEmpty();
      }
    }
  }

  @Test
  @DisplayName("share groups: the lag the broker reports per topic (records from the group's start"
      + " offset not yet delivered), in-flight UNKNOWN; lag grows with the topic, falls when the"
      + " start offset moves, and discovery finds the group")
  void shareGroup() throws Exception {
    String topic = KafkaTestSupport.newTopic("status-share", 2);
    String group = topic + "-sg";
    KafkaTestSupport.publishAll(topic, KafkaTestSupport.numberedMessages(20, i -> "k" + i));
    long e0 = KafkaTestSupport.endOffset(topic, 0);
    long e1 = KafkaTestSupport.endOffset(topic, 1);
    TopicPartition p0 = new TopicPartition(topic, 0);
    TopicPartition p1 = new TopicPartition(topic, 1);
    // The group's start offsets, as a share consumer that accepted the records before them would
    // leave them: the broker then holds the group's share-partition state.
    KafkaTestBroker.admin().alterShareGroupOffsets(group, Map.of(p0, 0L, p1, e1)).all()
        .get(30, TimeUnit.SECONDS);
    try (KafkaSubscriptionStatus r = reader().shareGroups(List.of(group)).build()) {
      Await.until(Duration.ofSeconds(30), "the share group's lag reads " + e0,
          () -> lagOf(r, group, topic) == e0);
      assertThat(r.read()).singleElement().satisfies(s -> {
        assertThat(s.kind()).isEqualTo("kafka-share-group");
        assertThat(s.destination()).isEqualTo(topic);
        assertThat(s.inFlight()).isEqualTo(SubscriptionStatus.UNKNOWN);
        assertThat(s.readAt()).isEqualTo(AT);
      });
      KafkaTestSupport.publishAll(topic, KafkaTestSupport.numberedMessages(10, i -> "m" + i));
      long more = KafkaTestSupport.endOffset(topic, 0) - e0
          + KafkaTestSupport.endOffset(topic, 1) - e1;
      Await.until(Duration.ofSeconds(30), "the share group's lag reads " + (e0 + more),
          () -> lagOf(r, group, topic) == e0 + more);
      KafkaTestBroker.admin().alterShareGroupOffsets(group, Map.of(p0, e0)).all()
          .get(30, TimeUnit.SECONDS);
      Await.until(Duration.ofSeconds(30), "the share group's lag reads " + more,
          () -> lagOf(r, group, topic) == more);
      try (KafkaSubscriptionStatus all = reader().maxGroups(10_000).build()) {
        assertThat(readOf(all, group)).singleElement()
            .satisfies(s -> assertThat(s.kind()).isEqualTo("kafka-share-group"));
      }
      KafkaTestBroker.admin().deleteShareGroups(List.of(group)).all().get(30, TimeUnit.SECONDS);
      assertThat(readOf(r, group)).isEmpty();
    }
  }

  private static long lagOf(KafkaSubscriptionStatus r, String group, String topic) {
    try {
      return readOf(r, group).stream().filter(s -> s.destination().equals(topic))
          .mapToLong(SubscriptionStatus::lag).findFirst().orElse(-2);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  @Nested
  @DisplayName("bounds")
  class Bounds {

    @Test
    @DisplayName("past maxGroups or maxPartitions, groups are left out in name order and counted")
    void boundsLeaveGroupsOut() throws Exception {
      String topic = KafkaTestSupport.newTopic("status-bounds", 2);
      KafkaTestSupport.publishAll(topic, KafkaTestSupport.numberedMessages(4, i -> "k" + i));
      TopicPartition p0 = new TopicPartition(topic, 0);
      TopicPartition p1 = new TopicPartition(topic, 1);
      List<String> groups = List.of(topic + "-a", topic + "-b", topic + "-c");
      groups.forEach(g -> commit(g, Map.of(p0, 0L, p1, 0L)));
      try (KafkaSubscriptionStatus two = reader().consumerGroups(groups).maxGroups(2).build();
          KafkaSubscriptionStatus threeParts = reader().consumerGroups(groups)
              .maxPartitions(5).build()) {
        assertThat(two.read()).extracting(SubscriptionStatus::group)
            .containsExactly(topic + "-a", topic + "-b");
        assertThat(two.leftOut()).isEqualTo(1);
        assertThat(threeParts.read()).extracting(SubscriptionStatus::group)
            .containsExactly(topic + "-a", topic + "-b");
        assertThat(threeParts.leftOut()).isEqualTo(1);
      }
    }

    @Test
    @DisplayName("bad settings are refused naming the field and the value")
    void badSettings() {
      KafkaTransportConfig config = KafkaTestSupport.config().build();
      assertThatThrownBy(() -> KafkaSubscriptionStatus.builder(config).maxGroups(0).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxGroups");
      assertThatThrownBy(() -> KafkaSubscriptionStatus.builder(config).maxPartitions(0).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxPartitions");
      assertThatThrownBy(() -> KafkaSubscriptionStatus.builder(config).timeout(Duration.ZERO)
          .build()).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("timeout");
      assertThatThrownBy(() -> KafkaSubscriptionStatus.builder(config).clock(null).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("clock");
      assertThatThrownBy(() -> KafkaSubscriptionStatus.builder(config)
          .consumerGroups(List.of(" "))).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("consumerGroups");
      assertThatThrownBy(() -> KafkaSubscriptionStatus.builder(
          (KafkaTransportConfig) null)).isInstanceOf(IllegalArgumentException.class);
    }
  }

  @Nested
  @DisplayName("broker unreachable")
  class Unreachable {

    private KafkaSubscriptionStatus via(String bootstrap, Duration timeout) {
      return KafkaSubscriptionStatus.builder(KafkaTestSupport.config()
          .bootstrapServers(bootstrap).build()).timeout(timeout).build();
    }

    private void assertFailsWithin(KafkaSubscriptionStatus r, Duration timeout) {
      long start = System.nanoTime();
      assertThatThrownBy(r::read).isInstanceOf(TimeoutException.class)
          .hasMessageContaining("did not finish within " + timeout);
      Duration took = Duration.ofNanos(System.nanoTime() - start);
      assertThat(took).isLessThan(timeout.plus(SLACK));
    }

    @Test
    @DisplayName("a broker that accepts connections and never answers: read throws a"
        + " TimeoutException within its timeout, for discovery and for named groups, and no"
        + " entries are returned")
    void blackholed() throws Exception {
      String[] hostPort = KafkaTestBroker.bootstrapServers().split(",")[0].split(":");
      Duration timeout = Duration.ofSeconds(2);
      try (FaultProxy proxy = FaultProxy.to(hostPort[0], Integer.parseInt(hostPort[1]))) {
        proxy.blackhole();
        try (KafkaSubscriptionStatus all = via(proxy.address(), timeout);
            KafkaSubscriptionStatus named = KafkaSubscriptionStatus.builder(KafkaTestSupport
                .config().bootstrapServers(proxy.address()).build()).timeout(timeout)
                .consumerGroups(List.of("g")).shareGroups(List.of("s")).build()) {
          assertFailsWithin(all, timeout);
          assertFailsWithin(named, timeout);
          assertThat(all.leftOut()).isZero();
        }
      }
    }

    @Test
    @DisplayName("nothing listens on the port: read throws a TimeoutException within its"
        + " timeout")
    void closedPort() throws Exception {
      int port;
      try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
        port = s.getLocalPort();
      }
      Duration timeout = Duration.ofSeconds(2);
      try (KafkaSubscriptionStatus r = via("127.0.0.1:" + port, timeout)) {
        assertFailsWithin(r, timeout);
      }
    }

    @Test
    @DisplayName("an interrupt while waiting for the broker ends the read with"
        + " InterruptedException and keeps the thread's interrupt flag")
    void interrupted() throws Exception {
      String[] hostPort = KafkaTestBroker.bootstrapServers().split(",")[0].split(":");
      try (FaultProxy proxy = FaultProxy.to(hostPort[0], Integer.parseInt(hostPort[1]));
          KafkaSubscriptionStatus r = via(proxy.address(), Duration.ofSeconds(60))) {
        proxy.blackhole();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicBoolean flag = new AtomicBoolean();
        Thread t = new Thread(() -> {
          try {
            r.read();
          } catch (Throwable e) {
            failure.set(e);
            flag.set(Thread.currentThread().isInterrupted());
          }
        }, "status-reader-" + UUID.randomUUID());
        t.start();
        Await.until(Duration.ofSeconds(30), "the reader waits on the broker",
            () -> proxy.acceptedConnections() > 0 && t.getState() != Thread.State.RUNNABLE);
        t.interrupt();
        t.join(TimeUnit.SECONDS.toMillis(30));
        assertThat(t.isAlive()).isFalse();
        assertThat(failure.get()).isInstanceOf(InterruptedException.class);
        assertThat(flag.get()).isTrue();
      }
    }
  }
}
