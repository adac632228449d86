package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.idempotency.IdempotentAnswer;
import io.relaykit.idempotency.IdempotentAnswerStore;
import io.relaykit.tck.Await;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** The Idempotency-Key filter in a real servlet container, keys and answers on H2. */
@SpringBootTest(classes = IdempotencyWebApp.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@DisplayName("The Idempotency-Key filter (Tomcat, H2)")
class IdempotencyFilterH2Test {

  static final String DB = AbstractOutboxTransactionTest.unique("web");
  static final String PREFIX = AbstractOutboxTransactionTest.unique("rk") + "_";

  @DynamicPropertySource
  static void props(DynamicPropertyRegistry r) {
    r.add("spring.datasource.url", () -> "jdbc:h2:mem:" + DB + ";DB_CLOSE_DELAY=-1");
    r.add("relaykit.storage", () -> "h2");
    r.add("relaykit.jdbc.table-prefix", () -> PREFIX);
    r.add("relaykit.spring.relay.enabled", () -> "false");
    r.add("relaykit.spring.idempotency.enabled", () -> "true");
    r.add("relaykit.spring.idempotency.paths", () -> "/api/**");
    r.add("relaykit.spring.idempotency.methods", () -> "POST");
    r.add("relaykit.spring.idempotency.max-request-size", () -> "1024");
    r.add("relaykit.spring.idempotency.max-answer-size", () -> "2048");
  }

  @LocalServerPort int port;
  @Autowired IdempotencyWebApp.Api api;
  @Autowired IdempotencyStore store;
  @Autowired IdempotentAnswerStore answers;
  @Autowired JdbcTemplate jdbc;

  private final HttpClient http = HttpClient.newBuilder()
      .connectTimeout(Duration.ofSeconds(5)).build();

  static String key() {
    return "k-" + UUID.randomUUID();
  }

  private HttpRequest.Builder post(String path, String key, String body) {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .timeout(Duration.ofSeconds(30)).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body));
    if (key != null) {
      b.header("Idempotency-Key", key);
    }
    return b;
  }

  private HttpResponse<String> send(String path, String key, String body) throws Exception {
    return http.send(post(path, key, body).build(), HttpResponse.BodyHandlers.ofString());
  }

  @Nested
  @DisplayName("refusals")
  class Refusals {
    @Test
    @DisplayName("no key answers 400 problem+json and the handler does not run")
    void missing() throws Exception {
      String name = key();
      HttpResponse<String> r = send("/api/orders/" + name, null, "{}");
      assertThat(r.statusCode()).isEqualTo(400);
      assertThat(r.headers().firstValue("Content-Type")).contains("application/problem+json");
      assertThat(r.body()).contains("\"status\":400").contains("Idempotency-Key header is"
          + " required");
      assertThat(api.runs(name)).isZero();
    }

    @Test
    @DisplayName("a key too long or not ASCII answers 400")
    void invalid() throws Exception {
      String name = key();
      assertThat(send("/api/orders/" + name, "x".repeat(256), "{}").statusCode()).isEqualTo(400);
      assertThat(api.runs(name)).isZero();
    }

    @Test
    @DisplayName("a body over max-request-size answers 413: nothing claimed, nothing run")
    void tooLarge() throws Exception {
      String name = key();
      String k = key();
      HttpResponse<String> r = send("/api/orders/" + name, k, "y".repeat(1025));
      assertThat(r.statusCode()).isEqualTo(413);
      assertThat(r.body()).contains("at most 1024 bytes");
      assertThat(api.runs(name)).isZero();
      assertThat(store.status("http:" + RelaykitIdempotencyFilter.scope(null, k))).isEmpty();
    }

    @Test
    @DisplayName("the same key with another body answers 422 and runs nothing")
    void reused() throws Exception {
      String name = key();
      String k = key();
      assertThat(send("/api/orders/" + name, k, "{\"a\":1}").statusCode()).isEqualTo(201);
      HttpResponse<String> r = send("/api/orders/" + name, k, "{\"a\":2}");
      assertThat(r.statusCode()).isEqualTo(422);
      assertThat(r.body()).contains("different request");
      assertThat(api.runs(name)).isEqualTo(1);
    }

    @Test
    @DisplayName("the same key while the first request runs answers 409; afterwards it replays")
    void inProgress() throws Exception {
      String name = key();
      String k = key();
      api.release = new CountDownLatch(1);
      api.entered = new CountDownLatch(1);
      CompletableFuture<HttpResponse<String>> first = http.sendAsync(
          post("/api/slow/" + name, k, "").build(), HttpResponse.BodyHandlers.ofString());
      assertThat(api.entered.await(30, TimeUnit.SECONDS)).as("the first request runs").isTrue();
      HttpResponse<String> second = send("/api/slow/" + name, k, "");
      assertThat(second.statusCode()).isEqualTo(409);
      assertThat(second.body()).contains("still in progress");
      api.release.countDown();
      assertThat(first.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
      HttpResponse<String> third = send("/api/slow/" + name, k, "");
      assertThat(third.statusCode()).isEqualTo(200);
      assertThat(third.body()).isEqualTo("slow " + name);
      assertThat(api.runs(name)).isEqualTo(1);
    }
  }

  @Nested
  @DisplayName("replay")
  class Replays {
    @Test
    @DisplayName("a repeat gets the first status, body and Location, not its Set-Cookie; the"
        + " handler ran once")
    void replay() throws Exception {
      String name = key();
      String k = key();
      HttpResponse<String> first = send("/api/orders/" + name, k, "{\"a\":1}");
      HttpResponse<String> again = send("/api/orders/" + name, k, "{\"a\":1}");
      assertThat(first.statusCode()).isEqualTo(201);
      assertThat(again.statusCode()).isEqualTo(201);
      assertThat(again.body()).isEqualTo(first.body()).contains("\"run\":1");
      assertThat(again.headers().firstValue("Location")).contains("/api/orders/" + name);
      assertThat(again.headers().firstValue("Content-Type")).hasValueSatisfying(
          v -> assertThat(v).startsWith("application/json"));
      assertThat(first.headers().firstValue("Set-Cookie")).isPresent();
      assertThat(again.headers().firstValue("Set-Cookie")).isEmpty();
      assertThat(api.runs(name)).isEqualTo(1);
    }

    @Test
    @DisplayName("the stored answer is in the database table, with the kept headers only")
    void storedAnswer() throws Exception {
      String name = key();
      String k = key();
      send("/api/orders/" + name, k, "{\"a\":1}");
      IdempotentAnswer kept = answers.find(RelaykitIdempotencyFilter.scope(null, k)).orElseThrow();
      assertThat(kept.status()).isEqualTo(201);
      assertThat(kept.headers().keySet()).extracting(String::toLowerCase)
          .contains("location", "content-type").doesNotContain("set-cookie");
      assertThat(new String(kept.body(), StandardCharsets.UTF_8)).contains("\"run\":1");
      byte[] row = jdbc.queryForObject("SELECT answer FROM " + PREFIX
          + "http_answers WHERE answer_key = ?", byte[].class, RelaykitIdempotencyFilter.scope(null, k));
      assertThat(IdempotentAnswer.decode(row)).isEqualTo(kept);
      assertThat(store.status("http:" + RelaykitIdempotencyFilter.scope(null, k))).contains(io.relaykit.idempotency.Claim.Status.DONE);
    }

    @Test
    @DisplayName("GET and paths outside the patterns are not filtered")
    void notFiltered() throws Exception {
      String name = key();
      assertThat(send("/open/" + name, null, "").statusCode()).isEqualTo(200);
      HttpResponse<String> get = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
          + port + "/api/orders/" + name)).GET().build(), HttpResponse.BodyHandlers.ofString());
      assertThat(get.statusCode()).isEqualTo(200);
    }
  }

  @Nested
  @DisplayName("failures and bounds")
  class Failures {
    @Test
    @DisplayName("a handler that throws leaves the key retryable: the retry runs and is kept")
    void throwsThenRetries() throws Exception {
      String name = key();
      String k = key();
      HttpResponse<String> first = send("/api/flaky/" + name, k, "");
      assertThat(first.statusCode()).isEqualTo(500);
      assertThat(store.status("http:" + RelaykitIdempotencyFilter.scope(null, k))).as("not stuck in progress").isEmpty();
      assertThat(answers.find(RelaykitIdempotencyFilter.scope(null, k))).isEmpty();
      HttpResponse<String> retry = send("/api/flaky/" + name, k, "");
      assertThat(retry.statusCode()).isEqualTo(200);
      assertThat(retry.body()).isEqualTo("done " + name);
      assertThat(send("/api/flaky/" + name, k, "").body()).isEqualTo("done " + name);
      assertThat(api.runs(name)).isEqualTo(2);
    }

    @Test
    @DisplayName("a ResponseStatusException (sent with sendError) is not kept bodiless: the client"
        + " gets Boot's error body, the key is free, and the retry runs again")
    void responseStatusExceptionIsNotKept() throws Exception {
      String name = key();
      String k = key();
      HttpResponse<String> first = send("/api/rejected/" + name, k, "");
      assertThat(first.statusCode()).isEqualTo(409);
      assertThat(first.body()).as("the error dispatch's body").contains("\"status\":409");
      assertThat(answers.find(RelaykitIdempotencyFilter.scope(null, k))).as("no answer kept").isEmpty();
      assertThat(store.status("http:" + RelaykitIdempotencyFilter.scope(null, k))).as("the key is released").isEmpty();
      HttpResponse<String> retry = send("/api/rejected/" + name, k, "");
      assertThat(retry.statusCode()).isEqualTo(409);
      assertThat(retry.body()).as("never a replayed empty body").contains("\"status\":409");
      assertThat(api.runs(name)).as("the retry ran, not a replay").isEqualTo(2);
    }

    @Test
    @DisplayName("a handler's own response.sendError is not kept either: the retry runs again")
    void sendErrorIsNotKept() throws Exception {
      String name = key();
      String k = key();
      HttpResponse<String> first = send("/api/send-error/" + name, k, "");
      assertThat(first.statusCode()).isEqualTo(422);
      assertThat(first.body()).contains("\"status\":422");
      assertThat(answers.find(RelaykitIdempotencyFilter.scope(null, k))).isEmpty();
      assertThat(store.status("http:" + RelaykitIdempotencyFilter.scope(null, k))).isEmpty();
      HttpResponse<String> retry = send("/api/send-error/" + name, k, "");
      assertThat(retry.statusCode()).isEqualTo(422);
      assertThat(retry.body()).contains("\"status\":422");
      assertThat(api.runs(name)).isEqualTo(2);
    }

    @Test
    @DisplayName("an answer over max-answer-size reaches the first client in full; a repeat gets"
        + " 410 and nothing runs again")
    void answerOverBound() throws Exception {
      String name = key();
      String k = key();
      HttpResponse<String> first = send("/api/big/" + name, k, "");
      assertThat(first.statusCode()).isEqualTo(200);
      assertThat(first.body()).hasSize(4096);
      IdempotentAnswer kept = answers.find(RelaykitIdempotencyFilter.scope(null, k)).orElseThrow();
      assertThat(kept.bodyKept()).isFalse();
      assertThat(kept.bodyLength()).isEqualTo(4096);
      HttpResponse<String> again = send("/api/big/" + name, k, "");
      assertThat(again.statusCode()).isEqualTo(410);
      assertThat(again.body()).contains("status 200, 4096 bytes").contains("2048-byte bound");
      assertThat(api.runs(name)).isEqualTo(1);
    }

    @Test
    @DisplayName("many repeats of one key in parallel run the handler once")
    void parallelRepeats() throws Exception {
      String name = key();
      String k = key();
      List<CompletableFuture<HttpResponse<String>>> all = new java.util.ArrayList<>();
      for (int i = 0; i < 8; i++) {
        all.add(http.sendAsync(post("/api/orders/" + name, k, "{}").build(),
            HttpResponse.BodyHandlers.ofString()));
      }
      for (CompletableFuture<HttpResponse<String>> f : all) {
        assertThat(f.get(30, TimeUnit.SECONDS).statusCode()).isIn(201, 409);
      }
      Await.until(Duration.ofSeconds(30), "the key is completed",
          () -> answers.find(RelaykitIdempotencyFilter.scope(null, k)).isPresent());
      assertThat(send("/api/orders/" + name, k, "{}").statusCode()).isEqualTo(201);
      assertThat(api.runs(name)).isEqualTo(1);
    }
  }
}
