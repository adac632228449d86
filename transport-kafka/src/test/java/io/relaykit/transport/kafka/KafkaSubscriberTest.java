package io.relaykit.transport.kafka;

import static io.relaykit.transport.kafka.KafkaTestSupport.committedOffsets;
import static io.relaykit.transport.kafka.KafkaTestSupport.message;
import static io.relaykit.transport.kafka.KafkaTestSupport.publishAll;
import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.message.Delivery;
import io.relaykit.message.Message;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.ordering.OrderingMode;
import io.relaykit.tck.Await;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("KafkaSubscriber on a real broker")
class KafkaSubscriberTest {

  private static final Duration WAIT = Duration.ofSeconds(60);

  private final List<KafkaSubscriber> subscribers = new ArrayList<>();

  @AfterEach
  void closeAll() {
    subscribers.forEach(KafkaSubscriber::close);
  }

  private KafkaSubscriber subscriber() {
    KafkaSubscriber s = KafkaSubscriber.create(KafkaTestSupport.config()
        .closeTimeout(Duration.ofSeconds(5)).build());
    subscribers.add(s);
    return s;
  }

  private static int seq(Delivery d) {
    return Integer.parseInt(d.message().payloadUtf8());
  }

  @Test
  @DisplayName("out-of-order completion: a killed consumer's successor repeats only records at or"
      + " after the lowest unfinished one, and loses none")
  void killAndRestartRepeatsOnlyUnfinished() {
    String topic = KafkaTestBroker.uniqueTopic("kill");
    String group = topic + "-g";
    KafkaTestBroker.createTopic(topic, 1);
    List<Message> messages = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      messages.add(message("k" + (i % 7), i));
    }
    publishAll(topic, messages);

    CountDownLatch never = new CountDownLatch(1);
    Set<Integer> firstRun = ConcurrentHashMap.newKeySet();
    KafkaSubscription first = subscriber().subscribe(
        SubscriptionSpec.builder(topic, group).ordering(OrderingMode.UNORDERED).concurrency(4)
            .maxInFlight(100).handlerTimeout(Duration.ofMinutes(2)).build(),
        d -> {
          if (seq(d) == 12) {
            never.await(); // record 12 never finishes before the kill
          }
          firstRun.add(seq(d));
        });
    Await.until(WAIT, "39 records finished, 12 stuck", () -> firstRun.size() == 39);
    Await.until(WAIT, "commit stops at the unfinished record",
        () -> Long.valueOf(12).equals(committedOffsets(group, topic).get(0)));
    assertThat(firstRun).doesNotContain(12);

    first.close(Duration.ZERO); // no drain: record 12 is abandoned in flight
    assertThat(committedOffsets(group, topic)).containsEntry(0, 12L);

    List<Integer> secondRun = new CopyOnWriteArrayList<>();
    KafkaSubscription second = subscriber().subscribe(
        SubscriptionSpec.builder(topic, group).ordering(OrderingMode.UNORDERED).concurrency(4)
            .build(),
        d -> secondRun.add(seq(d)));
    Await.until(WAIT, "successor catches up", () -> secondRun.size() >= 28);
    Await.until(WAIT, "successor commits everything",
        () -> Long.valueOf(40).equals(committedOffsets(group, topic).get(0)));
    second.close(Duration.ofSeconds(5));

    Set<Integer> all = new HashSet<>(firstRun);
    all.addAll(secondRun);
    assertThat(all).hasSize(40);
    // Exactly the records from the lowest unfinished one on came again, each once.
    List<Integer> expectedRepeat = new ArrayList<>();
    for (int i = 12; i < 40; i++) {
      expectedRepeat.add(i);
    }
    assertThat(secondRun).containsExactlyInAnyOrderElementsOf(expectedRepeat);
  }

  @Test
  @DisplayName("KEY mode runs one record per key at a time, in order, while different keys overlap")
  void keyModeKeepsPerKeyOrderWhileKeysOverlap() {
    String topic = KafkaTestBroker.uniqueTopic("keyorder");
    KafkaTestBroker.createTopic(topic, 1);
    int keys = 8;
    int perKey = 25;
    List<Message> messages = new ArrayList<>();
    for (int i = 0; i < keys * perKey; i++) {
      messages.add(message("key-" + (i % keys), i));
    }
    publishAll(topic, messages);

    Map<String, AtomicInteger> running = new ConcurrentHashMap<>();
    AtomicInteger maxPerKey = new AtomicInteger();
    AtomicInteger concurrentKeys = new AtomicInteger();
    AtomicInteger maxConcurrentKeys = new AtomicInteger();
    CountDownLatch firstsOverlap = new CountDownLatch(2);
    List<String> log = Collections.synchronizedList(new ArrayList<>());
    subscriber().subscribe(
        SubscriptionSpec.builder(topic, topic + "-g").ordering(OrderingMode.KEY).concurrency(8)
            .maxInFlight(64).build(),
        d -> {
          String key = d.message().key().orElseThrow();
          int now = running.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
          maxPerKey.accumulateAndGet(now, Math::max);
          maxConcurrentKeys.accumulateAndGet(concurrentKeys.incrementAndGet(), Math::max);
          try {
            log.add(key + ":" + seq(d));
            int s = seq(d);
            if (s == 0 || s == 1) {
              // The first records of key-0 and key-1 wait for each other: they must overlap.
              firstsOverlap.countDown();
              firstsOverlap.await(10, TimeUnit.SECONDS);
            }
          } finally {
            concurrentKeys.decrementAndGet();
            running.get(key).decrementAndGet();
          }
        });
    Await.until(WAIT, "all records handled", () -> log.size() == keys * perKey);

    assertThat(firstsOverlap.getCount()).as("two keys ran at the same time").isZero();
    assertThat(maxConcurrentKeys.get()).isGreaterThan(1);
    assertThat(maxPerKey.get()).as("records of one key running at once").isEqualTo(1);
    Map<String, List<Integer>> byKey = new HashMap<>();
    synchronized (log) {
      for (String entry : log) {
        String[] kv = entry.split(":");
        byKey.computeIfAbsent(kv[0], k -> new ArrayList<>()).add(Integer.parseInt(kv[1]));
      }
    }
    assertThat(byKey).hasSize(keys);
    byKey.forEach((k, seqs) -> assertThat(seqs).as(k).hasSize(perKey).isSorted());
    Await.until(WAIT, "everything committed", () -> Long.valueOf(keys * perKey)
        .equals(committedOffsets(topic + "-g", topic).get(0)));
  }
}
