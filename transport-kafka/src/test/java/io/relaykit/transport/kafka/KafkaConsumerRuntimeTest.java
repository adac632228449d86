package io.relaykit.transport.kafka;

import static io.relaykit.transport.kafka.KafkaTestSupport.committedOffsets;
import static io.relaykit.transport.kafka.KafkaTestSupport.message;
import static io.relaykit.transport.kafka.KafkaTestSupport.newTopic;
import static io.relaykit.transport.kafka.KafkaTestSupport.numberedMessages;
import static io.relaykit.transport.kafka.KafkaTestSupport.publishAll;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.message.Delivery;
import io.relaykit.message.Message;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleLog;
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
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

@DisplayName("Kafka consumer runtime on a real broker")
class KafkaConsumerRuntimeTest {

  private static final Duration WAIT = Duration.ofSeconds(60);

  @RegisterExtension
  final KafkaClients clients = new KafkaClients();

  private static int seq(Delivery d) {
    return Integer.parseInt(d.message().payloadUtf8());
  }

  @Test
  @DisplayName("out-of-order completion: a killed consumer's successor repeats only records at or"
      + " after the lowest unfinished one, and loses none")
  void killAndRestartRepeatsOnlyUnfinished() {
    String topic = newTopic("kill", 1);
    String group = topic + "-g";
    List<Message> messages = numberedMessages(40, i -> "k" + (i % 7));
    publishAll(topic, messages);

    CountDownLatch never = new CountDownLatch(1);
    Set<Integer> firstRun = ConcurrentHashMap.newKeySet();
    KafkaSubscription first = clients.subscriber().subscribe(
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

    // A crash: the last periodic commit (position 12, naming nothing finished past it) is what
    // the successor starts from; a graceful close would name 13..39 as finished
    // (KafkaGracefulHandOverTest#closeAtZeroDeadlineRepeatsOnlyTheStuckRecord).
    ((KafkaConsumerRuntime) first).crashForTest(); // record 12 is abandoned in flight
    assertThat(committedOffsets(group, topic)).containsEntry(0, 12L);

    List<Integer> secondRun = new CopyOnWriteArrayList<>();
    KafkaSubscription second = clients.subscriber().subscribe(
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
    String topic = newTopic("keyorder", 1);
    int keys = 8;
    int perKey = 25;
    List<Message> messages = numberedMessages(keys * perKey, i -> "key-" + (i % keys));
    publishAll(topic, messages);

    Map<String, AtomicInteger> running = new ConcurrentHashMap<>();
    AtomicInteger maxPerKey = new AtomicInteger();
    AtomicInteger concurrentKeys = new AtomicInteger();
    AtomicInteger maxConcurrentKeys = new AtomicInteger();
    CountDownLatch firstsOverlap = new CountDownLatch(2);
    List<String> log = Collections.synchronizedList(new ArrayList<>());
    clients.subscriber().subscribe(
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

  @Test
  @DisplayName("rebalance with two consumers in one group: nothing lost, duplicates only for"
      + " in-flight work")
  void rebalanceLosesNothing() {
    String topic = newTopic("rebalance", 4);
    String group = topic + "-g";
    int total = 120;
    List<Message> messages = numberedMessages(total, i -> "key-" + (i % 12));
    publishAll(topic, messages);

    int maxInFlight = 8;
    CountDownLatch gate = new CountDownLatch(1);
    Map<Integer, AtomicInteger> processed = new ConcurrentHashMap<>();
    Set<Integer> byA = ConcurrentHashMap.newKeySet();
    Set<Integer> byB = ConcurrentHashMap.newKeySet();
    AtomicInteger blocked = new AtomicInteger();
    SubscriptionSpec spec = SubscriptionSpec.builder(topic, group).ordering(OrderingMode.KEY)
        .concurrency(4).maxInFlight(maxInFlight).handlerTimeout(Duration.ofMinutes(2)).build();
    clients.subscriber().subscribe(spec, d -> {
      if (byA.size() >= 30 && gate.getCount() > 0) {
        blocked.incrementAndGet(); // A's workers stall with records in flight
        gate.await();
      }
      byA.add(seq(d));
      processed.computeIfAbsent(seq(d), k -> new AtomicInteger()).incrementAndGet();
    });
    Await.until(WAIT, "A stalls with work in flight", () -> blocked.get() == 4);

    clients.subscriber().subscribe(spec, d -> {
      byB.add(seq(d));
      processed.computeIfAbsent(seq(d), k -> new AtomicInteger()).incrementAndGet();
    });
    Await.until(WAIT, "B takes over partitions and handles records", () -> byB.size() >= 10);
    gate.countDown();
    Await.until(WAIT, "every record handled", () -> processed.size() == total);
    Await.until(WAIT, "every partition committed to its end", () -> {
      Map<Integer, Long> c = committedOffsets(group, topic);
      long sum = c.values().stream().mapToLong(Long::longValue).sum();
      return c.size() == 4 && sum == total;
    });

    List<Integer> duplicates = processed.entrySet().stream()
        .filter(e -> e.getValue().get() > 1).map(Map.Entry::getKey).sorted().toList();
    assertThat(duplicates).as("repeated records (in flight at A when it lost them)")
        .hasSizeLessThanOrEqualTo(maxInFlight);
    assertThat(byA).isNotEmpty();
    assertThat(byB).isNotEmpty();
  }

  @Test
  @DisplayName("shutdown stops intake, drains the records in flight, commits them, and the next"
      + " consumer starts exactly after them")
  void shutdownDrains() throws Exception {
    String topic = newTopic("drain", 1);
    String group = topic + "-g";
    List<Message> messages = numberedMessages(20, i -> "k" + i);
    publishAll(topic, messages);

    CountDownLatch gate = new CountDownLatch(1);
    AtomicInteger started = new AtomicInteger();
    Set<Integer> firstRun = ConcurrentHashMap.newKeySet();
    KafkaSubscription first = clients.subscriber().subscribe(
        SubscriptionSpec.builder(topic, group).ordering(OrderingMode.KEY).concurrency(4)
            .maxInFlight(8).build(),
        d -> {
          started.incrementAndGet();
          gate.await();
          firstRun.add(seq(d));
        });
    Await.until(WAIT, "4 handlers running", () -> started.get() == 4);
    long inFlight = Await.value(WAIT, "in-flight work sampled", () -> first.backlog().inFlight(),
        n -> n >= 4);

    java.util.concurrent.CompletableFuture<Boolean> closing =
        java.util.concurrent.CompletableFuture.supplyAsync(() -> first.close(WAIT));
    Await.holds(Duration.ofMillis(500), "close waits for the handlers", () -> !closing.isDone());
    assertThat(first.isRunning()).isFalse();
    gate.countDown();

    assertThat(closing.get(60, TimeUnit.SECONDS)).as("drained before the deadline").isTrue();
    int drained = firstRun.size();
    assertThat(drained).isGreaterThanOrEqualTo((int) inFlight).isLessThanOrEqualTo(8);
    assertThat(committedOffsets(group, topic)).containsEntry(0, (long) drained);

    List<Integer> secondRun = new CopyOnWriteArrayList<>();
    clients.subscriber().subscribe(SubscriptionSpec.builder(topic, group).build(),
        d -> secondRun.add(seq(d)));
    Await.until(WAIT, "the rest handled", () -> secondRun.size() == 20 - drained);
    Set<Integer> all = new HashSet<>(firstRun);
    all.addAll(secondRun);
    assertThat(all).hasSize(20);
    assertThat(secondRun).doesNotContainAnyElementsOf(firstRun);
  }

  @Test
  @DisplayName("in-flight work stays under maxInFlight while handlers stall; lag and the oldest"
      + " in-flight age are sampled")
  void backpressureAndBacklogSamples() {
    String topic = newTopic("backlog", 1);
    String group = topic + "-g";
    List<Message> messages = numberedMessages(50, i -> "k" + i);
    publishAll(topic, messages);

    CountDownLatch gate = new CountDownLatch(1);
    AtomicInteger started = new AtomicInteger();
    List<Long> lags = new CopyOnWriteArrayList<>();
    List<io.relaykit.monitor.BacklogSnapshot> verdicts = new CopyOnWriteArrayList<>();
    io.relaykit.monitor.MetricsListener metrics = new io.relaykit.monitor.MetricsListener() {
      @Override
      public void consumerLag(String destination, String g, long lag) {
        if (destination.equals(topic) && g.equals(group)) {
          lags.add(lag);
        }
      }

      @Override
      public void backlog(String destination, io.relaykit.monitor.BacklogSnapshot snapshot) {
        verdicts.add(snapshot);
      }
    };
    KafkaSubscriber withMetrics = clients.subscriber(KafkaTestSupport.config()
        .metrics(metrics).closeTimeout(Duration.ofSeconds(5)));
    KafkaSubscription sub = withMetrics.subscribe(
        SubscriptionSpec.builder(topic, group).ordering(OrderingMode.UNORDERED).concurrency(2)
            .maxInFlight(6).build(),
        d -> {
          started.incrementAndGet();
          gate.await();
        });
    ConsumerBacklog stalled = Await.value(WAIT, "a sample with the partition's lag",
        sub::backlog, b -> b.inFlight() >= 4 && b.lagByPartition().containsKey(topic + "-0")
            && b.oldestInFlightAge().compareTo(Duration.ZERO) > 0);
    assertThat(stalled.inFlight()).isLessThanOrEqualTo(6);
    assertThat(stalled.lagByPartition().get(topic + "-0") + stalled.inFlight())
        .as("everything not fetched is lag").isEqualTo(50);
    assertThat(stalled.topic()).isEqualTo(topic);
    assertThat(stalled.group()).isEqualTo(group);
    Await.holds(Duration.ofMillis(300), "no more than 2 handlers start",
        () -> started.get() <= 2);
    Await.until(WAIT, "the lag exported to the metrics listener",
        () -> lags.contains(stalled.lagByPartition().get(topic + "-0")));
    assertThat(verdicts).isNotEmpty();
    assertThat(sub.backlogVerdict()).isNotNull();
    gate.countDown();
    Await.until(WAIT, "all handled", () -> started.get() == 50);
    ConsumerBacklog done = Await.value(WAIT, "an empty backlog", sub::backlog,
        b -> b.inFlight() == 0 && b.totalLag() == 0);
    assertThat(done.oldestInFlightAge()).isZero();
  }

  @Test
  @DisplayName("an optional rate limiter spaces handler calls to its rate")
  void rateLimiterSpacesHandlerCalls() {
    String topic = newTopic("rate", 1);
    List<Message> messages = numberedMessages(11, i -> "k" + i);
    publishAll(topic, messages);
    List<Long> starts = new CopyOnWriteArrayList<>();
    io.relaykit.retry.RateLimiter limiter = io.relaykit.retry.RateLimiter.builder()
        .permitsPerSecond(20).burst(1).build();
    clients.subscriber().subscribe(SubscriptionSpec.builder(topic, topic + "-g")
        .ordering(OrderingMode.UNORDERED).concurrency(8).build(),
        d -> starts.add(System.nanoTime()), limiter);

    Await.until(WAIT, "11 records handled", () -> starts.size() == 11);
    List<Long> sorted = starts.stream().sorted().toList();
    // One permit every 50 ms after the first: 10 gaps take at least 500 ms, however fast the
    // eight workers are.
    assertThat(Duration.ofNanos(sorted.get(10) - sorted.get(0)))
        .isGreaterThanOrEqualTo(Duration.ofMillis(450));
    assertThatThrownBy(() -> clients.subscriber().subscribe(
        SubscriptionSpec.builder(topic, "x").build(), d -> { }, null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("rateLimiter");
  }

  @Test
  @DisplayName("a lifecycle listener sees each record delivered, then acked, at its position")
  void lifecycleEvents() {
    String topic = newTopic("events", 1);
    List<Message> messages = List.of(message("a", 0), message("b", 1));
    publishAll(topic, messages);
    LifecycleLog log = new LifecycleLog(100);
    KafkaSubscriber s = clients.subscriber(KafkaTestSupport.config().listener(log));
    List<Integer> handled = new CopyOnWriteArrayList<>();
    s.subscribe(SubscriptionSpec.builder(topic, topic + "-g").build(), d -> handled.add(seq(d)));

    Await.until(WAIT, "both acked", () -> messages.stream().allMatch(m -> log.history(m.id())
        .stream().anyMatch(e -> e.stage() == LifecycleEvent.Stage.ACKED)));
    for (int i = 0; i < messages.size(); i++) {
      List<LifecycleEvent> history = log.history(messages.get(i).id());
      assertThat(history).extracting(LifecycleEvent::stage)
          .containsExactly(LifecycleEvent.Stage.DELIVERED, LifecycleEvent.Stage.ACKED);
      assertThat(history).extracting(LifecycleEvent::detail).containsOnly(topic + "-0@" + i);
      assertThat(history).extracting(LifecycleEvent::traceId)
          .containsOnly(messages.get(i).traceId());
    }
  }

  @Test
  @DisplayName("when in-flight work is full, the worker that makes room wakes the poll: intake does"
      + " not wait out the poll timeout")
  void roomWakesThePoll() throws Exception {
    String topic = newTopic("room", 1);
    List<Message> messages = numberedMessages(60, i -> "k" + i);
    publishAll(topic, messages);
    KafkaSubscriber s = clients.subscriber(KafkaTestSupport.config()
        .pollTimeout(Duration.ofSeconds(60)).closeTimeout(Duration.ofSeconds(5)));
    CountDownLatch gate = new CountDownLatch(1);
    AtomicInteger handled = new AtomicInteger();
    // maxInFlight 10: polls of at most 5 records, intake stops above 5 in flight.
    KafkaConsumerRuntime sub = (KafkaConsumerRuntime) s.subscribe(
        SubscriptionSpec.builder(topic, topic + "-g").ordering(OrderingMode.UNORDERED)
            .concurrency(2).maxInFlight(10).build(),
        d -> {
          gate.await();
          handled.incrementAndGet();
        });
    Await.until(WAIT, "in-flight work full", () -> sub.inFlight() == 10);
    gate.countDown();
    // Each stop would last the 60 s poll timeout if nothing cut it short.
    Await.until(Duration.ofSeconds(30), "all 60 handled well within one poll timeout",
        () -> handled.get() == 60);
    long start = System.nanoTime();
    assertThat(sub.close(Duration.ofSeconds(5))).isTrue();
    assertThat(Duration.ofNanos(System.nanoTime() - start))
        .as("close ends the poll in progress").isLessThan(Duration.ofSeconds(30));
  }
}
