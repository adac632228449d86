package io.relaykit.transport.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.DefaultConsumer;
import io.relaykit.monitor.SubscriptionStatus;
import io.relaykit.tck.Await;
import io.relaykit.tck.FaultProxy;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

@DisplayName("RabbitMqQueueStatus: queue depth by passive declare on the real RabbitMQ")
class RabbitMqQueueStatusTest {

  private static final Instant AT = Instant.parse("2026-03-01T10:00:00Z");
  /** What a failing read may take beyond its timeout on a loaded 2-core machine. */
  private static final Duration SLACK = Duration.ofSeconds(3);

  private RabbitMqTransportConfig direct;
  private RabbitMqTopology topology;
  private Connection admin;
  private String destination;

  @BeforeEach
  void setUp() throws Exception {
    direct = TestBroker.config().build();
    topology = RabbitMqTopology.of(direct);
    admin = TestBroker.connect(direct);
    destination = TestBroker.unique("status");
    topology.declare(admin, destination, "g");
  }

  @AfterEach
  void tearDown() throws Exception {
    topology.delete(admin, destination, "g", true);
    admin.close();
  }

  private void put(String queue, int count) throws Exception {
    try (Channel ch = admin.createChannel()) {
      ch.confirmSelect();
      for (int i = 0; i < count; i++) {
        ch.basicPublish("", queue, null, ("m" + i).getBytes(StandardCharsets.UTF_8));
      }
      ch.waitForConfirmsOrDie(10_000);
    }
  }

  private RabbitMqQueueStatus.Builder reader(RabbitMqTransportConfig config) {
    return RabbitMqQueueStatus.builder(config).clock(InstantSource.fixed(AT));
  }

  @Nested
  @DisplayName("figures")
  class Figures {

    @Test
    @DisplayName("the group queue's ready messages are the lag, its consumers are counted, and"
        + " unacknowledged deliveries are not visible: in-flight is UNKNOWN")
    void readyAndConsumers() throws Exception {
      String queue = topology.queues(destination, "g").queue();
      put(queue, 5);
      try (RabbitMqQueueStatus r = reader(direct).subscription(destination, "g").build()) {
        assertThat(r.read()).containsExactly(new SubscriptionStatus("rabbitmq-queue",
            destination, "g", 5, SubscriptionStatus.UNKNOWN, AT));
        assertThat(r.readQueues()).containsExactly(
            new RabbitMqQueueStatus.QueueDepth(queue, destination, "g", 5, 0, AT));

        try (Channel consumer = admin.createChannel()) {
          consumer.basicQos(2);
          consumer.basicConsume(queue, false, new DefaultConsumer(consumer)); // never acks
          Await.until(Duration.ofSeconds(30), "2 delivered, 3 ready, 1 consumer", () -> {
            try {
              return r.readQueues().equals(List.of(
                  new RabbitMqQueueStatus.QueueDepth(queue, destination, "g", 3, 1, AT)));
            } catch (Exception e) {
              throw new IllegalStateException(e);
            }
          });
          assertThat(r.read()).singleElement()
              .satisfies(s -> assertThat(s.inFlight()).isEqualTo(SubscriptionStatus.UNKNOWN));
        }
        // the unacknowledged two went back when the consumer's channel closed
        Await.until(Duration.ofSeconds(30), "5 ready again",
            () -> TestBroker.depth(admin, queue) == 5);
        assertThat(r.readQueues().get(0).ready()).isEqualTo(5);
        assertThat(r.readQueues().get(0).consumers()).isZero();
      }
    }

    @Test
    @DisplayName("a queue that does not exist, or goes away, is left out and counted; the others"
        + " are read in the order added; reads change nothing on the broker")
    void missingQueue() throws Exception {
      String other = TestBroker.unique("status-raw");
      try (Channel ch = admin.createChannel()) {
        ch.queueDeclare(other, false, false, false, null);
      }
      put(other, 2);
      try (RabbitMqQueueStatus r = reader(direct).queue(other)
          .subscription(destination, "absent").subscription(destination, "g").build()) {
        assertThat(r.read()).extracting(SubscriptionStatus::destination, SubscriptionStatus::group,
            SubscriptionStatus::lag).containsExactly(
                org.assertj.core.groups.Tuple.tuple(other, null, 2L),
                org.assertj.core.groups.Tuple.tuple(destination, "g", 0L));
        assertThat(r.missing()).isEqualTo(1);
        try (Channel ch = admin.createChannel()) {
          ch.queueDelete(other);
        }
        assertThat(r.read()).extracting(SubscriptionStatus::group).containsExactly("g");
        assertThat(r.missing()).isEqualTo(2);
      }
      assertThat(TestBroker.depth(admin, topology.queues(destination, "g").queue())).isZero();
      Channel ch = admin.createChannel(); // the broker closes it on the 404 below
      assertThatThrownBy(() -> ch.queueDeclarePassive(
          topology.queues(destination, "absent").queue()))
          .as("a passive declare creates nothing").isInstanceOf(IOException.class);
      assertThat(ch.isOpen()).isFalse();
    }
  }

