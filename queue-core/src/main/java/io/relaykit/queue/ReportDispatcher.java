package io.relaykit.queue;

import io.relaykit.internal.Checks;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Drives a {@link BatchSender} from a {@link ReportQueue}: sends a batch when a full one is ready
 * or when the flush interval has passed since the last send, acks and nacks each event by its
 * outcome (a Retry-After is a floor under the backoff delay), and keeps at most {@code
 * maxInFlightBatches} batches in flight. Each step costs one queue drain plus one ack or nack per
 * outcome group; an idle dispatcher wakes at most every {@code pollInterval}.
 *
 * <p>Timing decisions use the injected clock, and {@link #runOnce()} performs one decision step on
 * the caller's thread, so tests drive the dispatcher deterministically with a fake clock and a
 * direct send executor; {@link #start()} runs the same step in a background loop. Drops, expiries,
 * retries and dead letters are reported by the queue's {@link io.relaykit.monitor.LifecycleListener}
 * as the dispatcher's acks and nacks cause them: nothing leaves the queue unreported.
 *
 * <pre>{@code
 * ReportDispatcher dispatcher = ReportDispatcher.builder(queue, batch -> client.post(batch))
 *     .flushInterval(Duration.ofSeconds(2))
 *     .maxInFlightBatches(2)
 *     .build();
 * dispatcher.start();
 * ...
 * dispatcher.close(Duration.ofSeconds(5)); // sends what it can, the rest stays journaled
 * }</pre>
 */
public final class ReportDispatcher implements AutoCloseable {

  private static final System.Logger LOG = System.getLogger(ReportDispatcher.class.getName());

  private final ReportQueue queue;
  private final BatchSender sender;
  private final InstantSource clock;
  private final Duration flushInterval;
  private final int maxInFlightBatches;
  private final Duration pollInterval;
  private final Executor sendExecutor;
  private final ExecutorService ownedExecutor;
  private final String name;

  // Guarded by `this`.
  private int inFlight;
  private Instant lastSendAt;
  private boolean wakeUp;
  private boolean stopping;
  private boolean closed;
  private Thread loop;

  private ReportDispatcher(Builder b) {
    this.queue = b.queue;
    this.sender = b.sender;
    this.clock = b.clock;
    this.flushInterval = b.flushInterval;
    this.maxInFlightBatches = b.maxInFlightBatches;
    this.pollInterval = b.pollInterval;
    this.name = b.name;
    if (b.sendExecutor != null) {
      this.sendExecutor = b.sendExecutor;
      this.ownedExecutor = null;
    } else {
      this.ownedExecutor = Executors.newFixedThreadPool(maxInFlightBatches, daemonThreads(name));
      this.sendExecutor = ownedExecutor;
    }
    this.lastSendAt = clock.instant();
  }

  /** A builder for a dispatcher that drains {@code queue} into {@code sender}. */
  public static Builder builder(ReportQueue queue, BatchSender sender) {
    return new Builder(queue, sender);
  }

  /**
   * Starts the background loop: it runs {@link #runOnce()} whenever a full batch becomes ready, a
   * batch settles, or the next deadline (flush interval, retry time) may have come.
   *
   * @throws IllegalStateException if already started or closed
   */
  public synchronized void start() {
    if (loop != null || closed || stopping) {
      throw new IllegalStateException("dispatcher " + name + " already started or closed");
    }
    queue.onBatchReady(this::wake);
    loop = daemonThreads(name + "-loop").newThread(this::loop);
    loop.start();
  }

  /**
   * One decision step at the clock's current time (nothing once closed): while fewer than {@code maxInFlightBatches}
   * batches are in flight and a batch is due (a full batch is ready, or the flush interval has
   * passed since the last send and something is ready), drains a batch and hands it to the send
   * executor.
   *
   * @return how many batches were handed to the send executor
   */
  public int runOnce() {
    synchronized (this) {
      if (closed) {
        return 0;
      }
    }
    return dispatch(false);
  }

  /**
   * Sends every event that is ready now, full batch or not, and returns when those batches have
   * settled (acked or nacked). Events waiting for a retry time are not sent.
   */
  public void flush() {
    settleReady(Long.MAX_VALUE);
  }

  /** Batches handed to the sender and not yet settled. */
  public synchronized int inFlightBatches() {
    return inFlight;
  }

  /**
   * Stops the loop, sends what is ready until {@code deadline} (real elapsed time: it bounds how
   * long the caller blocks), waits for in-flight batches within it, and flushes the journal.
   * Whatever is left (not sent, or sent without an answer in time) stays journaled and is
   * recovered by {@link ReportQueue#restore()}.
   *
   * @throws IllegalArgumentException if {@code deadline} is null or negative
   */
  public void close(Duration deadline) {
    Checks.requireNonNull("deadline", deadline);
    if (deadline.isNegative()) {
      throw new IllegalArgumentException("deadline must not be negative, was " + deadline);
    }
    long deadlineNanos = System.nanoTime() + saturatedNanos(deadline);
    Thread loopThread;
    synchronized (this) {
      if (closed) {
        return;
      }
      stopping = true;
      loopThread = loop;
      wakeUp = true;
      notifyAll();
    }
    queue.onBatchReady(null);
    if (loopThread != null && loopThread != Thread.currentThread()) {
      try {
        loopThread.join(Math.max(1, remainingMillis(deadlineNanos)));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    boolean settled = settleReady(deadlineNanos);
    if (ownedExecutor != null) {
      ownedExecutor.shutdown();
    }
    synchronized (this) {
      closed = true;
    }
    queue.flush();
    if (!settled) {
      QueueStats stats = queue.stats();
      LOG.log(System.Logger.Level.WARNING, "dispatcher {0} closed at its deadline with {1} "
          + "pending and {2} in-flight events left journaled", name, stats.pending(),
          stats.inflight());
    }
  }

  /** {@link #close(Duration)} with a 5 second deadline. */
  @Override
  public void close() {
    close(Duration.ofSeconds(5));
  }

  // ---------------------------------------------------------------------------------------------

  private int dispatch(boolean force) {
    int handed = 0;
    while (true) {
      List<QueuedEvent> batch;
      synchronized (this) {
        if (inFlight >= maxInFlightBatches) {
          break;
        }
        Instant now = clock.instant();
        if (!force && !due(now)) {
          break;
        }
        batch = queue.drainBatch(now);
        if (batch.isEmpty()) {
          break;
        }
        inFlight++;
        lastSendAt = now;
      }
      handed++;
      try {
        sendExecutor.execute(() -> sendAndSettle(batch));
      } catch (RejectedExecutionException e) {
        LOG.log(System.Logger.Level.WARNING, "dispatcher " + name + ": send executor rejected a "
            + "batch of " + batch.size() + "; it will be retried", e);
        settle(batch, BatchResult.allRetry(batch, null));
        batchDone();
        break;
      }
    }
    return handed;
  }

  private boolean due(Instant now) {
    int readyCount = queue.readyCount(now);
    if (readyCount == 0) {
      return false;
    }
    return readyCount >= queue.batchSize() || !now.isBefore(lastSendAt.plus(flushInterval));
  }

  /** Sends everything ready until nothing is ready and nothing is in flight, or the deadline. */
  private boolean settleReady(long deadlineNanos) {
    while (true) {
      dispatch(true);
      synchronized (this) {
        boolean nothingReady = queue.readyCount(clock.instant()) == 0;
        if (nothingReady && inFlight == 0) {
          return true;
        }
        if (inFlight < maxInFlightBatches && !nothingReady) {
          continue;
        }
        long remaining = remainingMillis(deadlineNanos);
        if (remaining <= 0) {
          return false;
        }
        try {
          wait(Math.min(remaining, 1000));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return false;
        }
      }
    }
  }

  private void sendAndSettle(List<QueuedEvent> batch) {
    try {
      BatchResult result;
      try {
        result = sender.send(List.copyOf(batch));
        if (result == null) {
          throw new IllegalStateException("sender returned null");
        }
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "dispatcher " + name + ": sending a batch of "
            + batch.size() + " failed; every event in it will be retried", e);
        result = BatchResult.allRetry(batch, null);
      }
      settle(batch, result);
    } finally {
      batchDone();
    }
  }

  /** Acks and nacks the events of {@code batch} (only those) by their outcome, in few calls. */
  private void settle(List<QueuedEvent> batch, BatchResult result) {
    List<String> ok = new ArrayList<>();
    Map<Optional<Duration>, List<String>> retries = new LinkedHashMap<>();
    Map<String, List<String>> rejects = new LinkedHashMap<>();
    for (QueuedEvent event : batch) {
      BatchResult.EventResult r = result.resultFor(event.eventId())
          .orElse(new BatchResult.EventResult(BatchResult.Outcome.RETRY, Optional.empty(), ""));
      switch (r.outcome()) {
        case OK -> ok.add(event.eventId());
        case RETRY -> retries.computeIfAbsent(r.retryAfter(), k -> new ArrayList<>())
            .add(event.eventId());
        case REJECT -> rejects.computeIfAbsent(r.reason(), k -> new ArrayList<>())
            .add(event.eventId());
        default -> throw new AssertionError(r.outcome());
      }
    }
    try {
      if (!ok.isEmpty()) {
        queue.ack(ok);
      }
      retries.forEach((retryAfter, ids) ->
          queue.nack(ids, true, retryAfter.orElse(Duration.ZERO), null));
      rejects.forEach((reason, ids) -> queue.nack(ids, false, Duration.ZERO,
          "rejected by receiver" + (reason.isEmpty() ? "" : ": " + reason)));
    } catch (RuntimeException e) {
      // The events stay in flight in this process and pending in the journal: a restart sends
      // them again. Nothing is lost, so log and keep the loop alive.
      LOG.log(System.Logger.Level.ERROR, "dispatcher " + name + ": could not record the outcome "
          + "of a batch of " + batch.size() + "; it will be resent after a restart", e);
    }
  }

  private synchronized void batchDone() {
    inFlight--;
    wakeUp = true;
    notifyAll();
  }

  private synchronized void wake() {
    wakeUp = true;
    notifyAll();
  }

  private void loop() {
    while (true) {
      synchronized (this) {
        if (stopping) {
          return;
        }
      }
      try {
        dispatch(false);
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.ERROR, "dispatcher " + name + ": dispatch step failed", e);
      }
      long waitMillis = nextWaitMillis();
      synchronized (this) {
        if (!wakeUp && !stopping) {
          try {
            wait(waitMillis);
          } catch (InterruptedException e) {
            return;
          }
        }
        wakeUp = false;
      }
    }
  }

  /** Until the next send could be due, capped at the poll interval; at least 1 ms. */
  private long nextWaitMillis() {
    long cap = pollInterval.toMillis();
    Optional<Instant> nextReady = queue.nextReadyAt();
    if (nextReady.isEmpty()) {
      return cap;
    }
    Instant flushAt;
    synchronized (this) {
      if (inFlight >= maxInFlightBatches) {
        return cap;
      }
      flushAt = lastSendAt.plus(flushInterval);
    }
    Instant dueAt = nextReady.get().isAfter(flushAt) ? nextReady.get() : flushAt;
    long millis = Duration.between(clock.instant(), dueAt).toMillis();
    return Math.max(1, Math.min(cap, millis));
  }

  private static long remainingMillis(long deadlineNanos) {
    if (deadlineNanos == Long.MAX_VALUE) {
      return Long.MAX_VALUE;
    }
    return TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime());
  }

  private static long saturatedNanos(Duration d) {
    try {
      return d.toNanos();
    } catch (ArithmeticException e) {
      return Long.MAX_VALUE / 2;
    }
  }

  private static ThreadFactory daemonThreads(String prefix) {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, prefix + "-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }

  @Override
  public String toString() {
    return "ReportDispatcher[" + name + ", inFlight=" + inFlightBatches() + "]";
  }

  /**
   * Configuration for a {@link ReportDispatcher}; {@link #build()} validates it and names the
   * first bad field and value.
   */
  public static final class Builder {
    private final ReportQueue queue;
    private final BatchSender sender;
    private InstantSource clock = InstantSource.system();
    private Duration flushInterval = Duration.ofSeconds(5);
    private int maxInFlightBatches = 1;
    private Duration pollInterval = Duration.ofMillis(200);
    private Executor sendExecutor;
    private String name = "report-dispatcher";

    private Builder(ReportQueue queue, BatchSender sender) {
      this.queue = queue;
      this.sender = sender;
    }

    /** The time source for the flush interval and retry times; use the queue's. Default system. */
    public Builder clock(InstantSource clock) {
      this.clock = clock;
      return this;
    }

    /** A partial batch is sent once this long has passed since the last send. Default 5 s. */
    public Builder flushInterval(Duration flushInterval) {
      this.flushInterval = flushInterval;
      return this;
    }

    /** Most batches sent and not yet answered. Default 1 (strictly one batch at a time). */
    public Builder maxInFlightBatches(int maxInFlightBatches) {
      this.maxInFlightBatches = maxInFlightBatches;
      return this;
    }

    /**
     * The longest the background loop sleeps between checks of the clock; it also wakes when a
     * full batch is ready or a batch settles. Default 200 ms.
     */
    public Builder pollInterval(Duration pollInterval) {
      this.pollInterval = pollInterval;
      return this;
    }

    /**
     * Runs each {@link BatchSender#send}. Default: an owned pool of {@code maxInFlightBatches}
     * daemon threads, shut down by {@link #close(Duration)}. Tests pass {@code Runnable::run} to
     * send on the calling thread.
     */
    public Builder sendExecutor(Executor sendExecutor) {
      this.sendExecutor = sendExecutor;
      return this;
    }

    /** Names threads and log lines. Default {@code "report-dispatcher"}. */
    public Builder name(String name) {
      this.name = name;
      return this;
    }

    /** @throws IllegalArgumentException naming the field and value when a setting is invalid */
    public ReportDispatcher build() {
      Checks.requireNonNull("queue", queue);
      Checks.requireNonNull("sender", sender);
      Checks.requireNonNull("clock", clock);
      Checks.requirePositive("flushInterval", flushInterval);
      Checks.requirePositive("maxInFlightBatches", maxInFlightBatches);
      Checks.requirePositive("pollInterval", pollInterval);
      Checks.requireNonBlank("name", name);
      return new ReportDispatcher(this);
    }
  }
}
