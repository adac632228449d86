package io.relaykit.examples;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.idempotency.Claim;
import io.relaykit.tck.Await;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/** The demo's HTTP API end to end: the real app on H2 in a temp folder, a real HTTP client. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class DemoServerTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final String POISON = "POISON";

  private RunningDemo demo;
  private CheckoutApp app;
  private DemoHttp http;

  @BeforeAll
  void start(@TempDir Path data) throws Exception {
    DemoOptions options = new DemoOptions("127.0.0.1", 0, data, "h2", "memory", 0, POISON,
        Duration.ofSeconds(2));
    demo = RunningDemo.start(options);
    app = demo.app();
    http = demo.http();
  }

  @AfterAll
  void stop() {
    if (demo != null) {
      demo.close();
    }
  }

  private JsonNode awaitStatus(String orderId, String status) {
    return http.awaitStatus(orderId, status, WAIT);
  }

  @Nested
  @DisplayName("POST /orders")
  class PlaceOrder {
    @Test
    @DisplayName("answers 202 with Location, Retry-After and {orderId, PENDING}; the order is stored")
    void accepted() throws Exception {
      DemoHttp.Answer a = http.order(DemoHttp.newKey(), "book-1", 2);
      assertThat(a.status()).isEqualTo(202);
      String id = a.json().get("orderId").asText();
      assertThat(a.json().get("status").asText()).isEqualTo("PENDING");
      assertThat(a.header("Location")).isEqualTo("/orders/" + id + "/status");
      assertThat(a.header("Retry-After")).isEqualTo("1");
      assertThat(app.orders.find(id)).hasValueSatisfying(o -> {
        assertThat(o.sku()).isEqualTo("book-1");
        assertThat(o.qty()).isEqualTo(2);
      });
    }

    @Test
    @DisplayName("without an Idempotency-Key answers 400 and stores nothing")
    void missingKey() throws Exception {
      long before = app.orders.count();
      DemoHttp.Answer a = http.post("/orders", null, "{\"sku\":\"a\",\"qty\":1}");
      assertThat(a.status()).isEqualTo(400);
      assertThat(a.json().get("error").asText()).contains("Idempotency-Key");
      assertThat(app.orders.count()).isEqualTo(before);
    }

    @Test
    @DisplayName("the same key with the same body answers the first response again, one order")
    void repeatIsTheFirstResponse() throws Exception {
      String key = DemoHttp.newKey();
      DemoHttp.Answer first = http.order(key, "book-2", 1);
      long count = app.orders.count();
      DemoHttp.Answer again = http.order(key, "book-2", 1);
      assertThat(again.status()).isEqualTo(202);
      assertThat(again.json()).isEqualTo(first.json());
      assertThat(again.header("Location")).isEqualTo(first.header("Location"));
      assertThat(app.orders.count()).isEqualTo(count);
    }

    @Test
    @DisplayName("the same key with a different body answers 422")
    void differentBody() throws Exception {
      String key = DemoHttp.newKey();
      String id = http.order(key, "book-3", 1).json().get("orderId").asText();
      DemoHttp.Answer a = http.order(key, "book-3", 5);
      assertThat(a.status()).isEqualTo(422);
      assertThat(a.json().get("error").asText()).contains("different request");
      assertThat(app.orders.findByIdempotencyKey(key)).hasValueSatisfying(
          o -> assertThat(o.id()).isEqualTo(id));
    }

    @Test
    @DisplayName("the same key while its first request is in progress answers 409")
    void inProgress() throws Exception {
      String key = DemoHttp.newKey();
      Claim claim = app.storage.idempotencyStore().claim("http:" + key, Duration.ofMinutes(1));
      assertThat(claim.status()).isEqualTo(Claim.Status.CLAIMED);
      DemoHttp.Answer a = http.order(key, "book-4", 1);
      assertThat(a.status()).isEqualTo(409);
      assertThat(a.json().get("error").asText()).contains("in progress");
      assertThat(app.orders.findByIdempotencyKey(key)).isEmpty();
      app.storage.idempotencyStore().release(claim);
      assertThat(http.order(key, "book-4", 1).status()).isEqualTo(202);
    }

    @Test
    @DisplayName("malformed JSON, wrong types, unknown fields and qty <= 0 answer 400 with a message")
    void badBodies() throws Exception {
      long before = app.orders.count();
      List<String[]> cases = new ArrayList<>();
      cases.add(new String[] {"{\"sku\":\"a\",", "malformed JSON"});
      cases.add(new String[] {"", "must be a JSON object"});
      cases.add(new String[] {"[1,2]", "must be a JSON object"});
      cases.add(new String[] {"{\"sku\":7,\"qty\":1}", "sku must be a string"});
      cases.add(new String[] {"{\"qty\":1}", "sku must be a string"});
      cases.add(new String[] {"{\"sku\":\"a\",\"qty\":\"2\"}", "qty must be a whole number"});
      cases.add(new String[] {"{\"sku\":\"a\",\"qty\":1.5}", "qty must be a whole number"});
      cases.add(new String[] {"{\"sku\":\"a\"}", "qty must be a whole number"});
      cases.add(new String[] {"{\"sku\":\"a\",\"qty\":1,\"coupon\":\"FREE\"}",
          "unknown field \"coupon\""});
      cases.add(new String[] {"{\"sku\":\"a\",\"qty\":0}", "qty must be between 1 and 1000, was 0"});
      cases.add(new String[] {"{\"sku\":\"a\",\"qty\":-3}",
          "qty must be between 1 and 1000, was -3"});
      cases.add(new String[] {"{\"sku\":\"\",\"qty\":1}", "sku must be 1 to 64 characters"});
      for (String[] c : cases) {
        DemoHttp.Answer a = http.post("/orders", DemoHttp.newKey(), c[0]);
        assertThat(a.status()).as(c[0]).isEqualTo(400);
        assertThat(a.json().get("error").asText()).as(c[0]).contains(c[1]);
      }
      assertThat(app.orders.count()).isEqualTo(before);
    }

    @Test
    @DisplayName("a rejected body does not burn its key: the same key then places the order")
    void rejectedKeyIsFree() throws Exception {
      String key = DemoHttp.newKey();
      assertThat(http.post("/orders", key, "{\"sku\":\"a\",\"qty\":0}").status()).isEqualTo(400);
      assertThat(http.order(key, "a", 1).status()).isEqualTo(202);
    }
  }

  @Nested
  @DisplayName("GET /orders/{id}/status and /orders/{id}")
  class Status {
    @Test
    @DisplayName("an order ends SUCCESS without Retry-After, with sms = 1 and coupon = 1")
    void success() throws Exception {
      String id = http.order(DemoHttp.newKey(), "book-5", 1).json().get("orderId").asText();
      JsonNode doc = awaitStatus(id, "SUCCESS");
      assertThat(doc.get("orderId").asText()).isEqualTo(id);
      assertThat(doc.hasNonNull("updatedAt")).isTrue();
      assertThat(doc.has("error") && !doc.get("error").isNull()).isFalse();
      DemoHttp.Answer status = http.get("/orders/" + id + "/status");
      assertThat(status.header("Retry-After")).isNull();

      DemoHttp.Answer order = http.get("/orders/" + id);
      assertThat(order.status()).isEqualTo(200);
      assertThat(order.json().get("sku").asText()).isEqualTo("book-5");
      assertThat(order.json().get("status").asText()).isEqualTo("SUCCESS");
      assertThat(order.json().get("effects").get("sms").asInt()).isEqualTo(1);
      assertThat(order.json().get("effects").get("coupon").asInt()).isEqualTo(1);
      assertThat(app.orders.effectCount(id, Orders.Effect.SMS)).isEqualTo(1);
      assertThat(app.orders.effectCount(id, Orders.Effect.COUPON)).isEqualTo(1);
    }

    @Test
    @DisplayName("an order nobody picked up is PENDING, then PROCESSING, each with Retry-After")
    void notTerminalCarriesRetryAfter(@TempDir Path idle) throws Exception {
      // Storage only: no relay and no consumers, so the order stays where the test puts it.
      DemoOptions options = new DemoOptions("127.0.0.1", 0, idle, "h2", "memory", 0, null,
          Duration.ofSeconds(2));
      try (CheckoutApp storageOnly = CheckoutApp.storageOnly(options);
          DemoServer idleServer = new DemoServer(storageOnly, "127.0.0.1", 0)) {
        DemoHttp idleHttp = new DemoHttp(URI.create("http://127.0.0.1:" + idleServer.port()));
        String id = idleHttp.order(DemoHttp.newKey(), "book-6", 1).json().get("orderId").asText();
        DemoHttp.Answer pending = idleHttp.get("/orders/" + id + "/status");
        assertThat(pending.json().get("status").asText()).isEqualTo("PENDING");
        assertThat(pending.header("Retry-After")).isEqualTo("1");
        assertThat(storageOnly.storage.outboxStore().stats(java.time.Instant.now()).unsent())
            .as("the order's two outbox messages, committed with it").isEqualTo(2);

        storageOnly.orders.markPickedUp(id);
        DemoHttp.Answer processing = idleHttp.get("/orders/" + id + "/status");
        assertThat(processing.json().get("status").asText()).isEqualTo("PROCESSING");
        assertThat(processing.header("Retry-After")).isEqualTo("1");
        JsonNode order = idleHttp.get("/orders/" + id).json();
        assertThat(order.get("effects").get("sms").asInt()).isZero();
        assertThat(order.get("effects").get("coupon").asInt()).isZero();
      }
    }

    @Test
    @DisplayName("an unknown order answers 404 on both resources")
    void unknown() throws Exception {
      DemoHttp.Answer a = http.get("/orders/no-such-order/status");
      assertThat(a.status()).isEqualTo(404);
      assertThat(a.json().get("error").asText()).contains("no order no-such-order");
      assertThat(http.get("/orders/no-such-order").status()).isEqualTo(404);
    }

    @Test
    @DisplayName("a poison SKU ends FAILED with the reason, and both messages are dead letters")
    void poison() throws Exception {
      String id = http.order(DemoHttp.newKey(), POISON, 1).json().get("orderId").asText();
      JsonNode doc = awaitStatus(id, "FAILED");
      assertThat(doc.get("error").asText()).contains("SKU POISON is poison");
      assertThat(http.get("/orders/" + id + "/status").header("Retry-After")).isNull();
      JsonNode order = http.get("/orders/" + id).json();
      assertThat(order.get("error").asText()).contains("poison");
      assertThat(order.get("effects").get("sms").asInt()).isZero();
      assertThat(order.get("effects").get("coupon").asInt()).isZero();

      JsonNode list = Await.value(WAIT, "both dead letters of " + id + " listed",
          () -> http.getJson("/dead-letters"), l -> idsOf(l).containsAll(
              List.of(id + ":sms", id + ":coupon")));
      for (JsonNode d : list) {
        if (d.get("orderId").asText().equals(id)) {
          assertThat(d.get("reason").asText()).contains("SKU POISON is poison");
          assertThat(d.get("exception").asText()).endsWith("PermanentFailureException");
          assertThat(d.get("attempts").asInt()).isEqualTo(1);
          assertThat(d.get("source").asText()).startsWith("orders.");
        }
      }
    }
  }

  /** The message ids of the listed dead letters. */
  private static List<String> idsOf(JsonNode list) {
    List<String> ids = new ArrayList<>();
    list.forEach(d -> ids.add(d.get("messageId").asText()));
    return ids;
  }

  @Nested
  @DisplayName("POST /dead-letters/{id}/replay")
  class Replay {
    @Test
    @DisplayName("sends the dead letter back through the pipeline: the poison SKU fails anew")
    void replayFlowsThroughThePipeline() throws Exception {
      String id = http.order(DemoHttp.newKey(), POISON, 2).json().get("orderId").asText();
      String dead = io.relaykit.deadletter.DeadLetter.idOf(id + ":sms", "orders.sms", "sms");
      Await.until(WAIT, "dead letter " + dead,
          () -> app.storage.deadLetterStore().find(dead).isPresent());
      java.time.Instant firstFailure = app.storage.deadLetterStore().find(dead).orElseThrow()
          .firstFailureAt();

      DemoHttp.Answer a = http.post("/dead-letters/"
          + java.net.URLEncoder.encode(dead, java.nio.charset.StandardCharsets.UTF_8) + "/replay",
          null, "");
      assertThat(a.status()).isEqualTo(200);
      assertThat(a.json().get("replayed").asText()).isEqualTo(dead);

      // The replayed message really went out again: the still-poison SKU is dead-lettered anew,
      // a new dead letter with a later first failure.
      Await.until(WAIT, "the replayed message is consumed and dead-lettered again",
          () -> app.storage.deadLetterStore().find(dead)
              .map(d -> d.firstFailureAt().isAfter(firstFailure)).orElse(false));
      assertThat(http.get("/orders/" + id + "/status").json().get("status").asText())
          .isEqualTo("FAILED");
    }

    @Test
    @DisplayName("moves the dead letter into the outbox once: replaying it twice answers 404")
    void replayTwice(@TempDir Path idle) throws Exception {
      // Storage only, so no relay re-creates the dead letter between the two replays.
      DemoOptions options = new DemoOptions("127.0.0.1", 0, idle, "h2", "memory", 0, null,
          Duration.ofSeconds(2));
      try (CheckoutApp storageOnly = CheckoutApp.storageOnly(options);
          DemoServer idleServer = new DemoServer(storageOnly, "127.0.0.1", 0)) {
        DemoHttp idleHttp = new DemoHttp(URI.create("http://127.0.0.1:" + idleServer.port()));
        java.time.Instant now = java.time.Instant.now();
        io.relaykit.message.Message message =
            Orders.message("o-1", "sku", 1, Orders.Effect.COUPON, now);
        storageOnly.storage.deadLetterStore().add(io.relaykit.deadletter.DeadLetter.of(message,
            "orders.coupon", "coupon service said no", null, 3, now, now));
        JsonNode listed = idleHttp.get("/dead-letters").json();
        assertThat(idsOf(listed)).containsExactly("o-1:coupon");
        assertThat(listed.get(0).get("attempts").asInt()).isEqualTo(3);

        String path = "/dead-letters/" + java.net.URLEncoder.encode(listed.get(0).get("id")
            .asText(), java.nio.charset.StandardCharsets.UTF_8) + "/replay";
        assertThat(listed.get(0).get("id").asText()).isEqualTo("o-1:coupon@orders.coupon");
        assertThat(idleHttp.post(path, null, "").status()).isEqualTo(200);
        DemoHttp.Answer twice = idleHttp.post(path, null, "");
        assertThat(twice.status()).isEqualTo(404);
        assertThat(twice.json().get("error").asText()).contains("already replayed");

        assertThat(storageOnly.storage.outboxStore().stats(now).unsent())
            .as("one outbox row for two replays").isEqualTo(1);
        assertThat(idsOf(idleHttp.get("/dead-letters").json())).isEmpty();
      }
    }

    @Test
    @DisplayName("an unknown dead letter answers 404")
    void unknown() throws Exception {
      assertThat(http.post("/dead-letters/nope/replay", null, "").status()).isEqualTo(404);
    }
  }

  @Nested
  @DisplayName("the rest of the API")
  class Rest {
    @Test
    @DisplayName("GET /metrics reports backlog, oldest age, dead letters, drops and the verdict")
    void metrics() throws Exception {
      DemoHttp.Answer a = http.get("/metrics");
      assertThat(a.status()).isEqualTo(200);
      JsonNode m = a.json();
      assertThat(m.get("outboxBacklog").isIntegralNumber()).isTrue();
      assertThat(m.get("oldestPendingAgeMs").asLong()).isNotNegative();
      assertThat(m.get("deadLetters").asLong())
          .isEqualTo(app.storage.deadLetterStore().count(
              DeadLetterQuery.all()));
      assertThat(m.get("dropped").asLong()).isZero();
      assertThat(m.get("expired").isIntegralNumber()).isTrue();
      assertThat(m.get("retried").isIntegralNumber()).isTrue();
      assertThat(m.get("deduplicated").isIntegralNumber()).isTrue();
      assertThat(m.get("acked").isIntegralNumber()).isTrue();
      assertThat(m.get("verdict").asText()).isIn(
          java.util.Arrays.stream(io.relaykit.monitor.BacklogVerdict.values())
              .map(Enum::name).toArray());
    }

    @Test
    @DisplayName("the sampler feeds the backlog monitor; /api/history lists its samples and"
        + " /api/history.svg draws them")
    void history() throws Exception {
      // Nobody polls /metrics here: the monitor's samples come from the sampler, once a second.
      Await.until(WAIT, "two samples in the backlog monitor", () -> app.backlog.samples().size()
          >= 2);
      DemoHttp.Answer a = http.get("/api/history");
      assertThat(a.status()).isEqualTo(200);
      JsonNode h = a.json();
      assertThat(h.get("periodMs").asLong()).isEqualTo(1_000);
      assertThat(h.get("capacity").asInt()).isEqualTo(600);
      assertThat(h.get("failedReads").asLong()).isZero();
      JsonNode first = h.get("samples").get(0);
      assertThat(first.get("backlog").asLong()).isNotNegative();
      assertThat(first.get("oldestPendingMs").asLong()).isNotNegative();
      assertThat(first.get("deadLettersPerMinute").asLong()).isNotNegative();
      assertThat(first.get("verdict").asText()).isIn(
          java.util.Arrays.stream(io.relaykit.monitor.BacklogVerdict.values())
              .map(Enum::name).toArray());
      assertThat(java.time.Instant.parse(first.get("at").asText()).toEpochMilli())
          .isEqualTo(first.get("atMs").asLong());

      DemoHttp.Answer svg = http.get("/api/history.svg");
      assertThat(svg.status()).isEqualTo(200);
      assertThat(svg.header("Content-Type")).startsWith("image/svg+xml");
      org.w3c.dom.Document d = io.relaykit.testsupport.ChartSvg.parse(svg.raw().body());
      assertThat(d.getDocumentElement().getAttribute("id")).isEqualTo("history-svg");
      assertThat(io.relaykit.testsupport.ChartSvg.points(io.relaykit.testsupport.ChartSvg.polyline(d, "backlog"))).isNotEmpty();
      assertThat(io.relaykit.testsupport.ChartSvg.all(d, "line")).extracting(e -> e.getAttribute("class"))
          .contains("mark verdict");
      assertThat(http.post("/api/history", null, "").status()).isEqualTo(405);
    }

    @Test
    @DisplayName("GET / serves the status page and the browser poller script")
    void page() throws Exception {
      DemoHttp.Answer page = http.get("/");
      assertThat(page.status()).isEqualTo(200);
      assertThat(page.header("Content-Type")).startsWith("text/html");
      assertThat(page.raw().body()).contains("relaykit checkout demo")
          .contains("/static/relaykit-poller.js");
      DemoHttp.Answer js = http.get("/static/relaykit-poller.js");
      assertThat(js.status()).isEqualTo(200);
      assertThat(js.raw().body()).contains("RelayKitPoller");
    }

    @Test
    @DisplayName("an unknown path answers 404 and a wrong method 405")
    void unknownPathAndMethod() throws Exception {
      assertThat(http.get("/nowhere").status()).isEqualTo(404);
      DemoHttp.Answer a = http.get("/orders");
      assertThat(a.status()).isEqualTo(405);
      assertThat(a.json().get("error").asText()).contains("use POST");
      assertThat(http.post("/metrics", null, "").status()).isEqualTo(405);
    }
  }
}
