package io.relaykit.spring.boot;

import static io.relaykit.spring.boot.AbstractOutboxTransactionTest.unique;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.message.Message;
import io.relaykit.outbox.InMemoryOutboxStore;
import io.relaykit.outbox.OutboxRecord;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.storage.jdbc.JdbcDeadLetterStore;
import io.relaykit.storage.jdbc.JdbcOutboxStore;
import io.relaykit.tck.FakeClock;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The Actuator parts over HTTP, in a real web application on a random port: the backlog health in
 * the readiness group (and not in liveness), and the dead-letter endpoint once exposed.
 */
class RelaykitActuatorHttpTest {

  private static final JsonMapper JSON = JsonMapper.builder().build();
  private static final Duration STEP = Duration.ofSeconds(20);

  private final HttpClient http = HttpClient.newBuilder()
      .connectTimeout(Duration.ofSeconds(10)).build();
  private final List<ConfigurableApplicationContext> contexts = new ArrayList<>();

  ConfigurableApplicationContext start(String... extra) {
    List<String> props = new ArrayList<>(List.of(
        "server.port=0",
        "server.address=127.0.0.1",
        "spring.datasource.url=jdbc:h2:mem:" + unique("h2") + ";DB_CLOSE_DELAY=-1",
        // The test drives the relay itself, so the backlog only moves when it says so.
        "relaykit.spring.relay.enabled=false",
        "management.endpoint.health.show-details=always"));
    props.addAll(List.of(extra));
    ConfigurableApplicationContext ctx = new SpringApplicationBuilder(ActuatorApp.class)
        .properties(props.toArray(String[]::new)).run();
    contexts.add(ctx);
    return ctx;
  }

  @AfterEach
  void close() {
    contexts.forEach(ConfigurableApplicationContext::close);
  }

  @Test
  @DisplayName("a stalled outbox takes readiness OUT_OF_SERVICE, liveness stays UP, a drain brings"
      + " readiness back")
  void stalledBacklogMakesTheAppNotReadyUntilDrained() throws Exception {
    ConfigurableApplicationContext ctx = start(
        "management.endpoints.web.exposure.include=health",
        "management.endpoint.health.probes.add-additional-paths=true");
    FakeClock clock = ctx.getBean(FakeClock.class);
    InMemoryOutboxStore outbox = ctx.getBean(InMemoryOutboxStore.class);
    Instant t0 = clock.instant();
    for (int i = 0; i < 10; i++) {
      outbox.append("orders", Message.builder().id(unique("m")).type("order.placed")
          .createdAt(t0).payload("{}").build());
    }

    // Samples at t0, +20s, +40s, +60s: fewer than min-samples (5), no verdict yet.
    for (int i = 0; i < 4; i++) {
      assertThat(get(ctx, "/actuator/health/readiness").statusCode()).as("sample " + i)
          .isEqualTo(200);
      clock.advance(STEP);
    }
    // The fifth sample, at +80s: ten rows, none moved, the oldest 80 s old -> STALLED.
    HttpResponse<String> readiness = get(ctx, "/actuator/health/readiness");
    assertThat(readiness.statusCode()).isEqualTo(503);
    assertThat(json(readiness).get("status").asString()).isEqualTo("OUT_OF_SERVICE");
    // The probe groups hide their components; the contributor's own path shows why.
    HttpResponse<String> own = get(ctx, "/actuator/health/relaykit");
    assertThat(own.statusCode()).isEqualTo(503);
    JsonNode relaykit = json(own);
    assertThat(relaykit.get("status").asString()).isEqualTo("OUT_OF_SERVICE");
    assertThat(relaykit.get("details").get("verdict").asString()).isEqualTo("STALLED");
    assertThat(relaykit.get("details").get("depth").asLong()).isEqualTo(10);
    assertThat(relaykit.get("details").get("oldestAge").asString()).isEqualTo("PT1M20S");
    assertThat(get(ctx, "/actuator/health/readinessState").statusCode()).isEqualTo(200);

    // Boot's additional probe paths on the main port answer from the same groups.
    assertThat(get(ctx, "/readyz").statusCode()).isEqualTo(503);
    assertThat(get(ctx, "/livez").statusCode()).isEqualTo(200);
    HttpResponse<String> liveness = get(ctx, "/actuator/health/liveness");
    assertThat(liveness.statusCode()).isEqualTo(200);
    assertThat(json(liveness).get("status").asString()).isEqualTo("UP");

    OutboxRelay relay = ctx.getBean(OutboxRelay.class);
    for (int i = 0; i < 20 && outbox.stats(clock.instant()).unsent() > 0; i++) {
      relay.runOnce();
    }
    assertThat(outbox.stats(clock.instant()).unsent()).isZero();
    clock.advance(STEP);

    readiness = get(ctx, "/actuator/health/readiness");
    assertThat(readiness.statusCode()).isEqualTo(200);
    assertThat(json(readiness).get("status").asString()).isEqualTo("UP");
    assertThat(get(ctx, "/readyz").statusCode()).isEqualTo(200);
    relaykit = json(get(ctx, "/actuator/health/relaykit"));
    assertThat(relaykit.get("status").asString()).isEqualTo("UP");
    assertThat(relaykit.get("details").get("verdict").asString()).isEqualTo("HEALTHY");
    assertThat(relaykit.get("details").get("depth").asLong()).isZero();
  }

