package io.relaykit.transport.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.impl.recovery.AutorecoveringConnection;
import io.relaykit.message.Message;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.ordering.OrderingMode;
import io.relaykit.retry.Backoff;
import io.relaykit.retry.RetryPolicy;
import io.relaykit.tck.Await;
import io.relaykit.tck.FaultProxy;
import java.net.URI;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Connection losses under a subscription, made with a {@link FaultProxy} on loopback in front of
 * the real broker (never by stopping it): deliveries of a lost channel never run after the loss,
 * a slow handler across two losses never gets a healthy message dead-lettered, and recovery
 * restores the consumer without topology recovery errors.
 */
@DisplayName("RabbitMqSubscriber across connection losses")
class RabbitMqRecoveryTest {

  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final int PREFETCH = 4;

  private RabbitMqTransportConfig direct;
  private RabbitMqTopology topology;
  private Connection admin;
  private String destination;
  private FaultProxy proxy;
  private RabbitMqPublisher publisher;
  private RabbitMqSubscriber subscriber;
  private final CountDownLatch release = new CountDownLatch(1);
  private final Queue<String> calls = new ConcurrentLinkedQueue<>();
  private final Queue<LifecycleEvent> events = new ConcurrentLinkedQueue<>();
  private final AtomicLong inFlightGauge = new AtomicLong(-1);

  @BeforeEach
  void setUp() {
    direct = TestBroker.config().build();
    topology = RabbitMqTopology.of(direct);
    admin = TestBroker.connect(direct);
    destination = TestBroker.unique("recovery");
    URI broker = URI.create(direct.uri());
    proxy = FaultProxy.to(broker.getHost(), broker.getPort());
    publisher = RabbitMqPublisher.create(direct);
  }

  @AfterEach
  void tearDown() throws Exception {
    release.countDown();
    if (subscriber != null) {
      subscriber.close();
    }
    proxy.close();
    publisher.close();
    topology.delete(admin, destination, "g", false);
    try (Channel ch = admin.createChannel()) {
      ch.exchangeDelete(topology.exchange(destination));
    }
    admin.close();
  }

  private RabbitMqTransportConfig viaProxy() {
    URI broker = URI.create(direct.uri());
    return direct.toBuilder()
        .uri(broker.getScheme() + "://" + broker.getRawUserInfo() + "@" + proxy.address()
            + (broker.getRawPath() == null ? "" : broker.getRawPath()))
        .prefetch(PREFETCH)
        .metricsInterval(Duration.ofMillis(50))
        .build();
  }

  /** One lane (PARTITION, one thread): m-0's first run blocks until {@link #release}. */
  private RabbitMqSubscription subscribeSlow() {
    subscriber = RabbitMqSubscriber.create(viaProxy(), events::add, new MetricsListener() {
      @Override
      public void inFlight(String d, String g, long count) {
        inFlightGauge.set(count);
      }
    }, InstantSource.system());
    SubscriptionSpec spec = SubscriptionSpec.builder(destination, "g")
        .ordering(OrderingMode.PARTITION).concurrency(1).maxInFlight(PREFETCH)
        .handlerTimeout(Duration.ofSeconds(60))
        .retryPolicy(RetryPolicy.builder().maxAttempts(3)
            .backoff(Backoff.fixed(Duration.ofMillis(200))).build())
        .build();
    return (RabbitMqSubscription) subscriber.subscribe(spec, d -> {
      String id = d.message().id();
      boolean first = !calls.contains(id);
      calls.add(id);
      if (first && id.equals("m-0")) {
        release.await();
      }
    });
  }

