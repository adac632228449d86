package io.relaykit.spring.boot;

import static io.relaykit.spring.boot.AbstractOutboxTransactionTest.unique;
import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.message.Message;
import io.relaykit.outbox.InMemoryOutboxStore;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.security.web.SecurityFilterChain;
import tools.jackson.databind.json.JsonMapper;

/**
 * The dead-letter endpoint behind Spring Security, in a real web application: the starter adds
 * nothing of its own, the application's {@code SecurityFilterChain} ({@link SecuredActuatorApp})
 * decides who may replay.
 */
@DisplayName("The dead-letter endpoint under Spring Security")
class RelaykitDeadLettersSecurityTest {

  private static final JsonMapper JSON = JsonMapper.builder().build();
  private static final String PATH = "/actuator/" + RelaykitDeadLettersEndpoint.ID;
  private static ConfigurableApplicationContext ctx;
  private final HttpClient http = HttpClient.newBuilder()
      .connectTimeout(Duration.ofSeconds(10)).build();

  @BeforeAll
  static void start() {
    ctx = new SpringApplicationBuilder(SecuredActuatorApp.class).properties(
        "server.port=0",
        "server.address=127.0.0.1",
        "relaykit.spring.relay.enabled=false",
        "management.endpoints.web.exposure.include=health,relaykitdeadletters")
        // The test resources' application.properties excludes Security for every other test;
        // a command-line argument outranks it.
        .run("--spring.autoconfigure.exclude=");
  }

  @AfterAll
  static void stop() {
    if (ctx != null) {
      ctx.close();
    }
  }

  @Test
  @DisplayName("the application's SecurityFilterChain is the one in force")
  void securityIsOn() throws Exception {
    assertThat(ctx.getBeansOfType(SecurityFilterChain.class)).containsKey("actuatorSecurity");
    assertThat(send(get(PATH), null).statusCode()).as("listing without credentials")
        .isEqualTo(401);
    assertThat(send(get("/actuator/health"), null).statusCode()).isEqualTo(200);
  }

  @Test
  @DisplayName("the operator console is off by default: no console bean, its path is 404")
  void consoleOffByDefault() throws Exception {
    assertThat(ctx.getBeansOfType(io.relaykit.console.Console.class)).isEmpty();
    HttpResponse<String> r = send(get("/relaykit/console/"),
        basic("operator", SecuredActuatorApp.OPERATOR_PASSWORD));
    assertThat(r.statusCode()).isEqualTo(404);
  }

  @Test
  @DisplayName("a replay without credentials is 401 and the dead letter stays")
  void unauthenticatedReplayIsRefused() throws Exception {
    DeadLetter d = seed();
    long before = unsent();
    HttpResponse<String> r = send(replay(d), null);
    assertThat(r.statusCode()).as(r.body()).isEqualTo(401);
    assertThat(deadLetters().find(d.id())).contains(d);
    assertThat(unsent()).as("nothing replayed into the outbox").isEqualTo(before);
  }

  @Test
  @DisplayName("a replay with wrong credentials is 401 and the dead letter stays")
  void wrongPasswordIsRefused() throws Exception {
    DeadLetter d = seed();
    HttpResponse<String> r = send(replay(d), basic("operator", "not-the-password"));
    assertThat(r.statusCode()).isEqualTo(401);
    assertThat(deadLetters().find(d.id())).contains(d);
  }

  @Test
  @DisplayName("an authenticated user without the operator role is 403 and the dead letter stays")
  void userWithoutRoleIsForbidden() throws Exception {
    DeadLetter d = seed();
    long before = unsent();
    HttpResponse<String> r = send(replay(d), basic("viewer", SecuredActuatorApp.VIEWER_PASSWORD));
    assertThat(r.statusCode()).as(r.body()).isEqualTo(403);
    assertThat(deadLetters().find(d.id())).contains(d);
    assertThat(unsent()).as("nothing replayed into the outbox").isEqualTo(before);
  }

