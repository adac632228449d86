package io.relaykit.spring.boot.sample;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.idempotency.Claim;
import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.message.Message;
import io.relaykit.message.Publisher;
import io.relaykit.spring.boot.TransactionalOutbox;
import io.relaykit.tck.Await;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The Boot checkout sample end to end on PostgreSQL: HTTP with Idempotency-Key, the transactional
 * outbox, the relay, the in-process transport and the idempotent listener; every check is on the
 * rows PostgreSQL holds.
 */
@SpringBootTest(classes = {CheckoutSampleApplication.class, CheckoutSamplePostgresTest.Faults.class},
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@DisplayName("The Spring Boot checkout sample on PostgreSQL: orders and shipments exactly once")
class CheckoutSamplePostgresTest {

  static final String URL = "jdbc:postgresql://127.0.0.1:5432/test";
  static final String RUN = UUID.randomUUID().toString().replace("-", "").substring(0, 10);
  static final Duration WAIT = Duration.ofSeconds(60);
  private static final Pattern ORDER_ID = Pattern.compile("\"orderId\":\"([^\"]+)\"");

  @BeforeAll
  static void postgresIsUp() {
    try (Connection c = DriverManager.getConnection(URL, "postgres", "")) {
      c.isValid(2);
    } catch (SQLException e) {
      throw new IllegalStateException("PostgreSQL is not reachable at " + URL + " (user postgres):"
          + " start it (e.g. `pg_ctlcluster <ver> main start`) and rerun: " + e.getMessage(), e);
    }
  }

  @DynamicPropertySource
  static void props(DynamicPropertyRegistry r) {
    r.add("spring.datasource.url", () -> URL);
    r.add("spring.datasource.username", () -> "postgres");
    // The settings older releases documented for PostgreSQL: storage h2 and a relaykit.h2.* key,
    // both still accepted (each logs one deprecation line).
    r.add("relaykit.storage", () -> "h2");
    r.add("relaykit.h2.table-prefix", () -> "rk_" + RUN + "_");
    r.add("relaykit.relay.poll-interval", () -> "50ms");
    r.add("relaykit.spring.idempotency.enabled", () -> "true");
    r.add("relaykit.spring.idempotency.paths", () -> "/orders");
    r.add("relaykit.spring.idempotency.methods", () -> "POST");
    r.add("sample.orders-table", () -> "sample_orders_" + RUN);
    r.add("sample.shipments-table", () -> "sample_shipments_" + RUN);
    r.add("sample.destination", () -> "sample-orders-" + RUN);
    r.add("sample.group", () -> "shipping-" + RUN);
  }

  /** Fails the first placement of a sku starting with "flaky-" (after both writes). */
  @TestConfiguration
  static class Faults {
    static final Set<String> failed = ConcurrentHashMap.newKeySet();

    @Bean
    CheckoutService.Fault flakyOnce() {
      return sku -> sku.startsWith("flaky-") && failed.add(sku);
    }
  }

  @LocalServerPort int port;
  @Autowired JdbcTemplate jdbc;
  @Autowired Publisher publisher;
  @Autowired IdempotencyStore idempotency;
  @Autowired ShipmentListener listener;
  @Autowired TransactionalOutbox outbox;

  private final HttpClient http = HttpClient.newBuilder()
      .connectTimeout(Duration.ofSeconds(5)).build();

  private HttpRequest order(String key, String sku, int qty) {
    return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/orders"))
        .timeout(Duration.ofSeconds(30)).header("Content-Type", "application/json")
        .header("Idempotency-Key", key)
        .POST(HttpRequest.BodyPublishers.ofString("{\"sku\":\"" + sku + "\",\"qty\":" + qty + "}"))
        .build();
  }

  private HttpResponse<String> send(HttpRequest r) throws Exception {
    return http.send(r, HttpResponse.BodyHandlers.ofString());
  }

  private static String orderId(HttpResponse<String> r) {
    Matcher m = ORDER_ID.matcher(r.body());
    assertThat(m.find()).as("an orderId in %s", r.body()).isTrue();
    return m.group(1);
  }

  private int count(String sql, Object... args) {
    return jdbc.queryForObject(sql, Integer.class, args);
  }

  private int orders(String key) {
    return count("SELECT COUNT(*) FROM sample_orders_" + RUN + " WHERE idempotency_key = ?", key);
  }

  private int shipments(String orderId) {
    return count("SELECT COUNT(*) FROM sample_shipments_" + RUN + " WHERE order_id = ?", orderId);
  }

  private void awaitShipped(String orderId) {
    Await.until(WAIT, "order " + orderId + " is shipped", () -> shipments(orderId) == 1);
  }

  /**
   * Waits until nothing more can arrive for {@code orderIds}: the outbox holds no unsent row (no
   * relay resend is pending), then a probe per order, sent with the order's key after everything
   * the relay published, has been handled (deliveries of one key are handled in order).
   */
  private void settled(List<String> orderIds) throws Exception {
    Await.until(WAIT, "the outbox holds no unsent row",
        () -> outbox.store().stats(java.time.Instant.now()).unsent() == 0);
    List<String> probes = new ArrayList<>();
    for (String id : orderIds) {
      String probe = "probe-" + UUID.randomUUID();
      publisher.publish("sample-orders-" + RUN, Message.builder().id(probe).type("sample.probe")
          .key(id).payload("{}").build()).get(30, TimeUnit.SECONDS);
      probes.add(probe);
    }
    Await.until(WAIT, "the probes behind every order are handled",
        () -> listener.noted.containsAll(probes));
  }

  @Test
  @DisplayName("orders resent with their keys are placed and shipped once each; repeats replay")
  void duplicatesByKey() throws Exception {
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      String key = "key-" + RUN + "-" + i;
      HttpResponse<String> first = send(order(key, "book-" + i, i + 1));
      assertThat(first.statusCode()).isEqualTo(201);
      HttpResponse<String> again = send(order(key, "book-" + i, i + 1));
      assertThat(again.statusCode()).isEqualTo(201);
      assertThat(again.body()).isEqualTo(first.body());
      assertThat(again.headers().firstValue("Location")).isEqualTo(
          first.headers().firstValue("Location"));
      assertThat(send(order(key, "book-" + i, 99)).statusCode()).as("another body").isEqualTo(422);
      ids.add(orderId(first));
      assertThat(orders(key)).isEqualTo(1);
    }
    for (String id : ids) {
      awaitShipped(id);
    }
    settled(ids);
    assertThat(new HashSet<>(ids)).hasSize(5);
    for (String id : ids) {
      assertThat(count("SELECT COUNT(*) FROM sample_orders_" + RUN + " WHERE id = ?", id))
          .isEqualTo(1);
      assertThat(shipments(id)).isEqualTo(1);
      assertThat(listener.runs.get(id)).hasValue(1);
    }
  }

  @Test
  @DisplayName("eight concurrent requests with one key place one order")
  void concurrentDuplicates() throws Exception {
    String key = "key-" + RUN + "-concurrent";
    List<CompletableFuture<HttpResponse<String>>> all = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      all.add(http.sendAsync(order(key, "pen", 2), HttpResponse.BodyHandlers.ofString()));
    }
    Set<String> placed = new HashSet<>();
    for (CompletableFuture<HttpResponse<String>> f : all) {
      HttpResponse<String> r = f.get(30, TimeUnit.SECONDS);
      assertThat(r.statusCode()).isIn(201, 409);
      if (r.statusCode() == 201) {
        placed.add(orderId(r));
      }
    }
    HttpResponse<String> after = Await.value(WAIT, "the key is completed",
        () -> {
          try {
            return send(order(key, "pen", 2));
          } catch (Exception e) {
            throw new IllegalStateException(e);
          }
        }, r -> r.statusCode() == 201);
    placed.add(orderId(after));
    assertThat(placed).hasSize(1);
    assertThat(orders(key)).isEqualTo(1);
    String id = placed.iterator().next();
    awaitShipped(id);
    settled(List.of(id));
    assertThat(shipments(id)).isEqualTo(1);
    assertThat(listener.runs.get(id)).as("the shipping effect ran once").hasValue(1);
  }

  @Test
  @DisplayName("a redelivered order.placed (same id) and a republish (new id) ship nothing more")
  void redelivery() throws Exception {
    String key = "key-" + RUN + "-redelivered";
    String id = orderId(send(order(key, "lamp", 1)));
    awaitShipped(id);
    String destination = "sample-orders-" + RUN;
    publisher.publish(destination, CheckoutService.placed(id, "lamp", 1)).get(30, TimeUnit.SECONDS);
    Message republished = Message.builder().id("republished-" + id).type("order.placed").key(id)
        .payload("{}").build();
    publisher.publish(destination, republished).get(30, TimeUnit.SECONDS);
    // Same key, so delivered (and handled) after both: once it is noted, they were handled.
    String probe = "probe-" + id;
    publisher.publish(destination, Message.builder().id(probe).type("sample.probe").key(id)
        .payload("{}").build()).get(30, TimeUnit.SECONDS);
    Await.until(WAIT, "the probe after the redeliveries is handled",
        () -> listener.noted.contains(probe));
    assertThat(shipments(id)).isEqualTo(1);
    assertThat(listener.runs.get(id)).as("the shipping effect ran once").hasValue(1);
    assertThat(jdbc.queryForObject("SELECT message_id FROM sample_shipments_" + RUN
        + " WHERE order_id = ?", String.class, id)).isEqualTo(CheckoutService.messageId(id));
  }

  @Test
  @DisplayName("a placement that fails rolls back order and message and frees the key; the"
      + " retry with the same key places and ships once")
  void failedPlacementIsRetryable() throws Exception {
    String key = "key-" + RUN + "-flaky";
    String sku = "flaky-" + RUN;
    HttpResponse<String> first = send(order(key, sku, 1));
    assertThat(first.statusCode()).isEqualTo(500);
    assertThat(orders(key)).isZero();
    assertThat(count("SELECT COUNT(*) FROM rk_" + RUN + "_outbox WHERE convert_from(payload, 'UTF8') LIKE ?",
        "%" + sku + "%")).isZero();
    assertThat(idempotency.status("http:"
        + io.relaykit.spring.boot.RelaykitIdempotencyFilter.scope(null, key))).as("not stuck in progress").isEmpty();
    HttpResponse<String> retry = send(order(key, sku, 1));
    assertThat(retry.statusCode()).isEqualTo(201);
    String id = orderId(retry);
    awaitShipped(id);
    settled(List.of(id));
    assertThat(orders(key)).isEqualTo(1);
    assertThat(shipments(id)).isEqualTo(1);
    assertThat(listener.runs.get(id)).as("the shipping effect ran once").hasValue(1);
    assertThat(idempotency.status("http:"
        + io.relaykit.spring.boot.RelaykitIdempotencyFilter.scope(null, key))).contains(Claim.Status.DONE);
  }
}
