package io.relaykit.transport.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.Connection;
import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.message.InboundMapping;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHeaders;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.ordering.OrderingMode;
import io.relaykit.retry.PermanentFailureException;
import io.relaykit.tck.Await;
import io.relaykit.tck.DeadLetterStoreContract;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** The DeadLetterStore contract over a real dead-letter queue, plus replay to the work queue. */
class RabbitMqDeadLetterStoreTest extends DeadLetterStoreContract {

  private static final String GROUP = "g";

  private final RabbitMqTransportConfig config = TestBroker.config().build();
  private final RabbitMqTopology topology = RabbitMqTopology.of(config);
  private final List<String> destinations = new ArrayList<>();
  private final List<AutoCloseable> closeables = new ArrayList<>();

  @Override
  protected boolean supportsRetention() {
    return false; // a broker's dead-letter log has no bounded, ordered delete
  }

  @Override
  protected DeadLetterStore createStore() {
    String destination = TestBroker.unique("dlq");
    destinations.add(destination);
    RabbitMqDeadLetterStore store = RabbitMqDeadLetterStore.create(config, destination, GROUP);
    closeables.add(store);
    return store;
  }

  @AfterEach
  void cleanUp() throws Exception {
    for (int i = closeables.size() - 1; i >= 0; i--) {
      closeables.get(i).close();
    }
    try (Connection admin = TestBroker.connect(config)) {
      for (String d : destinations) {
        topology.delete(admin, d, GROUP, true);
      }
    }
  }

  @Nested
  @DisplayName("on RabbitMQ")
  class OnRabbitMq {

    @Test
    @DisplayName("a message the subscriber dead-lettered is listed with its reason, replayed to the"
        + " work queue with a fresh attempt count, and gone from the dead-letter queue")
    void replayToWorkQueue() throws IOException {
      String destination = destinations.get(0);
      RabbitMqDeadLetterStore store = (RabbitMqDeadLetterStore) store();
      Queue<String> outcomes = new ConcurrentLinkedQueue<>();
      RabbitMqSubscriber subscriber = RabbitMqSubscriber.create(config);
      closeables.add(subscriber);
      RabbitMqPublisher publisher = RabbitMqPublisher.create(config);
      closeables.add(publisher);
      subscriber.subscribe(SubscriptionSpec.builder(destination, GROUP)
          .ordering(OrderingMode.UNORDERED).concurrency(1).maxInFlight(1).build(), d -> {
            if (outcomes.isEmpty()) {
              outcomes.add("rejected attempt " + d.attempt());
              throw new PermanentFailureException("customer unknown");
            }
            outcomes.add("handled attempt " + d.attempt());
          });
      Message m = Message.builder().id("replay-1").type("order.paid").key("o-1")
          .payload("{}").build();
      publisher.publish(destination, m).join();

      Await.until(Duration.ofSeconds(30), "one dead letter", () -> store.count(
          DeadLetterQuery.all()) == 1);
      DeadLetter d = store.list(DeadLetterQuery.all().withMessageId("replay-1"))
          .stream().findFirst().orElseThrow();
      assertThat(d.message()).isEqualTo(m);
      assertThat(d.reason()).startsWith("permanent failure").contains("customer unknown");
      assertThat(d.attempts()).isEqualTo(1);
      assertThat(d.source()).isEqualTo(destination);
      assertThat(d.exceptionClass()).isEqualTo(PermanentFailureException.class.getName());

      assertThat(store.replay(d.id())).contains(d);
      Await.until(Duration.ofSeconds(30), "the replayed message handled",
          () -> outcomes.size() == 2);
      assertThat(outcomes).containsExactly("rejected attempt 1", "handled attempt 1");
      assertThat(store.count(DeadLetterQuery.all())).isZero();
      assertThat(store.replay(d.id())).as("replay is idempotent").isEmpty();
    }

