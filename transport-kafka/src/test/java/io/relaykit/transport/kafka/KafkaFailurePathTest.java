package io.relaykit.transport.kafka;

import static io.relaykit.transport.kafka.KafkaTestSupport.committedOffsets;
import static io.relaykit.transport.kafka.KafkaTestSupport.message;
import static io.relaykit.transport.kafka.KafkaTestSupport.newTopic;
import static io.relaykit.transport.kafka.KafkaTestSupport.publishAll;
import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.message.Message;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.ordering.OrderingMode;
import io.relaykit.retry.Backoff;
import io.relaykit.retry.RetryPolicy;
import io.relaykit.tck.Await;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The failure paths of the consumer runtime (issue F3): hot keys, restarts before a retry is due,
 * stale work after a rebalance, oversized dead letters, fatal consumer errors.
 */
@DisplayName("Kafka consumer runtime failure paths on a real broker")
class KafkaFailurePathTest {

  private static final Duration WAIT = Duration.ofSeconds(60);

  @RegisterExtension
  final KafkaClients clients = new KafkaClients();

  private static int seq(io.relaykit.message.Delivery d) {
    return Integer.parseInt(d.message().payloadUtf8());
  }

  @Test
  @DisplayName("KEY mode, maxInFlight 8: a failing key with 10 later records parked does not stop"
      + " the next key (parked records do not count against maxInFlight)")
  void hotFailingKeyDoesNotStopOtherKeys() {
    String topic = newTopic("hotkey", 1);
    List<Message> messages = new ArrayList<>();
    for (int i = 0; i < 11; i++) {
      messages.add(message("hot", i));
    }
    messages.add(message("cold", 11));
    publishAll(topic, messages);

    List<Integer> handled = new CopyOnWriteArrayList<>();
    clients.subscriber().subscribe(SubscriptionSpec.builder(topic, topic + "-g")
        .ordering(OrderingMode.KEY).concurrency(4).maxInFlight(8)
        .retryPolicy(RetryPolicy.builder().maxAttempts(3)
            .backoff(Backoff.fixed(Duration.ofMinutes(10))).build())
        .build(),
        d -> {
          if (d.message().key().orElseThrow().equals("hot")) {
            throw new IllegalStateException("hot key fails");
          }
          handled.add(seq(d));
        });
    Await.until(WAIT, "the other key's record handled", () -> handled.contains(11));
  }

  @Test
  @DisplayName("retry intake is not stopped by a full in-flight bound: the retry that the main"
      + " flow's records wait for is fetched")
  void retryIntakeIsNotStarvedByTheInFlightBound() {
    String topic = newTopic("retryroom", 1);
    List<Message> messages = new ArrayList<>();
    messages.add(message("r", 0));
    for (int i = 1; i <= 12; i++) {
      messages.add(message("b", i)); // one lane: a single worker, the rest stay free
    }
    publishAll(topic, messages);

    CountDownLatch retried = new CountDownLatch(1);
    List<Integer> handled = new CopyOnWriteArrayList<>();
    clients.subscriber().subscribe(SubscriptionSpec.builder(topic, topic + "-g")
        .ordering(OrderingMode.KEY).concurrency(4).maxInFlight(8)
        .retryPolicy(RetryPolicy.builder().maxAttempts(3)
            .backoff(Backoff.fixed(Duration.ofMillis(300))).build())
        .handlerTimeout(Duration.ofMinutes(2))
        .build(),
        d -> {
          if (seq(d) == 0) {
            if (d.attempt() == 1) {
              throw new IllegalStateException("first attempt fails");
            }
            retried.countDown();
          } else if (!retried.await(WAIT.toSeconds(), TimeUnit.SECONDS)) {
            throw new AssertionError("retry never ran");
          }
          handled.add(seq(d));
        });
    Await.until(WAIT, "the retry and every record of the main flow handled",
        () -> handled.size() == 13);
    Await.until(WAIT, "everything committed", () -> Long.valueOf(13)
        .equals(committedOffsets(topic + "-g", topic).get(0)));
  }

