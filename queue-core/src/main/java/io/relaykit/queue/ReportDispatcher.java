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
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Drives a {@link BatchSender} from a {@link ReportQueue}: sends a batch when a full one is ready
 * or when the flush interval has passed since the last send, acks and nacks each event by its
 * outcome (a Retry-After is a floor under the backoff delay), and keeps at most {@code
 * maxInFlightBatches} batches in flight. Each step costs one queue drain plus one ack or nack per
 * outcome group; an idle dispatcher wakes at most every {@code pollInterval}.
 *
 * <p>Timing decisions use the injected {@link TimeSource}: every duration (the flush interval, the
 * send timeout, the pauses after failures) is measured on its monotonic reading, so a wall-clock
 * step back or forward neither holds a batch nor gives a send up early; wall-clock instants are
 * only the queue's retry and expiry times. {@link #runOnce()} performs one decision step on
 * the caller's thread, so tests drive the dispatcher deterministically with a fake clock and a
 * direct send executor; {@link #start()} runs the same step in a background loop. Drops, expiries,
 * retries and dead letters are reported by the queue's {@link io.relaykit.monitor.LifecycleListener}
 * as the dispatcher's acks and nacks cause them: nothing leaves the queue unreported.
 *
 * <h2>Failures</h2>
 * Nothing strands a batch in flight:
 * <ul>
 *   <li>A sender that throws anything (a runtime exception, a checked exception thrown sneakily,
 *       an {@link Error}) gets every event of the batch retried, as a failed attempt; a {@link
 *       VirtualMachineError} is rethrown after that.
 *   <li>A send that has not answered {@code sendTimeout} after it started (elapsed time, by the time source's monotonic reading)
 *       is given up: its events are retried as a failed attempt, and its slot is free for another
 *       batch. Each drain carries a token; the answer of a send that was given up, when it comes,
 *       is ignored and counted ({@link #lateResults()}), so it can never ack or nack events that
 *       were drained again since.
 *   <li>When the queue's journal cannot record an outcome, the events of the batch that are still
 *       in flight go back to pending without a journal write ({@link ReportQueue} never recorded
 *       the drain), to be sent again after a pause that doubles with each consecutive failure, up
 *       to a minute; they are counted ({@link #unrecordedOutcomes()}) and logged. Events are
 *       delivered at least once: the event id lets the server drop the repeat.
 *   <li>A batch the send executor rejects was never sent: its events go back to pending without
 *       counting an attempt.
 *   <li>A drain that throws (the queue's journal cannot record that an expired event left) sends
 *       nothing and changes nothing; it is counted ({@link #drainFailures()}) and logged, and
 *       neither the loop nor {@link #runOnce()} drains again before a pause (elapsed time on the time source)
 *       that doubles with each consecutive failure (1 s, 2 s, 4 s, ... up to a minute), so a
 *       failing journal never makes the dispatcher spin. The first drain that succeeds ends the
 *       pause. {@link #flush()} tries once whatever the pause and throws the failure; {@link
 *       #close(Duration)} tries once and leaves the events journaled.
 * </ul>
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
  private static final Duration MAX_UNRECORDED_PAUSE = Duration.ofMinutes(1);

  /** A drained batch handed to the sender, and who settles it. */
  private static final class InFlight {
    final long token;
    final List<QueuedEvent> batch;
    /** When the send is given up, on the monotonic reading. */
    final long deadlineNanos;
    /** Set, under the dispatcher's lock, by whichever settles it: the answer or the timeout. */
    boolean claimed;

    InFlight(long token, List<QueuedEvent> batch, long deadlineNanos) {
      this.token = token;
      this.batch = batch;
      this.deadlineNanos = deadlineNanos;
    }
  }

  private final ReportQueue queue;
  private final BatchSender sender;
  private final TimeSource clock;
  private final Duration flushInterval;
  private final int maxInFlightBatches;
  private final Duration pollInterval;
  private final Duration sendTimeout;
  private final Executor sendExecutor;
  private final ExecutorService ownedExecutor;
  private final String name;

  // Guarded by `this`.
  /** Batches the dispatcher waits for (settling ones included), by token. */
  private final Map<Long, InFlight> inFlight = new LinkedHashMap<>();
  private long nextToken;
  /** The monotonic reading at the last send (or at build). */
  private long lastSendNanos;
  private boolean wakeUp;
  private boolean stopping;
  private boolean closed;
  private Thread loop;
  private long lateResults;
  private long timedOut;
  private long unrecordedOutcomes;
  private int consecutiveUnrecorded;
  private long drainFailures;
  private int consecutiveDrainFailures;
  /** Whether the last drain failed: no drain by the loop or runOnce before pausedUntilNanos. */
  private boolean drainPaused;
  private long pausedUntilNanos;
  /** Why the last drain failed; null unless it did. */
  private RuntimeException lastDrainFailure;

  private ReportDispatcher(Builder b) {
    this.queue = b.queue;
    this.sender = b.sender;
    this.clock = TimeSource.of(b.clock);
    this.flushInterval = b.flushInterval;
    this.maxInFlightBatches = b.maxInFlightBatches;
    this.pollInterval = b.pollInterval;
    this.sendTimeout = b.sendTimeout;
    this.name = b.name;
    if (b.sendExecutor != null) {
      this.sendExecutor = b.sendExecutor;
      this.ownedExecutor = null;
    } else {
      // Twice maxInFlightBatches threads at most, none queued: the extra half runs new batches
      // while sends that timed out still hold their threads; past that the pool rejects, and the
      // batch goes back to pending unsent.
      this.ownedExecutor = new ThreadPoolExecutor(maxInFlightBatches, 2 * maxInFlightBatches,
          30, TimeUnit.SECONDS, new SynchronousQueue<>(), daemonThreads(name));
      this.sendExecutor = ownedExecutor;
    }
    this.lastSendNanos = clock.nanoTime();
  }

  /**
   * A builder for a dispatcher that drains {@code queue} into {@code sender}.
   *
   * @param queue the queue to drain; checked (not null) by {@link Builder#build()}
   * @param sender where the batches go; checked (not null) by {@link Builder#build()}
   * @return a builder with the defaults its setters name
   */
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
   * One decision step at the clock's current time (nothing once closed): gives up sends older
   * than {@code sendTimeout}, then, while fewer than {@code maxInFlightBatches} batches are in
   * flight and a batch is due (a full batch is ready, or the flush interval has passed since the
   * last send and something is ready), drains a batch and hands it to the send executor.
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
   *
   * @throws JournalException if a drain fails (the queue's journal failed): what was sent before
   *     settles as usual, the rest stays pending
   * @throws IllegalStateException once the dispatcher is closed: it sends nothing any more, so it
   *     cannot flush (before, it handed batches to a stopped executor and retried them until they
   *     were dead letters, though they were never sent)
   */
  public void flush() {
    synchronized (this) {
      if (closed) {
        throw new IllegalStateException("dispatcher " + name + " is closed: it sends nothing");
      }
    }
    settleReady(Long.MAX_VALUE, true);
  }

  /**
   * Batches handed to the sender and not yet settled (sends given up do not count).
   *
   * @return the count, at most {@code maxInFlightBatches}
   */
  public synchronized int inFlightBatches() {
    return inFlight.size();
  }

  /**
   * Answers of sends that were given up ({@code sendTimeout}) and came later: ignored, because
   * their events had been retried already.
   *
   * @return the count since the dispatcher was built
   */
  public synchronized long lateResults() {
    return lateResults;
  }

  /**
   * Sends given up because they had not answered within {@code sendTimeout}.
   *
   * @return the count since the dispatcher was built
   */
  public synchronized long timedOutSends() {
    return timedOut;
  }

  /**
   * Drains that failed because the queue's journal failed; each pauses draining (see above).
   *
   * @return the count since the dispatcher was built
   */
  public synchronized long drainFailures() {
    return drainFailures;
  }

  /**
   * Events whose outcome the queue's journal could not record: they went back to pending, to be
   * sent again.
   *
   * @return the count since the dispatcher was built
   */
  public synchronized long unrecordedOutcomes() {
    return unrecordedOutcomes;
  }

  /**
   * Stops the loop, sends what is ready until {@code deadline} (real elapsed time: it bounds how
   * long the caller blocks), waits for in-flight batches within it, and flushes the journal.
   * Whatever is left (not sent, or sent without an answer in time) stays journaled and is
   * recovered by {@link ReportQueue#restore()}.
   *
   * @param deadline the longest the call blocks
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
      if (closed || stopping) {
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
    boolean settled;
    try {
      settled = settleReady(deadlineNanos, false);
    } finally {
      if (ownedExecutor != null) {
        ownedExecutor.shutdown();
      }
      synchronized (this) {
        closed = true;
      }
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
    giveUpTimedOut();
    int handed = 0;
    while (true) {
      InFlight sending;
      synchronized (this) {
        if (closed || inFlight.size() >= maxInFlightBatches) {
          break;
        }
        Instant now = clock.instant();
        long nowNanos = clock.nanoTime();
        if (!force && drainPaused && nowNanos - pausedUntilNanos < 0) {
          break;
        }
        if (!force && !due(now, nowNanos)) {
          break;
        }
        List<QueuedEvent> batch;
        try {
          batch = queue.drainBatch(now);
        } catch (RuntimeException e) {
          drainFailures++;
          consecutiveDrainFailures++;
          Duration pause = unrecordedPause(consecutiveDrainFailures);
          drainPaused = true;
          pausedUntilNanos = nowNanos + pause.toNanos();
          lastDrainFailure = e;
          LOG.log(System.Logger.Level.ERROR, "dispatcher " + name + ": drain failed ("
              + consecutiveDrainFailures + " in a row); the next is tried in " + pause, e);
          break;
        }
        consecutiveDrainFailures = 0;
        drainPaused = false;
        lastDrainFailure = null;
        if (batch.isEmpty()) {
          break;
        }
        sending = new InFlight(++nextToken, batch, nowNanos + saturatedNanos(sendTimeout));
        inFlight.put(sending.token, sending);
        lastSendNanos = nowNanos;
      }
      try {
        sendExecutor.execute(() -> sendAndSettle(sending));
      } catch (RejectedExecutionException e) {
        // Never sent: back to pending, no attempt counted, and no more batches this step.
        LOG.log(System.Logger.Level.WARNING, "dispatcher " + name + ": send executor rejected a "
            + "batch of " + sending.batch.size() + "; it goes back to pending unsent", e);
        queue.release(ids(sending.batch), clock.instant().plus(pollInterval));
        synchronized (this) {
          inFlight.remove(sending.token);
          wakeUp = true;
          notifyAll();
        }
        break;
      }
      handed++;
    }
    return handed;
  }

  /** Gives up every send older than sendTimeout: its events are retried as a failed attempt. */
  private void giveUpTimedOut() {
    List<InFlight> expired = null;
    synchronized (this) {
      if (inFlight.isEmpty()) {
        return;
      }
      long now = clock.nanoTime();
      for (InFlight f : inFlight.values()) {
        if (!f.claimed && now - f.deadlineNanos >= 0) {
          f.claimed = true;
          if (expired == null) {
            expired = new ArrayList<>(1);
          }
          expired.add(f);
        }
      }
    }
    if (expired == null) {
      return;
    }
    for (InFlight f : expired) {
      LOG.log(System.Logger.Level.WARNING, "dispatcher " + name + ": a batch of "
          + f.batch.size() + " has not been answered within " + sendTimeout
          + "; its events are retried, and its answer will be ignored");
      try {
        settle(f.batch, BatchResult.allRetry(f.batch, null));
      } finally {
        synchronized (this) {
          timedOut++;
          inFlight.remove(f.token);
          wakeUp = true;
          notifyAll();
        }
      }
    }
  }

  private boolean due(Instant now, long nowNanos) {
    int readyCount = queue.readyCount(now);
    if (readyCount == 0) {
      return false;
    }
    return readyCount >= queue.batchSize()
        || nowNanos - lastSendNanos >= saturatedNanos(flushInterval);
  }

  /** Sends everything ready until nothing is ready and nothing is in flight, or the deadline. */
  private boolean settleReady(long deadlineNanos, boolean throwOnDrainFailure) {
    while (true) {
      long failuresBefore;
      synchronized (this) {
        failuresBefore = drainFailures;
      }
      dispatch(true);
      synchronized (this) {
        if (drainFailures != failuresBefore) {
          // Trying again at once would spin: report it (flush) or leave the events journaled.
          if (throwOnDrainFailure) {
            RuntimeException e = lastDrainFailure;
            throw e instanceof JournalException je
                ? new JournalException("dispatcher " + name + ": flush could not drain: "
                    + je.getMessage(), je, je.outcome())
                : new IllegalStateException("dispatcher " + name + ": flush could not drain", e);
          }
          return false;
        }
        boolean nothingReady = queue.readyCount(clock.instant()) == 0;
        if (nothingReady && inFlight.isEmpty()) {
          return true;
        }
        if (inFlight.size() < maxInFlightBatches && !nothingReady) {
          continue;
        }
        long remaining = remainingMillis(deadlineNanos);
        if (remaining <= 0) {
          return false;
        }
        try {
          wait(Math.min(remaining, Math.max(1, pollInterval.toMillis())));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return false;
        }
      }
    }
  }

  private void sendAndSettle(InFlight sending) {
    List<QueuedEvent> batch = sending.batch;
    BatchResult result;
    Throwable failure = null;
    try {
      result = sender.send(List.copyOf(batch));
      if (result == null) {
        throw new IllegalStateException("sender returned null");
      }
    } catch (Throwable e) {
      // Anything at all: an Error or a checked exception thrown sneakily must not strand the
      // batch in flight.
      failure = e;
      result = BatchResult.allRetry(batch, null);
    }
    boolean mine;
    synchronized (this) {
      mine = !sending.claimed && inFlight.get(sending.token) == sending;
      if (mine) {
        sending.claimed = true;
      } else {
        lateResults++;
      }
    }
    if (!mine) {
      LOG.log(System.Logger.Level.DEBUG, "dispatcher " + name + ": ignoring the late answer of "
          + "a batch of " + batch.size() + " that was given up after " + sendTimeout);
    } else {
      if (failure != null) {
        LOG.log(System.Logger.Level.WARNING, "dispatcher " + name + ": sending a batch of "
            + batch.size() + " failed; every event in it will be retried", failure);
      }
      try {
        settle(batch, result);
      } finally {
        synchronized (this) {
          inFlight.remove(sending.token);
          wakeUp = true;
          notifyAll();
        }
      }
    }
    if (failure instanceof VirtualMachineError vme) {
      throw vme;
    }
  }

  /**
   * Acks and nacks the events of {@code batch} (only those) by their outcome, in few calls. When
   * the journal cannot record an outcome, the batch's events still in flight go back to pending
   * unrecorded, after a pause.
   */
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
      synchronized (this) {
        consecutiveUnrecorded = 0;
      }
    } catch (RuntimeException e) {
      Duration pause;
      synchronized (this) {
        consecutiveUnrecorded++;
        pause = unrecordedPause(consecutiveUnrecorded);
      }
      int released = queue.release(ids(batch), plusSaturating(clock.instant(), pause));
      synchronized (this) {
        unrecordedOutcomes += released;
      }
      LOG.log(System.Logger.Level.ERROR, "dispatcher " + name + ": the journal could not record "
          + "the outcome of a batch of " + batch.size() + "; its " + released + " events still in "
          + "flight go back to pending and are sent again in " + pause + " (at least once: the "
          + "server drops repeats by event id)", e);
    }
  }

  /** 1 s, 2 s, 4 s, ... up to a minute, for the n-th failure in a row. */
  private static Duration unrecordedPause(int failures) {
    int shift = Math.min(failures - 1, 6);
    Duration pause = Duration.ofSeconds(1L << shift);
    return pause.compareTo(MAX_UNRECORDED_PAUSE) > 0 ? MAX_UNRECORDED_PAUSE : pause;
  }

  private static List<String> ids(List<QueuedEvent> batch) {
    List<String> ids = new ArrayList<>(batch.size());
    for (QueuedEvent e : batch) {
      ids.add(e.eventId());
    }
    return ids;
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
        if (dispatch(false) == 0) {
          // Idle: nothing drained, so the queue's max-age and dedupe-window housekeeping (which
          // drains also do) runs here, bounded, so old dead letters go without traffic too.
          queue.sweep();
        }
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

  /**
   * Until the next send could be due or the oldest send times out, capped at the poll interval;
   * at least 1 ms.
   */
  private long nextWaitMillis() {
    long cap = pollInterval.toMillis();
    Optional<Instant> nextReady = queue.nextReadyAt();
    Instant now = clock.instant();
    long nowNanos = clock.nanoTime();
    // Nanoseconds from now until something is due; Long.MAX_VALUE for nothing.
    long wait = Long.MAX_VALUE;
    synchronized (this) {
      for (InFlight f : inFlight.values()) {
        if (!f.claimed) {
          wait = Math.min(wait, f.deadlineNanos - nowNanos);
        }
      }
      if (nextReady.isPresent() && inFlight.size() < maxInFlightBatches) {
        long untilReady = nanosUntil(now, nextReady.get());
        long untilFlush = lastSendNanos + saturatedNanos(flushInterval) - nowNanos;
        long send = Math.max(untilReady, untilFlush);
        if (drainPaused) {
          send = Math.max(send, pausedUntilNanos - nowNanos);
        }
        wait = Math.min(wait, send);
      }
    }
    if (wait == Long.MAX_VALUE) {
      return Math.max(1, cap);
    }
    return Math.max(1, Math.min(cap, TimeUnit.NANOSECONDS.toMillis(wait)));
  }

  /** Nanoseconds from {@code now} to {@code at} on the wall clock, saturated; negative if past. */
  private static long nanosUntil(Instant now, Instant at) {
    try {
      return Duration.between(now, at).toNanos();
    } catch (ArithmeticException e) {
      return at.isAfter(now) ? Long.MAX_VALUE / 2 : Long.MIN_VALUE / 2;
    }
  }

  private static Instant plusSaturating(Instant t, Duration d) {
    try {
      return t.plus(d);
    } catch (ArithmeticException | java.time.DateTimeException e) {
      return Instant.MAX;
    }
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
    private InstantSource clock;
    private boolean clockSet;
    private Duration flushInterval = Duration.ofSeconds(5);
    private int maxInFlightBatches = 1;
    private Duration pollInterval = Duration.ofMillis(200);
    private Duration sendTimeout = Duration.ofSeconds(60);
    private Executor sendExecutor;
    private String name = "report-dispatcher";

    private Builder(ReportQueue queue, BatchSender sender) {
      this.queue = queue;
      this.sender = sender;
    }

    /**
     * The time source. Durations (the flush interval, send timeouts, pauses after failures) are
     * measured on its monotonic reading ({@link TimeSource#nanoTime()}; {@link System#nanoTime()}
     * for a plain {@link InstantSource}), so a wall-clock step neither holds back a partial batch
     * nor a hung send's timeout; retry times are the queue's wall-clock instants. Default: the
     * queue's time source.
     *
     * @param clock the clock; checked (not null) by {@link #build()} when set
     * @return this builder
     */
    public Builder clock(InstantSource clock) {
      this.clock = clock;
      this.clockSet = true;
      return this;
    }

    /**
     * A partial batch is sent once this long has passed since the last send. Default 5 s.
     *
     * @param flushInterval the interval; checked (positive) by {@link #build()}
     * @return this builder
     */
    public Builder flushInterval(Duration flushInterval) {
      this.flushInterval = flushInterval;
      return this;
    }

    /**
     * Most batches sent and not yet answered. Default 1 (strictly one batch at a time).
     *
     * @param maxInFlightBatches the bound; checked ({@code >= 1}) by {@link #build()}
     * @return this builder
     */
    public Builder maxInFlightBatches(int maxInFlightBatches) {
      this.maxInFlightBatches = maxInFlightBatches;
      return this;
    }

    /**
     * The longest the background loop sleeps between checks of the clock; it also wakes when a
     * full batch is ready or a batch settles. Default 200 ms.
     *
     * @param pollInterval the longest sleep; checked (positive) by {@link #build()}
     * @return this builder
     */
    public Builder pollInterval(Duration pollInterval) {
      this.pollInterval = pollInterval;
      return this;
    }

    /**
     * How long a send may go unanswered, in elapsed time, before it is given up: its events are
     * retried (a failed attempt) and its answer, if it comes, is ignored. Default 60 s.
     *
     * @param sendTimeout the timeout; checked (positive) by {@link #build()}
     * @return this builder
     */
    public Builder sendTimeout(Duration sendTimeout) {
      this.sendTimeout = sendTimeout;
      return this;
    }

    /**
     * Runs each {@link BatchSender#send}. Default: an owned pool of {@code maxInFlightBatches}
     * daemon threads (up to twice that while sends that timed out still hold theirs), shut down
     * by {@link #close(Duration)}. Tests pass {@code Runnable::run} to
     * send on the calling thread.
     *
     * @param sendExecutor the executor, or null for the owned pool; not shut down by the dispatcher
     * @return this builder
     */
    public Builder sendExecutor(Executor sendExecutor) {
      this.sendExecutor = sendExecutor;
      return this;
    }

    /**
     * Names threads and log lines. Default {@code "report-dispatcher"}.
     *
     * @param name the name; checked (not blank) by {@link #build()}
     * @return this builder
     */
    public Builder name(String name) {
      this.name = name;
      return this;
    }

    /**
     * Checks the settings and builds the dispatcher (not started).
     *
     * @return a new dispatcher; call {@link ReportDispatcher#start()} for the background loop
     * @throws IllegalArgumentException naming the field and value when a setting is invalid
     */
    public ReportDispatcher build() {
      Checks.requireNonNull("queue", queue);
      Checks.requireNonNull("sender", sender);
      Checks.requirePositive("flushInterval", flushInterval);
      Checks.requirePositive("maxInFlightBatches", maxInFlightBatches);
      Checks.requirePositive("pollInterval", pollInterval);
      Checks.requirePositive("sendTimeout", sendTimeout);
      Checks.requireNonBlank("name", name);
      if (clockSet) {
        Checks.requireNonNull("clock", clock);
      } else {
        clock = queue.timeSource();
      }
      return new ReportDispatcher(this);
    }
  }
}
