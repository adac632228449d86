package io.relaykit.console;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.message.Message;
import java.net.InetAddress;
import java.net.Socket;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** Attacks on the standalone server over plain HTTP, each kept as a regression test. */
class ConsoleServerAttackTest extends ConsoleServerFixture {

  void start(boolean allowActions) throws Exception {
    start(allowActions, "failed");
  }

  String detailPage() throws Exception {
    return send("GET", "/dead-letter?store=relaykit&id=" + URLEncoder.encode(d.id(),
        StandardCharsets.UTF_8), cookie(), null).body();
  }

  @Test
  @DisplayName("a partial, extended, empty, differently cased or Basic token is 401; the 401 does"
      + " not echo the token given")
  void wrongTokens() throws Exception {
    start(false);
    String t = server.token();
    for (String bad : new String[] {t.substring(0, t.length() - 1), t + "A", "", " " + t,
        t.toUpperCase(java.util.Locale.ROOT).equals(t) ? t.toLowerCase(java.util.Locale.ROOT)
            : t.toUpperCase(java.util.Locale.ROOT)}) {
      HttpResponse<String> r = send("GET", "/", server.cookieName() + "=" + bad, null);
      assertThat(r.statusCode()).as(bad).isEqualTo(401);
      assertThat(r.body()).doesNotContain(t.substring(0, 10));
      assertThat(send("GET", "/?token=" + URLEncoder.encode(bad, StandardCharsets.UTF_8), null,
          null).statusCode()).as(bad).isEqualTo(401);
    }
    assertThat(send("GET", "/", null, null, "Authorization", "Basic " + t).statusCode())
        .isEqualTo(401);
    assertThat(send("GET", "/", "other=" + t, null).statusCode()).isEqualTo(401);
  }

  @Test
  @DisplayName("the token in a URL becomes a cookie (Path=/, HttpOnly, SameSite=Strict) and a"
      + " redirect without it that keeps the other parameters; pages say no-referrer")
  void tokenLeavesTheUrl() throws Exception {
    start(false);
    HttpResponse<String> r = send("GET", "/dead-letters?source=orders&token=" + server.token()
        + "&size=5", null, null);
    assertThat(r.statusCode()).isEqualTo(303);
    String location = r.headers().firstValue("Location").orElseThrow();
    assertThat(location).isEqualTo("/dead-letters?source=orders&size=5")
        .doesNotContain(server.token());
    assertThat(r.headers().firstValue("Set-Cookie").orElseThrow())
        .contains("Path=/").contains("HttpOnly").contains("SameSite=Strict");
    HttpResponse<String> page = send("GET", location, cookie(), null);
    assertThat(page.statusCode()).isEqualTo(200);
    assertThat(page.body()).doesNotContain(server.token());
    assertThat(page.headers().firstValue("Referrer-Policy")).hasValue("no-referrer");
    assertThat(page.headers().firstValue("Content-Security-Policy").orElseThrow())
        .contains("default-src 'none'");
  }

  @Test
  @DisplayName("a read-only server runs no action by any path, method or override")
  void readOnlyByEveryPath() throws Exception {
    start(false);
    assertThat(detailPage()).doesNotContain("action-id");
    String form = "action-id=00&csrf=x";
    List<Integer> statuses = new ArrayList<>();
    for (String path : new String[] {"/action", "/action/", "//action", "/action.", "/%61ction",
        "/x/../action", "/action%2F", "/./action", "/action;x", "/ACTION"}) {
      for (String method : new String[] {"POST", "PUT", "DELETE", "PATCH"}) {
        int s = send(method, path, cookie(), form).statusCode();
        statuses.add(s);
        assertThat(s).as(method + " " + path).isGreaterThanOrEqualTo(400);
      }
    }
    assertThat(send("POST", "/", cookie(), form, "X-HTTP-Method-Override", "POST")
        .statusCode()).isGreaterThanOrEqualTo(400);
    assertThat(send("GET", "/action?action-id=00", cookie(), null).statusCode())
        .isGreaterThanOrEqualTo(400);
    assertThat(send("HEAD", "/action?action-id=00", cookie(), null).statusCode())
        .isGreaterThanOrEqualTo(400);
    assertThat(send("GET", "/confirm?kind=replay-set&store=relaykit", cookie(), null)
        .statusCode()).isEqualTo(403);
    assertThat(resent).hasValue(0);
    assertThat(store.find(d.id())).isPresent();
  }

