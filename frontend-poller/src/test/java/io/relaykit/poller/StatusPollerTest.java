package io.relaykit.poller;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.retry.Jitter;
import io.relaykit.tck.Await;
import io.relaykit.tck.FakeClock;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class StatusPollerTest {

  private static final Duration WAIT = Duration.ofSeconds(10);

  private final FakeClock clock = new FakeClock();
  private final ExecutorService runner = Executors.newSingleThreadExecutor();
  /** Every delay the poller asked for, in order. */
  private final List<Duration> delays = new CopyOnWriteArrayList<>();
  /** Jumps the fake clock ahead instead of waiting, then runs the task. */
  private final Scheduler jumpAhead = (delay, task) -> {
    delays.add(delay);
    clock.advance(delay);
    runner.execute(task);
  };
  private final StatusServer server = new StatusServer();

  @AfterEach
  void stop() throws InterruptedException {
    server.close();
    runner.shutdownNow();
    runner.awaitTermination(5, TimeUnit.SECONDS);
  }

  private StatusPoller.Builder poller() {
    return StatusPoller.builder().clock(clock).scheduler(jumpAhead).jitter(Jitter.NONE);
  }

  private PollOutcome await(Poll poll) {
    return poll.outcome().orTimeout(WAIT.toSeconds(), TimeUnit.SECONDS).join();
  }

  @Nested
  @DisplayName("backoff")
  class BackoffCases {
    @Test
    @DisplayName("delays double from 1 s and are capped at 8 s")
    void doublesAndCaps() {
      server.then("PENDING").then("PROCESSING").then("PROCESSING").then("PROCESSING")
          .then("PROCESSING").then("SUCCESS");
      PollOutcome outcome = await(poller().build().poll(server.url()));

      assertThat(outcome.result()).isEqualTo(PollOutcome.Result.SUCCESS);
      assertThat(outcome.attempts()).isEqualTo(6);
      assertThat(delays).containsExactly(Duration.ofSeconds(1), Duration.ofSeconds(2),
          Duration.ofSeconds(4), Duration.ofSeconds(8), Duration.ofSeconds(8));
      assertThat(outcome.elapsed()).isEqualTo(Duration.ofSeconds(23));
      assertThat(outcome.last().status()).isEqualTo(JobStatus.SUCCESS);
    }

    @Test
    @DisplayName("full jitter keeps every delay between zero and the capped delay")
    void fullJitter() {
      for (int i = 0; i < 12; i++) {
        server.then("PROCESSING");
      }
      server.then("SUCCESS");
      PollOutcome outcome = await(poller().jitter(Jitter.FULL).random(new Random(7))
          .deadline(Duration.ofMinutes(10)).build().poll(server.url()));

      assertThat(outcome.result()).isEqualTo(PollOutcome.Result.SUCCESS);
      assertThat(delays).hasSize(12).allSatisfy(d ->
          assertThat(d).isBetween(Duration.ZERO, Duration.ofSeconds(8)));
      assertThat(delays).doesNotHaveDuplicates();
    }

    @Test
    @DisplayName("Retry-After longer than the backoff is honoured")
    void honoursRetryAfter() {
      server.then(200, "{\"status\":\"PROCESSING\"}", Map.of("Retry-After", "5"))
          .then("SUCCESS");
      await(poller().build().poll(server.url()));

      assertThat(delays).containsExactly(Duration.ofSeconds(5));
    }

    @Test
    @DisplayName("Retry-After shorter than the backoff does not speed polling up")
    void retryAfterIsAFloor() {
      server.then("PROCESSING").then(200, "{\"status\":\"PROCESSING\"}",
          Map.of("Retry-After", "1")).then("SUCCESS");
      await(poller().build().poll(server.url()));

      assertThat(delays).containsExactly(Duration.ofSeconds(1), Duration.ofSeconds(2));
    }
  }

  @Nested
  @DisplayName("the first request")
  class FirstRequest {
    private final HttpClient http = HttpClient.newHttpClient();

    private HttpResponse<String> submit() {
      try {
        return http.send(HttpRequest.newBuilder(server.submitUrl())
            .POST(HttpRequest.BodyPublishers.ofString("{}")).build(),
            HttpResponse.BodyHandlers.ofString());
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
    }

    @Test
    @DisplayName("pollAfter waits the 202's Retry-After, then backs off as usual")
    void waitsTheSubmitRetryAfter() {
      server.submitRetryAfter("3").then("PENDING").then("PROCESSING").then("SUCCESS");
      List<Integer> requestsAtFirstWait = new CopyOnWriteArrayList<>();
      Poll poll = poller().scheduler((delay, task) -> {
        requestsAtFirstWait.add(server.requests.get());
        jumpAhead.schedule(delay, task);
      }).build().pollAfter(submit());
      PollOutcome outcome = await(poll);

      assertThat(outcome.result()).isEqualTo(PollOutcome.Result.SUCCESS);
      assertThat(outcome.attempts()).isEqualTo(3);
      assertThat(delays).containsExactly(Duration.ofSeconds(3), Duration.ofSeconds(1),
          Duration.ofSeconds(2));
      assertThat(requestsAtFirstWait.get(0)).as("no request before the first wait").isZero();
      assertThat(outcome.elapsed()).isEqualTo(Duration.ofSeconds(6));
    }

    @Test
    @DisplayName("pollAfter takes Retry-After as an HTTP date, and polls at once without one")
    void retryAfterDateOrNone() {
      assertThat(clock.instant()).isEqualTo(Instant.parse("2026-01-01T00:00:00Z"));
      server.submitRetryAfter("Thu, 01 Jan 2026 00:00:04 GMT").then("SUCCESS");
      await(poller().build().pollAfter(submit()));
      assertThat(delays).containsExactly(Duration.ofSeconds(4));

      delays.clear();
      try (StatusServer plain = new StatusServer()) {
        plain.then("SUCCESS");
        HttpResponse<String> accepted;
        try {
          accepted = http.send(HttpRequest.newBuilder(plain.submitUrl())
              .POST(HttpRequest.BodyPublishers.noBody()).build(),
              HttpResponse.BodyHandlers.ofString());
        } catch (IOException | InterruptedException e) {
          throw new AssertionError(e);
        }
        PollOutcome outcome = await(poller().build().pollAfter(accepted));
        assertThat(outcome.result()).isEqualTo(PollOutcome.Result.SUCCESS);
        assertThat(delays).isEmpty();
        assertThat(plain.requests.get()).isEqualTo(1);
      }
    }

    @Test
    @DisplayName("a first delay is a floor the backoff does not shorten, and counts to the deadline")
    void firstDelayAndDeadline() {
      server.then("PROCESSING");
      PollOutcome outcome = await(poller().deadline(Duration.ofSeconds(10)).build()
          .poll(server.url(), Duration.ofSeconds(4)));

      // 4 s, 5 s, 7 s: the next (4 s later) would reach the 10 s deadline.
      assertThat(outcome.result()).isEqualTo(PollOutcome.Result.TIMED_OUT);
      assertThat(delays).containsExactly(Duration.ofSeconds(4), Duration.ofSeconds(1),
          Duration.ofSeconds(2));
      assertThat(server.requests.get()).isEqualTo(3);
    }

    @Test
    @DisplayName("a first delay that reaches the deadline times out without a request")
    void firstDelayPastDeadline() {
      server.then("PROCESSING");
      PollOutcome outcome = await(poller().deadline(Duration.ofSeconds(5)).build()
          .poll(server.url(), Duration.ofSeconds(5)));

      assertThat(outcome.result()).isEqualTo(PollOutcome.Result.TIMED_OUT);
      assertThat(outcome.attempts()).isZero();
      assertThat(delays).isEmpty();
      assertThat(server.requests.get()).isZero();
    }

    @Test
    @DisplayName("cancel during the first wait: no request at all")
    void cancelDuringFirstWait() {
      List<Runnable> parked = new CopyOnWriteArrayList<>();
      server.then("PROCESSING");
      Poll poll = poller().scheduler((delay, task) -> parked.add(task)).build()
          .poll(server.url(), Duration.ofSeconds(2));
      assertThat(parked).hasSize(1);

      assertThat(poll.cancel()).isTrue();
      parked.get(0).run();

      assertThat(await(poll).result()).isEqualTo(PollOutcome.Result.CANCELLED);
      assertThat(await(poll).attempts()).isZero();
      assertThat(server.requests.get()).isZero();
    }

    @Test
    @DisplayName("pollAfter rejects an answer that is not a 202 with a Location")
    void pollAfterBadInput() {
      server.then("PENDING");
      try (StatusPoller p = poller().build()) {
        assertThatThrownBy(() -> p.pollAfter(null))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("accepted");
        HttpResponse<String> notAccepted;
        try {
          notAccepted = http.send(HttpRequest.newBuilder(server.url()).GET().build(),
              HttpResponse.BodyHandlers.ofString());
        } catch (IOException | InterruptedException e) {
          throw new AssertionError(e);
        }
        assertThatThrownBy(() -> p.pollAfter(notAccepted))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("was HTTP 200");
        assertThatThrownBy(() -> p.poll(server.url(), Duration.ofSeconds(-1)))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("firstDelay");
      }
    }
  }

  @Nested
  @DisplayName("stopping")
  class Stopping {
    @Test
    @DisplayName("a failed job completes the poll with its error")
    void failed() {
      server.then("PROCESSING").then(200,
          "{\"jobId\":\"1\",\"status\":\"FAILED\",\"error\":\"card declined\"}", Map.of());
      PollOutcome outcome = await(poller().build().poll(server.url()));

      assertThat(outcome.result()).isEqualTo(PollOutcome.Result.FAILED);
      assertThat(outcome.detail()).isEqualTo("card declined");
      assertThat(outcome.jobFinished()).isTrue();
    }

    @Test
    @DisplayName("the deadline ends polling with TIMED_OUT, not an exception")
    void deadline() {
      server.then("PROCESSING");
      PollOutcome outcome = await(poller().deadline(Duration.ofSeconds(10)).build()
          .poll(server.url()));

      assertThat(outcome.result()).isEqualTo(PollOutcome.Result.TIMED_OUT);
      assertThat(outcome.detail()).contains("check later");
      assertThat(outcome.jobFinished()).isFalse();
      // 0 s, 1 s, 3 s, 7 s: the next (8 s later) would pass the 10 s deadline.
      assertThat(server.requests.get()).isEqualTo(4);
      assertThat(outcome.elapsed()).isLessThan(Duration.ofSeconds(10));
    }

    @Test
    @DisplayName("the attempt limit ends polling with MAX_ATTEMPTS")
    void maxAttempts() {
      server.then("PROCESSING");
      PollOutcome outcome = await(poller().maxAttempts(3).build().poll(server.url()));

      assertThat(outcome.result()).isEqualTo(PollOutcome.Result.MAX_ATTEMPTS);
      assertThat(server.requests.get()).isEqualTo(3);
    }

    @Test
    @DisplayName("cancel stops polling: no request after it")
    void cancel() {
      List<Runnable> parked = new CopyOnWriteArrayList<>();
      server.then("PROCESSING");
      Poll poll = poller().scheduler((delay, task) -> parked.add(task)).build()
          .poll(server.url());
      Await.until(WAIT, "first poll answered", () -> parked.size() == 1);

      assertThat(poll.cancel()).isTrue();
      parked.get(0).run();

      PollOutcome outcome = await(poll);
      assertThat(outcome.result()).isEqualTo(PollOutcome.Result.CANCELLED);
      assertThat(server.requests.get()).isEqualTo(1);
      assertThat(poll.cancel()).isFalse();
    }

    @Test
    @DisplayName("a server error is retried; a 404 ends polling with ERROR")
    void httpErrors() {
      server.then(503, "", Map.of("Retry-After", "3")).then("SUCCESS");
      PollOutcome ok = await(poller().build().poll(server.url()));
      assertThat(ok.result()).isEqualTo(PollOutcome.Result.SUCCESS);
      assertThat(delays).containsExactly(Duration.ofSeconds(3));

      try (StatusServer missing = new StatusServer()) {
        missing.then(404, "{\"error\":\"unknown\"}", Map.of());
        PollOutcome gone = await(poller().build().poll(missing.url()));
        assertThat(gone.result()).isEqualTo(PollOutcome.Result.ERROR);
        assertThat(gone.detail()).contains("HTTP 404");
        assertThat(missing.requests.get()).isEqualTo(1);
      }
    }

    @Test
    @DisplayName("an unreadable status body ends polling with ERROR naming the problem")
    void unreadable() {
      server.then(200, "{\"status\":\"DONE-ISH\"}", Map.of());
      PollOutcome outcome = await(poller().build().poll(server.url()));

      assertThat(outcome.result()).isEqualTo(PollOutcome.Result.ERROR);
      assertThat(outcome.detail()).contains("unknown status \"DONE-ISH\"");
    }
  }

  @Test
  @DisplayName("never more than one request in flight, with the real scheduler")
  void oneInFlight() {
    for (int i = 0; i < 4; i++) {
      server.then("PROCESSING");
    }
    server.then("SUCCESS");
    try (StatusPoller real = StatusPoller.builder().initialDelay(Duration.ofMillis(5))
        .maxDelay(Duration.ofMillis(20)).build()) {
      PollOutcome outcome = await(real.poll(server.url()));
      assertThat(outcome.result()).isEqualTo(PollOutcome.Result.SUCCESS);
    }
    assertThat(server.requests.get()).isEqualTo(5);
    assertThat(server.maxConcurrent.get()).isEqualTo(1);
  }

  @Test
  @DisplayName("invalid configuration and URLs are rejected naming the field")
  void badInput() {
    assertThatThrownBy(() -> StatusPoller.builder().initialDelay(Duration.ZERO).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("initialDelay");
    assertThatThrownBy(() -> StatusPoller.builder().maxDelay(Duration.ofMillis(10)).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxDelay");
    assertThatThrownBy(() -> StatusPoller.builder().maxAttempts(0).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxAttempts");
    assertThatThrownBy(() -> StatusPoller.builder().deadline(Duration.ofSeconds(-1)).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("deadline");
    assertThatThrownBy(() -> StatusPoller.builder().idField(" ").build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("idField");
    try (StatusPoller p = StatusPoller.builder().build()) {
      assertThatThrownBy(() -> p.poll(URI.create("/relative")))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("statusUrl");
      assertThatThrownBy(() -> p.poll(URI.create("ftp://host/x")))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("statusUrl");
    }
  }
}
