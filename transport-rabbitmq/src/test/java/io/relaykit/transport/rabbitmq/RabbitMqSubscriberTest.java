package io.relaykit.transport.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import io.relaykit.message.Delivery;
import io.relaykit.message.MalformedMessageException;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHeaders;
import io.relaykit.message.PublishReceipt;
import io.relaykit.message.Subscription;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.ordering.OrderingMode;
import io.relaykit.retry.Backoff;
import io.relaykit.retry.PermanentFailureException;
import io.relaykit.retry.RetryPolicy;
import io.relaykit.tck.Await;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

@DisplayName("RabbitMqSubscriber on the real broker")
class RabbitMqSubscriberTest {

  private static final Duration WAIT = Duration.ofSeconds(30);

  private RabbitMqTransportConfig config;
  private RabbitMqTopology topology;
  private Connection admin;
  private String destination;
  private final List<String> groups = new ArrayList<>();
  private RabbitMqPublisher publisher;
  private final List<RabbitMqSubscriber> subscribers = new ArrayList<>();

  @BeforeEach
  void setUp() {
    config = TestBroker.config().build();
    topology = RabbitMqTopology.of(config);
    admin = TestBroker.connect(config);
    destination = TestBroker.unique("sub");
    publisher = RabbitMqPublisher.create(config);
  }

  @AfterEach
  void tearDown() throws Exception {
    for (RabbitMqSubscriber s : subscribers) {
      s.close();
    }
    publisher.close();
    for (String g : groups) {
      topology.delete(admin, destination, g, false);
    }
    try (Channel ch = admin.createChannel()) {
      ch.exchangeDelete(topology.exchange(destination));
    }
    admin.close();
  }

  private RabbitMqSubscriber subscriber() {
    RabbitMqSubscriber s = RabbitMqSubscriber.create(config);
    subscribers.add(s);
    return s;
  }

  private SubscriptionSpec.Builder spec(String group) {
    if (!groups.contains(group)) {
      groups.add(group);
    }
    return SubscriptionSpec.builder(destination, group)
        .ordering(OrderingMode.UNORDERED).concurrency(4).maxInFlight(64)
        .retryPolicy(RetryPolicy.builder().maxAttempts(3)
            .backoff(Backoff.fixed(Duration.ofMillis(200))).build());
  }

  private RabbitMqTopology.GroupQueues queues(String group) {
    return topology.queues(destination, group);
  }

  private static Message message(int i) {
    return Message.builder().id("m-" + i).type("test.event").key("k-" + (i % 5))
        .payload("payload-" + i).build();
  }

  private void publish(int from, int to) {
    List<CompletableFuture<PublishReceipt>> fs = new ArrayList<>();
    for (int i = from; i < to; i++) {
      fs.add(publisher.publish(destination, message(i)));
    }
    CompletableFuture.allOf(fs.toArray(CompletableFuture[]::new)).join();
  }

  @Nested
  @DisplayName("a failing handler")
  class Failures {

    @Test
    @DisplayName("while the broker blocks the mover's connection, a failed message is requeued"
        + " once per recovery interval (no hot loop of handler runs); after connection.unblocked"
        + " it is retried and dead-lettered as usual")
    void blockedMoverDoesNotSpin() throws Exception {
      RabbitMqSubscriber subscriber = RabbitMqSubscriber.create(config.toBuilder()
          .recoveryInterval(Duration.ofSeconds(1)).build());
      subscribers.add(subscriber);
      AtomicInteger runs = new AtomicInteger();
      subscriber.subscribe(spec("g").build(), d -> {
        runs.incrementAndGet();
        throw new IllegalStateException("boom " + d.attempt());
      });
      Connection mover = subscriber.mover().connection();
      ((com.rabbitmq.client.impl.AMQConnection) mover).processControlCommand(
          new com.rabbitmq.client.impl.AMQCommand(
              new AMQP.Connection.Blocked.Builder().reason("low on disk").build()));
      publisher.publish(destination, message(1)).get(10, TimeUnit.SECONDS);

      Await.until(WAIT, "the first run", () -> runs.get() >= 1);
      // Requeued after 1 s each time: at most about 4 runs in 3 s (a loop would make hundreds).
      Await.holds(Duration.ofSeconds(3), "at most one run per recovery interval",
          () -> runs.get() <= 5);
      assertThat(TestBroker.depth(admin, queues("g").deadLetterQueue())).isZero();

      ((com.rabbitmq.client.impl.AMQConnection) mover).processControlCommand(
          new com.rabbitmq.client.impl.AMQCommand(new AMQP.Connection.Unblocked.Builder().build()));
      Await.until(WAIT, "the message in the dead-letter queue",
          () -> TestBroker.depth(admin, queues("g").deadLetterQueue()) == 1);
      GetResponse dead = TestBroker.drain(admin, queues("g").deadLetterQueue()).get(0);
      assertThat(TestBroker.header(dead, MessageHeaders.ATTEMPT)).isEqualTo("3");
    }

