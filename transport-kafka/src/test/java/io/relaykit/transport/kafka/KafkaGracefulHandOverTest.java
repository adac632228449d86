package io.relaykit.transport.kafka;

import static io.relaykit.transport.kafka.KafkaTestSupport.message;
import static io.relaykit.transport.kafka.KafkaTestSupport.newTopic;
import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.message.Delivery;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHandler;
import io.relaykit.message.SubscriptionSpec;
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
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.common.utils.Utils;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Graceful membership changes hand a partition over without a second handling: a key parked for
 * its retry holds the partition's commit position, and the records after it that finished must not
 * run again at the next owner (a close, and a revoke when a member joins).
 */
@DisplayName("Kafka graceful hand-over: no record handled twice across a close or a revoke")
class KafkaGracefulHandOverTest {

  private static final Duration WAIT = Duration.ofSeconds(60);

  @RegisterExtension
  final KafkaClients clients = new KafkaClients();

  /** A key the default partitioner puts on {@code partition} of {@code partitions}. */
  private static String keyOn(int partition, int partitions, String prefix) {
    for (int i = 0; ; i++) {
      String key = prefix + i;
      if (Utils.toPositive(Utils.murmur2(key.getBytes(StandardCharsets.UTF_8))) % partitions
          == partition) {
        return key;
      }
    }
  }

  /**
   * Per partition: its stuck key's first record (fails once, its retry due after {@code
   * backoff}), then {@code perPartition} records alternating that key and other keys.
   */
  private static List<Message> records(int partitions, int perPartition, Set<String> failOnce) {
    List<Message> out = new ArrayList<>();
    int seq = 0;
    for (int p = 0; p < partitions; p++) {
      String stuck = keyOn(p, partitions, "stuck-");
      Message first = message(stuck, seq++);
      failOnce.add(first.id());
      out.add(first);
      for (int i = 0; i < perPartition; i++) {
        out.add(message(i % 2 == 0 ? stuck : keyOn(p, partitions, "k" + (i % 5) + "-"), seq++));
      }
    }
    return out;
  }

  private static MessageHandler counting(Map<String, AtomicInteger> handled,
      Set<String> failOnce) {
    return (Delivery d) -> {
      if (d.attempt() == 1 && failOnce.contains(d.message().id())) {
        throw new IllegalStateException("fails once");
      }
      handled.computeIfAbsent(d.message().id(), k -> new AtomicInteger()).incrementAndGet();
    };
  }

  private static SubscriptionSpec spec(String topic, String group) {
    return SubscriptionSpec.builder(topic, group).ordering(OrderingMode.KEY)
        .concurrency(4).maxInFlight(32)
        .retryPolicy(RetryPolicy.builder().maxAttempts(3)
            .backoff(Backoff.fixed(Duration.ofSeconds(4))).build())
        .build();
  }

  private static void assertEachOnce(Map<String, AtomicInteger> handled, List<Message> all) {
    Await.until(WAIT, "every record handled", () -> all.stream()
        .allMatch(m -> handled.containsKey(m.id())));
    List<String> twice = new ArrayList<>();
    handled.forEach((id, n) -> {
      if (n.get() != 1) {
        twice.add(id + " x" + n.get());
      }
    });
    assertThat(twice).as("records handled more than once").isEmpty();
  }

