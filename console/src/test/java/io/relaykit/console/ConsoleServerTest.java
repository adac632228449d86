package io.relaykit.console;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class ConsoleServerTest extends ConsoleServerFixture {

  void start(boolean allowActions) throws Exception {
    start(allowActions, "<script>alert(1)</script>");
  }

  @Test
  @DisplayName("bound to loopback; a request without the token is 401, with it the token becomes"
      + " a SameSite=Strict cookie")
  void tokenRequired() throws Exception {
    start(false);
    assertThat(server.url()).startsWith("http://127.0.0.1:").contains("?token=" + server.token());
    assertThat(server.token()).hasSizeGreaterThanOrEqualTo(43);
    HttpResponse<String> none = get("/", null);
    assertThat(none.statusCode()).isEqualTo(401);
    assertThat(none.body()).contains("needs the access token");
    assertThat(get("/?token=wrong", null).statusCode()).isEqualTo(401);
    assertThat(get("/dead-letters", server.cookieName() + "=nope").statusCode()).isEqualTo(401);
    HttpResponse<String> first = get("/dead-letters?token=" + server.token(), null);
    assertThat(first.statusCode()).isEqualTo(303);
    assertThat(first.headers().firstValue("Location")).hasValue("/dead-letters");
    assertThat(first.headers().firstValue("Set-Cookie").orElseThrow())
        .contains("HttpOnly").contains("SameSite=Strict");
    HttpResponse<String> page = get("/dead-letters", cookie());
    assertThat(page.statusCode()).isEqualTo(200);
    assertThat(page.body()).contains("&lt;script&gt;alert(1)&lt;/script&gt;")
        .doesNotContain("<script>");
    HttpResponse<String> bearer = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
        + server.port() + "/")).timeout(Duration.ofSeconds(30)).header("Authorization", "Bearer " + server.token()).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(bearer.statusCode()).isEqualTo(200);
  }

  @Test
  @DisplayName("read-only by default: an action is 403 naming --allow-actions")
  void readOnly() throws Exception {
    start(false);
    String csrf = csrf(get("/", cookie()).body());
    HttpResponse<String> r = post("action-id=00&csrf=" + csrf, cookie());
    assertThat(r.statusCode()).isEqualTo(403);
    assertThat(r.body()).contains("--allow-actions");
    assertThat(resent).hasValue(0);
  }

  @Test
  @DisplayName("an action without the CSRF field, with a wrong one, or from another origin is 403;"
      + " with it, it runs once")
  void csrf() throws Exception {
    start(true);
    String page = get("/dead-letter?store=relaykit&id=" + java.net.URLEncoder.encode(d.id(),
        java.nio.charset.StandardCharsets.UTF_8), cookie()).body();
    String actionId = ConsoleTest.actionId(new ConsoleResponse(200, "text/html", page,
        java.util.Map.of()));
    String csrf = csrf(page);
    assertThat(post("action-id=" + actionId, cookie()).statusCode()).isEqualTo(403);
    assertThat(post("action-id=" + actionId + "&csrf=x" + csrf, cookie()).statusCode())
        .isEqualTo(403);
    assertThat(post("action-id=" + actionId + "&csrf=" + csrf, null).statusCode())
        .isEqualTo(401);
    HttpResponse<String> foreign = http.send(HttpRequest.newBuilder(URI.create(
        "http://127.0.0.1:" + server.port() + "/action")).timeout(Duration.ofSeconds(30))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("Origin", "http://evil.example").header("Cookie", cookie())
        .POST(HttpRequest.BodyPublishers.ofString("action-id=" + actionId + "&csrf=" + csrf))
        .build(), HttpResponse.BodyHandlers.ofString());
    assertThat(foreign.statusCode()).isEqualTo(403);
    assertThat(resent).hasValue(0);
    HttpResponse<String> ok = post("action-id=" + actionId + "&csrf=" + csrf, cookie());
    assertThat(ok.statusCode()).isEqualTo(303);
    assertThat(post("action-id=" + actionId + "&csrf=" + csrf, cookie()).statusCode())
        .isEqualTo(303);
    assertThat(resent).hasValue(1);
    assertThat(store.find(d.id())).isEmpty();
  }

  @Test
  @DisplayName("an oversize body is 413, a long URI 414, a non-form POST 415, bad input 400")
  void bounds() throws Exception {
    start(true);
    assertThat(post("action-id=" + "a".repeat(20_000), cookie()).statusCode()).isEqualTo(413);
    assertThat(get("/dead-letters?reason=" + "a".repeat(9000), cookie()).statusCode())
        .isEqualTo(414);
    HttpResponse<String> json = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
        + server.port() + "/action")).timeout(Duration.ofSeconds(30))
        .header("Content-Type", "application/json")
        .header("Cookie", cookie()).POST(HttpRequest.BodyPublishers.ofString("{}")).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(json.statusCode()).isEqualTo(415);
    HttpResponse<String> blank = get("/dead-letter?store=relaykit&id=%20", cookie());
    assertThat(blank.statusCode()).isEqualTo(400);
    assertThat(blank.body()).contains("parameter id is blank");
  }
}
