package io.relaykit.transport.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.impl.AMQCommand;
import com.rabbitmq.client.impl.AMQConnection;
import io.relaykit.message.Message;
import io.relaykit.message.PublishException;
import io.relaykit.message.PublishReceipt;
import io.relaykit.tck.Await;
import io.relaykit.tck.FaultProxy;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The publisher (and the subscriber's close) when the broker stops reading (a TCP proxy that stalls what the client sends, as a
 * broker under a memory or disk alarm does) and when the broker blocks the connection
 * (connection.blocked, injected into the client's own control-command path: a proxy cannot make
 * the broker send it).
 */
@DisplayName("RabbitMQ publisher and subscriber when the broker stops reading or blocks the connection")
@Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD) // a hang is a failure
class RabbitMqFaultTest {

  private static final Duration CONFIRM_TIMEOUT = Duration.ofSeconds(2);
  private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(2);
  /** What a publish() call or the completion of its future may take beyond its timeout. */
  private static final Duration SLACK = Duration.ofSeconds(4);

  private RabbitMqTransportConfig direct;
  private RabbitMqTopology topology;
  private Connection admin;
  private String destination;
  private RabbitMqTopology.GroupQueues queues;
  private FaultProxy proxy;
  private RabbitMqPublisher publisher;
  private final ExecutorService callers = Executors.newCachedThreadPool(r -> {
    Thread t = new Thread(r, "fault-test-caller");
    t.setDaemon(true);
    return t;
  });

  @BeforeEach
  void setUp() throws Exception {
    direct = TestBroker.config().build();
    topology = RabbitMqTopology.of(direct);
    admin = TestBroker.connect(direct);
    destination = TestBroker.unique("stall");
    queues = topology.declare(admin, destination, "g");
    URI broker = URI.create(direct.uri());
    proxy = FaultProxy.to(broker.getHost(), broker.getPort());
  }

  @AfterEach
  void tearDown() throws Exception {
    // The proxy first: whatever the publisher still writes fails, so its close cannot hang here.
    proxy.close();
    if (publisher != null) {
      CompletableFuture.runAsync(publisher::close, callers).get(30, TimeUnit.SECONDS);
    }
    callers.shutdownNow();
    topology.delete(admin, destination, "g", true);
    admin.close();
  }

  private RabbitMqTransportConfig viaProxy() {
    URI broker = URI.create(direct.uri());
    return direct.toBuilder()
        .uri(broker.getScheme() + "://" + broker.getRawUserInfo() + "@" + proxy.address()
            + (broker.getRawPath() == null ? "" : broker.getRawPath()))
        .confirmTimeout(CONFIRM_TIMEOUT)
        .closeTimeout(CLOSE_TIMEOUT)
        .confirmWindow(4096)
        .build();
  }

  private static Message big(int i) {
    return Message.builder().id("big-" + i).type("test.event").key("k")
        .payload(new byte[64 * 1024]).build();
  }

