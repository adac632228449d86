package io.relaykit.transport.kafka;

import static io.relaykit.transport.kafka.KafkaTestSupport.newTopic;
import static io.relaykit.transport.kafka.KafkaTestSupport.numberedMessages;
import static io.relaykit.transport.kafka.KafkaTestSupport.publishAll;
import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.message.SubscriptionSpec;
import io.relaykit.ordering.OrderingMode;
import io.relaykit.retry.Backoff;
import io.relaykit.retry.RetryPolicy;
import io.relaykit.tck.Await;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * KEY mode end to end with keys failing transiently beside healthy ones, on a real broker: the
 * lock-free admission of unparked keys must keep every key's records in order and one at a time.
 */
@DisplayName("Kafka KEY mode: order and exclusivity with transiently failing keys")
class KafkaKeyOrderFailingKeysAttackTest {

  private static final Duration WAIT = Duration.ofSeconds(90);

  @RegisterExtension
  final KafkaClients clients = new KafkaClients();

  /** The order and exclusivity checks of one run, shared by every member's handler. */
  private static final class KeyOrder {
    final int count;
    final Map<Integer, Integer> previousOfKey = new HashMap<>();
    final Set<Integer> succeeded = ConcurrentHashMap.newKeySet();
    final Map<String, AtomicInteger> running = new ConcurrentHashMap<>();
    final Map<Integer, AtomicInteger> attempts = new ConcurrentHashMap<>();
    final List<String> violations = Collections.synchronizedList(new ArrayList<>());
    final AtomicInteger duplicates = new AtomicInteger();

    KeyOrder(int count, int keys) {
      this.count = count;
      Map<Integer, Integer> last = new HashMap<>();
      for (int i = 0; i < count; i++) {
        Integer before = last.put(i % keys, i);
        if (before != null) {
          previousOfKey.put(i, before);
        }
      }
    }

    io.relaykit.message.MessageHandler handler() {
      return d -> {
        String key = d.message().key().orElseThrow();
        int seq = Integer.parseInt(d.message().payloadUtf8());
        AtomicInteger r = running.computeIfAbsent(key, k -> new AtomicInteger());
        if (r.incrementAndGet() != 1) {
          violations.add("two records of " + key + " at once, one is " + seq);
        }
        try {
          Integer before = previousOfKey.get(seq);
          if (before != null && !succeeded.contains(before)) {
            violations.add(seq + " (attempt " + d.attempt() + ") started before " + before
                + " of key " + key + " succeeded");
          }
          int attempt = attempts.computeIfAbsent(seq, x -> new AtomicInteger()).incrementAndGet();
          int failures = seq % 25 == 0 ? 1 + (seq / 25) % 2 : 0;
          if (attempt <= failures) {
            throw new IllegalStateException("transient failure " + attempt + " of " + seq);
          }
          if (!succeeded.add(seq)) {
            duplicates.incrementAndGet();
          }
        } finally {
          r.decrementAndGet();
        }
      };
    }
  }

  @Test
  @DisplayName("a member joins and the first leaves while keys fail transiently (range, graceful"
      + " hand-overs of parked keys): no record of a key starts before its earlier records"
      + " succeeded, none runs beside another of its key")
  void failingKeysKeepOrderAcrossJoinAndLeave() throws Exception {
    String topic = newTopic("keyorder-rebalance", 2);
    String group = topic + "-g";
    int count = 3000;
    KeyOrder order = new KeyOrder(count, 60);
    publishAll(topic, numberedMessages(count, i -> "k" + (i % 60)));
    KafkaTransportConfig.Builder config = KafkaTestSupport.config()
        .closeTimeout(Duration.ofSeconds(5))
        .consumerProperty("session.timeout.ms", "6000")
        .consumerProperty("heartbeat.interval.ms", "500");
    SubscriptionSpec spec = SubscriptionSpec.builder(topic, group)
        .ordering(OrderingMode.KEY).concurrency(8).maxInFlight(32)
        .retryPolicy(RetryPolicy.builder().maxAttempts(4)
            .backoff(Backoff.fixed(Duration.ofMillis(300))).build())
        .build();
    io.relaykit.message.MessageHandler slow = d -> {
      work(d.message().payload()); // the handler's work: keeps records in flight across rebalances
      order.handler().handle(d);
    };
    KafkaSubscription first = clients.subscriber(config).subscribe(spec, slow);
    Await.until(WAIT, "a third handled", () -> order.succeeded.size() >= count / 3);
    clients.subscriber(config).subscribe(spec, slow);
    Await.until(WAIT, "two thirds handled", () -> order.succeeded.size() >= 2 * count / 3);
    first.close(Duration.ofSeconds(10));
    Await.until(WAIT, "every record succeeded, or an order violation",
        () -> order.succeeded.size() == count || !order.violations.isEmpty());
    assertThat(order.violations).isEmpty();
    assertThat(order.succeeded).hasSize(count);
    assertThat(order.duplicates.get()).as("graceful hand-overs run nothing twice").isZero();
  }

  @Test
  @DisplayName("3 000 records of 60 keys on 3 partitions, one in 25 failing once or twice,"
      + " concurrency 16: no record starts before its key's earlier records succeeded, no two"
      + " records of a key run at once, each succeeds once")
  void failingKeysKeepOrder() {
    String topic = newTopic("keyorder-fail", 3);
    int count = 3000;
    KeyOrder order = new KeyOrder(count, 60);
    publishAll(topic, numberedMessages(count, i -> "k" + (i % 60)));
    clients.subscriber().subscribe(SubscriptionSpec.builder(topic, topic + "-g")
        .ordering(OrderingMode.KEY).concurrency(16).maxInFlight(64)
        .retryPolicy(RetryPolicy.builder().maxAttempts(4)
            .backoff(Backoff.fixed(Duration.ofMillis(20))).build())
        .build(), order.handler());
    Await.until(WAIT, "every record succeeded, or an order violation",
        () -> order.succeeded.size() == count || !order.violations.isEmpty());
    assertThat(order.violations).isEmpty();
    assertThat(order.succeeded).hasSize(count);
    assertThat(order.duplicates.get()).isZero();
  }

  /**
   * Real work for a handler instead of a sleep: 2 000 SHA-256 rounds over the payload (about a
   * millisecond of CPU), so records stay in flight while members join and leave, with no wait on
   * time.
   */
  private static void work(byte[] payload) throws Exception {
    java.security.MessageDigest sha = java.security.MessageDigest.getInstance("SHA-256");
    byte[] digest = payload;
    for (int i = 0; i < 2_000; i++) {
      digest = sha.digest(digest);
    }
    if (digest.length != 32) {
      throw new IllegalStateException("SHA-256 gave " + digest.length + " bytes");
    }
  }
}