  @Test
  @DisplayName("the dead-letter endpoint lists a bounded, filtered page and replays into the"
      + " outbox once")
  void deadLetterEndpointListsAndReplays() throws Exception {
    ConfigurableApplicationContext ctx = start(
        "management.endpoints.web.exposure.include=health,relaykitdeadletters");
    DeadLetterStore deadLetters = ctx.getBean(DeadLetterStore.class);
    InMemoryOutboxStore outbox = ctx.getBean(InMemoryOutboxStore.class);
    Instant failed = Instant.parse("2026-12-01T10:00:00Z");
    DeadLetter orders1 = deadLetter("orders", null, failed);
    DeadLetter orders2 = deadLetter("orders", "billing", failed.plusSeconds(1));
    DeadLetter mail = deadLetter("mail", null, failed.plusSeconds(2));
    deadLetters.add(orders1);
    deadLetters.add(orders2);
    deadLetters.add(mail);

    HttpResponse<String> all = get(ctx, "/actuator/relaykitdeadletters");
    assertThat(all.statusCode()).isEqualTo(200);
    assertThat(json(all).get("total").asLong()).isEqualTo(3);
    assertThat(ids(json(all))).containsExactly(orders1.id(), orders2.id(), mail.id());
    JsonNode first = json(all).get("deadLetters").get(0);
    assertThat(first.get("reason").asString()).isEqualTo("attempts exhausted (5 of 5)");
    assertThat(first.get("payloadBytes").asInt()).isEqualTo(2);
    assertThat(first.has("payload")).isFalse();

    HttpResponse<String> page = get(ctx, "/actuator/relaykitdeadletters?source=orders&limit=1"
        + "&offset=1");
    assertThat(page.statusCode()).isEqualTo(200);
    assertThat(json(page).get("total").asLong()).isEqualTo(2);
    assertThat(ids(json(page))).containsExactly(orders2.id());
    assertThat(ids(json(get(ctx, "/actuator/relaykitdeadletters?group=billing"))))
        .containsExactly(orders2.id());
    assertThat(ids(json(get(ctx, "/actuator/relaykitdeadletters?failedFrom="
        + failed.plusSeconds(2))))).containsExactly(mail.id());

    assertBadRequest(get(ctx, "/actuator/relaykitdeadletters?limit=101"),
        "limit must be in 1..100");
    assertBadRequest(get(ctx, "/actuator/relaykitdeadletters?limit=0"), "limit must be in 1..100");
    assertBadRequest(get(ctx, "/actuator/relaykitdeadletters?offset=-1"), "offset must be >= 0");
    assertBadRequest(get(ctx, "/actuator/relaykitdeadletters?failedFrom=yesterday"),
        "failedFrom must be an ISO-8601 instant");

    // Replay: the dead letter leaves the store and its message is back in the outbox.
    HttpResponse<String> replayed = post(ctx, "/actuator/relaykitdeadletters",
        "{\"id\":" + JSON.writeValueAsString(orders2.id()) + "}");
    assertThat(replayed.statusCode()).as(replayed.body()).isEqualTo(200);
    assertThat(json(replayed).get("replayed").asString()).isEqualTo(orders2.id());
    assertThat(json(replayed).get("destination").asString()).isEqualTo("orders");
    assertThat(deadLetters.find(orders2.id())).isEmpty();
    assertThat(deadLetters.find(orders1.id())).isPresent();
    List<OutboxRecord> rows = outbox.claim("test", 10, Duration.ofMinutes(1), Instant.now());
    assertThat(rows).extracting(r -> r.message().id()).containsExactly(orders2.messageId());
    assertThat(rows.get(0).destination()).isEqualTo("orders");
    assertThat(rows.get(0).message().traceId()).isEqualTo(orders2.message().traceId());

    // Twice: 404, and nothing more in the outbox.
    HttpResponse<String> again = post(ctx, "/actuator/relaykitdeadletters",
        "{\"id\":" + JSON.writeValueAsString(orders2.id()) + "}");
    assertThat(again.statusCode()).isEqualTo(404);
    assertThat(json(again).get("error").asString()).contains("already replayed or purged");
    assertThat(outbox.stats(Instant.now()).unsent()).isEqualTo(1);

    assertBadRequest(post(ctx, "/actuator/relaykitdeadletters", "{\"id\":\"  \"}"),
        "id must be a dead letter's id");
    assertBadRequest(post(ctx, "/actuator/relaykitdeadletters", "{}"),
        "id must be a dead letter's id");
    assertThat(deadLetters.count(io.relaykit.deadletter.DeadLetterQuery.all())).isEqualTo(2);
  }

