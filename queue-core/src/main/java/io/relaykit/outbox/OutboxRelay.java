package io.relaykit.outbox;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.internal.Checks;
import io.relaykit.message.Message;
import io.relaykit.message.PublishException;
import io.relaykit.message.PublishReceipt;
import io.relaykit.message.Publisher;
import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleEvent.Stage;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.retry.Backoff;
import io.relaykit.retry.Jitter;
import io.relaykit.retry.RetryPolicy;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Moves outbox rows to a broker: claims a batch with a lease, publishes every row, waits for the
 * broker's confirms, marks the confirmed rows sent, reschedules failures with the {@link
 * RetryPolicy}'s backoff, and dead-letters rows that are out of attempts or failed permanently
 * (the {@link DeadLetter} is stored first, then the row leaves the outbox, so a crash in between
 * leaves a row to retry, never a lost message).
 *
 * <p>Guarantees: at least once (a relay that dies after the broker confirmed but before marking
 * sent leaves rows that are published again when its lease expires; consumers dedupe by message
 * id or business key); per-key order (the store hands out only the oldest unsent row of a key, so
 * a key's next message is published only after its previous one was confirmed and marked); any
 * number of relays may share one store. Expired messages are never published: they are
 * dead-lettered with the reason. Sent rows older than the retention are purged, by default.
 *
 * <p>{@link #runOnce()} does one cycle on the caller's thread (deterministic tests, your own
 * scheduler); {@link #start()} runs cycles on a daemon thread, back to back while claims return
 * rows (a partial batch included: it may be one row per key of a larger keyed backlog), every
 * {@code pollInterval} after a claim found nothing, and with a capped backoff while the store
 * fails, until {@link #close(Duration)}. Cost per cycle: one claim, one publish per row, one
 * markSent, one store call per failed row.
 */
public final class OutboxRelay implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(OutboxRelay.class.getName());
  /** The {@code destination} of the relay's metrics. */
  static final String METRICS_NAME = "outbox";
  /** Sent rows deleted per purge statement, and statements per purge. */
  private static final int PURGE_STEP = 1_000;
  private static final int MAX_PURGE_STEPS = 100;

  private final OutboxStore store;
  private final Publisher publisher;
  private final DeadLetterStore deadLetters;
  private final RetryPolicy retryPolicy;
  private final LifecycleListener listener;
  private final InstantSource clock;
  private final String owner;
  private final int batchSize;
  private final Duration lease;
  private final Duration confirmTimeout;
  private final Duration pollInterval;
  private final Backoff errorBackoff;
  private final Duration retention;
  private final Duration purgeInterval;
  private final MetricsListener metrics;
  private final boolean metering;
  private final Duration metricsInterval;

  private final ReentrantLock lock = new ReentrantLock();
  private final Condition wake = lock.newCondition();
  private Thread worker;
  private volatile boolean running;
  private boolean closed;
  private volatile Instant lastPurge;
  private volatile Instant lastSample;

  private OutboxRelay(Builder b) {
    this.store = b.store;
    this.publisher = b.publisher;
    this.deadLetters = b.deadLetters;
    this.retryPolicy = b.retryPolicy;
    this.listener = b.listener;
    this.clock = b.clock;
    this.owner = b.owner;
    this.batchSize = b.batchSize;
    this.lease = b.lease;
    this.confirmTimeout = b.confirmTimeout;
    this.pollInterval = b.pollInterval;
    this.errorBackoff = b.errorBackoff;
    this.retention = b.retention;
    this.purgeInterval = b.purgeInterval;
    this.metrics = b.metrics;
    this.metering = b.metricsSet;
    this.metricsInterval = b.metricsInterval;
  }

  /** A builder for a relay from {@code store} through {@code publisher}. */
  public static Builder builder(OutboxStore store, Publisher publisher,
      DeadLetterStore deadLetters) {
    return new Builder(store, publisher, deadLetters);
  }

  /** This relay's lease owner id. */
  public String owner() {
    return owner;
  }

  /**
   * One cycle: claim up to {@code batchSize} rows, publish them, wait up to {@code confirmTimeout}
   * for the confirms, mark, reschedule or dead-letter each row; purge old sent rows when due.
   *
   * @return what happened to the claimed rows
   * @throws RuntimeException whatever the store throws (an unreachable database): rows claimed in
   *     this cycle keep their lease and are taken over when it expires
   */
  public Batch runOnce() {
    Instant now = clock.instant();
    sampleIfDue(now);
    List<OutboxRecord> claimed = store.claim(owner, batchSize, lease, now);
    if (claimed.isEmpty()) {
      purgeIfDue(now);
      return new Batch(0, 0, 0, 0, 0);
    }
    List<OutboxRecord> toPublish = new ArrayList<>(claimed.size());
    int dead = 0;
    for (OutboxRecord r : claimed) {
      if (r.message().isExpiredAt(now)) {
        if (deadLetter(r, "expired at " + r.message().expiresAt().orElseThrow()
            + " before it could be published", null, r.attempts(), now, Stage.EXPIRED)) {
          dead++;
        }
      } else {
        toPublish.add(r);
      }
    }
    List<CompletableFuture<PublishReceipt>> confirms = new ArrayList<>(toPublish.size());
    for (OutboxRecord r : toPublish) {
      confirms.add(publish(r));
    }
    awaitConfirms(confirms);

    List<Long> confirmed = new ArrayList<>(toPublish.size());
    List<Integer> failed = new ArrayList<>();
    for (int i = 0; i < toPublish.size(); i++) {
      CompletableFuture<PublishReceipt> f = confirms.get(i);
      if (f.isDone() && !f.isCompletedExceptionally()) {
        confirmed.add(toPublish.get(i).sequence());
      } else {
        failed.add(i);
      }
    }
    Instant doneAt = clock.instant();
    int sent = confirmed.isEmpty() ? 0 : markSent(confirmed, doneAt);
    for (int i = 0; i < toPublish.size(); i++) {
      CompletableFuture<PublishReceipt> f = confirms.get(i);
      if (f.isDone() && !f.isCompletedExceptionally()) {
        OutboxRecord r = toPublish.get(i);
        emit(Stage.CONFIRMED, r, doneAt, f.join().position());
      }
    }
    int retried = 0;
    for (int i : failed) {
      OutboxRecord r = toPublish.get(i);
      Throwable cause = failure(confirms.get(i));
      int attempt = r.attempts() + 1;
      Instant first = r.firstFailureAt() != null ? r.firstFailureAt() : doneAt;
      RetryPolicy.Decision d = retryPolicy.decide(attempt, first, doneAt, cause);
      if (d.retry()) {
        if (store.reschedule(owner, r.sequence(), attempt, doneAt, doneAt.plus(d.delay()),
            describe(cause))) {
          retried++;
          emit(Stage.RETRIED, r, doneAt, "attempt " + attempt + " failed, next in " + d.delay()
              + ": " + describe(cause));
        }
      } else if (deadLetter(r, d.reason(), cause, attempt, doneAt, Stage.DEAD_LETTERED)) {
        dead++;
      }
    }
    int lost = claimed.size() - sent - retried - dead;
    if (lost > 0) {
      LOG.log(System.Logger.Level.WARNING, "outbox relay " + owner + " lost the lease of " + lost
          + " rows before marking them (lease " + lease + " too short for the confirm wait?);"
          + " another relay publishes them again");
    }
    return new Batch(claimed.size(), sent, retried, dead, lost);
  }

  /**
   * Marks confirmed rows sent, trying a transient store failure (a lock timeout) twice more at
   * once: every row left unmarked is published a second time after its lease expires.
   */
  private int markSent(List<Long> confirmed, Instant at) {
    RuntimeException last = null;
    for (int attempt = 1; attempt <= 3; attempt++) {
      try {
        return store.markSent(owner, confirmed, at);
      } catch (RuntimeException e) {
        if (last != null) {
          e.addSuppressed(last);
        }
        last = e;
      }
    }
    throw last;
  }

  private CompletableFuture<PublishReceipt> publish(OutboxRecord r) {
    CompletableFuture<PublishReceipt> f;
    try {
      f = publisher.publish(r.destination(), r.message());
      if (f == null) {
        f = CompletableFuture.failedFuture(new PublishException("publisher returned no future"));
      }
    } catch (RuntimeException e) {
      f = CompletableFuture.failedFuture(e);
    }
    emit(Stage.PUBLISHED, r, clock.instant(), "");
    return f;
  }

  private void awaitConfirms(List<CompletableFuture<PublishReceipt>> confirms) {
    CompletableFuture<Void> all =
        CompletableFuture.allOf(confirms.toArray(new CompletableFuture<?>[0]));
    try {
      all.get(confirmTimeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (ExecutionException | TimeoutException | CancellationException e) {
      // Per-message outcomes are read from each future; a missing confirm counts as a failure.
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      // Rows stay claimed; they are published again once the lease expires.
      throw new IllegalStateException("outbox relay " + owner
          + " interrupted while waiting for confirms", e);
    }
  }

  private Throwable failure(CompletableFuture<PublishReceipt> f) {
    if (!f.isDone()) {
      return new PublishException("no broker confirm within " + confirmTimeout);
    }
    try {
      f.join();
      return null;
    } catch (CompletionException | CancellationException e) {
      return e.getCause() != null ? e.getCause() : e;
    }
  }

  private boolean deadLetter(OutboxRecord r, String reason, Throwable cause, int attempts,
      Instant at, Stage stage) {
    Instant first = r.firstFailureAt() != null ? r.firstFailureAt() : at;
    deadLetters.add(DeadLetter.of(r.message(), r.destination(), reason, cause, attempts, first,
        at));
    boolean removed = store.markDead(owner, r.sequence());
    if (removed) {
      emit(stage, r, at, reason);
    }
    return removed;
  }

  /**
   * Reports the backlog (unsent rows, oldest unsent age) to the metrics listener at most once per
   * metrics interval. A store that cannot answer costs this sample, not the cycle.
   */
  private void sampleIfDue(Instant now) {
    if (!metering || (lastSample != null && now.isBefore(lastSample.plus(metricsInterval)))) {
      return;
    }
    lastSample = now;
    OutboxStats stats;
    try {
      stats = store.stats(now);
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.DEBUG, "outbox relay " + owner + " could not sample the"
          + " backlog for metrics: " + e);
      return;
    }
    MetricsListener.safely(metrics, m -> {
      m.backlogDepth(METRICS_NAME, stats.unsent());
      m.oldestAge(METRICS_NAME, stats.oldestUnsentAge());
    });
  }

  private void purgeIfDue(Instant now) {
    if (lastPurge != null && now.isBefore(lastPurge.plus(purgeInterval))) {
      return;
    }
    lastPurge = now;
    // Retention is measured on the store's clock, so a relay whose clock runs ahead purges
    // nothing early; bounded steps keep each delete short.
    int purged = 0;
    for (int i = 0; i < MAX_PURGE_STEPS; i++) {
      int n = store.purgeSentOlderThan(retention, PURGE_STEP, now);
      purged += n;
      if (n < PURGE_STEP) {
        break;
      }
    }
    if (purged > 0) {
      LOG.log(System.Logger.Level.DEBUG, "outbox relay " + owner + " purged " + purged
          + " sent rows older than " + retention);
    }
  }

  private void emit(Stage stage, OutboxRecord r, Instant at, String detail) {
    Message m = r.message();
    LifecycleListener.safely(listener,
        new LifecycleEvent(stage, m.id(), m.traceId(), r.destination(), at, detail));
  }

  private static String describe(Throwable t) {
    if (t == null) {
      return "no exception";
    }
    return t.getClass().getName() + (t.getMessage() == null ? "" : ": " + t.getMessage());
  }

  /**
   * Starts the background loop on a daemon thread.
   *
   * @throws IllegalStateException if already started or closed
   */
  public void start() {
    lock.lock();
    try {
      if (closed || worker != null) {
        throw new IllegalStateException("outbox relay " + owner
            + (closed ? " is closed" : " is already started"));
      }
      running = true;
      worker = new Thread(this::loop, "relaykit-outbox-relay-" + owner);
      worker.setDaemon(true);
      worker.start();
    } finally {
      lock.unlock();
    }
  }

  /**
   * How long the background loop waits after cycle {@code b}: not at all while cycles make
   * progress, else {@code pollInterval}. A partial batch that sent or dead-lettered rows does not
   * mean the backlog is empty: per-key order lets a claim take one row per key, so a backlog over
   * fewer keys than the batch size claims partial batches until it is drained. A partial batch
   * that only rescheduled rows (the publisher is failing) waits, so a retry delay near zero cannot
   * turn the loop into a claim-and-reschedule spin.
   */
  static Duration pauseAfter(Batch b, int batchSize, Duration pollInterval) {
    boolean progress = b.sent() > 0 || b.deadLettered() > 0 || b.claimed() >= batchSize;
    return progress ? Duration.ZERO : pollInterval;
  }

  private void loop() {
    int failures = 0;
    while (running) {
      Duration pause;
      try {
        Batch b = runOnce();
        if (failures > 0) {
          LOG.log(System.Logger.Level.INFO, "outbox relay " + owner + " resumed after "
              + failures + " failed cycles");
        }
        failures = 0;
        pause = pauseAfter(b, batchSize, pollInterval);
      } catch (RuntimeException e) {
        if (!running) {
          break;
        }
        failures++;
        pause = errorBackoff.delay(failures);
        LOG.log(System.Logger.Level.WARNING, "outbox relay " + owner + " cycle failed ("
            + failures + " in a row), retrying in " + pause + ": " + e, e);
      } catch (Error e) {
        LOG.log(System.Logger.Level.ERROR, "outbox relay " + owner + " stopped: " + e, e);
        throw e;
      }
      if (!pause.isZero()) {
        pause(pause);
      }
    }
  }

  private void pause(Duration d) {
    lock.lock();
    try {
      long nanos = d.toNanos();
      while (running && nanos > 0) {
        nanos = wake.awaitNanos(nanos);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      running = false;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Stops the loop: no new cycle starts, and this waits up to {@code deadline} for the cycle in
   * progress to finish (a cycle that outlives the deadline still ends by itself, within the confirm
   * timeout; its thread is never interrupted). Idempotent. Does not close the publisher or the
   * store.
   *
   * @return whether the loop stopped within the deadline
   */
  public boolean close(Duration deadline) {
    Checks.requireNonNull("deadline", deadline);
    Thread t;
    lock.lock();
    try {
      closed = true;
      running = false;
      wake.signalAll();
      t = worker;
    } finally {
      lock.unlock();
    }
    if (t == null || t == Thread.currentThread()) {
      return true;
    }
    // The worker is not interrupted: an interrupt inside a JDBC call can break the connection,
    // and with H2 files the whole database. Its cycle ends by itself within the confirm timeout.
    try {
      t.join(Math.max(1, deadline.toMillis()));
      return !t.isAlive();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /** {@link #close(Duration)} with the confirm timeout as the deadline. */
  @Override
  public void close() {
    close(confirmTimeout);
  }

  /**
   * What one {@link #runOnce()} cycle did.
   *
   * @param claimed rows claimed
   * @param sent rows confirmed by the broker and marked sent
   * @param retried rows that failed and were rescheduled
   * @param deadLettered rows moved to dead letters (out of attempts, permanent failure, expired)
   * @param leaseLost rows whose lease another relay took over before this one could mark them
   */
  public record Batch(int claimed, int sent, int retried, int deadLettered, int leaseLost) {}

  /** Builds an {@link OutboxRelay}; {@link #build()} names any invalid field. */
  public static final class Builder {
    private final OutboxStore store;
    private final Publisher publisher;
    private final DeadLetterStore deadLetters;
    private RetryPolicy retryPolicy = RetryPolicy.defaults();
    private LifecycleListener listener = LifecycleListener.noop();
    private InstantSource clock = InstantSource.system();
    private String owner = "relay-" + UUID.randomUUID();
    private int batchSize = 100;
    private Duration lease = Duration.ofSeconds(30);
    private Duration confirmTimeout = Duration.ofSeconds(10);
    private Duration pollInterval = Duration.ofMillis(200);
    private Backoff errorBackoff = Backoff.exponential(Duration.ofMillis(100))
        .withMax(Duration.ofSeconds(30)).withJitter(Jitter.FULL);
    private Duration retention = Duration.ofDays(7);
    private Duration purgeInterval = Duration.ofMinutes(1);
    private MetricsListener metrics = MetricsListener.noop();
    private boolean metricsSet;
    private Duration metricsInterval = Duration.ofSeconds(10);

    private Builder(OutboxStore store, Publisher publisher, DeadLetterStore deadLetters) {
      this.store = Checks.requireNonNull("store", store);
      this.publisher = Checks.requireNonNull("publisher", publisher);
      this.deadLetters = Checks.requireNonNull("deadLetters", deadLetters);
    }

    /** Retries, backoff and permanent failures. Default {@link RetryPolicy#defaults()}. */
    public Builder retryPolicy(RetryPolicy retryPolicy) {
      this.retryPolicy = retryPolicy;
      return this;
    }

    public Builder listener(LifecycleListener listener) {
      this.listener = listener;
      return this;
    }

    /**
     * The relay's clock: when a cycle samples metrics or purges, message expiry, and the retry
     * policy's failure times. Leases, readiness and retention are decided on the store's clock
     * where it has one (see {@link OutboxStore}). Default the system clock.
     */
    public Builder clock(InstantSource clock) {
      this.clock = clock;
      return this;
    }

    /** This relay's lease owner id, unique among relays. Default a random id. */
    public Builder owner(String owner) {
      this.owner = owner;
      return this;
    }

    /** Rows per claim, 1..10 000. Default 100. */
    public Builder batchSize(int batchSize) {
      this.batchSize = batchSize;
      return this;
    }

    /** How long claimed rows stay hidden from other relays. Default 30 s. */
    public Builder lease(Duration lease) {
      this.lease = lease;
      return this;
    }

    /** How long to wait for the broker's confirms; shorter than the lease. Default 10 s. */
    public Builder confirmTimeout(Duration confirmTimeout) {
      this.confirmTimeout = confirmTimeout;
      return this;
    }

    /** The background loop's pause when the outbox is idle. Default 200 ms. */
    public Builder pollInterval(Duration pollInterval) {
      this.pollInterval = pollInterval;
      return this;
    }

    /** The background loop's pause after consecutive failed cycles. Default 100 ms to 30 s. */
    public Builder errorBackoff(Backoff errorBackoff) {
      this.errorBackoff = errorBackoff;
      return this;
    }

    /** How long sent rows are kept before purging. Default 7 days. */
    public Builder retention(Duration retention) {
      this.retention = retention;
      return this;
    }

    /** How often an idle relay purges sent rows older than the retention. Default 1 min. */
    public Builder purgeInterval(Duration purgeInterval) {
      this.purgeInterval = purgeInterval;
      return this;
    }

    /**
     * @throws IllegalArgumentException naming the field: a null policy, listener, clock or
     *     backoff; a blank owner; a batch size outside 1..10 000; a non-positive lease, confirm
     *     timeout, poll interval, retention or purge interval; a confirm timeout not shorter than
     *     the lease
     */
    /**
     * Where the backlog is reported: {@link MetricsListener#backlogDepth} (unsent rows) and
     * {@link MetricsListener#oldestAge} (oldest unsent message) for destination {@code
     * "outbox"}, sampled by a cycle at most once per {@link #metricsInterval} (one {@link
     * OutboxStore#stats} call: a count over the unsent rows). Default: none.
     */
    public Builder metrics(MetricsListener metrics) {
      this.metrics = metrics;
      this.metricsSet = true;
      return this;
    }

    /** How often the backlog is sampled for {@link #metrics}. Default 10 s. */
    public Builder metricsInterval(Duration metricsInterval) {
      this.metricsInterval = metricsInterval;
      return this;
    }

    public OutboxRelay build() {
      Checks.requireNonNull("retryPolicy", retryPolicy);
      Checks.requireNonNull("listener", listener);
      Checks.requireNonNull("clock", clock);
      Checks.requireNonBlank("owner", owner);
      if (batchSize < 1 || batchSize > 10_000) {
        throw new IllegalArgumentException("batchSize must be in 1..10000, was " + batchSize);
      }
      Checks.requirePositive("lease", lease);
      Checks.requirePositive("confirmTimeout", confirmTimeout);
      if (confirmTimeout.compareTo(lease) >= 0) {
        throw new IllegalArgumentException("confirmTimeout (" + confirmTimeout
            + ") must be shorter than the lease (" + lease + "), or rows would be taken over"
            + " while their confirms are still awaited");
      }
      Checks.requirePositive("pollInterval", pollInterval);
      Checks.requireNonNull("errorBackoff", errorBackoff);
      Checks.requirePositive("retention", retention);
      Checks.requirePositive("purgeInterval", purgeInterval);
      Checks.requireNonNull("metrics", metrics);
      Checks.requirePositive("metricsInterval", metricsInterval);
      return new OutboxRelay(this);
    }
  }
}
