package io.relaykit.poller;

import io.relaykit.retry.Backoff;
import io.relaykit.retry.Jitter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.random.RandomGenerator;

/**
 * Polls a job's status URL politely until the job finishes, a deadline passes, an attempt limit is
 * reached, or the caller cancels.
 *
 * <ul>
 *   <li>Never more than one request in flight per poll: the next request is scheduled only after
 *       the previous answer arrived.
 *   <li>Capped exponential backoff with full jitter (default 1 s doubling to 8 s), so a thousand
 *       clients that submitted together do not poll together.
 *   <li>{@code Retry-After} (seconds or an HTTP date) is honoured as a floor on the next delay,
 *       also on {@code 429} and {@code 503}; {@link #pollAfter} also waits the submit answer's
 *       {@code Retry-After} before the first request.
 *   <li>Transient failures (I/O errors, 5xx, 429) count as attempts and are retried; answers that
 *       cannot improve (other 4xx, an unreadable body) end the poll with {@code ERROR}.
 *   <li>At the deadline the outcome is {@code TIMED_OUT} ("still working — check later"), never an
 *       exception: a slow job is not a failed job.
 * </ul>
 * Thread-safe; one poller serves many concurrent polls. Cost: one HTTP request per attempt, no
 * thread per poll.
 */
public final class StatusPoller implements AutoCloseable {

  private static final System.Logger LOG = System.getLogger(StatusPoller.class.getName());

  private final HttpClient http;
  private final InstantSource clock;
  private final Scheduler scheduler;
  private final ScheduledExecutorService ownedExecutor;
  private final Backoff backoff;
  private final Duration deadline;
  private final int maxAttempts;
  private final Duration requestTimeout;
  private final String idField;

