package io.relaykit.spring.boot;

import static io.relaykit.spring.boot.AbstractOutboxTransactionTest.unique;
import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.console.Console;
import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.message.Message;
import io.relaykit.outbox.InMemoryOutboxStore;
import java.net.CookieManager;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The operator console in a real web application behind the application's own Spring Security
 * ({@link ConsoleApp}): who gets in, and replay with and without CSRF, over HTTP.
 */
@DisplayName("The operator console under Spring Security")
@ExtendWith(OutputCaptureExtension.class)
class ConsoleSecurityTest {

  static final String ROOT = "/relaykit/console";
  private static final Pattern ACTION_ID = Pattern.compile(
      "name=\"action-id\" value=\"([^\"]+)\"");
  private static final Pattern CSRF = Pattern.compile("name=\"_csrf\" value=\"([^\"]+)\"");

  private static ConfigurableApplicationContext ctx;
  private final HttpClient http = HttpClient.newBuilder().cookieHandler(new CookieManager())
      .connectTimeout(Duration.ofSeconds(10)).build();

  static ConfigurableApplicationContext start(String... properties) {
    List<String> all = new ArrayList<>(List.of(
        "server.port=0",
        "server.address=127.0.0.1",
        "relaykit.spring.relay.enabled=false",
        "relaykit.console.enabled=true"));
    all.addAll(List.of(properties));
    // The test resources' application.properties excludes Security for every other test; a
    // command-line argument outranks it (JPA stays out: this application has no entities).
    return new SpringApplicationBuilder(ConsoleApp.class).properties(all.toArray(String[]::new))
        .run("--spring.autoconfigure.exclude="
            + "org.springframework.boot.hibernate.autoconfigure.HibernateJpaAutoConfiguration,"
            + "org.springframework.boot.hibernate.autoconfigure.metrics"
            + ".HibernateMetricsAutoConfiguration,"
            + "org.springframework.boot.data.jpa.autoconfigure.DataJpaRepositoriesAutoConfiguration");
  }

  @BeforeAll
  static void startApp() {
    ctx = start();
  }

  @AfterAll
  static void stopApp() {
    if (ctx != null) {
      ctx.close();
    }
  }

  @Test
  @DisplayName("a request without credentials is refused and shows no console")
  void unauthenticatedIsRefused() throws Exception {
    HttpResponse<String> r = send(get(ctx, ROOT), null);
    assertThat(r.statusCode()).as(r.body()).isIn(401, 302);
    if (r.statusCode() == 302) {
      assertThat(r.headers().firstValue("Location")).hasValueSatisfying(l ->
          assertThat(l).endsWith("/login"));
    }
    assertThat(r.body()).doesNotContain("relaykit console");
  }

  @Test
  @DisplayName("a signed-in user without the operator role is 403")
  void withoutRoleIsForbidden() throws Exception {
    HttpResponse<String> r = send(get(ctx, ROOT + "/"), basic("viewer",
        ConsoleApp.VIEWER_PASSWORD));
    assertThat(r.statusCode()).isEqualTo(403);
    assertThat(r.body()).doesNotContain("relaykit console");
  }

  @Test
  @DisplayName("the operator sees the overview, with relaykit's dead letters and who is signed in")
  void operatorSeesTheOverview() throws Exception {
    DeadLetter d = seed("attempts exhausted");
    HttpResponse<String> r = send(get(ctx, ROOT), operator());
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    assertThat(r.headers().firstValue("Content-Type")).hasValueSatisfying(t ->
        assertThat(t).startsWith("text/html"));
    assertThat(r.body()).contains("relaykit console").contains("signed in as operator")
        .contains("id=\"dead-letter-groups\"");
    HttpResponse<String> list = send(get(ctx, ROOT + "/dead-letters?store=relaykit"),
        operator());
    assertThat(list.statusCode()).as(list.body()).isEqualTo(200);
    assertThat(list.body()).contains(d.messageId());
  }