  @Test
  @DisplayName("the operator replays it: 200, the dead letter leaves the store, its message is in"
      + " the outbox")
  void operatorReplays() throws Exception {
    DeadLetter d = seed();
    HttpResponse<String> r = send(replay(d),
        basic("operator", SecuredActuatorApp.OPERATOR_PASSWORD));
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    assertThat(r.body()).contains(d.messageId());
    assertThat(deadLetters().find(d.id())).isEmpty();
    InMemoryOutboxStore outbox = ctx.getBean(InMemoryOutboxStore.class);
    assertThat(outbox.claim("test", 100, Duration.ofMinutes(1), Instant.now()))
        .extracting(row -> row.message().id()).containsExactly(d.messageId());
  }

  @Nested
  @DisplayName("with Boot's default chain (no SecurityFilterChain of the application's)")
  class DefaultChain {
    private ConfigurableApplicationContext plain;

    @BeforeEach
    void start() {
      plain = new SpringApplicationBuilder(SecuredActuatorApp.class).properties(
          "server.port=0",
          "server.address=127.0.0.1",
          "relaykit.spring.relay.enabled=false",
          "test.actuator-chain=false",
          "spring.security.user.name=admin",
          "spring.security.user.password=" + SecuredActuatorApp.OPERATOR_PASSWORD,
          "management.endpoints.web.exposure.include=health,relaykitdeadletters")
          .run("--spring.autoconfigure.exclude=");
    }

    @AfterEach
    void stop() {
      plain.close();
    }

    @Test
    @DisplayName("even a replay with valid credentials is refused (no CSRF token) and the dead"
        + " letter stays; listing with the same credentials works")
    void csrfRefusesTheScriptedReplay() throws Exception {
      assertThat(plain.getBeansOfType(SecurityFilterChain.class)).doesNotContainKey(
          "actuatorSecurity");
      DeadLetterStore store = plain.getBean(DeadLetterStore.class);
      DeadLetter d = seed(store);
      int port = ((WebServerApplicationContext) plain).getWebServer().getPort();
      String admin = basic("admin", SecuredActuatorApp.OPERATOR_PASSWORD);
      HttpResponse<String> r = send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port
          + PATH)).header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers
          .ofString("{\"id\":" + JSON.writeValueAsString(d.id()) + "}")), admin);
      // CsrfFilter refuses before Basic authentication runs; the 403's error dispatch is itself
      // unauthenticated, so the client may see 401. Either way: refused, and nothing replayed.
      assertThat(r.statusCode()).isIn(401, 403);
      assertThat(store.find(d.id())).contains(d);
      HttpResponse<String> anonymous = send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
          + port + PATH)).GET(), null);
      assertThat(anonymous.statusCode()).isIn(401, 302);
      HttpResponse<String> listed = send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
          + port + PATH)).GET(), admin);
      assertThat(listed.statusCode()).isEqualTo(200);
      assertThat(listed.body()).contains(d.messageId());
    }
  }

  private static DeadLetterStore deadLetters() {
    return ctx.getBean(DeadLetterStore.class);
  }

  private static long unsent() {
    return ctx.getBean(InMemoryOutboxStore.class).stats(Instant.now()).unsent();
  }

  private static DeadLetter seed() {
    return seed(deadLetters());
  }

  private static DeadLetter seed(DeadLetterStore store) {
    Message m = Message.builder().id(unique("dl")).type("order.placed").payload("{}").build();
    Instant at = Instant.now();
    DeadLetter d = new DeadLetter(m, "orders", null, "attempts exhausted", null, null, 5,
        at.minusSeconds(30), at);
    store.add(d);
    return d;
  }

  private static String basic(String user, String password) {
    return "Basic " + Base64.getEncoder().encodeToString((user + ":" + password)
        .getBytes(StandardCharsets.UTF_8));
  }

  private static URI uri(String path) {
    int port = ((WebServerApplicationContext) ctx).getWebServer().getPort();
    return URI.create("http://127.0.0.1:" + port + path);
  }

  private static HttpRequest.Builder get(String path) {
    return HttpRequest.newBuilder(uri(path)).GET();
  }

  private static HttpRequest.Builder replay(DeadLetter d) {
    return HttpRequest.newBuilder(uri(PATH)).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString("{\"id\":" + JSON.writeValueAsString(d.id())
            + "}"));
  }

  private HttpResponse<String> send(HttpRequest.Builder b, String authorization)
      throws Exception {
    if (authorization != null) {
      b.header("Authorization", authorization);
    }
    return http.send(b.timeout(Duration.ofSeconds(30)).build(),
        HttpResponse.BodyHandlers.ofString());
  }
}
