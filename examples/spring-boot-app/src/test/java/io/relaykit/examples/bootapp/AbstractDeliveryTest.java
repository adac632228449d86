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
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.annotation.DirtiesContext;

/**
 * The application started as a user starts it, on Boot's managed versions: one {@code POST
 * /orders} writes the order and its message, the relay publishes it over the subclass's transport
 * and storage, and the listener receives it exactly once.
 */
@SpringBootTest(classes = BootApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@DirtiesContext(classMode = DirtiesContext.ClassMode.AFTER_CLASS)
abstract class AbstractDeliveryTest {

  /** A fresh suffix for every name a test class creates in a shared service. */
  static final String RUN = UUID.randomUUID().toString().replace("-", "").substring(0, 10);

  @LocalServerPort int port;
  @Autowired Orders orders;
  @Autowired Shipments shipments;
  @Autowired TransactionalOutbox outbox;

  @Test
  void anOrderIsDeliveredOnce() throws Exception {
    HttpResponse<String> placed = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
            URI.create("http://127.0.0.1:" + port + "/orders?sku=book"))
        .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(placed.statusCode()).isEqualTo(200);
    String id = placed.body();
    assertThat(orders.count(id)).isEqualTo(1);

    await(() -> shipments.deliveries(id) >= 1
        && outbox.store().stats(Instant.now()).unsent() == 0);
    assertThat(shipments.deliveries(id)).as("deliveries of " + id).isEqualTo(1);
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
