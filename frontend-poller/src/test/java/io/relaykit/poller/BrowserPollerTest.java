package io.relaykit.poller;

import io.relaykit.testsupport.HeadlessChromium;
import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.tck.Await;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.chrome.ChromeDriver;

/**
 * The browser poller, {@code relaykit-poller.js}, in real headless Chromium against a loopback
 * {@link StatusServer} that scripts its answers. The page ({@code poller-harness.html}) injects a
 * fake clock and fake timers through the poller's {@code now}/{@code setTimeout}/{@code
 * clearTimeout}/{@code random} options, so every delay is checked exactly and no test waits for
 * the poller's real delays; requests are real fetches. Times below are fake milliseconds from the
 * start of the poll.
 */
class BrowserPollerTest {

  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final byte[] HARNESS = resource("poller-harness.html");

  @TempDir
  static Path profile;
  private static HeadlessChromium chromium;
  private static ChromeDriver browser;

  private final StatusServer server = new StatusServer();

  @BeforeAll
  static void startBrowser() {
    chromium = new HeadlessChromium(profile, "chromedriver.log");
    browser = chromium.driver();
  }

  @AfterAll
  static void stopBrowser() {
    if (chromium != null) {
      chromium.close();
    }
  }

  @BeforeEach
  void openHarness() {
    server.serve("/relaykit-poller.js", PollerAssets.JAVASCRIPT,
        PollerAssets.browserPollerScript());
    server.serve("/harness.html", "text/html; charset=utf-8", HARNESS);
    browser.get(server.base().resolve("/harness.html").toString());
    assertThat(browser.executeScript("return typeof RelayKitPoller.pollAfter"))
        .isEqualTo("function");
  }

  @AfterEach
  void stopServer() {
    server.close();
  }