  @Test
  @DisplayName("a graceful close with a key parked: the next member runs only what was not done")
  void closeWithParkedKeyHandsOverOnlyUnfinished() throws Exception {
    String topic = newTopic("handover-close", 1);
    String group = topic + "-g";
    Set<String> failOnce = ConcurrentHashMap.newKeySet();
    List<Message> all = records(1, 30, failOnce);
    KafkaTestSupport.publishAll(topic, all);
    Map<String, AtomicInteger> handled = new ConcurrentHashMap<>();
    long others = all.stream().filter(m -> !m.key().orElseThrow().startsWith("stuck-")).count();
    KafkaSubscription first = clients.subscriber().subscribe(spec(topic, group),
        counting(handled, failOnce));
    Await.until(WAIT, "the other keys' records handled", () -> all.stream()
        .filter(m -> !m.key().orElseThrow().startsWith("stuck-"))
        .filter(m -> handled.containsKey(m.id())).count() == others);
    assertThat(first.close(Duration.ofSeconds(5))).isTrue();
    clients.subscriber().subscribe(spec(topic, group), counting(handled, failOnce));
    assertEachOnce(handled, all);
  }

  @Test
  @DisplayName("a close at a zero deadline with a record stuck in its handler: the next member"
      + " runs that record again, and only it")
  void closeAtZeroDeadlineRepeatsOnlyTheStuckRecord() throws Exception {
    String topic = newTopic("handover-stuck", 1);
    String group = topic + "-g";
    List<Message> all = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      all.add(message("k" + (i % 7), i));
    }
    KafkaTestSupport.publishAll(topic, all);
    java.util.concurrent.CountDownLatch never = new java.util.concurrent.CountDownLatch(1);
    Set<String> firstRun = ConcurrentHashMap.newKeySet();
    String stuck = all.get(12).id();
    KafkaSubscription first = clients.subscriber().subscribe(SubscriptionSpec.builder(topic, group)
        .ordering(OrderingMode.UNORDERED).concurrency(4).maxInFlight(100)
        .handlerTimeout(Duration.ofMinutes(2)).build(), d -> {
          if (d.message().id().equals(stuck)) {
            never.await();
          }
          firstRun.add(d.message().id());
        });
    Await.until(WAIT, "39 records finished, one stuck", () -> firstRun.size() == 39);
    first.close(Duration.ZERO);
    List<String> secondRun = new java.util.concurrent.CopyOnWriteArrayList<>();
    clients.subscriber().subscribe(SubscriptionSpec.builder(topic, group)
        .ordering(OrderingMode.UNORDERED).build(), d -> secondRun.add(d.message().id()));
    Await.until(WAIT, "the stuck record run by the next member", () -> secondRun.contains(stuck));
    Await.until(WAIT, "everything committed", () -> Long.valueOf(40).equals(
        KafkaTestSupport.committedOffsets(group, topic).get(0)));
    assertThat(secondRun).containsExactly(stuck);
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"range", "consumer"})
  @DisplayName("a member joins while keys are parked: the revoke hands over only what was not"
      + " done")
  void joinWithParkedKeysHandsOverOnlyUnfinished(String protocol) throws Exception {
    String topic = newTopic("handover-join-" + protocol, 2);
    String group = topic + "-g";
    Set<String> failOnce = ConcurrentHashMap.newKeySet();
    List<Message> all = records(2, 30, failOnce);
    KafkaTestSupport.publishAll(topic, all);
    Map<String, AtomicInteger> handled = new ConcurrentHashMap<>();
    long others = all.stream().filter(m -> !m.key().orElseThrow().startsWith("stuck-")).count();
    KafkaTransportConfig.Builder config = KafkaTestSupport.config()
        .closeTimeout(Duration.ofSeconds(5));
    if (protocol.equals("consumer")) {
      config.consumerProperty("group.protocol", "consumer");
    } else {
      config.consumerProperty("session.timeout.ms", "6000")
          .consumerProperty("heartbeat.interval.ms", "500");
    }
    clients.subscriber(config).subscribe(spec(topic, group), counting(handled, failOnce));
    Await.until(WAIT, "the other keys' records handled", () -> all.stream()
        .filter(m -> !m.key().orElseThrow().startsWith("stuck-"))
        .filter(m -> handled.containsKey(m.id())).count() == others);
    clients.subscriber(config).subscribe(spec(topic, group), counting(handled, failOnce));
    assertEachOnce(handled, all);
  }
}
