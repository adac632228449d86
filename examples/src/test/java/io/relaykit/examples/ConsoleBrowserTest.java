package io.relaykit.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.console.ConsoleServer;
import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.inprocess.InProcessTransport;
import io.relaykit.message.Message;
import io.relaykit.message.Subscription;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.testsupport.ChartSvg;
import io.relaykit.testsupport.HeadlessChromium;
import java.net.InetAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.support.ui.WebDriverWait;
import org.w3c.dom.Document;
import org.w3c.dom.Element;

/**
 * {@code ./relaykit console} in real headless Chromium over the demo's H2 file: the overview draws
 * the outbox backlog it sampled, a filtered set of 100 dead letters is replayed exactly once each
 * (counted in a handler the replayed messages are relayed to) though the confirm button is clicked
 * twice (and the request retried), markup in a reason shows
 * as text, and a request without the token is refused. Saves {@code target/console-overview.png}
 * and {@code target/console-dead-letters.png} (the pictures in docs/images).
 */
class ConsoleBrowserTest {
  private static final Duration WAIT = Duration.ofSeconds(60);

  @TempDir
  Path data;
  @TempDir
  Path profile;
  private CheckoutApp app;
  private DemoConsole console;
  private HeadlessChromium browser;
  private WebDriver driver;
  private String base;

  @BeforeEach
  void start() throws Exception {
    DemoOptions options = new DemoOptions("127.0.0.1", 0, data, "h2", "memory", 0, "POISON",
        Duration.ofSeconds(2));
    app = CheckoutApp.storageOnly(options);
    console = DemoConsole.start(app, options, InetAddress.getLoopbackAddress(), 0, true,
        Duration.ofMillis(200));
    base = "http://127.0.0.1:" + console.server().port();
    browser = new HeadlessChromium(profile, "chromedriver-console.log", 1200, 1400);
    driver = browser.driver();
  }

  @AfterEach
  void stop() {
    if (browser != null) {
      browser.close();
    }
    if (console != null) {
      console.close();
    }
    if (app != null) {
      app.close();
    }
  }

  private void appendOutbox(int n) throws Exception {
    try (Connection c = app.storage.dataSource().getConnection()) {
      for (int i = 0; i < n; i++) {
        app.storage.outboxStore().append(c, "orders.sms", Message.builder().type("order.sms")
            .key("o" + i).payload("{}").build());
      }
    }
  }

  private void addDeadLetters(int n, String source, String reason) {
    Instant t = Instant.now().minusSeconds(60);
    for (int i = 0; i < n; i++) {
      Message m = Message.builder().id(source + "-" + i).type("order.sms").key("o" + i)
          .payload("{\"order\":" + i + "}").header("x-note", "<b>header</b>").build();
      app.storage.deadLetterStore().add(new DeadLetter(m, source, "sms", reason,
          "java.net.SocketTimeoutException", "read timed out", 6, t, t.plusMillis(i)));
    }
  }

  private void open(String pathAndQuery) {
    driver.get(base + pathAndQuery);
  }

  private void screenshot(String name) throws Exception {
    byte[] png = ((ChromeDriver) driver).getScreenshotAs(OutputType.BYTES);
    Files.createDirectories(Path.of("target"));
    Files.write(Path.of("target", name), png);
  }

  @Test
  @DisplayName("the overview draws the H2 outbox backlog it sampled, and says since when")
  void overviewChartsLiveData() throws Exception {
    appendOutbox(25);
    addDeadLetters(3, "orders.sms", "attempts exhausted (6 of 6): SMS gateway timed out");
    // Wait (with a deadline) until the history holds samples of this backlog.
    new WebDriverWait(driver, WAIT).until(d -> console.server() != null
        && console.history().samples().stream().filter(s -> s.backlog() == 25).count() >= 3);
    open("/?token=" + console.server().token());
    assertThat(driver.getTitle()).isEqualTo("Overview · relaykit console");
    assertThat(driver.findElement(By.id("since")).getText()).startsWith("History since ");
    assertThat(driver.findElement(By.id("backlog")).getText()).isEqualTo("25");
    String svg = (String) ((JavascriptExecutor) driver).executeScript(
        "return document.getElementById('history-svg').outerHTML;");
    Document d = ChartSvg.parse(svg);
    Element backlog = ChartSvg.polyline(d, "backlog");
    Element panel = (Element) backlog.getParentNode();
    double ymax = Double.parseDouble(panel.getAttribute("data-ymax"));
    double y = Double.parseDouble(panel.getAttribute("data-y"));
    double h = Double.parseDouble(panel.getAttribute("data-h"));
    List<double[]> points = ChartSvg.points(backlog);
    assertThat(points).isNotEmpty();
    assertThat(Math.round(ymax * (y + h - points.get(points.size() - 1)[1]) / h))
        .as("the latest backlog drawn").isEqualTo(25);
    WebElement groups = driver.findElement(By.id("dead-letter-groups"));
    assertThat(groups.getText()).contains("orders.sms").contains("sms");
    screenshot("console-overview.png");
  }