    @Test
    @DisplayName("does not lose the message: it is retried after its delay, then dead-lettered "
        + "with reason, exception, attempts and times")
    void retriedThenDeadLettered() throws Exception {
      Queue<Delivery> seen = new ConcurrentLinkedQueue<>();
      Queue<Long> seenAt = new ConcurrentLinkedQueue<>();
      subscriber().subscribe(spec("g").build(), d -> {
        seen.add(d);
        seenAt.add(System.nanoTime());
        throw new IllegalStateException("boom " + d.attempt());
      });
      Message m = message(1);
      publisher.publish(destination, m).get(10, TimeUnit.SECONDS);

      Await.until(WAIT, "the message in the dead-letter queue",
          () -> TestBroker.depth(admin, queues("g").deadLetterQueue()) == 1);
      assertThat(seen).extracting(Delivery::attempt).containsExactly(1, 2, 3);
      List<Delivery> ds = new ArrayList<>(seen);
      assertThat(ds.get(0).firstFailureAt()).isNull();
      assertThat(ds.get(1).firstFailureAt()).isNotNull().isEqualTo(ds.get(2).firstFailureAt());
      assertThat(ds).allMatch(d -> d.message().equals(m));
      List<Long> at = new ArrayList<>(seenAt);
      assertThat(at.get(1) - at.get(0)).as("waited for the 200 ms delay level")
          .isGreaterThanOrEqualTo(Duration.ofMillis(200).toNanos());
      assertThat(at.get(2) - at.get(1)).isGreaterThanOrEqualTo(Duration.ofMillis(200).toNanos());

      GetResponse dead = TestBroker.drain(admin, queues("g").deadLetterQueue()).get(0);
      assertThat(TestBroker.header(dead, MessageHeaders.DEAD_REASON))
          .contains("attempts exhausted (3 of 3)").contains("boom 3");
      assertThat(TestBroker.header(dead, MessageHeaders.EXCEPTION_CLASS))
          .isEqualTo(IllegalStateException.class.getName());
      assertThat(TestBroker.header(dead, MessageHeaders.EXCEPTION_MESSAGE)).isEqualTo("boom 3");
      assertThat(TestBroker.header(dead, MessageHeaders.ATTEMPT)).isEqualTo("3");
      assertThat(TestBroker.header(dead, MessageHeaders.SOURCE)).isEqualTo(destination);
      Instant first = Instant.parse(TestBroker.header(dead, MessageHeaders.FIRST_FAILURE_AT));
      Instant last = Instant.parse(TestBroker.header(dead, MessageHeaders.LAST_FAILURE_AT));
      assertThat(first).isEqualTo(ds.get(1).firstFailureAt());
      assertThat(last).isAfterOrEqualTo(first.plusMillis(400));
      assertThat(TestBroker.body(dead)).isEqualTo("payload-1");
      assertThat(dead.getProps().getDeliveryMode()).isEqualTo(2);
      for (String q : queues("g").allQueues()) {
        assertThat(TestBroker.depth(admin, q)).as(q).isZero();
      }
    }