  @Test
  @DisplayName("a replay POST with the CSRF token replays through relaykit's store into the"
      + " outbox, and the action is logged with the operator's name")
  void replayWithCsrf(CapturedOutput output) throws Exception {
    DeadLetter d = seed("handler failed");
    Map<String, String> form = replayForm(d);
    HttpResponse<String> r = send(post(ctx, ROOT + "/action", form), operator());
    assertThat(r.statusCode()).as(r.body()).isEqualTo(303);
    String location = r.headers().firstValue("Location").orElseThrow();
    assertThat(location).startsWith(ROOT + "/action?id=");
    HttpResponse<String> outcome = send(get(ctx, location), operator());
    assertThat(outcome.statusCode()).isEqualTo(200);
    assertThat(outcome.body()).contains("id=\"outcome\" class=\"ok\"");
    assertThat(deadLetters().find(d.id())).as("gone from the store").isEmpty();
    assertThat(outboxIds()).containsOnlyOnce(d.messageId());
    assertThat(output.getAll()).contains("console action").contains("by operator");
  }

  @Test
  @DisplayName("the same POST without the CSRF token is 403 and nothing is replayed")
  void replayWithoutCsrfIsRefused() throws Exception {
    DeadLetter d = seed("handler failed");
    Map<String, String> form = replayForm(d);
    form.remove("_csrf");
    int before = ctx.getBean(ConsoleApp.class).actions.size();
    HttpResponse<String> r = send(post(ctx, ROOT + "/action", form), operator());
    assertThat(r.statusCode()).as(r.body()).isEqualTo(403);
    assertThat(deadLetters().find(d.id())).contains(d);
    assertThat(outboxIds()).doesNotContain(d.messageId());
    assertThat(ctx.getBean(ConsoleApp.class).actions).hasSize(before);
  }

