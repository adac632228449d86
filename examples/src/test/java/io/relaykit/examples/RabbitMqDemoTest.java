package io.relaykit.examples;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.tck.Await;
import io.relaykit.transport.rabbitmq.RabbitMqDeadLetterStore;
import io.relaykit.transport.rabbitmq.RabbitMqTopology;
import io.relaykit.transport.rabbitmq.RabbitMqTransportBackend;
import io.relaykit.transport.rabbitmq.RabbitMqTransportConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * The demo on {@code --transport rabbitmq}: the real app on H2 in a temp folder, the local
 * RabbitMQ broker under a namespace of its own (deleted afterwards), a real HTTP client.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RabbitMqDemoTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final String POISON = "POISON";

  private DemoOptions options;
  private RabbitMqTransportConfig broker;
  private RunningDemo demo;

  @BeforeAll
  void start(@TempDir Path data) throws Exception {
    options = new DemoOptions("127.0.0.1", 0, data, "h2", "rabbitmq", 0, POISON,
        Duration.ofSeconds(2), "demo-test-" + UUID.randomUUID().toString().substring(0, 8));
    broker = RabbitMqTransportBackend.transportConfig(CheckoutApp.relayKitConfig(options, java.util.Map.of()));
    try (Connection c = connect()) {
      assertThat(c.isOpen()).isTrue();
    } catch (Exception e) {
      throw new AssertionError("RabbitMQ is not reachable at " + broker.uri()
          + " (set RELAYKIT_RABBITMQ_URI, or start it: rabbitmq-server -detached)", e);
    }
    demo = RunningDemo.start(options);
  }

  private Connection connect() throws Exception {
    ConnectionFactory f = new ConnectionFactory();
    f.setUri(broker.uri());
    f.setConnectionTimeout(5_000);
    return f.newConnection("relaykit-demo-test");
  }

  @AfterAll
  void stop() throws Exception {
    if (demo != null) {
      demo.close();
    }
    if (broker != null) {
      try (Connection c = connect()) {
        RabbitMqTopology topology = RabbitMqTopology.of(broker);
        for (Orders.Effect effect : Orders.Effect.values()) {
          topology.delete(c, effect.destination(), effect.id(), true);
        }
      }
    }
  }

  @Test
  @DisplayName("an order travels through RabbitMQ and ends SUCCESS with sms = 1 and coupon = 1")
  void success() throws Exception {
    demo.orderSucceedsWithOneOfEachEffect(WAIT);
    assertThat(demo.app().storage.outboxStore().stats(java.time.Instant.now()).unsent())
        .as("the relay handed both messages to the broker").isZero();
  }

  @Test
  @DisplayName("a poison order ends FAILED; its messages are in the broker's dead-letter queues")
  void poison() throws Exception {
    String id = demo.orderFailsAsPoison(POISON, WAIT);
    for (Orders.Effect effect : Orders.Effect.values()) {
      try (RabbitMqDeadLetterStore dead =
          RabbitMqDeadLetterStore.create(broker, effect.destination(), effect.id())) {
        Await.until(WAIT, effect.id() + " dead letter of " + id + " in the broker",
            () -> dead.list(DeadLetterQuery.all()).stream()
                .anyMatch(d -> d.messageId().equals(effect.messageId(id))));
      }
    }
  }
}
