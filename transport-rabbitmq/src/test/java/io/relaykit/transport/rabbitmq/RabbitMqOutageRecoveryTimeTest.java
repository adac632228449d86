package io.relaykit.transport.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import io.relaykit.deadletter.InMemoryDeadLetterStore;
import io.relaykit.message.Message;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.outbox.InMemoryOutboxStore;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.retry.Backoff;
import io.relaykit.retry.Jitter;
import io.relaykit.retry.RetryPolicy;
import io.relaykit.tck.Await;
import io.relaykit.tck.FaultProxy;
import io.relaykit.tck.ForwardingOutboxStore;
import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * How long the path outbox relay, publisher, broker, subscriber takes to catch up after a 5 s
 * outage of the broker's port, with messages appended at a steady rate throughout (the demo's
 * relay settings, the transport's default recovery interval and confirm timeout): the outbox
 * backlog is back at its level before the fault, and a message appended after the heal is
 * delivered, within seconds of the heal. The outage is made with a {@link FaultProxy}; the broker
 * itself is never touched.
 */
@DisplayName("RabbitMQ relay and subscriber after a 5 s outage of the broker's port")
class RabbitMqOutageRecoveryTimeTest {

  private static final Duration OUTAGE = Duration.ofSeconds(5);
  /** From the fault's start; the outage itself is 5 s of it. Minutes without the fix. */
  private static final Duration RECOVERY_BOUND = Duration.ofSeconds(15);
  private static final long RATE_PER_SECOND = 80;

  private RabbitMqTransportConfig direct;
  private RabbitMqTopology topology;
  private Connection admin;
  private String destination;
  private FaultProxy proxy;
  private RabbitMqPublisher publisher;
  private RabbitMqSubscriber subscriber;
  private OutboxRelay relay;
  private Thread producer;
  private final AtomicBoolean producing = new AtomicBoolean(true);
  private final AtomicLong appended = new AtomicLong();
  private final AtomicLong sent = new AtomicLong();
  private final Set<String> delivered = ConcurrentHashMap.newKeySet();

  @BeforeEach
  void setUp() {
    // The transport's defaults for recovery and confirms, as an application gets them.
    direct = RabbitMqTransportConfig.builder().connectionName(TestBroker.unique("outage")).build();
    topology = RabbitMqTopology.of(direct);
    admin = TestBroker.connect(direct);
    destination = TestBroker.unique("outage");
    URI broker = URI.create(direct.uri());
    proxy = FaultProxy.to(broker.getHost(), broker.getPort());
  }

  @AfterEach
  void tearDown() throws Exception {
    producing.set(false);
    if (producer != null) {
      producer.join(5_000);
    }
    if (relay != null) {
      relay.close();
    }
    if (subscriber != null) {
      subscriber.close();
    }
    if (publisher != null) {
      publisher.close();
    }
    proxy.close();
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
        .build();
  }

  private long backlog() {
    return appended.get() - sent.get();
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"refuse", "blackhole"})
  @DisplayName("the backlog is back at its level before the fault and new messages are delivered"
      + " within 15 s of the fault's start")
  void catchesUpSoonAfterTheHeal(String mode) {
    subscriber = RabbitMqSubscriber.create(viaProxy());
    subscriber.subscribe(SubscriptionSpec.builder(destination, "g").concurrency(4)
        .maxInFlight(64).build(), d -> delivered.add(d.message().id()));
    publisher = RabbitMqPublisher.create(viaProxy());
    InMemoryOutboxStore memory = new InMemoryOutboxStore();
    ForwardingOutboxStore store = new ForwardingOutboxStore(memory) {
      @Override
      public int markSent(String owner, Collection<Long> sequences, Instant now) {
        int n = super.markSent(owner, sequences, now);
        sent.addAndGet(n);
        return n;
      }
    };
    // The checkout demo's relay settings.
    relay = OutboxRelay.builder(store, publisher, new InMemoryDeadLetterStore())
        .retryPolicy(RetryPolicy.builder().maxAttempts(1_000)
            .backoff(Backoff.exponential(Duration.ofMillis(100)).withMax(Duration.ofSeconds(5))
                .withJitter(Jitter.FULL)).build())
        .lease(Duration.ofSeconds(3))
        .confirmTimeout(Duration.ofMillis(1_500))
        .batchSize(200)
        .pollInterval(Duration.ofMillis(20))
        .build();
    relay.start();
    producer = new Thread(() -> {
      long start = System.nanoTime();
      long n = 0;
      while (producing.get()) {
        long due = start + n * 1_000_000_000L / RATE_PER_SECOND;
        long wait = due - System.nanoTime();
        if (wait > 0) {
          java.util.concurrent.locks.LockSupport.parkNanos(wait);
          continue;
        }
        memory.append(destination, Message.builder().id("m-" + n).type("t").key("k" + (n % 50))
            .payload("p").build());
        appended.incrementAndGet();
        n++;
      }
    }, "outage-test-producer");
    producer.setDaemon(true);
    producer.start();
    Await.until(Duration.ofSeconds(30), "messages flowing before the fault",
        () -> delivered.size() >= RATE_PER_SECOND);
    long baseline = 0;
    for (long t = System.nanoTime(); System.nanoTime() - t < 1_000_000_000L; ) {
      baseline = Math.max(baseline, backlog());
      Await.elapsed(Duration.ofMillis(20));
    }
    // At least a quarter second of appends: the backlog of a healthy relay moves between 0 and a
    // batch, and a poll must be able to catch it at or under the level.
    long floor = Math.max(baseline, RATE_PER_SECOND / 4);
    long faultStart = System.nanoTime();
    if (mode.equals("refuse")) {
      proxy.refuseConnections();
      proxy.cutConnections();
    } else {
      proxy.blackhole();
    }
    Await.elapsed(OUTAGE);
    proxy.heal();
    long healed = System.nanoTime();
    String afterHeal = "m-" + appended.get();
    Await.until(RECOVERY_BOUND.minus(Duration.ofNanos(healed - faultStart)),
        "the outbox backlog back at " + floor + " (now " + backlog() + "; " + publisher.describe()
            + ")", () -> backlog() <= floor);
    long backlogBack = System.nanoTime();
    Await.until(RECOVERY_BOUND.minus(Duration.ofNanos(System.nanoTime() - faultStart)),
        "delivery of " + afterHeal + ", appended after the heal", () -> delivered.contains(
            afterHeal));
    long deliveredAt = System.nanoTime();
    System.out.printf("%s: backlog back %d ms after the fault's start, new message delivered"
        + " %d ms after it%n", mode, (backlogBack - faultStart) / 1_000_000,
        (deliveredAt - faultStart) / 1_000_000);
    assertThat(Duration.ofNanos(deliveredAt - faultStart)).isLessThan(RECOVERY_BOUND);
  }
}