  @Test
  @DisplayName("with actions on, a GET, a HEAD or a POST to a look-alike path of a valid action id"
      + " runs nothing; a POST with the token only in the query needs the CSRF field too")
  void actionsOnlyByPostToAction() throws Exception {
    start(true);
    String page = detailPage();
    String id = ConsoleTest.actionId(new ConsoleResponse(200, "text/html", page,
        java.util.Map.of()));
    String csrf = csrf(page);
    assertThat(send("GET", "/action?action-id=" + id + "&csrf=" + csrf, cookie(), null)
        .statusCode()).isEqualTo(400);
    assertThat(send("HEAD", "/action?action-id=" + id, cookie(), null).statusCode())
        .isEqualTo(400);
    // "/%61ction" is "/action" (an unreserved character, encoded): the same resource, held by
    // the same CSRF and origin checks.
    for (String path : new String[] {"/action/", "//action", "/action%2F", "/action.",
        "/x/../action"}) {
      assertThat(send("POST", path, cookie(), "action-id=" + id + "&csrf=" + csrf)
          .statusCode()).as(path).isGreaterThanOrEqualTo(400);
    }
    assertThat(send("POST", "/action?token=" + server.token(), null, "action-id=" + id)
        .statusCode()).isEqualTo(403);
    assertThat(send("POST", "/action", cookie(), "action-id=" + id + "&csrf=" + csrf,
        "Origin", "http://127.0.0.1.evil.example").statusCode()).isEqualTo(403);
    assertThat(resent).hasValue(0);
    assertThat(send("POST", "/action", cookie(), "action-id=" + id + "&csrf=" + csrf,
        "Origin", "http://127.0.0.1:" + server.port()).statusCode()).isEqualTo(303);
    assertThat(resent).hasValue(1);
  }

  @Test
  @DisplayName("a malformed Content-Length, a malformed query or form escape is 4xx, never 500;"
      + " the server keeps serving")
  void malformedRequests() throws Exception {
    start(true);
    String head = "POST /action HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: " + cookie()
        + "\r\nContent-Type: application/x-www-form-urlencoded\r\n";
    String bad = raw(head + "Content-Length: abc\r\nConnection: close\r\n\r\n");
    assertThat(bad).startsWith("HTTP/1.1 4");
    assertThat(raw("GET /dead-letters?reason=%zz HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: "
        + cookie() + "\r\nConnection: close\r\n\r\n")).startsWith("HTTP/1.1 400");
    assertThat(send("POST", "/action", cookie(), "action-id=%zz").statusCode()).isEqualTo(400);
    assertThat(send("GET", "/nowhere", cookie(), null).statusCode()).isEqualTo(404);
    assertThat(send("GET", "/", cookie(), null).statusCode()).isEqualTo(200);
  }