    @Test
    @DisplayName("reading a dead letter 30 times (list, count, find) changes nothing: the message"
        + " in the queue has no x-delivery-count and the dead letter reads the same")
    void readsDoNotRequeue() throws Exception {
      RabbitMqDeadLetterStore store = (RabbitMqDeadLetterStore) store();
      Message m = Message.builder().id("read-many").type("order.paid").key("o-1")
          .payload("{}").header("h", "v").build();
      java.time.Instant t = java.time.Instant.parse("2026-12-01T10:00:00Z");
      DeadLetter d = new DeadLetter(m, destinations.get(0), null, "attempts exhausted: boom",
          IOException.class.getName(), "boom", 3, t, t.plusSeconds(5));
      store.add(d);
      DeadLetter first = store.find(d.id()).orElseThrow();
      for (int i = 0; i < 10; i++) {
        assertThat(store.list(DeadLetterQuery.all())).containsExactly(first);
        assertThat(store.count(DeadLetterQuery.all())).isEqualTo(1);
        assertThat(store.find(d.id())).contains(first);
      }

      try (Connection admin = TestBroker.connect(config)) {
        List<com.rabbitmq.client.GetResponse> held = TestBroker.drain(admin, store.queue());
        assertThat(held).hasSize(1);
        Object count = held.get(0).getProps().getHeaders().get("x-delivery-count");
        assertThat(count == null ? 0L : ((Number) count).longValue())
            .as("x-delivery-count after 30 reads").isZero();
        assertThat(held.get(0).getProps().getMessageId()).isEqualTo("read-many");
      }
    }

    @Test
    @DisplayName("a message redelivered past the group queue's delivery limit is dead-lettered by"
        + " the broker into the dead-letter queue and listed with the broker's reason")
    void deliveryLimitDeadLetters() throws Exception {
      String destination = destinations.get(0);
      RabbitMqDeadLetterStore store = (RabbitMqDeadLetterStore) store();
      RabbitMqPublisher publisher = RabbitMqPublisher.create(config);
      closeables.add(publisher);
      Message m = Message.builder().id("crashes-consumers").type("order.paid").key("o-1")
          .payload("{}").build();
      publisher.publish(destination, m).get(30, java.util.concurrent.TimeUnit.SECONDS);
      String queue = topology.queues(destination, GROUP).queue();
      java.util.concurrent.atomic.AtomicInteger deliveries =
          new java.util.concurrent.atomic.AtomicInteger();
      try (Connection c = TestBroker.connect(config);
          com.rabbitmq.client.Channel ch = c.createChannel();
          Connection admin = TestBroker.connect(config)) {
        // A consumer that "crashes" on the message every time: it goes back to the queue.
        ch.basicQos(1);
        ch.basicConsume(queue, false, (tag, d) -> {
          deliveries.incrementAndGet();
          ch.basicNack(d.getEnvelope().getDeliveryTag(), false, true);
        }, tag -> { });
        Await.until(Duration.ofSeconds(60), "the broker dead-lettered it",
            () -> TestBroker.depth(admin, store.queue()) == 1);
      }
      assertThat(deliveries.get()).isGreaterThanOrEqualTo(RabbitMqTopology.DELIVERY_LIMIT);
      DeadLetter d = store.list(DeadLetterQuery.all()).get(0);
      assertThat(d.message()).isEqualTo(m);
      assertThat(d.reason()).contains("dead-lettered by RabbitMQ").contains("delivery_limit")
          .contains(queue);
    }

    @Test
    @DisplayName("an undecodable message is listed with its reason and original body")
    void undecodableListed() throws Exception {
      String destination = destinations.get(0);
      RabbitMqDeadLetterStore store = (RabbitMqDeadLetterStore) store();
      RabbitMqSubscriber subscriber = RabbitMqSubscriber.create(config);
      closeables.add(subscriber);
      subscriber.subscribe(SubscriptionSpec.builder(destination, GROUP)
          .inbound(InboundMapping.relaykitOnly()).build(), d -> { });
      try (Connection admin = TestBroker.connect(config);
          var ch = admin.createChannel()) {
        ch.confirmSelect();
        ch.basicPublish(topology.exchange(destination), "", true,
            new com.rabbitmq.client.AMQP.BasicProperties.Builder().messageId("raw-7")
                .headers(java.util.Map.of(MessageHeaders.TYPE, "order.paid")).build(),
            "garbage".getBytes(java.nio.charset.StandardCharsets.UTF_8));
        ch.waitForConfirmsOrDie(10_000);
      }
      Await.until(Duration.ofSeconds(30), "the dead letter", () -> store.count(
          DeadLetterQuery.all()) == 1);
      DeadLetter d = store.list(DeadLetterQuery.all().withReasonContains("undecodable")).get(0);
      assertThat(d.messageId()).isEqualTo("raw-7");
      assertThat(d.reason()).isEqualTo("undecodable: missing header relaykit-id");
      assertThat(d.attempts()).isZero();
      assertThat(d.message().payloadUtf8()).isEqualTo("garbage");
      assertThat(d.message().type()).isEqualTo("order.paid");
    }
  }

  @Override
  protected boolean supportsReplayMarks() {
    // A queue cannot mark a message in place: replay marks do not apply, and of the lost-reply
    // cases add and remove run (remove's lost reply leaves it gone: the kit checks that).
    return false;
  }
}