  @Test
  @DisplayName("auto.offset.reset=latest governs the source only: after a restart before the retry"
      + " is due, the new consumer still runs the retry copy")
  void restartBeforeARetryIsDueKeepsTheRetryWithLatest() {
    String topic = newTopic("latest", 1);
    String group = topic + "-g";
    KafkaTransportConfig.Builder config = KafkaTestSupport.config()
        .closeTimeout(Duration.ofSeconds(5)).consumerProperty("auto.offset.reset", "latest");
    SubscriptionSpec spec = SubscriptionSpec.builder(topic, group).ordering(OrderingMode.KEY)
        .retryPolicy(RetryPolicy.builder().maxAttempts(3)
            .backoff(Backoff.fixed(Duration.ofSeconds(3))).build())
        .build();
    List<Integer> attempts = new CopyOnWriteArrayList<>();
    KafkaSubscription first = clients.subscriber(config).subscribe(spec, d -> {
      attempts.add(d.attempt());
      throw new IllegalStateException("fails before the restart");
    });
    // With latest, only records published after the consumer placed itself are read.
    Await.value(WAIT, "the source partition placed", first::backlog,
        b -> b.lagByPartition().containsKey(topic + "-0"));
    publishAll(topic, List.of(message("k", 0)));
    Await.until(WAIT, "the source committed past the failed record (its retry copy confirmed)",
        () -> Long.valueOf(1).equals(committedOffsets(group, topic).get(0)));
    first.close(Duration.ofSeconds(5));
    assertThat(attempts).containsExactly(1);

    List<Integer> later = new CopyOnWriteArrayList<>();
    clients.subscriber(config).subscribe(spec, d -> later.add(d.attempt()));
    Await.until(WAIT, "the retry copy handled by the restarted consumer",
        () -> later.contains(2));
  }

  @Test
  @DisplayName("auto.offset.reset=none without a committed offset stops the subscription with one"
      + " error naming the partition and the setting, reported to the metrics listener")
  void noCommittedOffsetWithResetNoneIsFatal() {
    String topic = newTopic("resetnone", 1);
    publishAll(topic, List.of(message("k", 0)));
    List<Throwable> failures = new CopyOnWriteArrayList<>();
    io.relaykit.monitor.MetricsListener metrics = new io.relaykit.monitor.MetricsListener() {
      @Override
      public void consumerFailed(String destination, String group, Throwable cause) {
        failures.add(cause);
      }
    };
    List<Integer> handled = new CopyOnWriteArrayList<>();
    KafkaSubscription sub = clients.subscriber(KafkaTestSupport.config()
        .closeTimeout(Duration.ofSeconds(5)).metrics(metrics)
        .consumerProperty("auto.offset.reset", "none"))
        .subscribe(SubscriptionSpec.builder(topic, topic + "-g").build(),
            d -> handled.add(seq(d)));
    Await.until(WAIT, "the subscription stopped", () -> !sub.isRunning());
    Throwable failure = sub.failure().orElseThrow();
    assertThat(failure).hasMessageContaining(topic + "-0")
        .hasMessageContaining("auto.offset.reset=none");
    Await.until(WAIT, "the failure reported", () -> failures.size() == 1);
    assertThat(failures.get(0)).isSameAs(failure);
    assertThat(handled).isEmpty();
    assertThat(sub.close(Duration.ofSeconds(5))).isTrue();
  }

  @Test
  @DisplayName("a partition that moved to another member reads 0 in this member's lag, not the"
      + " last lag it had there")
  void revokedPartitionLagReadsZero() {
    String topic = newTopic("lagmove", 2);
    String group = topic + "-g";
    publishAll(topic, KafkaTestSupport.numberedMessages(40, i -> "k" + i));
    // partition -> the last lag member A reported for it
    java.util.Map<Integer, Long> lastLag = new java.util.concurrent.ConcurrentHashMap<>();
    io.relaykit.monitor.MetricsListener metrics = new io.relaykit.monitor.MetricsListener() {
      @Override
      public void partitionLag(String destination, String g, int partition, long lag) {
        lastLag.put(partition, lag);
      }
    };
    CountDownLatch release = new CountDownLatch(1);
    try {
      // A holds both partitions with one blocked handler and room for one more record: it stops
      // fetching, so both partitions keep a lag.
      clients.subscriber().subscribe(SubscriptionSpec.builder(topic, group).concurrency(1)
          .maxInFlight(2).metrics(metrics).build(), d -> release.await());
      Await.until(WAIT, "member A reports a lag on both partitions", () ->
          lastLag.getOrDefault(0, 0L) > 0 && lastLag.getOrDefault(1, 0L) > 0);

      List<Integer> handledByB = new CopyOnWriteArrayList<>();
      clients.subscriber().subscribe(SubscriptionSpec.builder(topic, group).build(),
          d -> handledByB.add(seq(d)));
      Await.until(WAIT, "member B took a partition over and handles its records",
          () -> !handledByB.isEmpty());
      Await.until(WAIT, "member A reports 0 for the partition it gave up (last: " + lastLag + ")",
          () -> lastLag.containsValue(0L));
    } finally {
      release.countDown();
    }
  }

