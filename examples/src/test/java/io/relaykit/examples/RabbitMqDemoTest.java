package io.relaykit.examples;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import io.relaykit.tck.Await;
import io.relaykit.transport.rabbitmq.RabbitMqDeadLetterStore;
import io.relaykit.transport.rabbitmq.RabbitMqTopology;
import io.relaykit.transport.rabbitmq.RabbitMqTransportBackend;
import io.relaykit.transport.rabbitmq.RabbitMqTransportConfig;
import java.net.URI;
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
  private CheckoutApp app;
  private DemoServer server;
  private DemoHttp http;

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
    app = CheckoutApp.start(options);
    server = new DemoServer(app, "127.0.0.1", 0);
    http = new DemoHttp(URI.create("http://127.0.0.1:" + server.port()));
  }

  private Connection connect() throws Exception {
    ConnectionFactory f = new ConnectionFactory();
    f.setUri(broker.uri());
    f.setConnectionTimeout(5_000);
    return f.newConnection("relaykit-demo-test");
  }

  @AfterAll
  void stop() throws Exception {
    if (server != null) {
      server.close();
    }
    if (app != null) {
      app.close();
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

  private JsonNode awaitStatus(String orderId, String status) {
    return http.awaitStatus(orderId, status, WAIT);
  }

  @Test
  @DisplayName("an order travels through RabbitMQ and ends SUCCESS with sms = 1 and coupon = 1")
  void success() throws Exception {
    String id = http.order(DemoHttp.newKey(), "book-1", 1).json().get("orderId").asText();
    awaitStatus(id, "SUCCESS");
    JsonNode order = http.get("/orders/" + id).json();
    assertThat(order.get("effects").get("sms").asInt()).isEqualTo(1);
    assertThat(order.get("effects").get("coupon").asInt()).isEqualTo(1);
    assertThat(app.orders.effectCount(id, Orders.Effect.SMS)).isEqualTo(1);
    assertThat(app.orders.effectCount(id, Orders.Effect.COUPON)).isEqualTo(1);
    assertThat(app.storage.outboxStore().stats(java.time.Instant.now()).unsent())
        .as("the relay handed both messages to the broker").isZero();
  }

  @Test
  @DisplayName("a poison order ends FAILED; its messages are in the broker's dead-letter queues")
  void poison() throws Exception {
    String id = http.order(DemoHttp.newKey(), POISON, 1).json().get("orderId").asText();
    JsonNode doc = awaitStatus(id, "FAILED");
    assertThat(doc.get("error").asText()).contains("SKU POISON is poison");
    JsonNode order = http.get("/orders/" + id).json();
    assertThat(order.get("effects").get("sms").asInt()).isZero();
    assertThat(order.get("effects").get("coupon").asInt()).isZero();
    for (Orders.Effect effect : Orders.Effect.values()) {
      try (RabbitMqDeadLetterStore dead =
          RabbitMqDeadLetterStore.create(broker, effect.destination(), effect.id())) {
        Await.until(WAIT, effect.id() + " dead letter of " + id + " in the broker",
            () -> dead.find(effect.messageId(id)).isPresent());
      }
    }
  }
}