  @Nested
  @DisplayName("broker outage through a fault proxy")
  class Outage {

    private FaultProxy proxy;

    @BeforeEach
    void proxy() {
      URI broker = URI.create(direct.uri());
      proxy = FaultProxy.to(broker.getHost(), broker.getPort());
    }

    @AfterEach
    void closeProxy() {
      proxy.close();
    }

    private RabbitMqTransportConfig viaProxy() {
      URI broker = URI.create(direct.uri());
      return direct.toBuilder()
          .uri(broker.getScheme() + "://" + broker.getRawUserInfo() + "@" + proxy.address()
              + (broker.getRawPath() == null ? "" : broker.getRawPath()))
          .build();
    }

    private void assertTimesOut(RabbitMqQueueStatus r, Duration timeout) {
      long start = System.nanoTime();
      assertThatThrownBy(r::read).isInstanceOf(TimeoutException.class)
          .hasMessageContaining("within " + timeout);
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(timeout.plus(SLACK));
    }

    @Test
    @DisplayName("a broker that never answers: read throws TimeoutException within its timeout,"
        + " on a new connection and on an open one; after healing, the next read answers")
    void stalledBroker() throws Exception {
      Duration timeout = Duration.ofSeconds(1);
      try (RabbitMqQueueStatus r = reader(viaProxy()).subscription(destination, "g")
          .timeout(timeout).build()) {
        proxy.blackhole();
        assertTimesOut(r, timeout); // connecting
        proxy.heal();
        Await.until(Duration.ofSeconds(30), "a read answers after healing", () -> {
          try {
            return r.read().size() == 1;
          } catch (Exception e) {
            return false; // the stuck handshake of the stalled read may still hold the worker
          }
        });
        proxy.blackhole();
        assertTimesOut(r, timeout); // on the open connection
        proxy.heal();
        Await.until(Duration.ofSeconds(30), "a read answers after healing again", () -> {
          try {
            return r.read().size() == 1;
          } catch (Exception e) {
            return false;
          }
        });
      }
    }

    @Test
    @DisplayName("a broker that refuses connections or drops them: read throws IOException"
        + " naming the broker within its timeout, then reconnects once it is back")
    void refusedAndCut() throws Exception {
      Duration timeout = Duration.ofSeconds(2);
      try (RabbitMqQueueStatus r = reader(viaProxy()).subscription(destination, "g")
          .timeout(timeout).build()) {
        assertThat(r.read()).hasSize(1);
        proxy.refuseConnections();
        proxy.cutConnections();
        long start = System.nanoTime();
        assertThatThrownBy(r::read).isInstanceOfAny(IOException.class, TimeoutException.class)
            .hasMessageContaining("RabbitMQ");
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(timeout.plus(SLACK));
        proxy.heal();
        Await.until(Duration.ofSeconds(30), "a read answers after the broker is back", () -> {
          try {
            return r.read().size() == 1;
          } catch (Exception e) {
            return false;
          }
        });
      }
    }

    @Test
    @DisplayName("an interrupt while waiting for the broker ends the read with"
        + " InterruptedException and keeps the thread's interrupt flag")
    void interrupted() throws Exception {
      try (RabbitMqQueueStatus r = reader(viaProxy()).subscription(destination, "g")
          .timeout(Duration.ofSeconds(60)).build()) {
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
        }, "queue-status-reader");
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

    @Test
    @DisplayName("close closes the reader's connection; a read after close is refused")
    void closeReleasesConnection() throws Exception {
      RabbitMqQueueStatus r = reader(viaProxy()).subscription(destination, "g").build();
      assertThat(r.read()).hasSize(1);
      assertThat(proxy.openConnections()).isEqualTo(1);
      r.close();
      Await.until(Duration.ofSeconds(10), "the connection closed",
          () -> proxy.openConnections() == 0);
      assertThatThrownBy(r::read).isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("closed");
      r.close();
    }
  }

  @Test
  @DisplayName("bad settings are refused naming the field and the value; the queue list is"
      + " bounded")
  void badSettings() {
    assertThatThrownBy(() -> RabbitMqQueueStatus.builder(direct).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no queue");
    assertThatThrownBy(() -> RabbitMqQueueStatus.builder(direct).queue("a").queue("b")
        .maxQueues(1).build()).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("maxQueues");
    assertThatThrownBy(() -> RabbitMqQueueStatus.builder(direct).queue(" "))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("queue");
    assertThatThrownBy(() -> RabbitMqQueueStatus.builder(direct).queue("x".repeat(256)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("255");
    assertThatThrownBy(() -> RabbitMqQueueStatus.builder(direct).subscription("d", "a.b"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("group");
    assertThatThrownBy(() -> RabbitMqQueueStatus.builder(direct).queue("a")
        .timeout(Duration.ZERO).build()).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("timeout");
    assertThatThrownBy(() -> RabbitMqQueueStatus.builder(direct).queue("a").clock(null).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("clock");
    assertThatThrownBy(() -> RabbitMqQueueStatus.builder(null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("config");
  }
}
