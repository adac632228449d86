package io.relaykit.poller;

import static org.assertj.core.api.Assertions.fail;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;

/**
 * Debian's headless Chromium driven by its chromedriver through Selenium, with a throw-away
 * profile. Fails (never skips) when Chromium is missing: {@code ./relaykit test} installs it.
 * Cost: one browser process, about a second to start; share one per test class.
 */
final class HeadlessChromium implements AutoCloseable {
  private static final Path CHROMIUM = Path.of("/usr/bin/chromium");
  private static final Path CHROMEDRIVER = Path.of("/usr/bin/chromedriver");

  private final ChromeDriverService service;
  private final ChromeDriver driver;

  HeadlessChromium(Path profile) {
    if (!Files.isExecutable(CHROMIUM) || !Files.isExecutable(CHROMEDRIVER)) {
      fail("the browser tests need " + CHROMIUM + " and " + CHROMEDRIVER + "; install them with"
          + " `apt-get install -y --no-install-recommends chromium chromium-driver`"
          + " (./relaykit test does it for you)");
    }
    service = new ChromeDriverService.Builder()
        .usingDriverExecutable(CHROMEDRIVER.toFile())
        .usingAnyFreePort()
        .withLogFile(new File("target/chromedriver.log"))
        .build();
    ChromeOptions options = new ChromeOptions();
    options.setBinary(CHROMIUM.toFile());
    options.addArguments("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
        "--no-first-run", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--disable-dev-shm-usage",
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