  @Test
  @DisplayName("an auto.offset.reset that Kafka does not know is refused when the config is built")
  void unknownOffsetResetIsRefused() {
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> KafkaTestSupport.config()
        .consumerProperty("auto.offset.reset", "smallest").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("auto.offset.reset").hasMessageContaining("smallest");
    assertThat(KafkaTestSupport.config().consumerProperty("auto.offset.reset",
        "by_duration:PT1H").build()).isNotNull();
  }

  @Test
  @DisplayName("work queued before a revoke-and-reassign to the same member is stale: it does not"
      + " run again, and a stale failure writes no retry copy")
  void staleWorkAfterRevokeAndReassignRunsNotAgain() {
    String topic = newTopic("stale", 1);
    String group = topic + "-g";
    publishAll(topic, KafkaTestSupport.numberedMessages(10, i -> "k" + i));

    CountDownLatch gate = new CountDownLatch(1);
    java.util.Map<Integer, java.util.concurrent.atomic.AtomicInteger> calls =
        new java.util.concurrent.ConcurrentHashMap<>();
    KafkaConsumerRuntime a = (KafkaConsumerRuntime) clients.subscriber().subscribe(
        SubscriptionSpec.builder(topic, group).ordering(OrderingMode.UNORDERED).concurrency(1)
            .maxInFlight(20).handlerTimeout(Duration.ofMinutes(2))
            .retryPolicy(RetryPolicy.builder().maxAttempts(3)
                .backoff(Backoff.fixed(Duration.ofMillis(100))).build())
            .build(),
        d -> {
          int n = calls.computeIfAbsent(seq(d), k -> new java.util.concurrent.atomic.AtomicInteger())
              .incrementAndGet();
          if (seq(d) == 0 && n == 1) {
            gate.await(); // blocked across the rebalance, then fails
            throw new IllegalStateException("the stale attempt fails");
          }
        });
    Await.until(WAIT, "record 0 blocked, nine queued", () -> calls.size() == 1
        && a.inFlight() == 10);

    // A second member of the group on another topic: an eager rebalance revokes the partition
    // from the first member and gives it back to it.
    String other = newTopic("stale-other", 1);
    KafkaSubscription b = clients.subscriber().subscribe(
        SubscriptionSpec.builder(other, group).build(), d -> { });
    Await.value(WAIT, "the second member placed", b::backlog,
        s -> s.lagByPartition().containsKey(other + "-0"));
    Await.until(WAIT, "the first member re-read its partition", () -> a.inFlight() == 10);
    gate.countDown();

    Await.until(WAIT, "everything committed", () -> Long.valueOf(10)
        .equals(committedOffsets(group, topic).get(0)));
    for (int i = 1; i < 10; i++) {
      assertThat(calls.get(i)).as("calls of record " + i).hasValue(1);
    }
    assertThat(calls.get(0)).as("the stale call and the current one").hasValue(2);
    String retryTopic = KafkaTestSupport.config().build().retryTopic(topic, group);
    assertThat(KafkaTestSupport.endOffset(retryTopic, 0)).as("retry copies written").isZero();
  }