  private static byte[] resource(String name) {
    try (InputStream in = BrowserPollerTest.class.getResourceAsStream(name)) {
      if (in == null) {
        throw new IllegalStateException("test resource " + name + " is missing");
      }
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Polls the status URL; {@code random} is the fixed jitter draw, or null for a seeded one. */
  private void poll(Map<String, Object> options, Object random, boolean autoAdvance) {
    browser.executeScript("harness.poll(arguments[0], arguments[1], arguments[2])",
        server.url().toString(), options, config(random, autoAdvance));
  }

  private static Map<String, Object> config(Object random, boolean autoAdvance) {
    return random == null ? Map.of("seed", 7, "autoAdvance", autoAdvance)
        : Map.of("random", random, "autoAdvance", autoAdvance);
  }

  @SuppressWarnings("unchecked")
  private Map<String, Object> state() {
    return (Map<String, Object>) browser.executeScript("return harness.state()");
  }

  @SuppressWarnings("unchecked")
  private Map<String, Object> awaitOutcome() {
    Map<String, Object> s = Await.value(WAIT, "the browser poll to finish", this::state,
        st -> st.get("outcome") != null || st.get("error") != null);
    assertThat(s.get("error")).as("harness error").isNull();
    return (Map<String, Object>) s.get("outcome");
  }

  private Map<String, Object> awaitState(String description,
      java.util.function.Predicate<Map<String, Object>> condition) {
    return Await.value(WAIT, description, this::state, condition);
  }

  private static List<Double> numbers(Map<String, Object> state, String key) {
    return ((List<?>) state.get(key)).stream().map(n -> ((Number) n).doubleValue()).toList();
  }

  private static long number(Map<String, Object> state, String key) {
    return ((Number) state.get(key)).longValue();
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> map(Object value) {
    return (Map<String, Object>) value;
  }

  @SuppressWarnings("unchecked")
  private static List<Object> list(Object value) {
    return (List<Object>) value;
  }

  private static List<Double> ms(double... values) {
    return java.util.Arrays.stream(values).boxed().toList();
  }

  @Nested
  @DisplayName("backoff")
  class BackoffCases {
    @Test
    @DisplayName("delays double from initialMs up to maxMs, scaled by the jitter draw")
    void doublesAndCaps() {
      server.then("PENDING").then("PROCESSING").then("PROCESSING").then("PROCESSING")
          .then("PROCESSING").then("SUCCESS");
      poll(Map.of(), 0.5, true);
      Map<String, Object> outcome = awaitOutcome();
      Map<String, Object> s = state();

      assertThat(outcome).containsEntry("result", "success").containsEntry("last", "SUCCESS");
      assertThat(number(outcome, "attempts")).isEqualTo(6);
      // Cap before jitter: 0.5 x min(8000, 1000 x 2^(n-1)).
      assertThat(numbers(s, "delays")).containsExactlyElementsOf(
          ms(500, 1000, 2000, 4000, 4000));
      assertThat(numbers(s, "requestTimes")).containsExactlyElementsOf(
          ms(0, 500, 1500, 3500, 7500, 11500));
      assertThat(list(s.get("updates"))).containsExactly("PENDING", "PROCESSING",
          "PROCESSING", "PROCESSING", "PROCESSING", "SUCCESS");
      assertThat(server.requests.get()).isEqualTo(6);
    }

    @Test
    @DisplayName("full jitter keeps every delay between zero and that attempt's capped delay")
    void fullJitter() {
      for (int i = 0; i < 12; i++) {
        server.then("PROCESSING");
      }
      server.then("SUCCESS");
      poll(Map.of("deadlineMs", 600_000), null, true);
      assertThat(awaitOutcome()).containsEntry("result", "success");
      List<Double> delays = numbers(state(), "delays");

      assertThat(delays).hasSize(12).doesNotHaveDuplicates();
      for (int n = 1; n <= delays.size(); n++) {
        double cap = Math.min(8000, 1000 * Math.pow(2, n - 1));
        assertThat(delays.get(n - 1)).as("delay before attempt %d", n + 1).isBetween(0.0, cap);
      }
      // Jitter spreads the draws: not all of them sit at the top of their range.
      assertThat(delays.subList(4, 12)).anySatisfy(d -> assertThat(d).isLessThan(6000.0));
    }

    @Test
    @DisplayName("Retry-After longer than the backoff is honoured; shorter does not speed up")
    void retryAfterIsAFloor() {
      server.then(200, "{\"status\":\"PROCESSING\"}", Map.of("Retry-After", "5"))
          .then("PROCESSING")
          .then(200, "{\"status\":\"PROCESSING\"}", Map.of("Retry-After", "1"))
          .then("SUCCESS");
      poll(Map.of(), 0.5, true);
      assertThat(awaitOutcome()).containsEntry("result", "success");

      assertThat(numbers(state(), "delays")).containsExactlyElementsOf(ms(5000, 1000, 2000));
    }

    @Test
    @DisplayName("a 503 is retried after its Retry-After; an HTTP-date Retry-After is honoured")
    void serverErrorAndHttpDate() {
      // The fake clock starts at 2026-01-01T00:00:00Z; the second answer comes at +3 s.
      server.then(503, "", Map.of("Retry-After", "3"))
          .then(200, "{\"status\":\"PROCESSING\"}",
              Map.of("Retry-After", "Thu, 01 Jan 2026 00:00:09 GMT"))
          .then("SUCCESS");
      poll(Map.of(), 0.5, true);
      assertThat(awaitOutcome()).containsEntry("result", "success");

      assertThat(numbers(state(), "delays")).containsExactlyElementsOf(ms(3000, 6000));
      assertThat(server.requests.get()).isEqualTo(3);
    }
  }

  @Nested
  @DisplayName("the first request")
  class FirstRequest {
    private void submitThenPoll(Map<String, Object> options) {
      browser.executeScript(
          "harness.submitThenPoll(arguments[0], 'POST', arguments[1], arguments[2])",
          server.submitUrl().toString(), options, config(0.5, true));
    }

    @Test
    @DisplayName("pollAfter waits the 202's Retry-After before the first request")
    void waitsTheSubmitRetryAfter() {
      server.submitRetryAfter("3").then("PENDING").then("PROCESSING").then("SUCCESS");
      submitThenPoll(Map.of());
      Map<String, Object> outcome = awaitOutcome();
      Map<String, Object> s = state();

      assertThat(outcome).containsEntry("result", "success");
      assertThat(numbers(s, "delays")).containsExactlyElementsOf(ms(3000, 500, 1000));
      assertThat(numbers(s, "requestTimes")).containsExactlyElementsOf(ms(3000, 3500, 4500));
    }

    @Test
    @DisplayName("pollAfter without Retry-After polls at once; firstDelayMs overrides it")
    void withoutRetryAfterOrOverridden() {
      server.then("SUCCESS");
      submitThenPoll(Map.of());
      awaitOutcome();
      assertThat(numbers(state(), "requestTimes")).containsExactlyElementsOf(ms(0));

      server.submitRetryAfter("3");
      submitThenPoll(Map.of("firstDelayMs", 1200));
      awaitOutcome();
      assertThat(numbers(state(), "requestTimes")).containsExactlyElementsOf(ms(1200));
    }

    @Test
    @DisplayName("a first delay that reaches the deadline times out without a request")
    void firstDelayPastDeadline() {
      server.then("PROCESSING");
      poll(Map.of("firstDelayMs", 5000, "deadlineMs", 5000), 0.5, true);
      Map<String, Object> outcome = awaitOutcome();

      assertThat(outcome).containsEntry("result", "timeout");
      assertThat(number(outcome, "attempts")).isZero();
      assertThat(server.requests.get()).isZero();
    }

    @Test
    @DisplayName("pollAfter refuses an answer that is not a 202; bad options name the option")
    void badInput() {
      server.then("PENDING");
      browser.executeScript(
          "harness.submitThenPoll(arguments[0], 'GET', {}, {random: 0.5})",
          server.url().toString());
      Map<String, Object> s = awaitState("pollAfter to refuse the 200",
          st -> st.get("error") != null);
      assertThat((String) s.get("error")).contains("expected a 202 Accepted answer, was HTTP 200");

      poll(Map.of("maxAttempts", 0), 0.5, true);
      assertThat((String) state().get("error")).contains("maxAttempts must be a positive number");
    }
  }

  @Nested
  @DisplayName("stopping")
  class Stopping {
    @Test
    @DisplayName("the deadline ends polling with timeout: the next wait would pass it")
    void deadline() {
      server.then("PROCESSING");
      poll(Map.of("deadlineMs", 10_000), 0.5, true);
      Map<String, Object> outcome = awaitOutcome();

      assertThat(outcome).containsEntry("result", "timeout");
      assertThat((String) outcome.get("detail")).contains("check later");
      // 0, 0.5, 1.5, 3.5, 7.5 s; the next (4 s later) would pass 10 s.
      assertThat(numbers(state(), "requestTimes")).containsExactlyElementsOf(
          ms(0, 500, 1500, 3500, 7500));
      assertThat(server.requests.get()).isEqualTo(5);
    }

    @Test
    @DisplayName("maxAttempts ends polling with max-attempts after that many requests")
    void maxAttempts() {
      server.then("PROCESSING");
      poll(Map.of("maxAttempts", 3), 0.5, true);
      Map<String, Object> outcome = awaitOutcome();

      assertThat(outcome).containsEntry("result", "max-attempts");
      assertThat(number(outcome, "attempts")).isEqualTo(3);
      assertThat(server.requests.get()).isEqualTo(3);
    }

    @Test
    @DisplayName("a failed job ends with its error; a 404 and an unknown status end with error")
    void terminalAnswers() {
      server.then("PROCESSING").then(200,
          "{\"jobId\":\"1\",\"status\":\"FAILED\",\"error\":\"card declined\"}", Map.of());
      poll(Map.of(), 0.5, true);
      assertThat(awaitOutcome()).containsEntry("result", "failed")
          .containsEntry("detail", "card declined");

      server.then(404, "{\"error\":\"unknown\"}", Map.of());
      poll(Map.of(), 0.5, true);
      assertThat(awaitOutcome()).containsEntry("result", "error")
          .containsEntry("detail", "HTTP 404");

      server.then(200, "{\"status\":\"DONE-ISH\"}", Map.of());
      poll(Map.of(), 0.5, true);
      assertThat(awaitOutcome()).containsEntry("result", "error")
          .containsEntry("detail", "unreadable status document");
    }

    @Test
    @DisplayName("cancel while waiting clears the timer: no request after it")
    void cancelWhileWaiting() {
      server.then("PROCESSING");
      poll(Map.of(), 0.5, false);
      awaitState("the first answer and a parked wait", st -> number(st, "parked") == 1);

      assertThat(browser.executeScript("return harness.cancel()")).isEqualTo(true);
      Map<String, Object> s = state();
      assertThat(map(s.get("outcome"))).containsEntry("result", "cancelled");
      assertThat(number(s, "parked")).as("the wait was cleared").isZero();
      assertThat(browser.executeScript("return harness.cancel()")).isEqualTo(false);
      assertThat(server.requests.get()).isEqualTo(1);
    }

    @Test
    @DisplayName("cancel with a request in flight aborts it; its late answer changes nothing")
    void cancelInFlight() {
      server.holdReplies().then("PROCESSING");
      poll(Map.of(), 0.5, true);
      Await.until(WAIT, "the first request to be held", () -> server.held.get() == 1);

      assertThat(browser.executeScript("return harness.cancel()")).isEqualTo(true);
      server.release();
      Map<String, Object> s = awaitState("the aborted fetch to settle",
          st -> number(st, "inFlight") == 0);

      assertThat(number(s, "aborted")).isEqualTo(1);
      assertThat(map(s.get("outcome"))).containsEntry("result", "cancelled");
      assertThat(numbers(s, "delays")).as("nothing scheduled after cancel").isEmpty();
      assertThat(list(s.get("updates"))).isEmpty();
      assertThat(server.requests.get()).isEqualTo(1);
    }

    @Test
    @DisplayName("the page going hidden or being left stops polling, unless stopWhenHidden is off")
    void hiddenOrLeft() {
      server.then("PROCESSING");
      poll(Map.of(), 0.5, false);
      awaitState("a parked wait", st -> number(st, "parked") == 1);
      browser.executeScript("harness.leave()");
      Map<String, Object> left = state();
      assertThat(map(left.get("outcome"))).containsEntry("result", "hidden")
          .containsEntry("detail", "page left");
      assertThat(number(left, "parked")).isZero();

      poll(Map.of("stopWhenHidden", false), 0.5, false);
      awaitState("a parked wait", st -> number(st, "parked") == 1);
      browser.executeScript("harness.hide()");
      assertThat(state().get("outcome")).as("stopWhenHidden: false keeps polling").isNull();
      assertThat(number(state(), "parked")).isEqualTo(1);
      browser.executeScript("harness.cancel()");

      poll(Map.of(), 0.5, false);
      awaitState("a parked wait", st -> number(st, "parked") == 1);
      // The page is already hidden now: the next visibilitychange stops this poll.
      browser.executeScript("harness.hide()");
      Map<String, Object> hidden = state();
      assertThat(map(hidden.get("outcome"))).containsEntry("result", "hidden")
          .containsEntry("detail", "page hidden");
      assertThat(number(hidden, "parked")).isZero();
      assertThat(server.requests.get()).isEqualTo(3);
    }
  }

  @Test
  @DisplayName("never more than one request in flight: nothing is scheduled until the answer")
  void oneInFlight() {
    server.holdReplies().then("PROCESSING").then("PROCESSING").then("SUCCESS");
    poll(Map.of(), 0.5, false);
    for (int k = 1; k <= 3; k++) {
      int request = k;
      Await.until(WAIT, "request " + k + " to be held",
          () -> server.held.get() == 1 && server.requests.get() == request);
      Map<String, Object> s = state();
      assertThat(number(s, "parked")).as("waits scheduled while request %d is out", k).isZero();
      assertThat(numbers(s, "requestTimes")).hasSize(k);
      assertThat(number(s, "inFlight")).isEqualTo(1);
      server.release();
      if (k < 3) {
        awaitState("the answer to schedule one wait", st -> number(st, "parked") == 1);
        browser.executeScript("harness.fire()");
      }
    }
    assertThat(awaitOutcome()).containsEntry("result", "success");
    assertThat(number(state(), "maxInFlight")).isEqualTo(1);
    assertThat(server.maxConcurrent.get()).isEqualTo(1);
    assertThat(server.requests.get()).isEqualTo(3);
  }
}
