package io.relaykit.examples.bootapp;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.spring.boot.TransactionalOutbox;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.annotation.Autowired;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.annotation.DirtiesContext;

/**
 * The application started as a user starts it, on Boot's managed versions: one {@code POST
 * /orders} writes the order and its {@link OrderPlaced} event, the relay publishes it over the
 * subclass's transport and storage, and the listener receives it, as an {@link OrderPlaced},
 * exactly once. An order for a recalled product is a poison event: dead-lettered at once, logged
 * as one WARN line and listed by {@code GET /actuator/relaykitdeadletters} from the store that
 * holds it ({@link #deadLetterStore()}).
 */
@SpringBootTest(classes = BootApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    // spring-boot-starter-opentelemetry (test scope) would push metrics to localhost:4318.
    properties = "management.otlp.metrics.export.enabled=false")
@DirtiesContext(classMode = DirtiesContext.ClassMode.AFTER_CLASS)
@ExtendWith(OutputCaptureExtension.class)
abstract class AbstractDeliveryTest {

  /** A fresh suffix for every name a test class creates in a shared service. */
  static final String RUN = UUID.randomUUID().toString().replace("-", "").substring(0, 10);

  @LocalServerPort int port;
  @Autowired Orders orders;
  @Autowired Shipments shipments;
  @Autowired TransactionalOutbox outbox;

  /**
   * The store the transport's dead letters go to, as the endpoint names it: {@code relaykit}
   * (relaykit's tables) unless the transport has its own.
   */
  String deadLetterStore() {
    return "relaykit";
  }

  @Test
  void anOrderIsDeliveredOnce() throws Exception {
    String id = place("book");

    await(() -> shipments.deliveries(id) >= 1
        && outbox.store().stats(Instant.now()).unsent() == 0);
    assertThat(shipments.deliveries(id)).as("deliveries of " + id).isEqualTo(1);
  }

  @Test
  void aRecalledOrderIsDeadLetteredLoggedAndListed(CapturedOutput output) throws Exception {
    String id = place(Shipments.RECALLED + "lamp");

    // One WARN line (message id, destination, group, attempts, reason; never the payload) ...
    await(() -> output.getOut().lines().anyMatch(l -> l.contains("WARN")
        && l.contains("dead-lettered message") && l.contains("order " + id + ": product")));
    // ... and the entry in the actuator endpoint, from the store that holds it.
    await(() -> get("/actuator/relaykitdeadletters?reason=" + id).contains("\"messageId\""));
    String listed = get("/actuator/relaykitdeadletters?reason=" + id);
    JsonNode page = JsonMapper.shared().readTree(listed);
    assertThat(page.get("total").asInt()).as(listed).isEqualTo(1);
    JsonNode dead = page.get("deadLetters").get(0);
    assertThat(dead.get("key").asString()).isEqualTo(id);
    assertThat(dead.get("type").asString()).isEqualTo("order.placed");
    assertThat(dead.get("store").asString()).startsWith(deadLetterStore());
    assertThat(dead.get("reason").asString()).contains("is recalled and cannot be shipped");
    assertThat(listed).as("no payload listed").doesNotContain("orderId");
    assertThat(shipments.deliveries(id)).isZero();
  }

  /** {@code POST /orders?sku=}: the new order's id. */
  String place(String sku) throws Exception {
    HttpResponse<String> placed = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
            URI.create("http://127.0.0.1:" + port + "/orders?sku=" + sku))
        .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(placed.statusCode()).isEqualTo(200);
    String id = placed.body();
    assertThat(orders.count(id)).isEqualTo(1);
    return id;
  }

  /** The body of {@code GET path}, which must answer 200. */
  String get(String path) {
    try {
      HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
          URI.create("http://127.0.0.1:" + port + path)).GET().build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(r.statusCode()).as(path + ": " + r.body()).isEqualTo(200);
      return r.body();
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** Waits for {@code condition}, failing after two minutes (a loaded 2-core machine). */
  static void await(BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
    while (!condition.getAsBoolean()) {
      assertThat(System.nanoTime()).as("condition within 2 minutes").isLessThan(deadline);
      Thread.onSpinWait();
      java.util.concurrent.locks.LockSupport.parkNanos(Duration.ofMillis(50).toNanos());
    }
  }
}