  @org.junit.jupiter.params.ParameterizedTest(name = "hand-off {0}")
  @org.junit.jupiter.params.provider.EnumSource(KafkaTransportConfig.HandOff.class)
  @DisplayName("a record whose copy no longer fits maxRecordBytes plus the copies' headroom (a"
      + " record a plain producer wrote over the limit, with the failure headers of a long"
      + " exception) is dead-lettered as a reference entry, committed, and replayable")
  void oversizedDeadLetterBecomesAReferenceEntry(KafkaTransportConfig.HandOff handOff) {
    String topic = newTopic("bigdlt", 1);
    String group = topic + "-g";
    // Over this consumer's maxRecordBytes (3000) by more than the copies' headroom once the
    // failure headers are added; a record just under the limit is retried instead
    // (KafkaRecordLifeTest.Bounds#nearLimitRecordIsRetried).
    Message big = Message.builder().type("test").key("k")
        .payload("x".repeat(3000 + KafkaPublisher.COPY_HEADROOM)).build();
    publishAll(topic, List.of(big));

    java.util.concurrent.atomic.AtomicBoolean failing =
        new java.util.concurrent.atomic.AtomicBoolean(true);
    List<Integer> payloadSizes = new CopyOnWriteArrayList<>();
    clients.subscriber(KafkaTestSupport.config().closeTimeout(Duration.ofSeconds(5))
        .maxRecordBytes(3000).handOff(handOff))
        .subscribe(SubscriptionSpec.builder(topic, group).ordering(OrderingMode.KEY)
            .retryPolicy(RetryPolicy.builder().maxAttempts(3)
                .backoff(Backoff.fixed(Duration.ofMillis(100))).build())
            .build(),
            d -> {
              payloadSizes.add(d.message().payload().length);
              if (failing.get()) {
                throw new IllegalStateException("e".repeat(10_000));
              }
            });
    Await.until(WAIT, "the record committed", () -> Long.valueOf(1)
        .equals(committedOffsets(group, topic).get(0)));
    KafkaDeadLetterStore dlt = clients.deadLetterStore(topic, group);
    List<io.relaykit.deadletter.DeadLetter> entries = dlt.list(
        io.relaykit.deadletter.DeadLetterQuery.all());
    assertThat(entries).hasSize(1);
    io.relaykit.deadletter.DeadLetter entry = entries.get(0);
    assertThat(entry.messageId()).isEqualTo(big.id());
    assertThat(entry.reason()).contains("retry copy refused")
        .contains("refers to the original at " + topic + "-0@0");
    assertThat(entry.exceptionMessage()).hasSizeLessThanOrEqualTo(
        io.relaykit.deadletter.FailureRoute.MAX_EXCEPTION_MESSAGE_BYTES);

    failing.set(false);
    assertThat(dlt.replay(entry.id())).isPresent();
    Await.until(WAIT, "the original handled again from the replay",
        () -> payloadSizes.size() == 2);
    assertThat(payloadSizes).containsExactly(big.payload().length, big.payload().length);
    // The refusals were relaykit's own size check, before the producer: a transactional hand-off
    // was not aborted (and the record rewound and run again and again) for them.
    assertThat(dlt.count(io.relaykit.deadletter.DeadLetterQuery.all())).isZero();
  }

  @Test
  @DisplayName("replaying a dead letter of one group reaches that group only, through its retry"
      + " topic; another group on the same topic does not see it again")
  void replayGoesToTheGroupOnly() {
    String topic = newTopic("replaygroup", 1);
    Message m = message("k", 0);
    publishAll(topic, List.of(m));
    java.util.concurrent.atomic.AtomicBoolean failing =
        new java.util.concurrent.atomic.AtomicBoolean(true);
    List<Integer> byFirst = new CopyOnWriteArrayList<>();
    List<Integer> bySecond = new CopyOnWriteArrayList<>();
    clients.subscriber().subscribe(SubscriptionSpec.builder(topic, topic + "-g1").build(), d -> {
      byFirst.add(d.attempt());
      if (failing.get()) {
        throw new io.relaykit.retry.PermanentFailureException("no");
      }
    });
    clients.subscriber().subscribe(SubscriptionSpec.builder(topic, topic + "-g2").build(),
        d -> bySecond.add(d.attempt()));
    KafkaDeadLetterStore dlt = clients.deadLetterStore(topic, topic + "-g1");
    Await.until(WAIT, "dead-lettered by the first group",
        () -> dlt.count(io.relaykit.deadletter.DeadLetterQuery.all()) == 1);
    Await.until(WAIT, "handled by the second group", () -> bySecond.size() == 1);
    failing.set(false);
    io.relaykit.deadletter.DeadLetter d = dlt.list(io.relaykit.deadletter.DeadLetterQuery.all())
        .get(0);
    assertThat(d.group()).isEqualTo(topic + "-g1");
    dlt.replay(d.id());
    Await.until(WAIT, "the first group handles the replay", () -> byFirst.size() == 2);
    assertThat(byFirst).containsExactly(1, 1);
    Await.holds(Duration.ofSeconds(2), "the second group does not see it again",
        () -> bySecond.size() == 1);
    assertThat(KafkaTestSupport.endOffset(topic, 0)).as("nothing resent to the source").isOne();
  }