  @Test
  @DisplayName("an action id submitted twice at once replays once: both see the one outcome,"
      + " the message is in the outbox once, and the action is counted once")
  void doubleSubmitReplaysOnce() throws Exception {
    DeadLetter d = seed("handler failed");
    Map<String, String> form = replayForm(d);
    List<String> actions = ctx.getBean(ConsoleApp.class).actions;
    int before = actions.size();
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      Callable<HttpResponse<String>> submit = () -> send(post(ctx, ROOT + "/action", form),
          operator());
      Future<HttpResponse<String>> a = pool.submit(submit);
      Future<HttpResponse<String>> b = pool.submit(submit);
      for (Future<HttpResponse<String>> f : List.of(a, b)) {
        HttpResponse<String> r = f.get();
        assertThat(r.statusCode()).as(r.body()).isEqualTo(303);
        HttpResponse<String> outcome = send(get(ctx, r.headers().firstValue("Location")
            .orElseThrow()), operator());
        assertThat(outcome.body()).contains("id=\"outcome\" class=\"ok\"");
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(outboxIds()).containsOnlyOnce(d.messageId());
    assertThat(actions.subList(before, actions.size())).containsExactly("replay-one ok 1");
  }

  @Test
  @DisplayName("a valid action id and CSRF token replay nothing by GET, HEAD, PUT, a method"
      + " override, a look-alike path, a wrong token, another user or no user")
  void actionOnlyByItsPost() throws Exception {
    DeadLetter d = seed("handler failed");
    Map<String, String> form = replayForm(d);
    String query = "?action-id=" + form.get("action-id") + "&_csrf="
        + URLEncoder.encode(form.get("_csrf"), StandardCharsets.UTF_8);
    List<Integer> statuses = new ArrayList<>();
    statuses.add(send(get(ctx, ROOT + "/action" + query), operator()).statusCode());
    statuses.add(send(get(ctx, ROOT + "/action" + query).method("HEAD",
        HttpRequest.BodyPublishers.noBody()), operator()).statusCode());
    statuses.add(send(post(ctx, ROOT + "/action", form).method("PUT",
        HttpRequest.BodyPublishers.ofString(query.substring(1))), operator()).statusCode());
    statuses.add(send(post(ctx, ROOT + "/", form).header("X-HTTP-Method-Override", "POST"),
        operator()).statusCode());
    for (String path : new String[] {"/action/", "//action", "/action%2F", "/x/../action",
        "/action;jsessionid=x", "/action.", "/ACTION"}) {
      statuses.add(send(post(ctx, ROOT + path, form), operator()).statusCode());
    }
    Map<String, String> wrong = new LinkedHashMap<>(form);
    wrong.put("_csrf", form.get("_csrf") + "x");
    statuses.add(send(post(ctx, ROOT + "/action", wrong), operator()).statusCode());
    statuses.add(send(post(ctx, ROOT + "/action", form), basic("viewer",
        ConsoleApp.VIEWER_PASSWORD)).statusCode());
    HttpClient anonymous = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    statuses.add(anonymous.send(post(ctx, ROOT + "/action", form).timeout(Duration.ofSeconds(30))
        .build(), HttpResponse.BodyHandlers.ofString()).statusCode());
    assertThat(statuses).allSatisfy(st -> assertThat(st).isNotEqualTo(303));
    assertThat(deadLetters().find(d.id())).contains(d);
    assertThat(outboxIds()).doesNotContain(d.messageId());
    HttpResponse<String> ok = send(post(ctx, ROOT + "/action", form), operator());
    assertThat(ok.statusCode()).as(ok.body()).isEqualTo(303);
    assertThat(outboxIds()).containsOnlyOnce(d.messageId());
  }

  @Test
  @DisplayName("the console's history sampler runs with the context on its named daemon thread")
  void samplerRuns() {
    RelaykitConsoleSampler sampler = ctx.getBean(RelaykitConsoleSampler.class);
    assertThat(sampler.isRunning()).isTrue();
    assertThat(Thread.getAllStackTraces().keySet()).anySatisfy(t -> {
      assertThat(t.getName()).isEqualTo(RelaykitConsoleSampler.THREAD_NAME);
      assertThat(t.isDaemon()).isTrue();
    });
    assertThat(ctx.getBean(Console.class).history().since()).isNotNull();
  }

  // ------------------------------------------------------------------ helpers

  /** The replay form of the dead letter's detail page: its action id and CSRF token. */
  private Map<String, String> replayForm(DeadLetter d) throws Exception {
    HttpResponse<String> page = send(get(ctx, ROOT + "/dead-letter?store=relaykit&id="
        + URLEncoder.encode(d.id(), StandardCharsets.UTF_8)), operator());
    assertThat(page.statusCode()).as(page.body()).isEqualTo(200);
    String html = page.body();
    int form = html.indexOf("id=\"replay-form\"");
    assertThat(form).as("a replay form on the detail page").isPositive();
    String rest = html.substring(form);
    Map<String, String> values = new LinkedHashMap<>();
    values.put("action-id", unescape(first(ACTION_ID, rest)));
    values.put("_csrf", unescape(first(CSRF, rest)));
    return values;
  }

  private static String first(Pattern p, String html) {
    Matcher m = p.matcher(html);
    assertThat(m.find()).as("%s in the form", p).isTrue();
    return m.group(1);
  }

  private static String unescape(String s) {
    return s.replace("&quot;", "\"").replace("&#39;", "'").replace("&lt;", "<")
        .replace("&gt;", ">").replace("&amp;", "&");
  }

  private static DeadLetterStore deadLetters() {
    return ctx.getBean(DeadLetterStore.class);
  }

  private static List<String> outboxIds() {
    return ctx.getBean(InMemoryOutboxStore.class)
        .claim("test-" + unique("r"), 1000, Duration.ofMillis(1), Instant.now()).stream()
        .map(row -> row.message().id()).toList();
  }

  static DeadLetter seed(DeadLetterStore store, String reason) {
    Message m = Message.builder().id(unique("dl")).type("order.placed").payload("{}").build();
    Instant at = Instant.now();
    DeadLetter d = new DeadLetter(m, "orders", null, reason, null, null, 5,
        at.minusSeconds(30), at);
    store.add(d);
    return d;
  }

  private static DeadLetter seed(String reason) {
    return seed(deadLetters(), reason);
  }

  private static String operator() {
    return basic("operator", ConsoleApp.OPERATOR_PASSWORD);
  }

  private static String basic(String user, String password) {
    return "Basic " + Base64.getEncoder().encodeToString((user + ":" + password)
        .getBytes(StandardCharsets.UTF_8));
  }

  private static URI uri(ConfigurableApplicationContext c, String path) {
    int port = ((WebServerApplicationContext) c).getWebServer().getPort();
    return URI.create("http://127.0.0.1:" + port + path);
  }

  private static HttpRequest.Builder get(ConfigurableApplicationContext c, String path) {
    return HttpRequest.newBuilder(uri(c, path)).GET();
  }

  private static HttpRequest.Builder post(ConfigurableApplicationContext c, String path,
      Map<String, String> form) {
    StringBuilder body = new StringBuilder();
    form.forEach((k, v) -> body.append(body.length() == 0 ? "" : "&")
        .append(URLEncoder.encode(k, StandardCharsets.UTF_8)).append('=')
        .append(URLEncoder.encode(v, StandardCharsets.UTF_8)));
    return HttpRequest.newBuilder(uri(c, path))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .POST(HttpRequest.BodyPublishers.ofString(body.toString()));
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