  private StatusPoller(Builder b) {
    this.http = b.http != null ? b.http
        : HttpClient.newBuilder().connectTimeout(b.requestTimeout).build();
    this.clock = b.clock;
    if (b.scheduler != null) {
      this.scheduler = b.scheduler;
      this.ownedExecutor = null;
    } else {
      ScheduledExecutorService executor = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "relaykit-status-poller");
        t.setDaemon(true);
        return t;
      });
      this.ownedExecutor = executor;
      this.scheduler = (delay, task) ->
          executor.schedule(task, delay.toNanos(), TimeUnit.NANOSECONDS);
    }
    Backoff base = Backoff.exponential(b.initialDelay).withMax(b.maxDelay).withJitter(b.jitter);
    this.backoff = b.random != null ? base.withRandom(b.random) : base;
    this.deadline = b.deadline;
    this.maxAttempts = b.maxAttempts;
    this.requestTimeout = b.requestTimeout;
    this.idField = b.idField;
  }

  /**
   * A builder with the defaults of {@link Builder}.
   *
   * @return a new builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Starts polling {@code statusUrl}: the first request goes out at once.
   *
   * @param statusUrl the absolute http(s) URL to poll
   * @return the running poll
   * @throws IllegalArgumentException if {@code statusUrl} is null or not absolute http(s)
   */
  public Poll poll(URI statusUrl) {
    return poll(statusUrl, Duration.ZERO);
  }

  /**
   * Starts polling {@code statusUrl}, the first request after {@code firstDelay}. The deadline
   * counts from this call, the first delay included: a first delay that reaches the deadline ends
   * the poll with {@code TIMED_OUT} and no request.
   *
   * @param statusUrl the absolute http(s) URL to poll
   * @param firstDelay how long to wait before the first request
   * @return the running poll
   * @throws IllegalArgumentException if {@code statusUrl} is null or not absolute http(s), or
   *     {@code firstDelay} is null or negative
   */
  public Poll poll(URI statusUrl, Duration firstDelay) {
    if (statusUrl == null || !statusUrl.isAbsolute()
        || !("http".equals(statusUrl.getScheme()) || "https".equals(statusUrl.getScheme()))) {
      throw new IllegalArgumentException("statusUrl must be an absolute http(s) URI, was "
          + statusUrl);
    }
    if (firstDelay == null || firstDelay.isNegative()) {
      throw new IllegalArgumentException("firstDelay must be zero or positive, was " + firstDelay);
    }
    RunningPoll poll = new RunningPoll(statusUrl, clock.instant());
    if (firstDelay.isZero()) {
      poll.request();
    } else {
      poll.requestAfter(firstDelay);
    }
    return poll;
  }

  /**
   * Starts polling the status URL of a submit answer ({@code 202 Accepted}): its {@code Location},
   * resolved against the request URI, the first request after its {@code Retry-After} (seconds or
   * an HTTP date; at once when absent or unreadable).
   *
   * @param accepted the submit's {@code 202} response
   * @return the running poll
   * @throws IllegalArgumentException if {@code accepted} is null, not a 202, has no
   *     {@code Location}, or the resolved status URL is not http(s)
   */
  public Poll pollAfter(HttpResponse<?> accepted) {
    if (accepted == null) {
      throw new IllegalArgumentException("accepted must not be null");
    }
    if (accepted.statusCode() != 202) {
      throw new IllegalArgumentException("accepted must be a 202 Accepted answer, was HTTP "
          + accepted.statusCode() + " from " + accepted.uri());
    }
    String location = accepted.headers().firstValue("Location")
        .orElseThrow(() -> new IllegalArgumentException(
            "the 202 answer from " + accepted.uri() + " has no Location header"));
    URI statusUrl;
    try {
      statusUrl = accepted.uri().resolve(location.trim());
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("the 202 answer's Location is not a URI: " + location, e);
    }
    return poll(statusUrl, retryAfter(accepted).orElse(Duration.ZERO));
  }

  /** Stops the poller's own scheduler thread, if it made one. Running polls stop advancing. */
  @Override
  public void close() {
    if (ownedExecutor != null) {
      ownedExecutor.shutdownNow();
    }
  }

  private final class RunningPoll implements Poll {
    private final URI url;
    private final Instant start;
    private final Instant giveUpAt;
    private final CompletableFuture<PollOutcome> outcome = new CompletableFuture<>();
    private final AtomicBoolean finished = new AtomicBoolean();
    private volatile CompletableFuture<HttpResponse<String>> inFlight;
    private volatile StatusDocument last;
    private int attempts; // touched by one request chain at a time

    RunningPoll(URI url, Instant start) {
      this.url = url;
      this.start = start;
      this.giveUpAt = start.plus(deadline);
    }

    @Override
    public CompletableFuture<PollOutcome> outcome() {
      return outcome;
    }

    @Override
    public boolean cancel() {
      boolean stopped = finish(PollOutcome.Result.CANCELLED, "cancelled");
      CompletableFuture<HttpResponse<String>> request = inFlight;
      if (stopped && request != null) {
        request.cancel(true);
      }
      return stopped;
    }

    /** The first wait: the same deadline rule as every later one. */
    void requestAfter(Duration delay) {
      if (!clock.instant().plus(delay).isBefore(giveUpAt)) {
        finish(PollOutcome.Result.TIMED_OUT, "still working — check later");
        return;
      }
      scheduler.schedule(delay, this::request);
    }

    void request() {
      if (finished.get()) {
        return;
      }
      attempts++;
      HttpRequest request = HttpRequest.newBuilder(url)
          .timeout(requestTimeout)
          .header("Accept", "application/json")
          .GET()
          .build();
      CompletableFuture<HttpResponse<String>> sent =
          http.sendAsync(request, HttpResponse.BodyHandlers.ofString());
      inFlight = sent;
      sent.whenComplete((response, failure) -> {
        inFlight = null;
        try {
          if (failure != null) {
            onTransientFailure(unwrap(failure).toString(), null);
          } else {
            onResponse(response);
          }
        } catch (RuntimeException e) {
          // A bug here must not leave the caller waiting forever.
          finish(PollOutcome.Result.ERROR, "poller failed: " + e);
          LOG.log(System.Logger.Level.WARNING, "status poller failed on " + url, e);
        }
      });
    }

    private void onResponse(HttpResponse<String> response) {
      int code = response.statusCode();
      Optional<Duration> retryAfter = retryAfter(response);
      if (code == 200) {
        StatusDocument doc;
        try {
          doc = StatusDocument.parse(response.body(), idField);
        } catch (IllegalArgumentException e) {
          finish(PollOutcome.Result.ERROR, "unreadable status from " + url + ": "
              + e.getMessage());
          return;
        }
        last = doc;
        if (doc.status() == JobStatus.SUCCESS) {
          finish(PollOutcome.Result.SUCCESS, "done");
        } else if (doc.status() == JobStatus.FAILED) {
          finish(PollOutcome.Result.FAILED, doc.error() == null ? "failed" : doc.error());
        } else {
          scheduleNext(retryAfter.orElse(null));
        }
      } else if (code == 429 || code >= 500) {
        onTransientFailure("HTTP " + code + " from " + url, retryAfter.orElse(null));
      } else {
        finish(PollOutcome.Result.ERROR, "HTTP " + code + " from " + url);
      }
    }

    private void onTransientFailure(String what, Duration retryAfter) {
      LOG.log(System.Logger.Level.DEBUG, "status poll attempt " + attempts + " failed: " + what);
      scheduleNext(retryAfter);
    }

    private void scheduleNext(Duration retryAfter) {
      if (finished.get()) {
        return;
      }
      if (attempts >= maxAttempts) {
        finish(PollOutcome.Result.MAX_ATTEMPTS,
            "still working after " + attempts + " checks — check later");
        return;
      }
      Duration delay = backoff.delay(attempts);
      if (retryAfter != null && retryAfter.compareTo(delay) > 0) {
        delay = retryAfter;
      }
      requestAfter(delay);
    }

    private boolean finish(PollOutcome.Result result, String detail) {
      if (!finished.compareAndSet(false, true)) {
        return false;
      }
      Duration elapsed = Duration.between(start, clock.instant());
      outcome.complete(new PollOutcome(result, last, attempts, elapsed, detail));
      return true;
    }
  }

  /** {@code Retry-After} as delta-seconds or an HTTP date; empty when absent or unreadable. */
  Optional<Duration> retryAfter(HttpResponse<?> response) {
    Optional<String> header = response.headers().firstValue("Retry-After");
    if (header.isEmpty()) {
      return Optional.empty();
    }
    String value = header.get().trim();
    try {
      long seconds = Long.parseLong(value);
      return seconds < 0 ? Optional.empty() : Optional.of(Duration.ofSeconds(seconds));
    } catch (NumberFormatException notSeconds) {
      try {
        Instant at = ZonedDateTime.parse(value, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant();
        Duration until = Duration.between(clock.instant(), at);
        return until.isNegative() ? Optional.of(Duration.ZERO) : Optional.of(until);
      } catch (DateTimeParseException notADate) {
        return Optional.empty();
      }
    }
  }

  private static Throwable unwrap(Throwable t) {
    Throwable cause = t;
    while (cause instanceof CompletionException && cause.getCause() != null) {
      cause = cause.getCause();
    }
    return cause;
  }

  /**
   * Builds a validated {@link StatusPoller}. Defaults: 1 s doubling to 8 s with full jitter, a
   * 2 minute deadline, at most 100 attempts, 10 s per request, id field {@code "jobId"}.
   */
  public static final class Builder {
    private HttpClient http;
    private InstantSource clock = InstantSource.system();
    private Scheduler scheduler;
    private Duration initialDelay = Duration.ofSeconds(1);
    private Duration maxDelay = Duration.ofSeconds(8);
    private Jitter jitter = Jitter.FULL;
    private RandomGenerator random;
    private Duration deadline = Duration.ofMinutes(2);
    private int maxAttempts = 100;
    private Duration requestTimeout = Duration.ofSeconds(10);
    private String idField = "jobId";

    private Builder() {}

    /**
     * The HTTP client; defaults to a new {@link HttpClient} with the request timeout as its
     * connect timeout.
     *
     * @param http the client
     * @return this builder
     */
    public Builder httpClient(HttpClient http) {
      this.http = http;
      return this;
    }

    /**
     * The clock deadlines are measured on; defaults to the system clock.
     *
     * @param clock the clock
     * @return this builder
     */
    public Builder clock(InstantSource clock) {
      this.clock = clock;
      return this;
    }

    /**
     * How waits happen; defaults to a daemon thread owned by the poller.
     *
     * @param scheduler the scheduler
     * @return this builder
     */
    public Builder scheduler(Scheduler scheduler) {
      this.scheduler = scheduler;
      return this;
    }

    /**
     * The wait before the second request; doubles after each one. Default 1 s.
     *
     * @param initialDelay a positive duration
     * @return this builder
     */
    public Builder initialDelay(Duration initialDelay) {
      this.initialDelay = initialDelay;
      return this;
    }

    /**
     * The cap of the wait between requests, before jitter. Default 8 s.
     *
     * @param maxDelay a positive duration, at least {@code initialDelay}
     * @return this builder
     */
    public Builder maxDelay(Duration maxDelay) {
      this.maxDelay = maxDelay;
      return this;
    }

    /**
     * How waits are spread. Default {@code FULL} (uniform in [0, wait]).
     *
     * @param jitter the jitter
     * @return this builder
     */
    public Builder jitter(Jitter jitter) {
      this.jitter = jitter;
      return this;
    }

    /**
     * The jitter's random source, for deterministic tests.
     *
     * @param random the random source
     * @return this builder
     */
    public Builder random(RandomGenerator random) {
      this.random = random;
      return this;
    }

    /**
     * How long to poll before answering TIMED_OUT.
     *
     * @param deadline a positive duration, counted from the start of the poll
     * @return this builder
     */
    public Builder deadline(Duration deadline) {
      this.deadline = deadline;
      return this;
    }

    /**
     * The most requests one poll sends before answering {@code MAX_ATTEMPTS}. Default 100.
     *
     * @param maxAttempts at least 1
     * @return this builder
     */
    public Builder maxAttempts(int maxAttempts) {
      this.maxAttempts = maxAttempts;
      return this;
    }

    /**
     * How long one request may take before it counts as failed. Default 10 s.
     *
     * @param requestTimeout a positive duration
     * @return this builder
     */
    public Builder requestTimeout(Duration requestTimeout) {
      this.requestTimeout = requestTimeout;
      return this;
    }

    /**
     * The JSON field that carries the job id in status documents.
     *
     * @param idField a non-blank field name
     * @return this builder
     */
    public Builder idField(String idField) {
      this.idField = idField;
      return this;
    }

    /**
     * Validates the settings and builds the poller.
     *
     * @return the poller
     * @throws IllegalArgumentException naming the invalid field and its value
     */
    public StatusPoller build() {
      positive("initialDelay", initialDelay);
      positive("maxDelay", maxDelay);
      if (maxDelay.compareTo(initialDelay) < 0) {
        throw new IllegalArgumentException("maxDelay must be >= initialDelay (" + initialDelay
            + "), was " + maxDelay);
      }
      positive("deadline", deadline);
      positive("requestTimeout", requestTimeout);
      if (maxAttempts < 1) {
        throw new IllegalArgumentException("maxAttempts must be >= 1, was " + maxAttempts);
      }
      if (clock == null) {
        throw new IllegalArgumentException("clock must not be null");
      }
      if (jitter == null) {
        throw new IllegalArgumentException("jitter must not be null");
      }
      if (idField == null || idField.isBlank()) {
        throw new IllegalArgumentException("idField must not be blank");
      }
      return new StatusPoller(this);
    }

    private static void positive(String field, Duration value) {
      Objects.requireNonNull(field);
      if (value == null || value.isZero() || value.isNegative()) {
        throw new IllegalArgumentException(field + " must be a positive duration, was " + value);
      }
    }
  }
}
