package io.relaykit.testsupport;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;

/**
 * Debian's headless Chromium driven by its chromedriver through Selenium, with a throw-away
 * profile, for page tests (the demo's status page, the browser poller, the operator console).
 * Fails (never skips) when Chromium is missing: {@code ./relaykit test} installs it. Cost: one
 * browser process, about a second to start; share one per test class.
 */
public final class HeadlessChromium implements AutoCloseable {
  private static final Path CHROMIUM = Path.of("/usr/bin/chromium");
  private static final Path CHROMEDRIVER = Path.of("/usr/bin/chromedriver");

  private final ChromeDriverService service;
  private final ChromeDriver driver;

  /**
   * A browser with a 1100×1300 window.
   *
   * @param profile an empty folder for the browser's profile
   * @param log the chromedriver log file's name under {@code target/}
   */
  public HeadlessChromium(Path profile, String log) {
    this(profile, log, 1100, 1300);
  }

  /**
   * A browser with a window of the given size.
   *
   * @param profile an empty folder for the browser's profile
   * @param log the chromedriver log file's name under {@code target/}
   * @param width the window's width in pixels
   * @param height the window's height in pixels
   * @throws AssertionError when Chromium or chromedriver is not installed
   */
  public HeadlessChromium(Path profile, String log, int width, int height) {
    if (!Files.isExecutable(CHROMIUM) || !Files.isExecutable(CHROMEDRIVER)) {
      throw new AssertionError("the browser test needs " + CHROMIUM + " and " + CHROMEDRIVER
          + "; install them with `apt-get install -y --no-install-recommends chromium"
          + " chromium-driver` (./relaykit test does it for you)");
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
        "--disable-sync", "--disable-dev-shm-usage", "--window-size=" + width + "," + height,
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

  /** {@return the driver} */
  public ChromeDriver driver() {
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
