package io.relaykit.examples;

import static org.assertj.core.api.Assertions.fail;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;

/**
 * Debian's headless Chromium driven by its chromedriver through Selenium, with a throw-away
 * profile and a 1100×1300 window, for the demo's page tests. Fails (never skips) when Chromium is
 * missing: {@code ./relaykit test} installs it. Cost: one browser process, about a second to
 * start. (frontend-poller's tests have the same helper in their own package.)
 */
final class HeadlessChromium implements AutoCloseable {
  private static final Path CHROMIUM = Path.of("/usr/bin/chromium");
  private static final Path CHROMEDRIVER = Path.of("/usr/bin/chromedriver");

  private final ChromeDriverService service;
  private final ChromeDriver driver;

  /**
   * @param profile an empty folder for the browser's profile
   * @param log the chromedriver log file's name under {@code target/}
   */
  HeadlessChromium(Path profile, String log) {
    if (!Files.isExecutable(CHROMIUM) || !Files.isExecutable(CHROMEDRIVER)) {
      fail("the browser test needs " + CHROMIUM + " and " + CHROMEDRIVER + "; install them with"
          + " `apt-get install -y --no-install-recommends chromium chromium-driver`"
          + " (./relaykit test does it for you)");
    }
    service = new ChromeDriverService.Builder()
        .usingDriverExecutable(CHROMEDRIVER.toFile())
        .usingAnyFreePort()
        .withLogFile(new File("target/" + log))
        .build();
    ChromeOptions options = new ChromeOptions();
    options.setBinary(CHROMIUM.toFile());
    options.addArguments("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
        "--no-first-run", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--disable-dev-shm-usage", "--window-size=1100,1300",
        "--user-data-dir=" + profile.toAbsolutePath());
    ChromeDriver started;
    try {
      started = new ChromeDriver(service, options);
    } catch (RuntimeException e) {
      service.stop();
      throw e;
    }
    driver = started;
  }

  ChromeDriver driver() {
    return driver;
  }

  @Override
  public void close() {
    try {
      driver.quit();
    } finally {
      service.stop();
    }
  }
}