  private void publish(int n) {
    List<CompletableFuture<?>> fs = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      fs.add(publisher.publish(destination, Message.builder().id("m-" + i).type("t")
          .key("k").payload("p" + i).build()));
    }
    CompletableFuture.allOf(fs.toArray(CompletableFuture[]::new)).join();
  }

  private Map<String, Long> counts() {
    return calls.stream().collect(Collectors.groupingBy(Function.identity(),
        Collectors.counting()));
  }

  /** Cuts the subscriber's connection and waits for the recovered channel's redeliveries. */
  private void cutAndAwaitRedelivery(RabbitMqSubscription s, long receivedBefore) {
    long accepted = proxy.acceptedConnections();
    proxy.cutConnections();
    Await.until(WAIT, "a new connection through the proxy",
        () -> proxy.acceptedConnections() > accepted);
    Await.until(WAIT, "the redeliveries on the recovered channel",
        () -> s.received() >= receivedBefore + PREFETCH);
  }

  @Test
  @DisplayName("a delivery that waited for its lane when the connection dropped never runs: only"
      + " its redelivery does (the delivery that was running runs again, at-least-once)")
  void queuedDeliveryOfDeadChannelDoesNotRun() {
    RabbitMqSubscription s = subscribeSlow();
    publish(PREFETCH);
    Await.until(WAIT, "m-0 running and the rest queued",
        () -> calls.size() == 1 && s.received() == PREFETCH);

    cutAndAwaitRedelivery(s, PREFETCH);
    Await.until(WAIT, "the stale deliveries dropped from in-flight",
        () -> s.inFlight() == PREFETCH + 1);
    release.countDown();

    Await.until(WAIT, "every message handled", () -> counts().size() == PREFETCH
        && counts().get("m-0") == 2);
    Await.holds(Duration.ofSeconds(1), "no further runs", () -> calls.size() == PREFETCH + 1);
    assertThat(counts()).containsEntry("m-0", 2L).containsEntry("m-1", 1L)
        .containsEntry("m-2", 1L).containsEntry("m-3", 1L);
    assertThat(calls).containsExactly("m-0", "m-0", "m-1", "m-2", "m-3");
    Await.until(WAIT, "nothing in flight", () -> s.inFlight() == 0);
    assertThat(s.staleDropped()).isEqualTo(PREFETCH - 1);
    assertThat(TestBroker.depth(admin, topology.queues(destination, "g").queue())).isZero();
    // ACKED once per message: the stale m-0's dropped ack is not reported as one.
    assertThat(events.stream().filter(e -> e.stage() == LifecycleEvent.Stage.ACKED).count())
        .isEqualTo(PREFETCH);
    Await.until(WAIT, "the in-flight gauge back at 0", () -> inFlightGauge.get() == 0);
  }

  @Test
  @DisplayName("two connection losses under a slow handler: no nack/redeliver loop, nothing"
      + " dead-lettered, every message handled once (the running one at-least-once)")
  void twoCutsWithSlowHandlerDeadLetterNothing() {
    RabbitMqSubscription s = subscribeSlow();
    publish(PREFETCH);
    Await.until(WAIT, "m-0 running and the rest queued",
        () -> calls.size() == 1 && s.received() == PREFETCH);

    cutAndAwaitRedelivery(s, PREFETCH);
    cutAndAwaitRedelivery(s, 2L * PREFETCH);
    long received = s.received();
    // A nack/requeue loop redelivers hundreds of times a second and reaches x-delivery-limit.
    Await.holds(Duration.ofSeconds(2), "no redelivery loop while the lane is busy",
        () -> s.received() == received);
    RabbitMqTopology.GroupQueues q = topology.queues(destination, "g");
    assertThat(TestBroker.depth(admin, q.deadLetterQueue())).isZero();
    release.countDown();

    Await.until(WAIT, "every message handled", () -> counts().size() == PREFETCH
        && counts().get("m-0") == 2);
    Await.holds(Duration.ofSeconds(1), "no further runs", () -> calls.size() == PREFETCH + 1);
    assertThat(counts()).containsEntry("m-0", 2L).containsEntry("m-1", 1L)
        .containsEntry("m-2", 1L).containsEntry("m-3", 1L);
    Await.until(WAIT, "nothing in flight", () -> s.inFlight() == 0);
    assertThat(TestBroker.depth(admin, q.deadLetterQueue())).isZero();
    assertThat(TestBroker.depth(admin, q.queue())).isZero();
    assertThat(events.stream().filter(e -> e.stage() == LifecycleEvent.Stage.DEAD_LETTERED))
        .isEmpty();
  }

  @Test
  @DisplayName("a handler that fails while its channel is lost makes no retry copy: the"
      + " redelivery alone goes on with the same attempt, so the retry chain runs once")
  void failureOfLostDeliveryMakesNoCopy() {
    subscriber = RabbitMqSubscriber.create(viaProxy(), events::add, MetricsListener.noop(),
        InstantSource.system());
    Queue<Integer> attempts = new ConcurrentLinkedQueue<>();
    RabbitMqSubscription s = (RabbitMqSubscription) subscriber.subscribe(
        SubscriptionSpec.builder(destination, "g").ordering(OrderingMode.PARTITION)
            .concurrency(1).maxInFlight(PREFETCH).handlerTimeout(Duration.ofSeconds(60))
            .retryPolicy(RetryPolicy.builder().maxAttempts(3)
                .backoff(Backoff.fixed(Duration.ofMillis(200))).build()).build(), d -> {
          boolean first = attempts.isEmpty();
          attempts.add(d.attempt());
          if (first) {
            release.await();
          }
          if (d.attempt() == 1) {
            throw new IllegalStateException("attempt 1 fails");
          }
        });
    publish(1);
    Await.until(WAIT, "the first run", () -> attempts.size() == 1);
    long accepted = proxy.acceptedConnections();
    proxy.cutConnections();
    Await.until(WAIT, "a new connection", () -> proxy.acceptedConnections() > accepted);
    Await.until(WAIT, "the redelivery", () -> s.received() >= 2);
    release.countDown();
    Await.until(WAIT, "attempt 2 succeeded", () -> attempts.contains(2)
        && s.inFlight() == 0);
    Await.holds(Duration.ofSeconds(1), "no further runs", () -> attempts.size() == 3);
    assertThat(attempts).containsExactly(1, 1, 2);
    assertThat(events.stream().filter(e -> e.stage() == LifecycleEvent.Stage.RETRIED).count())
        .isEqualTo(1);
    assertThat(events.stream().filter(e -> e.stage() == LifecycleEvent.Stage.ACKED).count())
        .isEqualTo(1);
    for (String q : topology.queues(destination, "g").allQueues()) {
      assertThat(TestBroker.depth(admin, q)).as(q).isZero();
    }
  }

  @Test
  @DisplayName("a connection loss is recovered without topology recovery errors (the queues are"
      + " declared on channels closed since), and consuming resumes")
  void recoversWithoutTopologyErrors() {
    subscriber = RabbitMqSubscriber.create(viaProxy());
    Queue<String> seen = new ConcurrentLinkedQueue<>();
    RabbitMqSubscription s = (RabbitMqSubscription) subscriber.subscribe(
        SubscriptionSpec.builder(destination, "g").build(), d -> seen.add(d.message().id()));
    publish(1);
    Await.until(WAIT, "the first message", () -> seen.size() == 1);
    long accepted = proxy.acceptedConnections();
    proxy.cutConnections();
    Await.until(WAIT, "a new connection", () -> proxy.acceptedConnections() > accepted);
    Await.until(WAIT, "the consumer recovered", s::isRunning);
    publisher.publish(destination, Message.builder().id("after").type("t").payload("x").build())
        .join();
    Await.until(WAIT, "the message published after the loss", () -> seen.contains("after"));
    assertThat(subscriber.recoveryFailures()).isZero();
  }

  @Test
  @DisplayName("the broker's port refusing connections after a cut, then a second cut right after"
      + " it heals: the consumer comes back, every message is handled once and nothing is"
      + " dead-lettered")
  void refuseThenCutRecovers() {
    subscriber = RabbitMqSubscriber.create(viaProxy());
    Map<String, Long> seen = new java.util.concurrent.ConcurrentHashMap<>();
    RabbitMqSubscription s = (RabbitMqSubscription) subscriber.subscribe(
        SubscriptionSpec.builder(destination, "g").concurrency(2).maxInFlight(PREFETCH).build(),
        d -> seen.merge(d.message().id(), 1L, Long::sum));
    publish(2);
    Await.until(WAIT, "the first messages", () -> seen.size() == 2);
    proxy.refuseConnections();
    proxy.cutConnections();
    Await.until(WAIT, "the consumer down", () -> !s.isRunning());
    Await.elapsed(Duration.ofMillis(1_000)); // several refused reconnects (200 ms apart)
    assertThat(s.isRunning()).isFalse();
    long accepted = proxy.acceptedConnections();
    proxy.heal();
    Await.until(WAIT, "a new connection", () -> proxy.acceptedConnections() > accepted);
    proxy.cutConnections();
    Await.until(WAIT, "the consumer back", s::isRunning);
    List<CompletableFuture<?>> fs = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      fs.add(publisher.publish(destination, Message.builder().id("after-" + i).type("t")
          .payload("x").build()));
    }
    CompletableFuture.allOf(fs.toArray(CompletableFuture[]::new)).join();
    Await.until(WAIT, "everything published after the faults", () -> seen.size() == 22);
    // m-0 and m-1 may run twice (their acks may be lost with the cut: at-least-once); what was
    // published after the faults runs once.
    seen.forEach((id, n) -> assertThat(n).as(id).isEqualTo(id.startsWith("after-") ? 1L
        : Math.min(n, 2L)));
    // A recovery the second cut interrupted may have failed (counted, logged); a later one or the
    // subscription's reopen restored the channel and its consumer.
    assertThat(s.channel().isOpen()).isTrue();
    assertThat(TestBroker.depth(admin, topology.queues(destination, "g").deadLetterQueue()))
        .isZero();
  }

  @Test
  @DisplayName("three connection losses under one slow handler: other keys' deliveries still run"
      + " while it blocks (the lost channels' dropped deliveries do not fill the worker queue and"
      + " stall the subscription), and the slow one runs again once, at-least-once")
  void cutsUnderSlowHandlerDoNotStallOtherKeys() {
    subscriber = RabbitMqSubscriber.create(viaProxy().toBuilder().prefetch(2).build(),
        events::add, MetricsListener.noop(), InstantSource.system());
    RabbitMqSubscription s = (RabbitMqSubscription) subscriber.subscribe(
        SubscriptionSpec.builder(destination, "g").ordering(OrderingMode.KEY).concurrency(2)
            .maxInFlight(2).handlerTimeout(Duration.ofSeconds(60)).build(), d -> {
              String id = d.message().id();
              boolean first = !calls.contains(id);
              calls.add(id);
              if (first && id.equals("a-0")) {
                release.await();
              }
            });
    publisher.publish(destination, Message.builder().id("a-0").type("t").key("a").payload("p")
        .build()).join();
    Await.until(WAIT, "a-0 running", () -> calls.size() == 1);
    for (int cut = 1; cut <= 3; cut++) {
      long before = s.received();
      long accepted = proxy.acceptedConnections();
      proxy.cutConnections();
      Await.until(WAIT, "a new connection after cut " + cut,
          () -> proxy.acceptedConnections() > accepted);
      Await.until(WAIT, "a-0 redelivered after cut " + cut, () -> s.received() > before);
    }
    for (int i = 0; i < 6; i++) {
      publisher.publish(destination, Message.builder().id("b-" + i).type("t").key("b" + i)
          .payload("p").build()).join();
    }
    Await.until(WAIT, "other keys handled while a-0 still blocks",
        () -> calls.stream().filter(c -> c.startsWith("b-")).count() == 6);
    assertThat(calls).containsOnlyOnce("a-0");
    release.countDown();
    Await.until(WAIT, "a-0's redelivery handled", () -> counts().get("a-0") == 2);
    Await.holds(Duration.ofSeconds(1), "no further runs", () -> calls.size() == 8);
    Await.until(WAIT, "nothing in flight", () -> s.inFlight() == 0);
    RabbitMqTopology.GroupQueues q = topology.queues(destination, "g");
    assertThat(TestBroker.depth(admin, q.queue())).isZero();
    assertThat(TestBroker.depth(admin, q.deadLetterQueue())).isZero();
  }

  @Test
  @DisplayName("a foreign CloudEvent with a malformed attribute that was queued when the"
      + " connection dropped is counted as ignored once, not again at its redelivery")
  void ignoredAttributesCountedOnceAcrossCut() throws Exception {
    Map<String, Long> ignored = new java.util.concurrent.ConcurrentHashMap<>();
    subscriber = RabbitMqSubscriber.create(viaProxy(), events::add, new MetricsListener() {
      @Override
      public void ignored(String where, String reason, long count) {
        ignored.merge(reason, count, Long::sum);
      }
    }, InstantSource.system());
    RabbitMqSubscription s = (RabbitMqSubscription) subscriber.subscribe(
        SubscriptionSpec.builder(destination, "g").ordering(OrderingMode.PARTITION)
            .concurrency(1).maxInFlight(PREFETCH).handlerTimeout(Duration.ofSeconds(60))
            .inbound(io.relaykit.message.InboundMapping.foreign().cloudEvents(true).build())
            .build(), d -> {
              String body = d.message().payloadUtf8();
              boolean first = !calls.contains(body);
              calls.add(body);
              if (first && body.equals("slow")) {
                release.await();
              }
            });
    Map<String, Object> bad = new java.util.HashMap<>();
    bad.put("cloudEvents_specversion", "1.0");
    bad.put("cloudEvents_source", "/s");
    bad.put("cloudEvents_id", "1");
    bad.put("cloudEvents_time", "yesterday");
    try (Channel ch = admin.createChannel()) {
      ch.confirmSelect();
      ch.basicPublish(topology.exchange(destination), "k", true,
          new com.rabbitmq.client.AMQP.BasicProperties.Builder().build(),
          "slow".getBytes(java.nio.charset.StandardCharsets.UTF_8));
      ch.basicPublish(topology.exchange(destination), "k", true,
          new com.rabbitmq.client.AMQP.BasicProperties.Builder().headers(bad).build(),
          "bad".getBytes(java.nio.charset.StandardCharsets.UTF_8));
      ch.waitForConfirmsOrDie(10_000);
    }
    Await.until(WAIT, "slow running, bad queued", () -> calls.size() == 1 && s.received() == 2);
    Await.until(WAIT, "bad's attribute counted", () -> ignored.values().stream()
        .mapToLong(Long::longValue).sum() == 1);
    long accepted = proxy.acceptedConnections();
    proxy.cutConnections();
    Await.until(WAIT, "a new connection", () -> proxy.acceptedConnections() > accepted);
    Await.until(WAIT, "both redelivered", () -> s.received() >= 4);
    release.countDown();
    Await.until(WAIT, "both handled", () -> calls.contains("bad"));
    Await.until(WAIT, "nothing in flight", () -> s.inFlight() == 0);
    assertThat(calls).containsExactly("slow", "slow", "bad");
    assertThat(ignored).containsExactly(
        Map.entry(MetricsListener.IGNORED_CLOUDEVENTS_ATTRIBUTE, 1L));
  }

  @Test
  @DisplayName("subscribing and closing again and again keeps nothing of the closed"
      + " subscriptions: the subscriber forgets them, and the connection's recovery listeners,"
      + " channels and recorded consumers do not grow")
  void closedSubscriptionsAreForgotten() throws Exception {
    subscriber = RabbitMqSubscriber.create(viaProxy());
    AutorecoveringConnection c = field(subscriber, RabbitMqSubscriber.class, "connection");
    List<?> listeners = field(c, AutorecoveringConnection.class, "recoveryListeners");
    Map<?, ?> channels = field(c, AutorecoveringConnection.class, "channels");
    int listenersBefore = listeners.size();
    int channelsBefore = channels.size();
    for (int i = 0; i < 5; i++) {
      io.relaykit.message.Subscription s = subscriber.subscribe(
          SubscriptionSpec.builder(destination, "g").build(), d -> { });
      assertThat(s.close(Duration.ofSeconds(5))).isTrue();
    }
    assertThat(listeners).hasSize(listenersBefore);
    Await.until(WAIT, "the closed channels unregistered",
        () -> channels.size() == channelsBefore);
    assertThat(c.getRecordedConsumers()).isEmpty();
    List<?> subscriptions = field(subscriber, RabbitMqSubscriber.class, "subscriptions");
    assertThat(subscriptions).isEmpty();
  }

  @SuppressWarnings("unchecked")
  private static <T> T field(Object o, Class<?> type, String name) throws Exception {
    java.lang.reflect.Field f = type.getDeclaredField(name);
    f.setAccessible(true);
    return (T) f.get(o);
  }

  @Test
  @DisplayName("the broker closing the consumer's channel alone (a channel-level error, here an"
      + " ack of an unknown tag) does not leave the subscription without a consumer: the channel"
      + " is reopened and consuming resumes")
  void channelLevelCloseReopens() throws Exception {
    subscriber = RabbitMqSubscriber.create(viaProxy());
    Queue<String> seen = new ConcurrentLinkedQueue<>();
    RabbitMqSubscription s = (RabbitMqSubscription) subscriber.subscribe(
        SubscriptionSpec.builder(destination, "g").build(), d -> seen.add(d.message().id()));
    publish(1);
    Await.until(WAIT, "the first message", () -> seen.size() == 1);
    synchronized (s.channel()) {
      s.channel().basicAck(1_000_000, false); // PRECONDITION_FAILED: unknown delivery tag
    }
    Await.until(WAIT, "the channel closed by the broker", () -> s.channelReopens() > 0
        || !s.isRunning());
    Await.until(WAIT, "the consumer back", s::isRunning);
    publisher.publish(destination, Message.builder().id("after").type("t").payload("x").build())
        .join();
    Await.until(WAIT, "the message published after the close", () -> seen.contains("after"));
    assertThat(s.channelReopens()).isPositive();
    assertThat(seen).containsExactly("m-0", "after");
  }
}