  @Test
  @DisplayName("the dead-letter endpoint is not reachable over HTTP until exposed")
  void deadLetterEndpointIsNotExposedByDefault() throws Exception {
    ConfigurableApplicationContext ctx = start();
    ctx.getBean(DeadLetterStore.class).add(deadLetter("orders", null, Instant.now()));
    assertThat(get(ctx, "/actuator/relaykitdeadletters").statusCode()).isEqualTo(404);
    assertThat(post(ctx, "/actuator/relaykitdeadletters", "{\"id\":\"x\"}").statusCode())
        .isIn(404, 405);
    assertThat(ctx.getBean(DeadLetterStore.class)
        .count(io.relaykit.deadletter.DeadLetterQuery.all())).isEqualTo(1);
    assertThat(get(ctx, "/actuator/health").statusCode()).isEqualTo(200);

    ConfigurableApplicationContext off = start(
        "management.endpoints.web.exposure.include=relaykitdeadletters",
        "management.endpoint.relaykitdeadletters.access=none");
    assertThat(get(off, "/actuator/relaykitdeadletters").statusCode()).isEqualTo(404);
    assertThat(off.getBeansOfType(RelaykitDeadLettersEndpoint.class)).isEmpty();
  }

  @Test
  @DisplayName("on JDBC storage, replay moves the dead letter into the outbox table")
  void replayToJdbcOutbox() throws Exception {
    ConfigurableApplicationContext ctx = start(
        "management.endpoints.web.exposure.include=relaykitdeadletters",
        "relaykit.storage=h2", "relaykit.jdbc.table-prefix=" + unique("rk") + "_");
    DeadLetterStore deadLetters = ctx.getBean(DeadLetterStore.class);
    assertThat(deadLetters).isInstanceOf(JdbcDeadLetterStore.class);
    JdbcOutboxStore outbox = (JdbcOutboxStore) ctx.getBean(TransactionalOutbox.class).store();
    DeadLetter d = deadLetter("orders", "billing", Instant.parse("2026-12-01T10:00:00Z"));
    deadLetters.add(d);

    HttpResponse<String> listed = get(ctx, "/actuator/relaykitdeadletters?messageId="
        + d.messageId());
    assertThat(ids(json(listed))).containsExactly(d.id());
    HttpResponse<String> r = post(ctx, "/actuator/relaykitdeadletters",
        "{\"id\":" + JSON.writeValueAsString(d.id()) + "}");
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    assertThat(deadLetters.find(d.id())).isEmpty();
    assertThat(outbox.stats(Instant.now()).unsent()).isEqualTo(1);
    assertThat(outbox.claim("test", 10, Duration.ofMinutes(1), Instant.now()))
        .singleElement().satisfies(row -> {
          assertThat(row.message().id()).isEqualTo(d.messageId());
          assertThat(row.destination()).isEqualTo("orders");
        });
    assertThat(post(ctx, "/actuator/relaykitdeadletters",
        "{\"id\":" + JSON.writeValueAsString(d.id()) + "}").statusCode()).isEqualTo(404);
    assertThat(outbox.stats(Instant.now()).unsent()).isEqualTo(1);
  }

