package io.relaykit.examples;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.relaykit.transport.kafka.KafkaTestBroker;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * The demo on {@code --transport kafka}: the real app on H2 in a temp folder, against the in-JVM
 * KRaft broker of transport-kafka's test jar (fresh per test JVM, so topic names need no suffix).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class KafkaDemoTest {
  private static final Duration WAIT = Duration.ofSeconds(60);
  private static final String POISON = "POISON";

  private CheckoutApp app;
  private DemoServer server;
  private DemoHttp http;

  @BeforeAll
  void start(@TempDir Path data) throws Exception {
    DemoOptions options = new DemoOptions("127.0.0.1", 0, data, "h2", "kafka", 0, POISON,
        Duration.ofSeconds(2));
    app = CheckoutApp.start(options,
        Map.of("relaykit.kafka.bootstrap-servers", KafkaTestBroker.bootstrapServers()));
    server = new DemoServer(app, "127.0.0.1", 0);
    http = new DemoHttp(URI.create("http://127.0.0.1:" + server.port()));
  }

  @AfterAll
  void stop() {
    if (server != null) {
      server.close();
    }
    if (app != null) {
      app.close();
    }
  }

  private JsonNode awaitStatus(String orderId, String status) {
    return http.awaitStatus(orderId, status, WAIT);
  }

  @Test
  @DisplayName("an order travels through Kafka and ends SUCCESS with sms = 1 and coupon = 1")
  void success() throws Exception {
    String id = http.order(DemoHttp.newKey(), "book-1", 1).json().get("orderId").asText();
    awaitStatus(id, "SUCCESS");
    JsonNode order = http.get("/orders/" + id).json();
    assertThat(order.get("effects").get("sms").asInt()).isEqualTo(1);
    assertThat(order.get("effects").get("coupon").asInt()).isEqualTo(1);
    assertThat(app.orders.effectCount(id, Orders.Effect.SMS)).isEqualTo(1);
    assertThat(app.orders.effectCount(id, Orders.Effect.COUPON)).isEqualTo(1);
    for (Orders.Effect effect : Orders.Effect.values()) {
      assertThat(KafkaTestBroker.topicExists(effect.destination()))
          .as("topic " + effect.destination()).isTrue();
    }
  }

  @Test
  @DisplayName("a poison order ends FAILED with the reason and no effects")
  void poison() throws Exception {
    String id = http.order(DemoHttp.newKey(), POISON, 1).json().get("orderId").asText();
    JsonNode doc = awaitStatus(id, "FAILED");
    assertThat(doc.get("error").asText()).contains("SKU POISON is poison");
    JsonNode order = http.get("/orders/" + id).json();
    assertThat(order.get("effects").get("sms").asInt()).isZero();
    assertThat(order.get("effects").get("coupon").asInt()).isZero();
  }
}