    @Test
    @DisplayName("that succeeds on the second attempt leaves nothing in dead letters")
    void succeedsOnRetry() {
      Queue<Integer> attempts = new ConcurrentLinkedQueue<>();
      subscriber().subscribe(spec("g").build(), d -> {
        attempts.add(d.attempt());
        if (d.attempt() == 1) {
          throw new IllegalStateException("transient");
        }
      });
      publish(0, 1);
      Await.until(WAIT, "the second attempt", () -> attempts.size() == 2);
      Await.until(WAIT, "every queue empty", () -> queues("g").allQueues().stream()
          .allMatch(q -> TestBroker.depth(admin, q) == 0));
      assertThat(attempts).containsExactly(1, 2);
    }

    @Test
    @DisplayName("with a permanent failure dead-letters at once, without retrying")
    void permanentFailure() {
      AtomicInteger calls = new AtomicInteger();
      subscriber().subscribe(spec("g").build(), d -> {
        calls.incrementAndGet();
        throw new MalformedMessageException("body is not JSON");
      });
      publish(0, 1);
      Await.until(WAIT, "the dead letter",
          () -> TestBroker.depth(admin, queues("g").deadLetterQueue()) == 1);
      GetResponse dead = TestBroker.drain(admin, queues("g").deadLetterQueue()).get(0);
      assertThat(calls).hasValue(1);
      assertThat(TestBroker.header(dead, MessageHeaders.DEAD_REASON))
          .startsWith("permanent failure").contains("body is not JSON");
      assertThat(TestBroker.header(dead, MessageHeaders.ATTEMPT)).isEqualTo("1");
    }

    @Test
    @DisplayName("a short retry delay does not wait behind a long one")
    void shortDelayDoesNotWaitBehindLongOne() {
      // attempt 1 waits 200 ms, attempt 2 waits 2 s (the 30 s level)
      RetryPolicy policy = RetryPolicy.builder().maxAttempts(5)
          .backoff(Backoff.exponential(Duration.ofMillis(200), 10)).build();
      Map<String, Queue<Integer>> attempts = new ConcurrentHashMap<>();
      subscriber().subscribe(spec("g").retryPolicy(policy).build(), d -> {
        attempts.computeIfAbsent(d.message().id(), k -> new ConcurrentLinkedQueue<>())
            .add(d.attempt());
        throw new IllegalStateException("down");
      });
      publish(0, 1);
      Await.until(WAIT, "m-0 waiting in the long delay queue",
          () -> TestBroker.depth(admin, queues("g").retryQueues().get(Duration.ofSeconds(30)))
              == 1);
      publish(1, 2);
      Await.until(WAIT, "m-1 retried after the short delay",
          () -> attempts.getOrDefault("m-1", new ConcurrentLinkedQueue<>()).size() >= 2);
      assertThat(attempts.get("m-0")).as("m-0 is still waiting out its long delay")
          .containsExactly(1, 2);
    }

    @Test
    @DisplayName("that outlives its timeout counts as a retryable failure")
    void handlerTimeout() {
      Queue<Integer> attempts = new ConcurrentLinkedQueue<>();
      CountDownLatch never = new CountDownLatch(1);
      subscriber().subscribe(spec("g").handlerTimeout(Duration.ofMillis(300)).build(), d -> {
        attempts.add(d.attempt());
        if (d.attempt() == 1) {
          never.await();
        }
      });
      publish(0, 1);
      Await.until(WAIT, "a second attempt after the timeout", () -> attempts.size() == 2);
      Await.until(WAIT, "every queue empty", () -> queues("g").allQueues().stream()
          .allMatch(q -> TestBroker.depth(admin, q) == 0));
      assertThat(attempts).containsExactly(1, 2);
    }
  }

  @Nested
  @DisplayName("bad input")
  class BadInput {

    private void publishRaw(Map<String, Object> headers, byte[] body) throws Exception {
      try (Channel ch = admin.createChannel()) {
        ch.confirmSelect();
        ch.basicPublish(topology.exchange(destination), "", true,
            new AMQP.BasicProperties.Builder().deliveryMode(2).headers(headers).build(), body);
        ch.waitForConfirmsOrDie(10_000);
      }
    }