  @Test
  @DisplayName("replaying a filtered set of 100 replays each once, the confirm clicked twice and"
      + " the request retried")
  void replayFilteredSetOnce() throws Exception {
    addDeadLetters(100, "orders.sms", "attempts exhausted (6 of 6): SMS gateway timed out");
    addDeadLetters(7, "orders.coupon", "coupon service refused");
    open("/?token=" + console.server().token());
    open("/dead-letters?store=relaykit&source=orders.sms&reason=timed+out");
    assertThat(driver.findElement(By.id("total")).getText()).isEqualTo("100");
    screenshot("console-dead-letters.png");
    driver.findElement(By.id("replay-set")).click();
    assertThat(driver.findElement(By.id("count")).getText()).isEqualTo("100");
    String actionId = driver.findElement(By.name("action-id")).getAttribute("value");
    String csrf = driver.findElement(By.name(ConsoleServer.CSRF_FIELD)).getAttribute("value");
    // A double click: the second submit goes out while the first runs.
    ((JavascriptExecutor) driver).executeScript(
        "var b = document.getElementById('confirm'); b.click(); b.click();");
    new WebDriverWait(driver, WAIT).until(w -> w.getCurrentUrl().contains("/action?id="));
    WebElement outcome = new WebDriverWait(driver, WAIT).until(w -> w.findElement(
        By.id("outcome")));
    assertThat(outcome.getText()).isEqualTo("replayed 100 of 100 dead letters");
    // A retried request with the same action id (a proxy repeating the POST).
    HttpResponse<String> retried = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
        URI.create(base + "/action")).timeout(Duration.ofSeconds(30))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("Cookie", console.server().cookieName() + "=" + console.server().token())
        .POST(HttpRequest.BodyPublishers.ofString("action-id=" + actionId + "&csrf=" + csrf))
        .build(), HttpResponse.BodyHandlers.ofString());
    assertThat(retried.statusCode()).isEqualTo(303);

    // The effects, in the handler: a relay delivers what the replay put in the outbox to a
    // subscriber of orders.sms, which sees each replayed message once and nothing else.
    Map<String, Integer> handled = new ConcurrentHashMap<>();
    try (InProcessTransport transport = InProcessTransport.create()) {
      Subscription sms = transport.subscribe(SubscriptionSpec.builder("orders.sms", "sms").build(),
          delivery -> handled.merge(delivery.message().id(), 1, Integer::sum));
      OutboxRelay relay = OutboxRelay.builder(app.storage.outboxStore(), transport,
          app.storage.deadLetterStore()).build();
      for (int round = 0; round < 1_000 && relay.runOnce().claimed() > 0; round++) {
        assertThat(round).as("relay rounds").isLessThan(999);
      }
      new WebDriverWait(driver, WAIT).until(w -> handled.values().stream()
          .mapToInt(Integer::intValue).sum() >= 100);
      sms.close(Duration.ofSeconds(10));
    }
    assertThat(handled).hasSize(100);
    assertThat(handled.values()).allMatch(n -> n == 1);
    assertThat(handled.keySet()).allMatch(id -> id.startsWith("orders.sms-"));
    assertThat(app.storage.outboxStore().claim("test", 1000, Duration.ofMinutes(1),
        Instant.now())).as("nothing left to send").isEmpty();
    assertThat(app.storage.deadLetterStore().count(DeadLetterQuery.all()
        .withSource("orders.sms"))).isZero();
    assertThat(app.storage.deadLetterStore().count(DeadLetterQuery.all()
        .withSource("orders.coupon"))).isEqualTo(7);
  }

  @Test
  @DisplayName("markup in a reason and a header shows as text")
  void markupIsText() throws Exception {
    String reason = "<script>document.title='owned'</script><b>bold</b>";
    addDeadLetters(1, "orders.sms", reason);
    open("/?token=" + console.server().token());
    open("/dead-letters");
    WebElement cell = driver.findElement(By.cssSelector("#dead-letters td.reason"));
    assertThat(cell.getText()).isEqualTo(reason);
    assertThat(cell.findElements(By.tagName("b"))).isEmpty();
    assertThat(driver.findElements(By.tagName("script"))).isEmpty();
    driver.findElement(By.cssSelector("#dead-letters tr.dead-letter a")).click();
    assertThat(driver.getTitle()).isEqualTo("Dead letter · relaykit console");
    assertThat(driver.findElement(By.id("headers")).getText()).contains("<b>header</b>");
    assertThat(driver.findElement(By.id("detail")).getText()).contains(reason);
    assertThat(driver.findElement(By.id("payload-hidden")).getText()).contains("hidden");
  }

  @Test
  @DisplayName("a request without the token is refused")
  void tokenRequired() {
    open("/dead-letters");
    assertThat(driver.findElement(By.tagName("body")).getText())
        .contains("needs the access token");
    open("/?token=not-the-token");
    assertThat(driver.findElement(By.tagName("body")).getText())
        .contains("needs the access token");
  }
}
