package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.testsupport.HeadlessChromium;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The operator console of a running Boot application ({@link ConsoleApp}, random port) in
 * headless Chromium: sign in through the application's login form, read the overview and the
 * dead letters, where a reason holding markup is shown as text, and replay one through the page's
 * own form (with Spring Security's CSRF token).
 */
@DisplayName("The operator console in a browser")
class ConsoleBrowserTest {

  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final String MARKUP = "<script>document.title='pwned';window.pwned=1</script>"
      + "<b>bold</b>";

  @TempDir
  Path profile;
  private ConfigurableApplicationContext app;
  private HeadlessChromium browser;
  private WebDriver driver;
  private String base;

  @BeforeEach
  void start() {
    app = ConsoleSecurityTest.start();
    base = "http://127.0.0.1:" + ((WebServerApplicationContext) app).getWebServer().getPort();
    browser = new HeadlessChromium(profile, "console-chromedriver.log");
    driver = browser.driver();
  }

  @AfterEach
  void stop() {
    try {
      if (browser != null) {
        browser.close();
      }
    } finally {
      if (app != null) {
        app.close();
      }
    }
  }

  @Test
  @DisplayName("sign in, see the overview and the dead letters (markup shown as text), replay one")
  void overviewDeadLettersAndReplay() {
    DeadLetterStore store = app.getBean(DeadLetterStore.class);
    DeadLetter d = ConsoleSecurityTest.seed(store, "rejected: " + MARKUP);

    driver.get(base + ConsoleSecurityTest.ROOT + "/");
    WebDriverWait wait = new WebDriverWait(driver, WAIT);
    wait.until(ExpectedConditions.presenceOfElementLocated(By.name("username")));
    driver.findElement(By.name("username")).sendKeys("operator");
    driver.findElement(By.name("password")).sendKeys(ConsoleApp.OPERATOR_PASSWORD);
    driver.findElement(By.cssSelector("button[type=submit]")).click();

    wait.until(ExpectedConditions.presenceOfElementLocated(By.id("dead-letter-groups")));
    assertThat(driver.getCurrentUrl()).startsWith(base + ConsoleSecurityTest.ROOT);
    assertThat(driver.findElement(By.tagName("header")).getText())
        .contains("signed in as operator");
    assertThat(driver.findElement(By.id("since")).getText()).startsWith("History since");
    assertThat(driver.findElement(By.id("dead-letter-groups")).getText()).contains("relaykit")
        .contains("orders");

    driver.get(base + ConsoleSecurityTest.ROOT + "/dead-letters?store=relaykit");
    wait.until(ExpectedConditions.presenceOfElementLocated(By.id("dead-letters")));
    WebElement reason = driver.findElement(By.cssSelector("#dead-letters td.reason"));
    assertThat(reason.getText()).isEqualTo("rejected: " + MARKUP);
    assertThat(reason.findElements(By.tagName("b"))).as("no element made from the reason")
        .isEmpty();
    assertThat(driver.getTitle()).doesNotContain("pwned");
    assertThat(((ChromeDriver) driver).executeScript("return window.pwned === undefined"))
        .isEqualTo(true);

    driver.findElement(By.linkText(d.messageId())).click();
    wait.until(ExpectedConditions.presenceOfElementLocated(By.id("replay")));
    assertThat(driver.findElement(By.id("detail")).getText()).contains(MARKUP);
    driver.findElement(By.id("replay")).click();
    wait.until(ExpectedConditions.presenceOfElementLocated(By.id("outcome")));
    assertThat(driver.findElement(By.id("outcome")).getAttribute("class")).isEqualTo("ok");
    assertThat(store.find(d.id())).as("replayed out of the store").isEmpty();
  }
}