    @Test
    @DisplayName("a message without envelope headers goes to dead letters with the reason; the "
        + "handler never sees it and later messages still flow")
    void undecodable() throws Exception {
      Queue<String> handled = new ConcurrentLinkedQueue<>();
      subscriber().subscribe(spec("g").build(), d -> handled.add(d.message().id()));
      Map<String, Object> headers = new HashMap<>();
      headers.put(MessageHeaders.ID, "raw-1");
      headers.put(MessageHeaders.TRACE_ID, "t");
      publishRaw(headers, "{not an envelope".getBytes(StandardCharsets.UTF_8));
      Map<String, Object> badAttempt = new HashMap<>(MessageHeaders.toWire(message(7)));
      badAttempt.put(MessageHeaders.ATTEMPT, "many");
      publishRaw(badAttempt, "x".getBytes(StandardCharsets.UTF_8));
      publish(0, 1);

      Await.until(WAIT, "two dead letters",
          () -> TestBroker.depth(admin, queues("g").deadLetterQueue()) == 2);
      Await.until(WAIT, "the good message handled", () -> handled.contains("m-0"));
      List<GetResponse> dead = TestBroker.drain(admin, queues("g").deadLetterQueue());
      Map<String, String> reasons = new HashMap<>();
      for (GetResponse r : dead) {
        reasons.put(TestBroker.header(r, MessageHeaders.ID),
            TestBroker.header(r, MessageHeaders.DEAD_REASON));
      }
      assertThat(reasons.get("raw-1")).isEqualTo("undecodable: missing header relaykit-type");
      assertThat(reasons.get("m-7")).startsWith("undecodable: header relaykit-attempt")
          .contains("many");
      assertThat(dead).extracting(TestBroker::body)
          .containsExactlyInAnyOrder("{not an envelope", "x");
      assertThat(handled).containsExactly("m-0");
    }

    @Test
    @DisplayName("an expired message is not delivered; it is acked and dropped")
    void expired() {
      Queue<String> handled = new ConcurrentLinkedQueue<>();
      Message old = Message.builder().id("old").type("t").payload("p")
          .createdAt(Instant.now().minusSeconds(60)).expiresAt(Instant.now().minusSeconds(1))
          .build();
      subscriber().subscribe(spec("g").build(), d -> handled.add(d.message().id()));
      publisher.publish(destination, old).join();
      publish(0, 1);
      Await.until(WAIT, "the live message handled", () -> handled.contains("m-0"));
      Await.until(WAIT, "every queue empty", () -> queues("g").allQueues().stream()
          .allMatch(q -> TestBroker.depth(admin, q) == 0));
      assertThat(handled).containsExactly("m-0");
    }
  }

  @Nested
  @DisplayName("topologies")
  class Topologies {

    @Test
    @DisplayName("work queue: two consumers of one group share 10 000 messages, each handled once")
    void workQueue() {
      Map<String, AtomicInteger> counts = new ConcurrentHashMap<>();
      AtomicInteger byFirst = new AtomicInteger();
      AtomicInteger bySecond = new AtomicInteger();
      subscriber().subscribe(spec("work").maxInFlight(200).build(), d -> {
        counts.computeIfAbsent(d.message().id(), k -> new AtomicInteger()).incrementAndGet();
        byFirst.incrementAndGet();
      });
      subscriber().subscribe(spec("work").maxInFlight(200).build(), d -> {
        counts.computeIfAbsent(d.message().id(), k -> new AtomicInteger()).incrementAndGet();
        bySecond.incrementAndGet();
      });
      publish(0, 10_000);
      Await.until(Duration.ofSeconds(90), "10 000 messages handled",
          () -> byFirst.get() + bySecond.get() >= 10_000);
      Await.until(WAIT, "the work queue empty",
          () -> TestBroker.depth(admin, queues("work").queue()) == 0);
      assertThat(counts).hasSize(10_000);
      assertThat(counts.values()).allMatch(c -> c.get() == 1);
      assertThat(byFirst.get()).isPositive();
      assertThat(bySecond.get()).isPositive();
      assertThat(byFirst.get() + bySecond.get()).isEqualTo(10_000);
    }

    @Test
    @DisplayName("pub/sub: two groups each see every message")
    void pubSub() {
      Queue<String> a = new ConcurrentLinkedQueue<>();
      Queue<String> b = new ConcurrentLinkedQueue<>();
      RabbitMqSubscriber s = subscriber();
      s.subscribe(spec("a").build(), d -> a.add(d.message().id()));
      s.subscribe(spec("b").build(), d -> b.add(d.message().id()));
      publish(0, 300);
      Await.until(WAIT, "both groups saw 300", () -> a.size() >= 300 && b.size() >= 300);
      assertThat(a).hasSize(300).doesNotHaveDuplicates();
      assertThat(b).hasSize(300).containsExactlyInAnyOrderElementsOf(a);
    }

