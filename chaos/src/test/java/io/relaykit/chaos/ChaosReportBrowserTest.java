package io.relaykit.chaos;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import io.relaykit.chaos.History.DbEffect;
import io.relaykit.chaos.History.DbOrder;
import io.relaykit.chaos.History.FaultWindow;
import io.relaykit.chaos.History.Request;
import io.relaykit.chaos.History.Sample;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;

/**
 * The report renders in real headless Chromium (Debian's chromium and chromium-driver): the
 * verdict, the figures, three chart panels with their lines and the fault windows shaded, laid
 * out with a real size. Saves {@code target/chaos-report.png}.
 */
class ChaosReportBrowserTest {
  private static final Path CHROMIUM = Path.of("/usr/bin/chromium");
  private static final Path CHROMEDRIVER = Path.of("/usr/bin/chromedriver");

  @TempDir
  Path dir;
  @TempDir
  Path profile;

  /** A 60 s run: load rising, a kill at 15 s and a blackhole from 30 s to 35 s. */
  private static History history() {
    List<Sample> samples = new ArrayList<>();
    List<Request> requests = new ArrayList<>();
    List<DbOrder> orders = new ArrayList<>();
    List<DbEffect> effects = new ArrayList<>();
    Set<String> done = new HashSet<>();
    for (int s = 0; s <= 60; s++) {
      long accepted = Math.min(50L * s, 2_500);
      long backlog = (s >= 15 && s < 22) ? 40L * (s - 14) : (s >= 30 && s < 38) ? 30L * (s - 29)
          : 5;
      samples.add(new Sample(s * 1_000L, accepted, Math.max(0, accepted - backlog - 20),
          backlog, backlog * 25));
    }
    for (int i = 0; i < 10; i++) {
      requests.add(new Request(i, "k" + i, "sku-1", 1, "first", 0, 202, "o" + i, 2, null));
      orders.add(new DbOrder("o" + i, "k" + i, "sku-1"));
      for (String e : Checker.EFFECTS) {
        effects.add(new DbEffect("o" + i, e, 1));
        done.add(e + ":o" + i);
      }
    }
    List<FaultWindow> faults = List.of(
        new FaultWindow("kill", "0", "", "kill -9 pid 1, restarted as pid 2", 15_000, 19_000),
        new FaultWindow("partition", "db", "blackhole", "blackhole db for 5000 ms", 30_000,
            35_000));
    return new History(requests, List.of(), orders, effects, List.of(), done, 0, samples,
        faults, "POISON");
  }

  @Test
  @DisplayName("report.html shows the verdict, the figures and the chart with shaded faults")
  void rendersInChromium() throws Exception {
    if (!Files.isExecutable(CHROMIUM) || !Files.isExecutable(CHROMEDRIVER)) {
      fail("the browser test needs " + CHROMIUM + " and " + CHROMEDRIVER + "; install them with"
          + " `apt-get install -y --no-install-recommends chromium chromium-driver`");
    }
    History h = history();
    Checker.Verdict v = Checker.check(h);
    Map<String, Object> meta = new LinkedHashMap<>();
    meta.put("command", "./relaykit chaos --seed 1");
    Report.write(dir, meta, h, v);
    assertThat(dir.resolve("report.json")).exists();
    assertThat(Files.readString(dir.resolve("report.json"))).contains("\"lost\" : 0")
        .contains("blackhole db");

    ChromeDriverService service = new ChromeDriverService.Builder()
        .usingDriverExecutable(CHROMEDRIVER.toFile()).usingAnyFreePort()
        .withLogFile(new File("target/chromedriver-chaos.log")).build();
    ChromeOptions options = new ChromeOptions();
    options.setBinary(CHROMIUM.toFile());
    options.addArguments("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage", "--window-size=1050,1250",
        "--user-data-dir=" + profile.toAbsolutePath());
    ChromeDriver driver = new ChromeDriver(service, options);
    try {
      driver.get(dir.resolve("report.html").toUri().toString());
      assertThat(driver.getTitle()).isEqualTo("relaykit chaos report");
      assertThat(driver.findElement(By.id("verdict")).getText()).isEqualTo("PASS");
      assertThat(driver.findElement(By.id("figures")).getText()).contains("lost 0");
      WebElement chart = driver.findElement(By.id("chart"));
      assertThat(chart.getSize().getWidth()).isEqualTo(Report.WIDTH);
      // Two windows, shaded in each of the three panels.
      assertThat(driver.findElements(By.cssSelector("#chart rect.fault"))).hasSize(6);
      for (String line : List.of("accepted", "succeeded", "backlog", "age")) {
        Number length = (Number) ((JavascriptExecutor) driver).executeScript(
            "return document.querySelector('#chart polyline.' + arguments[0])"
                + ".getTotalLength();", line);
        assertThat(length.doubleValue()).as("drawn length of %s", line).isGreaterThan(300);
      }
      // The kill's window starts at 15 of 60 s: a quarter into the plot.
      WebElement kill = driver.findElements(By.cssSelector("#chart rect.fault")).get(0);
      double x = Double.parseDouble(kill.getAttribute("x"));
      assertThat(x).isCloseTo(Report.LEFT + (Report.WIDTH - Report.LEFT - 20) * 0.25,
          org.assertj.core.data.Offset.offset(1.0));
      byte[] png = driver.getScreenshotAs(OutputType.BYTES);
      Path shot = Path.of("target", "chaos-report.png");
      Files.createDirectories(shot.getParent());
      Files.write(shot, png);
      assertThat(png.length).isGreaterThan(10_000);
      assertThat(new byte[] {png[1], png[2], png[3]})
          .isEqualTo("PNG".getBytes(StandardCharsets.US_ASCII));
    } finally {
      driver.quit();
      service.stop();
    }
  }
}