  @Test
  @DisplayName("bound to loopback by default; 200 concurrent requests are answered or refused,"
      + " and the server serves afterwards")
  void loopbackAndConcurrency() throws Exception {
    start(false);
    try (ConsoleServer probe = ConsoleServer.builder(Console.builder().build()).start()) {
      assertThat(probe.url()).startsWith("http://127.0.0.1:");
    }
    List<CompletableFuture<Integer>> all = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      all.add(http.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
          + server.port() + "/dead-letters")).header("Cookie", cookie())
          .timeout(Duration.ofSeconds(60)).build(), HttpResponse.BodyHandlers.ofString())
          .handle((r, e) -> r == null ? -1 : r.statusCode()));
    }
    int ok = 0;
    for (CompletableFuture<Integer> f : all) {
      int s = f.join();
      assertThat(s).isIn(200, -1);
      ok += s == 200 ? 1 : 0;
    }
    assertThat(ok).isPositive();
    assertThat(send("GET", "/", cookie(), null).statusCode()).isEqualTo(200);
  }

  @Test
  @DisplayName("eight unauthenticated connections that announce a body and never send it are"
      + " closed after the request deadline; the operator is answered")
  void stalledBodies() throws Exception {
    start(false);
    List<Socket> stalled = new ArrayList<>();
    try {
      for (int i = 0; i < 8; i++) {
        Socket s = new Socket(InetAddress.getLoopbackAddress(), server.port());
        s.getOutputStream().write(("POST /action HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\n")
            .getBytes(StandardCharsets.ISO_8859_1));
        s.getOutputStream().flush();
        stalled.add(s);
      }
      HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
          + server.port() + "/")).header("Cookie", cookie()).timeout(Duration.ofSeconds(
          5L * ConsoleServer.MAX_REQUEST_SECONDS))
          .build(), HttpResponse.BodyHandlers.ofString());
      assertThat(r.statusCode()).isEqualTo(200);
    } finally {
      for (Socket s : stalled) {
        s.close();
      }
    }
  }

  @Test
  @DisplayName("a store that is down (or interrupts its caller) is said so on the page, escaped;"
      + " the server keeps serving and recovers when the store does")
  void storeDown() throws Exception {
    Instant t = Instant.parse("2026-12-07T03:00:00Z");
    d = new DeadLetter(Message.builder().id("m1").type("t").payload("x").build(), "orders",
        "failed", null, null, 1, t, t);
    store.add(d);
    FlakyDeadLetterStore flaky = new FlakyDeadLetterStore(store);
    Console console = Console.builder().readOnly(true)
        .deadLetters(new ConsoleDeadLetterSource("relaykit", flaky, id -> Optional.empty(),
            true, null)).build();
    server = ConsoleServer.builder(console).threads(1).start();
    flaky.failure.set(new IllegalStateException("<script>db down</script>"));
    HttpResponse<String> overview = send("GET", "/", cookie(), null);
    assertThat(overview.statusCode()).isEqualTo(200);
    assertThat(overview.body()).contains("could not read: &lt;script&gt;db down")
        .doesNotContain("<script>");
    HttpResponse<String> list = send("GET", "/dead-letters", cookie(), null);
    assertThat(list.statusCode()).isEqualTo(503);
    assertThat(list.body()).contains("could not read store relaykit").doesNotContain("<script>");
    assertThat(send("GET", "/dead-letter?store=relaykit&id=x", cookie(), null).statusCode())
        .isEqualTo(503);
    flaky.failure.set(new IllegalStateException("interrupted") {
      private static final long serialVersionUID = 1L;

      @Override
      public String getMessage() {
        Thread.currentThread().interrupt();
        return "interrupted";
      }
    });
    for (int i = 0; i < 3; i++) {
      assertThat(send("GET", "/dead-letters", cookie(), null).statusCode()).isEqualTo(503);
    }
    flaky.failure.set(null);
    for (int i = 0; i < 3; i++) {
      HttpResponse<String> again = send("GET", "/dead-letters", cookie(), null);
      assertThat(again.statusCode()).isEqualTo(200);
      assertThat(again.body()).contains("<span id=\"total\">1</span>");
    }
  }

  @Test
  @DisplayName("a DNS-rebound page (foreign Host and a matching Origin) has no token and no CSRF"
      + " field: its reads are 401, its actions 401 or 403; nothing runs")
  void foreignHost() throws Exception {
    start(true);
    String page = detailPage();
    String id = ConsoleTest.actionId(new ConsoleResponse(200, "text/html", page,
        java.util.Map.of()));
    String base = "Host: evil.example:" + server.port() + "\r\nOrigin: http://evil.example:"
        + server.port() + "\r\nConnection: close\r\n";
    assertThat(raw("GET / HTTP/1.1\r\n" + base + "\r\n")).startsWith("HTTP/1.1 401");
    String form = "action-id=" + id;
    String post = "POST /action HTTP/1.1\r\n" + base
        + "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: " + form.length()
        + "\r\n";
    assertThat(raw(post + "\r\n" + form)).startsWith("HTTP/1.1 401");
    assertThat(raw(post + "Cookie: " + cookie() + "\r\n\r\n" + form))
        .startsWith("HTTP/1.1 403");
    assertThat(resent).hasValue(0);
  }

  @Test
  @DisplayName("two consoles on one host (cookies are shared among a host's ports) keep their own"
      + " tokens in one browser")
  void twoConsolesOnOneHost() throws Exception {
    start(false);
    HttpClient browser = HttpClient.newBuilder().cookieHandler(new java.net.CookieManager())
        .followRedirects(HttpClient.Redirect.NORMAL).connectTimeout(Duration.ofSeconds(10))
        .build();
    try (ConsoleServer other = ConsoleServer.builder(Console.builder().build()).start()) {
      assertThat(other.cookieName()).isNotEqualTo(server.cookieName());
      for (String url : new String[] {server.url(), other.url()}) {
        assertThat(browser.send(HttpRequest.newBuilder(URI.create(url))
            .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString())
            .statusCode()).isEqualTo(200);
      }
      for (int port : new int[] {server.port(), other.port()}) {
        assertThat(browser.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port
            + "/")).timeout(Duration.ofSeconds(30)).build(),
            HttpResponse.BodyHandlers.ofString()).statusCode()).as("port " + port)
            .isEqualTo(200);
      }
    }
  }
}