    @Test
    @DisplayName("KEY ordering: one message per key at a time, in publish order")
    void keyOrdering() {
      Map<String, List<Integer>> byKey = new ConcurrentHashMap<>();
      Map<String, AtomicInteger> running = new ConcurrentHashMap<>();
      AtomicInteger overlaps = new AtomicInteger();
      subscriber().subscribe(spec("g").ordering(OrderingMode.KEY).build(), d -> {
        String key = d.message().key().orElseThrow();
        if (running.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet() > 1) {
          overlaps.incrementAndGet();
        }
        byKey.computeIfAbsent(key, k -> java.util.Collections.synchronizedList(new ArrayList<>()))
            .add(Integer.parseInt(d.message().id().substring(2)));
        running.get(key).decrementAndGet();
      });
      publish(0, 500);
      Await.until(WAIT, "500 handled",
          () -> byKey.values().stream().mapToInt(List::size).sum() == 500);
      assertThat(overlaps).hasValue(0);
      assertThat(byKey).hasSize(5);
      byKey.values().forEach(l -> assertThat(l).isSorted());
    }
  }

  @Nested
  @DisplayName("shutdown")
  class Shutdown {

    @Test
    @DisplayName("close cancels the consumer, lets in-flight handlers finish, and acks them")
    void gracefulClose() throws Exception {
      CountDownLatch release = new CountDownLatch(1);
      AtomicInteger started = new AtomicInteger();
      AtomicInteger finished = new AtomicInteger();
      Subscription sub = subscriber().subscribe(spec("g").build(), d -> {
        started.incrementAndGet();
        release.await();
        finished.incrementAndGet();
      });
      publish(0, 3);
      Await.until(WAIT, "three handlers running", () -> started.get() == 3);
      CompletableFuture<Boolean> closed =
          CompletableFuture.supplyAsync(() -> sub.close(Duration.ofSeconds(20)));
      Await.until(WAIT, "the subscription to stop running", () -> !sub.isRunning());
      release.countDown();
      assertThat(closed.get(30, TimeUnit.SECONDS)).isTrue();
      assertThat(finished).hasValue(3);
      publish(3, 4);
      assertThat(TestBroker.depth(admin, queues("g").queue()))
          .as("the finished three were acked; the new one is not consumed").isEqualTo(1);
      assertThat(started).hasValue(3);
    }

    @Test
    @DisplayName("a handler that misses the deadline is not acked: its message is redelivered")
    void deadlineMissed() throws Exception {
      CountDownLatch release = new CountDownLatch(1);
      AtomicInteger started = new AtomicInteger();
      Subscription sub = subscriber().subscribe(spec("g").build(), d -> {
        started.incrementAndGet();
        release.await();
      });
      publish(0, 1);
      Await.until(WAIT, "the handler running", () -> started.get() == 1);
      assertThat(sub.close(Duration.ofMillis(200))).isFalse();
      release.countDown();
      Await.until(WAIT, "the message back in the queue",
          () -> TestBroker.depth(admin, queues("g").queue()) == 1);
    }
  }

  @Nested
  @DisplayName("when the broker force-closes the subscriber's connection")
  class ConnectionLoss {
    @Test
    @DisplayName("it reconnects and keeps consuming; nothing is lost")
    void recovers() {
      Map<String, AtomicInteger> counts = new ConcurrentHashMap<>();
      RabbitMqSubscriber s = subscriber();
      s.subscribe(spec("g").build(),
          d -> counts.computeIfAbsent(d.message().id(), k -> new AtomicInteger())
              .incrementAndGet());
      publish(0, 100);
      Await.until(WAIT, "100 handled", () -> counts.size() == 100);
      assertThat(TestBroker.forceClose(s.connectionName())).isEqualTo(1);
      publish(100, 200);
      Await.until(WAIT, "200 handled after reconnecting", () -> counts.size() == 200);
      Await.until(WAIT, "the queue empty",
          () -> TestBroker.depth(admin, queues("g").queue()) == 0);
    }
  }

