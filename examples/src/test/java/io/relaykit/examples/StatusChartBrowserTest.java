package io.relaykit.examples;

import io.relaykit.testsupport.HeadlessChromium;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.relaykit.monitor.BacklogMonitor;
import io.relaykit.outbox.OutboxRecord;
import io.relaykit.tck.Await;
import io.relaykit.tck.ForwardingOutboxStore;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The status page's chart in real headless Chromium (Debian's chromium and chromium-driver): with
 * the relay paused, a burst of orders piles up in the outbox; resumed, it drains. The chart the
 * page inlined must show the rise and the drain in its rendered points, mark the verdict, and
 * count the poison orders' dead letters per minute. The page loads nothing from another origin.
 * Saves {@code target/status-chart.png}, and the chart section to the path in the system
 * property {@code relaykit.screenshot} when it is set (README's picture:
 * {@code -Drelaykit.screenshot=$PWD/docs/status-chart.png}).
 */
class StatusChartBrowserTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  /**
   * Short, so a burst of a few seconds is many samples; the 600-sample ring then spans 2.5 min,
   * well over what the test's waits can add up to on a loaded machine, so the quiet start is
   * still in the ring when the drain is drawn.
   */
  private static final Duration SAMPLE_PERIOD = Duration.ofMillis(250);
  /**
   * The demo's thresholds scaled to the short period: a 3 s window, growth from 5 rows a second,
   * a stall once the oldest row has waited 1 s without moving (the demo: 5 min, 1/s, 1 min).
   */
  private static final BacklogMonitor.Config THRESHOLDS = BacklogMonitor.Config.builder()
      .window(Duration.ofSeconds(3)).minSamples(5).growthPerSecond(5)
      .stallAge(Duration.ofSeconds(1)).build();
  private static final int BURST = 40;
  private static final int POISON = 2;

  /**
   * The backlog line's rendered points, mapped back to (time ms, value) through the panel's data
   * attributes; null while the chart is not in the page yet.
   */
  private static final String BACKLOG_POINTS = String.join("\n",
      "var line = document.querySelector('#history-chart svg polyline.' + arguments[0]);",
      "if (!line) { return null; }",
      "var g = line.parentNode, d = g.dataset;",
      "var x = +d.x, y = +d.y, w = +d.w, h = +d.h, t0 = +d.t0, t1 = +d.t1, ymax = +d.ymax;",
      "var out = [];",
      "for (var i = 0; i < line.points.numberOfItems; i++) {",
      "  var p = line.points.getItem(i);",
      "  out.push([t0 + (p.x - x) / w * (t1 - t0), ymax * (y + h - p.y) / h]);",
      "}",
      "return out;");

  /**
   * The verdict marks of the backlog panel, in order, read in one script run: the page redraws
   * the chart every 3 s, so elements found by one call can be gone by the next (stale).
   */
  private static final String VERDICT_MARKS = String.join("\n",
      "var marks = document.querySelectorAll(",
      "    '#history-chart svg g.panel:first-of-type line.mark.verdict');",
      "return Array.prototype.map.call(marks, function (m) {",
      "  return m.getAttribute('data-verdict');",
      "});");

  /** The backlog's points and the verdict marks of one drawing (null before the first). */
  private static final String DRAWING = String.join("\n",
      "var points = (function () {", BACKLOG_POINTS.replace("arguments[0]", "'backlog'"), "})();",
      "var marks = (function () {", VERDICT_MARKS, "})();",
      "return points === null ? null : {points: points, marks: marks};");

  @TempDir
  Path data;
  @TempDir
  Path profile;
  /** While set, the relay's claims find nothing: the relay idles, as if it were down. */
  private volatile boolean relayPaused;
  private RunningDemo demo;
  private HeadlessChromium browser;
  private ChromeDriver driver;

  @BeforeEach
  void start() throws Exception {
    demo = RunningDemo.start(new DemoOptions("127.0.0.1", 0, data, "h2", "memory", 0, "POISON",
        Duration.ofSeconds(2)), Map.of(), new CheckoutApp.Tuning(SAMPLE_PERIOD, THRESHOLDS,
        store -> new ForwardingOutboxStore(store) {
          @Override
          public List<OutboxRecord> claim(String owner, int max, Duration lease, Instant now) {
            return relayPaused ? List.of() : super.claim(owner, max, lease, now);
          }

          @Override
          public List<OutboxRecord> claim(String owner, int max, int maxRun, Duration lease,
              Instant now) {
            return relayPaused ? List.of() : super.claim(owner, max, maxRun, lease, now);
          }
        }));
    browser = new HeadlessChromium(profile, "chromedriver-chart.log");
    driver = browser.driver();
  }

  @AfterEach
  void stop() {
    if (browser != null) {
      browser.close();
    }
    if (demo != null) {
      demo.close();
    }
  }

  @SuppressWarnings("unchecked")
  private List<List<Number>> rendered(String line) {
    return (List<List<Number>>) driver.executeScript(BACKLOG_POINTS, line);
  }

  private static double max(List<List<Number>> points) {
    return points.stream().mapToDouble(p -> p.get(1).doubleValue()).max().orElse(-1);
  }

  private JsonNode samples() {
    return demo.http().getJson("/api/history").get("samples");
  }

  private long latestBacklog() {
    JsonNode s = samples();
    return s.isEmpty() ? -1 : s.get(s.size() - 1).get("backlog").asLong();
  }

  @Test
  @DisplayName("after a burst of orders the chart shows the backlog rise and drain, verdict marked")
  void chartShowsRiseAndDrain() throws Exception {
    String base = "http://127.0.0.1:" + demo.server().port();
    driver.get(base + "/");
    assertThat(driver.getTitle()).isEqualTo("relaykit checkout demo");
    // A quiet start: a few samples at zero.
    Await.until(WAIT, "five samples of an empty outbox", () -> samples().size() >= 5
        && latestBacklog() == 0);

    relayPaused = true;
    List<String> ids = demo.http().placeOrders("book", BURST);
    List<String> poison = new java.util.ArrayList<>();
    for (int i = 0; i < POISON; i++) {
      poison.add(demo.http().order(DemoHttp.newKey(), "POISON", 1).json().get("orderId")
          .asText());
    }
    long expected = 2L * (BURST + POISON); // one outbox row per effect (SMS, coupon)
    Await.until(WAIT, "the sampled backlog reaches " + expected,
        () -> latestBacklog() == expected);
    // A paused relay is a stall: the oldest row waits, nothing moves. Hold it until the monitor
    // says so, and the page has drawn the plateau, before the drain.
    Await.until(WAIT, "the verdict STALLED", () -> {
      JsonNode s = samples();
      return s.get(s.size() - 1).get("verdict").asText().equals("STALLED");
    });
    new WebDriverWait(driver, WAIT).until(d -> {
      List<List<Number>> pts = rendered("backlog");
      return pts != null && max(pts) >= expected - 0.5;
    });

    relayPaused = false;
    for (String id : ids) {
      demo.http().awaitStatus(id, "SUCCESS", WAIT);
    }
    for (String id : poison) {
      demo.http().awaitStatus(id, "FAILED", WAIT);
    }
    Await.until(WAIT, "the sampled backlog is back at 0, the verdict HEALTHY", () -> {
      JsonNode s = samples();
      JsonNode last = s.get(s.size() - 1);
      return last.get("backlog").asLong() == 0 && last.get("verdict").asText().equals("HEALTHY");
    });

    // The page refreshes the chart every 3 s: wait for a drawing whose last point is the drain.
    // Points and marks from one script run, so both come from the same drawing.
    List<String> marked = new java.util.ArrayList<>();
    List<List<Number>> pts = new WebDriverWait(driver, WAIT).until(d -> {
      @SuppressWarnings("unchecked")
      Map<String, Object> drawing = (Map<String, Object>) driver.executeScript(DRAWING);
      if (drawing == null) {
        return null;
      }
      @SuppressWarnings("unchecked")
      List<List<Number>> p = (List<List<Number>>) drawing.get("points");
      List<String> marks = ((List<?>) drawing.get("marks")).stream().map(String::valueOf)
          .toList();
      if (p == null || p.isEmpty() || max(p) < expected - 0.5) {
        return null;
      }
      double last = p.get(p.size() - 1).get(1).doubleValue();
      if (Math.abs(last) < 0.5 && !marks.isEmpty()
          && marks.get(marks.size() - 1).equals("HEALTHY")) {
        marked.clear();
        marked.addAll(marks);
        return p;
      }
      return null;
    });
    int peak = 0;
    for (int i = 0; i < pts.size(); i++) {
      if (pts.get(i).get(1).doubleValue() > pts.get(peak).get(1).doubleValue()) {
        peak = i;
      }
    }
    assertThat(pts.get(0).get(1).doubleValue()).as("first point: the quiet start")
        .isCloseTo(0.0, org.assertj.core.data.Offset.offset(0.5));
    assertThat(pts.get(peak).get(1).doubleValue()).as("the peak: the whole burst")
        .isCloseTo(expected, org.assertj.core.data.Offset.offset(0.5));
    assertThat(peak).as("the peak comes before the drain").isBetween(1, pts.size() - 2);
    for (int i = 1; i < pts.size(); i++) {
      assertThat(pts.get(i).get(0).doubleValue()).as("points in time order")
          .isGreaterThanOrEqualTo(pts.get(i - 1).get(0).doubleValue());
    }
    // The oldest pending age rose while the relay was paused.
    assertThat(max(rendered("age"))).as("highest oldest-pending age drawn, ms").isPositive();

    // The verdict is marked where it was first seen and wherever it changed, as the samples say.
    JsonNode samples = samples();
    List<String> changes = new java.util.ArrayList<>();
    for (JsonNode s : samples) {
      String v = s.get("verdict").asText();
      if (changes.isEmpty() || !changes.get(changes.size() - 1).equals(v)) {
        changes.add(v);
      }
    }
    assertThat(marked).as("verdict marks").startsWith("HEALTHY").contains("STALLED")
        .endsWith("HEALTHY");
    assertThat(changes).as("the verdicts sampled since the drawing").startsWith(
        marked.toArray(String[]::new));

    // Two poison orders, two effects each: four dead letters within the last minute.
    new WebDriverWait(driver, WAIT).until(d -> max(rendered("dead-letters")) >= 2.0 * POISON
        - 0.5);

    // Offline: everything the page loaded came from the demo itself.
    List<String> resources = ((List<?>) ((JavascriptExecutor) driver).executeScript(
        "return performance.getEntriesByType('resource').map(function (e) { return e.name; });"))
        .stream().map(String::valueOf).toList();
    assertThat(resources).isNotEmpty().allSatisfy(r -> assertThat(r).startsWith(base + "/"));

    WebElement section = driver.findElement(By.id("history"));
    ((JavascriptExecutor) driver).executeScript("arguments[0].scrollIntoView();", section);
    byte[] png = section.getScreenshotAs(OutputType.BYTES);
    assertThat(png.length).isGreaterThan(5_000);
    assertThat(new byte[] {png[1], png[2], png[3]})
        .isEqualTo("PNG".getBytes(StandardCharsets.US_ASCII));
    Path shot = Path.of("target", "status-chart.png");
    Files.createDirectories(shot.getParent());
    Files.write(shot, png);
    String keep = System.getProperty("relaykit.screenshot");
    if (keep != null && !keep.isBlank()) {
      Files.write(Path.of(keep), png);
    }
  }
}