  @Test
  @DisplayName("the page's maximum is relaykit.spring.dead-letters.max-limit, itself bounded")
  void maxLimitIsConfigurable() throws Exception {
    String exposed = "management.endpoints.web.exposure.include=relaykitdeadletters";
    ConfigurableApplicationContext ctx = start(exposed, "relaykit.spring.dead-letters.max-limit=5");
    assertThat(get(ctx, "/actuator/relaykitdeadletters?limit=5").statusCode()).isEqualTo(200);
    assertBadRequest(get(ctx, "/actuator/relaykitdeadletters?limit=6"), "limit must be in 1..5");
    assertThatThrownBy(() -> start(exposed, "relaykit.spring.dead-letters.max-limit=20000"))
        .rootCause().hasMessageContaining("relaykit.spring.dead-letters.max-limit")
        .hasMessageContaining("20000");
  }

  private static DeadLetter deadLetter(String source, String group, Instant at) {
    Message m = Message.builder().id(unique("dl")).type("order.placed").key(unique("k"))
        .payload("{}").build();
    return new DeadLetter(m, source, group, "attempts exhausted (5 of 5)",
        "java.io.IOException", "connection refused", 5, at.minusSeconds(30), at);
  }

  private static List<String> ids(JsonNode page) {
    List<String> out = new ArrayList<>();
    page.get("deadLetters").forEach(n -> out.add(n.get("id").asString()));
    return out;
  }

  private static void assertBadRequest(HttpResponse<String> r, String message) {
    assertThat(r.statusCode()).as(r.body()).isEqualTo(400);
    assertThat(json(r).get("error").asString()).contains(message);
  }

  private static JsonNode json(HttpResponse<String> r) {
    return JSON.readTree(r.body());
  }

  private URI uri(ConfigurableApplicationContext ctx, String path) {
    int port = ((WebServerApplicationContext) ctx).getWebServer().getPort();
    return URI.create("http://127.0.0.1:" + port + path);
  }

  private HttpResponse<String> get(ConfigurableApplicationContext ctx, String path)
      throws IOException, InterruptedException {
    return http.send(HttpRequest.newBuilder(uri(ctx, path)).timeout(Duration.ofSeconds(30))
        .GET().build(), HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> post(ConfigurableApplicationContext ctx, String path, String body)
      throws IOException, InterruptedException {
    return http.send(HttpRequest.newBuilder(uri(ctx, path)).timeout(Duration.ofSeconds(30))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body)).build(),
        HttpResponse.BodyHandlers.ofString());
  }
}