  /** The latest lag and in-flight a subscription reported for the test's destination. */
  private final class Gauges implements MetricsListener {
    final AtomicLong lag = new AtomicLong(-1);
    final AtomicLong inFlight = new AtomicLong(-1);
    final AtomicInteger lagSamples = new AtomicInteger();
    final Set<String> threads = ConcurrentHashMap.newKeySet();

    @Override
    public void consumerLag(String d, String group, long value) {
      if (d.equals(destination) && group.equals("g")) {
        threads.add(Thread.currentThread().getName());
        lag.set(value);
        lagSamples.incrementAndGet();
      }
    }

    @Override
    public void inFlight(String d, String group, long count) {
      if (d.equals(destination) && group.equals("g")) {
        threads.add(Thread.currentThread().getName());
        inFlight.set(count);
      }
    }
  }

  private RabbitMqSubscriber sampledSubscriber(MetricsListener metrics) {
    RabbitMqSubscriber s = RabbitMqSubscriber.create(config.toBuilder()
        .metricsInterval(Duration.ofMillis(50)).build(), LifecycleListener.noop(), metrics,
        InstantSource.system());
    subscribers.add(s);
    return s;
  }

  @Nested
  @DisplayName("lag and in-flight metrics")
  class Metrics {

    @Test
    @DisplayName("with the handlers blocked, in-flight is the prefetch (running plus waiting for a"
        + " lane) and lag the queue's ready rest; once released both drain to 0")
    void lagAndInFlight() throws Exception {
      Gauges gauges = new Gauges();
      CountDownLatch release = new CountDownLatch(1);
      AtomicInteger started = new AtomicInteger();
      sampledSubscriber(gauges).subscribe(spec("g").concurrency(2).maxInFlight(4).build(), d -> {
        started.incrementAndGet();
        release.await();
      });
      publish(0, 10);

      Await.until(WAIT, "2 handlers running", () -> started.get() == 2);
      Await.until(WAIT, "in flight 4 (the prefetch), lag 6 (10 published minus 4 taken)",
          () -> gauges.inFlight.get() == 4 && gauges.lag.get() == 6);
      assertThat(TestBroker.depth(admin, queues("g").queue())).as("the broker's ready count")
          .isEqualTo(6);
      assertThat(started).as("still only the 2 lanes").hasValue(2);
      release.countDown();
      Await.until(WAIT, "drained: lag 0, nothing in flight",
          () -> gauges.inFlight.get() == 0 && gauges.lag.get() == 0 && started.get() == 10);
      assertThat(gauges.threads).as("sampled on the metrics thread only")
          .containsOnly("relaykit-rabbitmq-metrics");
    }

    @Test
    @DisplayName("a lag sample that fails (the connection force-closed) is counted, the consumer"
        + " recovers and goes on, and sampling resumes")
    void failedSampleIsCounted() {
      Gauges gauges = new Gauges();
      Map<String, AtomicInteger> counts = new ConcurrentHashMap<>();
      RabbitMqSubscriber s = sampledSubscriber(gauges);
      RabbitMqSubscription sub = (RabbitMqSubscription) s.subscribe(spec("g").build(),
          d -> counts.computeIfAbsent(d.message().id(), k -> new AtomicInteger())
              .incrementAndGet());
      publish(0, 20);
      Await.until(WAIT, "20 handled and lag sampled at 0",
          () -> counts.size() == 20 && gauges.lag.get() == 0);
      assertThat(sub.lagSampleFailures()).isZero();

      assertThat(TestBroker.forceClose(s.connectionName())).isEqualTo(1);
      Await.until(WAIT, "a failed sample counted", () -> sub.lagSampleFailures() >= 1);
      publish(20, 40);
      Await.until(WAIT, "40 handled after reconnecting", () -> counts.size() == 40);
      int before = gauges.lagSamples.get();
      Await.until(WAIT, "lag sampled again, at 0",
          () -> gauges.lagSamples.get() > before && gauges.lag.get() == 0);
      assertThat(sub.isRunning()).isTrue();
    }
  }
}
