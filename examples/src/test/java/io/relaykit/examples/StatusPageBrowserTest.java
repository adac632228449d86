package io.relaykit.examples;

import io.relaykit.testsupport.HeadlessChromium;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The status page in real headless Chromium (Debian's chromium and chromium-driver): place an
 * order and watch it reach SUCCESS; place a poison order and watch it reach FAILED with its reason.
 * Saves {@code target/status-page.png}.
 */
class StatusPageBrowserTest {
  private static final Duration WAIT = Duration.ofSeconds(30);

  @TempDir
  Path data;
  @TempDir
  Path profile;
  private RunningDemo demo;
  private HeadlessChromium browser;
  private WebDriver driver;

  @BeforeEach
  void start() throws Exception {
    demo = RunningDemo.start(new DemoOptions("127.0.0.1", 0, data, "h2", "memory", 0, "POISON",
        Duration.ofSeconds(2)));
    browser = new HeadlessChromium(profile, "chromedriver.log");
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

  private WebElement placeAndAwait(String sku, String status) {
    WebElement input = driver.findElement(By.id("sku"));
    input.clear();
    input.sendKeys(sku);
    int before = driver.findElements(By.cssSelector("#orders tr")).size();
    driver.findElement(By.id("place")).click();
    WebDriverWait wait = new WebDriverWait(driver, WAIT);
    wait.until(ExpectedConditions.numberOfElementsToBe(By.cssSelector("#orders tr"),
        before + 1));
    // New orders are inserted at the top of the table.
    WebElement row = driver.findElements(By.cssSelector("#orders tr")).get(0);
    wait.until(d -> status.equals(row.getAttribute("data-status")));
    return row;
  }

  @Test
  @DisplayName("an order ends SUCCESS on the page, a poison order FAILED with its reason")
  void ordersReachTheirEnd() throws Exception {
    driver.get("http://127.0.0.1:" + demo.server().port() + "/");
    assertThat(driver.getTitle()).isEqualTo("relaykit checkout demo");

    WebElement ok = placeAndAwait("book-42", "SUCCESS");
    String okId = ok.getAttribute("data-order-id");
    assertThat(ok.findElement(By.cssSelector(".status")).getText()).isEqualTo("SUCCESS");
    assertThat(ok.findElement(By.cssSelector(".detail")).getText()).isEmpty();
    assertThat(demo.app().orders.effectCount(okId, Orders.Effect.SMS)).isEqualTo(1);
    assertThat(demo.app().orders.effectCount(okId, Orders.Effect.COUPON)).isEqualTo(1);
    // The page honours the 202's Retry-After (1 s): measured by the browser's own resource timing.
    Number gapMs = (Number) ((JavascriptExecutor) driver).executeScript(
        "var id = arguments[0], all = performance.getEntriesByType('resource');"
            + "var post = all.filter(function (e) { return /\\/orders$/.test(e.name); })[0];"
            + "var poll = all.filter(function (e) {"
            + "  return e.name.indexOf('/orders/' + id + '/status') >= 0; })[0];"
            + "return post && poll ? poll.startTime - post.responseEnd : null;", okId);
    assertThat(gapMs).as("first status request after the 202").isNotNull();
    assertThat(gapMs.doubleValue()).as("ms between the 202 and the first status request")
        .isGreaterThanOrEqualTo(950.0);

    WebElement bad = placeAndAwait("POISON", "FAILED");
    String badId = bad.getAttribute("data-order-id");
    assertThat(bad.findElement(By.cssSelector(".status")).getText()).isEqualTo("FAILED");
    assertThat(bad.findElement(By.cssSelector(".detail")).getText())
        .contains("SKU POISON is poison");
    assertThat(Orders.Effect.SMS.deadLetter(demo.app().storage.deadLetterStore(), badId))
        .isPresent();

    // The dead-letter table refreshes (and is rebuilt) when a poll ends and every 3 s: read both
    // rows of the order within one wait, tolerating a rebuild between find and read.
    List<String> dead = new WebDriverWait(driver, WAIT)
        .ignoring(StaleElementReferenceException.class)
        .until(d -> {
          List<String> texts = d.findElements(By.cssSelector(
              "#dead-letters tr[data-dead-letter^='" + badId + "']")).stream()
              .map(WebElement::getText).toList();
          return texts.size() == 2 ? texts : null;
        });
    assertThat(dead).allSatisfy(text -> assertThat(text).contains("SKU POISON is poison"));
    new WebDriverWait(driver, WAIT).until(d -> d.findElements(
        By.xpath("//div[@id='metrics']/div[contains(., 'dead letters')]/b[text()='2']"))
        .size() == 1);

    byte[] png = ((ChromeDriver) driver).getScreenshotAs(OutputType.BYTES);
    Path shot = Path.of("target", "status-page.png");
    Files.createDirectories(shot.getParent());
    Files.write(shot, png);
    assertThat(png.length).isGreaterThan(10_000);
    assertThat(new byte[] {png[1], png[2], png[3]}).isEqualTo("PNG".getBytes(
        java.nio.charset.StandardCharsets.US_ASCII));
  }
}