  @Test
  @DisplayName("publish() returns and its future fails with PublishException within the confirm"
      + " timeout while the broker reads nothing, and close() returns within its timeout")
  void stalledBrokerTimesOut() throws Exception {
    publisher = RabbitMqPublisher.create(viaProxy());
    publisher.publish(destination, big(0)).get(10, TimeUnit.SECONDS);
    proxy.stopReading();

    // 600 x 64 KiB is far more than the socket buffers between client and proxy hold: a writer
    // on the caller's thread blocks in the socket write.
    int n = 600;
    CompletableFuture<List<CompletableFuture<PublishReceipt>>> calls =
        CompletableFuture.supplyAsync(() -> {
          List<CompletableFuture<PublishReceipt>> futures = new ArrayList<>();
          for (int i = 1; i <= n; i++) {
            futures.add(publisher.publish(destination, big(i)));
          }
          return futures;
        }, callers);
    List<CompletableFuture<PublishReceipt>> futures;
    long started = System.nanoTime();
    try {
      futures = calls.get(CONFIRM_TIMEOUT.plus(SLACK).toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      throw new AssertionError("publish() did not return while the broker read nothing", e);
    }
    for (CompletableFuture<PublishReceipt> f : futures) {
      long left = CONFIRM_TIMEOUT.plus(SLACK).toNanos() - (System.nanoTime() - started);
      try {
        f.get(Math.max(0, left), TimeUnit.NANOSECONDS);
        throw new AssertionError("a publish was confirmed although the broker read nothing");
      } catch (ExecutionException e) {
        assertThat(e.getCause()).isInstanceOf(PublishException.class)
            .hasMessageContaining(CONFIRM_TIMEOUT.toString());
      } catch (TimeoutException e) {
        throw new AssertionError("a publish future was not failed within the confirm timeout", e);
      }
    }
    assertThat(publisher.unconfirmed()).isZero();

    // A later publish fails in time as well, and close() returns within its timeout.
    CompletableFuture<PublishReceipt> later = CompletableFuture.supplyAsync(
        () -> publisher.publish(destination, big(n + 1)), callers).get(
            CONFIRM_TIMEOUT.plus(SLACK).toMillis(), TimeUnit.MILLISECONDS);
    // close() waits up to the close timeout for confirms, as long again for the connection's
    // close (then closes its socket under it).
    Duration closeBound = CLOSE_TIMEOUT.multipliedBy(2).plus(SLACK);
    long closing = System.nanoTime();
    try {
      CompletableFuture.runAsync(publisher::close, callers)
          .get(closeBound.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      throw new AssertionError("close() did not return while the broker read nothing", e);
    }
    assertThat(Duration.ofNanos(System.nanoTime() - closing)).isLessThan(closeBound);
    assertThat(later).isCompletedExceptionally();
    assertThat(TestBroker.depth(admin, queues.queue())).as("only the first message arrived")
        .isEqualTo(1);
  }

  @Test
  @DisplayName("when the broker reads again the same connection carries on: later messages are"
      + " confirmed, unroutable ones still fail as unroutable, nothing was reconnected")
  void resumesAfterStall() throws Exception {
    publisher = RabbitMqPublisher.create(viaProxy());
    publisher.publish(destination, big(0)).get(10, TimeUnit.SECONDS);
    proxy.stopReading();
    List<CompletableFuture<PublishReceipt>> stalled = new ArrayList<>();
    for (int i = 1; i <= 600; i++) {
      stalled.add(publisher.publish(destination, big(i)));
    }
    for (CompletableFuture<PublishReceipt> f : stalled) {
      try {
        f.get(CONFIRM_TIMEOUT.plus(SLACK).toMillis(), TimeUnit.MILLISECONDS);
      } catch (ExecutionException e) {
        assertThat(e.getCause()).isInstanceOf(PublishException.class);
      }
    }
    proxy.heal();

    // Alternate a routable and an unroutable destination: a confirm or a return matched to the
    // wrong message (sequence numbers out of step after the skipped ones) fails the wrong future.
    String lonely = TestBroker.unique("lonely");
    try {
      List<CompletableFuture<PublishReceipt>> routable = new ArrayList<>();
      List<CompletableFuture<PublishReceipt>> unroutable = new ArrayList<>();
      for (int i = 0; i < 40; i++) {
        Message m = Message.builder().id("after-" + i).type("t").payload("x").build();
        (i % 2 == 0 ? routable : unroutable).add(
            publisher.publish(i % 2 == 0 ? destination : lonely, m));
      }
      for (CompletableFuture<PublishReceipt> f : routable) {
        assertThat(f.get(30, TimeUnit.SECONDS).messageId()).startsWith("after-");
      }
      for (CompletableFuture<PublishReceipt> f : unroutable) {
        assertThatThrownBy(() -> f.get(30, TimeUnit.SECONDS))
            .cause().isInstanceOf(PublishException.class).hasMessageContaining("unroutable");
      }
      assertThat(publisher.recoveries()).as("no reconnect was needed").isZero();
      long ids = TestBroker.drain(admin, queues.queue()).stream()
          .map(r -> r.getProps().getMessageId()).filter(id -> id.startsWith("after-")).count();
      assertThat(ids).isEqualTo(20);
    } finally {
      try (var ch = admin.createChannel()) {
        ch.exchangeDelete(topology.exchange(lonely));
      }
    }
  }

  @Test
  @DisplayName("a connection cut while a write is stuck: the publisher reconnects and republishes;"
      + " every message is confirmed and on the queue")
  void cutDuringStuckWrite() throws Exception {
    publisher = RabbitMqPublisher.create(viaProxy().toBuilder()
        .confirmTimeout(Duration.ofSeconds(60)).build());
    publisher.publish(destination, big(0)).get(10, TimeUnit.SECONDS);
    proxy.stopReading();
    List<CompletableFuture<PublishReceipt>> futures = new ArrayList<>();
    for (int i = 1; i <= 300; i++) {
      futures.add(publisher.publish(destination, big(i)));
    }
    Await.until(Duration.ofSeconds(20), "the writer blocked in a socket write",
        RabbitMqFaultTest::writerBlockedInSocketWrite);
    proxy.cutConnections();
    proxy.heal();

    for (CompletableFuture<PublishReceipt> f : futures) {
      f.get(60, TimeUnit.SECONDS);
    }
    assertThat(publisher.recoveries()).isGreaterThanOrEqualTo(1);
    assertThat(publisher.republished()).isPositive();
    java.util.Set<String> ids = new java.util.HashSet<>();
    for (var r : TestBroker.drain(admin, queues.queue())) {
      ids.add(r.getProps().getMessageId());
    }
    for (int i = 0; i <= 300; i++) {
      assertThat(ids).contains("big-" + i);
    }
  }

  @Test
  @DisplayName("Subscription.close(deadline) and the subscriber's close return in time while the"
      + " broker reads nothing")
  void subscriberClosesWhileStalled() throws Exception {
    RabbitMqTransportConfig stalled = viaProxy();
    RabbitMqSubscriber subscriber = RabbitMqSubscriber.create(stalled);
    try {
      io.relaykit.message.Subscription s = subscriber.subscribe(
          io.relaykit.message.SubscriptionSpec.builder(destination, "g").build(), d -> { });
      proxy.stopReading();
      // close(1 s): the drain (nothing in flight) plus at most 1 s for the channel's close-ok.
      try {
        CompletableFuture.supplyAsync(() -> s.close(Duration.ofSeconds(1)), callers)
            .get(Duration.ofSeconds(2).plus(SLACK).toMillis(), TimeUnit.MILLISECONDS);
      } catch (TimeoutException e) {
        throw new AssertionError("Subscription.close(1 s) did not return", e);
      }
      // The subscriber: its mover publisher (twice closeTimeout at most) and its connection
      // (closeTimeout for close-ok, then the socket is closed).
      try {
        CompletableFuture.runAsync(subscriber::close, callers)
            .get(CLOSE_TIMEOUT.multipliedBy(3).plus(SLACK).toMillis(), TimeUnit.MILLISECONDS);
      } catch (TimeoutException e) {
        throw new AssertionError("RabbitMqSubscriber.close() did not return", e);
      }
    } finally {
      proxy.heal();
      subscriber.close();
    }
  }

  @Test
  @DisplayName("a confirm nack fails that message's future with a retryable PublishException; the"
      + " publisher carries on")
  void nackFailsTheMessage() throws Exception {
    publisher = RabbitMqPublisher.create(viaProxy().toBuilder()
        .confirmTimeout(Duration.ofSeconds(60)).build());
    publisher.publish(destination, big(0)).get(10, TimeUnit.SECONDS);
    com.rabbitmq.client.Channel ch = publisher.channel();
    // The proxy holds the message back, so the broker's own ack cannot overtake the nack.
    proxy.stopReading();
    long seq = ch.getNextPublishSeqNo();
    CompletableFuture<PublishReceipt> nacked = publisher.publish(destination,
        Message.builder().id("to-nack").type("t").payload("x").build());
    Await.until(Duration.ofSeconds(10), "the message written",
        () -> ch.getNextPublishSeqNo() == seq + 1);
    ((com.rabbitmq.client.impl.ChannelN) ch).processAsync(new AMQCommand(
        new AMQP.Basic.Nack.Builder().deliveryTag(seq).multiple(false).requeue(false).build()));

    assertFailure(nacked, "nacked", "to-nack");
    proxy.heal();
    assertThat(publisher.publish(destination, big(1)).get(30, TimeUnit.SECONDS).messageId())
        .isEqualTo("big-1");
    assertThat(publisher.unconfirmed()).isZero();
  }

  /** Whether a publisher's writer thread is inside a socket write (the buffers are full). */
  private static boolean writerBlockedInSocketWrite() {
    for (var e : Thread.getAllStackTraces().entrySet()) {
      if (e.getKey().getName().endsWith("-writer")) {
        StackTraceElement[] stack = e.getValue();
        for (int i = 0; i < Math.min(stack.length, 12); i++) {
          String frame = stack[i].getClassName() + "." + stack[i].getMethodName();
          if (frame.contains("Socket") && frame.toLowerCase(java.util.Locale.ROOT)
              .contains("write")) {
            return true;
          }
        }
      }
    }
    return false;
  }

  /** Delivers a broker control command to {@code c} the way its reader thread does. */
  private static void fromBroker(Connection c, com.rabbitmq.client.Method method)
      throws Exception {
    assertThat(((AMQConnection) c).processControlCommand(new AMQCommand(method))).isTrue();
  }

  @Test
  @DisplayName("connection.blocked fails every message not yet written and every later publish at"
      + " once, naming the broker's reason; written ones are confirmed after connection.unblocked")
  void blockedFailsFast() throws Exception {
    publisher = RabbitMqPublisher.create(viaProxy().toBuilder()
        .confirmTimeout(Duration.ofSeconds(60)).build());
    publisher.publish(destination, big(0)).get(10, TimeUnit.SECONDS);
    Connection c = publisher.connection();
    // A broker under an alarm stops reading and says connection.blocked: the writer gets stuck
    // and later messages wait unsent, until the notification fails them.
    proxy.stopReading();
    List<CompletableFuture<PublishReceipt>> futures = new ArrayList<>();
    for (int i = 1; i <= 600; i++) {
      futures.add(publisher.publish(destination, big(i)));
    }
    fromBroker(c, new AMQP.Connection.Blocked.Builder().reason("low on memory").build());

    Await.until(Duration.ofSeconds(10), "the unsent messages failed at once",
        () -> futures.get(futures.size() - 1).isDone());
    long failedFast = futures.stream().filter(CompletableFuture::isCompletedExceptionally).count();
    assertThat(failedFast).as("most of 600 x 64 KiB never left the client").isGreaterThan(300);
    CompletableFuture<PublishReceipt> last = futures.get(futures.size() - 1);
    assertThat(last).isCompletedExceptionally();
    assertFailure(last, "blocked", "low on memory", "not sent");

    long started = System.nanoTime();
    CompletableFuture<PublishReceipt> whileBlocked = publisher.publish(destination, big(700));
    assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(1));
    assertThat(whileBlocked).isCompletedExceptionally();
    assertFailure(whileBlocked, "blocked", "low on memory");

    proxy.heal();
    fromBroker(c, new AMQP.Connection.Unblocked.Builder().build());
    assertThat(publisher.publish(destination, big(701)).get(30, TimeUnit.SECONDS).messageId())
        .isEqualTo("big-701");
    long written = 0;
    for (CompletableFuture<PublishReceipt> f : futures) {
      try {
        f.get(30, TimeUnit.SECONDS);
        written++;
      } catch (ExecutionException e) {
        assertThat(e.getCause()).isInstanceOf(PublishException.class)
            .hasMessageContaining("blocked");
      }
    }
    assertThat(written).as("written before the notification, confirmed after it").isPositive();
    assertThat(TestBroker.depth(admin, queues.queue())).isEqualTo(1 + written + 1);
  }

  private static void assertFailure(CompletableFuture<?> f, String... parts) {
    try {
      f.join();
      throw new AssertionError("expected a failure");
    } catch (java.util.concurrent.CompletionException e) {
      assertThat(e.getCause()).isInstanceOf(PublishException.class);
      for (String part : parts) {
        assertThat(e.getCause()).hasMessageContaining(part);
      }
    }
  }
}