  @Test
  @DisplayName("subscribe refuses a retry topic with fewer partitions than the source, naming both"
      + " counts and the fix")
  void retryTopicWithFewerPartitionsIsRefused() {
    String topic = newTopic("fewretry", 3);
    String group = topic + "-g";
    String retryTopic = KafkaTestSupport.config().build().retryTopic(topic, group);
    KafkaTestBroker.createTopic(retryTopic, 2);
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> clients.subscriber()
        .subscribe(SubscriptionSpec.builder(topic, group).build(), d -> { }))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(retryTopic + " has 2 partitions, fewer than the 3 of " + topic)
        .hasMessageContaining("--partitions 3");
  }

  @Test
  @DisplayName("close does not spend its deadline on a parked key: records waiting for a retry"
      + " that is not due stay uncommitted, and close returns at once")
  void closeDoesNotWaitForParkedKeys() {
    String topic = newTopic("closepark", 1);
    String group = topic + "-g";
    publishAll(topic, List.of(message("k", 0), message("k", 1)));
    List<Integer> handled = new CopyOnWriteArrayList<>();
    KafkaConsumerRuntime sub = (KafkaConsumerRuntime) clients.subscriber().subscribe(
        SubscriptionSpec.builder(topic, group).ordering(OrderingMode.KEY)
            .retryPolicy(RetryPolicy.builder().maxAttempts(3)
                .backoff(Backoff.fixed(Duration.ofMinutes(10))).build())
            .build(),
        d -> {
          handled.add(seq(d));
          throw new IllegalStateException("fails");
        });
    Await.until(WAIT, "record 0 in retry, record 1 parked behind it", () -> handled.equals(
        List.of(0)) && Long.valueOf(1).equals(committedOffsets(group, topic).get(0))
        && sub.inFlight() == 1);
    long start = System.nanoTime();
    assertThat(sub.close(Duration.ofSeconds(30))).as("no handler was left running").isTrue();
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(15));
    assertThat(committedOffsets(group, topic)).containsEntry(0, 1L);
  }

  @Test
  @DisplayName("handlers stuck past their timeout at full concurrency show in the oldest age while"
      + " nothing else is in flight; workers are daemon threads that close waits for")
  void stuckHandlersShowInTheOldestAge() {
    String topic = newTopic("stuck", 1);
    String group = topic + "-g";
    publishAll(topic, List.of(message("a", 0), message("b", 1)));
    CountDownLatch release = new CountDownLatch(1);
    java.util.concurrent.atomic.AtomicInteger started = new java.util.concurrent.atomic.AtomicInteger();
    java.util.Set<Thread> workers = java.util.concurrent.ConcurrentHashMap.newKeySet();
    KafkaSubscription sub = clients.subscriber().subscribe(
        SubscriptionSpec.builder(topic, group).ordering(OrderingMode.UNORDERED).concurrency(2)
            .handlerTimeout(Duration.ofMillis(300))
            .retryPolicy(RetryPolicy.builder().maxAttempts(3)
                .backoff(Backoff.fixed(Duration.ofMinutes(10))).build())
            .build(),
        d -> {
          workers.add(Thread.currentThread());
          started.incrementAndGet();
          boolean done = false;
          while (!done) {
            try {
              done = release.await(60, TimeUnit.SECONDS); // ignores the timeout's interrupt
            } catch (InterruptedException e) {
              // stuck
            }
          }
        });
    ConsumerBacklog stuck = Await.value(WAIT, "both records moved on to their retry, workers stuck",
        sub::backlog, b -> b.inFlight() == 0 && started.get() == 2
            && b.oldestInFlightAge().compareTo(Duration.ofSeconds(1)) > 0);
    assertThat(stuck.oldestInFlightAge()).isGreaterThan(Duration.ofSeconds(1));
    assertThat(workers).hasSize(2).allMatch(Thread::isDaemon);
    release.countDown();
    sub.close(Duration.ofSeconds(10));
    assertThat(workers).noneMatch(Thread::isAlive);
  }

  @Test
  @DisplayName("subscribe refuses a group.instance.id that a running subscription of the same group"
      + " uses; it is free again after that one closed")
  void sharedStaticMemberIdIsRefused() {
    String topic = newTopic("staticid", 1);
    String other = newTopic("staticid-other", 1);
    String group = topic + "-g";
    KafkaSubscriber subscriber = clients.subscriber(KafkaTestSupport.config()
        .closeTimeout(Duration.ofSeconds(5)).consumerProperty("group.instance.id", "member-1"));
    KafkaSubscription first = subscriber.subscribe(SubscriptionSpec.builder(topic, group).build(),
        d -> { });
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> subscriber.subscribe(
        SubscriptionSpec.builder(other, group).build(), d -> { }))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("group.instance.id member-1").hasMessageContaining(group);
    // Another group may use the same id.
    subscriber.subscribe(SubscriptionSpec.builder(other, other + "-g").build(), d -> { });
    first.close(Duration.ofSeconds(5));
    assertThat(subscriber.subscribe(SubscriptionSpec.builder(other, group).build(), d -> { })
        .isRunning()).isTrue();
  }
  @Test
  @DisplayName("a poll turn that keeps failing with a retriable error backs off (poll timeout"
      + " doubled per error in a row), does not spin, and the subscription resumes afterwards")
  void repeatedRetriableErrorsBackOff() {
    String topic = newTopic("backoff", 1);
    java.util.concurrent.atomic.AtomicBoolean failing =
        new java.util.concurrent.atomic.AtomicBoolean();
    List<Long> throwsAt = new CopyOnWriteArrayList<>();
    // The injected clock fails on the poll thread only, at the start of every poll turn: a
    // retriable error of the turn, like a commit timeout or a broker moving.
    java.time.InstantSource clock = () -> {
      if (failing.get() && Thread.currentThread().getName().endsWith("-poll")) {
        throwsAt.add(System.nanoTime());
        throw new IllegalStateException("clock unavailable (test)");
      }
      return java.time.Instant.now();
    };
    List<Integer> handled = new CopyOnWriteArrayList<>();
    var sub = clients.subscriber(KafkaTestSupport.config().closeTimeout(Duration.ofSeconds(5))
        .clock(clock))
        .subscribe(SubscriptionSpec.builder(topic, topic + "-g").build(),
            d -> handled.add(seq(d)));
    publishAll(topic, List.of(message("k", 0)));
    Await.until(WAIT, "first record handled", () -> handled.contains(0));

    failing.set(true);
    long start = System.nanoTime();
    Await.until(WAIT, "six errors in a row", () -> throwsAt.size() >= 6);
    long sixth = throwsAt.get(5);
    failing.set(false);
    // Spinning would fail thousands of times; backing off from 50 ms waits 50, 100, 200, 400 and
    // 800 ms between the first six errors: at least 1.5 s in all.
    assertThat(Duration.ofNanos(sixth - start)).isGreaterThanOrEqualTo(Duration.ofMillis(1500));
    for (int i = 1; i < 5; i++) {
      long gap = throwsAt.get(i) - throwsAt.get(i - 1);
      long expected = TimeUnit.MILLISECONDS.toNanos(50L << (i - 1));
      assertThat(gap).as("wait after error %d", i).isGreaterThanOrEqualTo(expected);
    }
    assertThat(sub.isRunning()).isTrue();
    publishAll(topic, List.of(message("k", 1)));
    Await.until(WAIT, "handled again after the errors stopped", () -> handled.contains(1));
    assertThat(sub.failure()).isEmpty();
  }
}
