package io.relaykit.outbox;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.internal.Checks;
import io.relaykit.message.Message;
import io.relaykit.message.PublishException;
import io.relaykit.message.PublishReceipt;
import io.relaykit.message.Publisher;
import io.relaykit.message.Tracing;
import io.relaykit.monitor.BacklogMonitor;
import io.relaykit.monitor.BacklogSample;
import io.relaykit.monitor.BacklogSnapshot;
import io.relaykit.monitor.BacklogVerdict;
import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleEvent.Stage;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.retry.Backoff;
import io.relaykit.retry.Jitter;
import io.relaykit.retry.RetryPolicy;
import io.relaykit.trace.TracePropagation;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Moves outbox rows to a broker: claims a batch with a lease, publishes every row, waits for the
 * broker's confirms, marks the confirmed rows sent, reschedules failures with the {@link
 * RetryPolicy}'s backoff, and dead-letters rows that are out of attempts or failed permanently
 * through {@link OutboxStore#moveToDeadLetters}, fenced by the lease: a relay that lost a row to
 * another relay stores no dead letter for it, and a row never leaves the outbox without its
 * {@link DeadLetter}.
 *
 * <p>Leases: while a batch is in flight (publishing, awaiting confirms) a heartbeat thread renews
 * its leases every third of the lease ({@link OutboxStore#renewLease}, fenced by the owner), so a
 * broker slower than the lease does not hand the rows to a second relay; rows a renewal reports
 * taken over are given up and their results are not marked. A relay whose renewals fail (the
 * store is down) keeps its batch only as long as its last lease.
 *
 * <p>Poison isolation: a failure handling one row (its dead letter cannot be stored, marking or
 * rescheduling it throws) is that row's alone: it is counted, backed off, and the cycle goes on
 * with the other rows and keys (see {@link #runOnce()}).
 *
 * <p>Guarantees: at least once (a relay that dies after the broker confirmed but before marking
 * sent leaves rows that are published again when its lease expires; consumers dedupe by message
 * id or business key); per-key order (the store hands out a key's rows only from its oldest
 * unsent row on; a claim may bring a run of a key's consecutive rows ({@link Builder#keyRun}),
 * which the relay publishes one after the other, each only after the previous one's confirm,
 * stopping the run at its first failure and releasing the rest unpublished, so a key's next
 * message is published only after its previous one was confirmed); any
 * number of relays may share one store. Expired messages are never published: they are
 * dead-lettered with the reason. Sent rows older than the retention are purged, by default.
 *
 * <p>Batch size: adaptive by default ({@value #DEFAULT_MIN_BATCH}..{@value #DEFAULT_MAX_BATCH}
 * rows, starting at {@value #DEFAULT_INITIAL_BATCH}; {@link Builder#adaptiveBatchSize}): it doubles
 * while claims come back full and confirm within a tenth of the confirm timeout, and halves on
 * failed or missing confirms, failed rows, lost leases or slow confirms, so a healthy backlog is
 * drained in large batches (fewer claims and commits per row) and a struggling broker gets small
 * ones. {@link Builder#batchSize} fixes it.
 *
 * <p>{@link #runOnce()} does one cycle on the caller's thread (deterministic tests, your own
 * scheduler); {@link #start()} runs cycles on a daemon thread, back to back while claims return
 * rows (a partial batch included: it may be one row per key of a larger keyed backlog), every
 * {@code pollInterval} after a claim found nothing (or at once when a {@link OutboxWakeup} says
 * rows committed: {@link Builder#wakeup}), and with a capped backoff while the store fails (wakes
 * do not shorten it), until {@link #close(Duration)}. Claim-ahead (background loop only): up to
 * {@value #MAX_BATCHES_IN_FLIGHT} published batches await their confirms at once (one ahead of
 * the oldest, both under renewed leases, at most two claims' worth of rows), finished oldest
 * first as their confirms arrive. The loop claims the next batch while the last claim came back
 * full (a backlog: broker round trips overlap the claim) or when a wake says rows committed, so
 * rows committed while a batch waits for its confirms are claimed and published then, not after
 * that batch's confirms and markSent (without wakes it waits for the oldest batch, as a polling
 * relay does). Per-key order holds because the store hands out no
 * row of a key with an earlier unsent row, so a batch claimed while others are in flight holds
 * none of their keys, and a failed confirm reschedules its row, which keeps its key parked
 * for later claims too. Cost per cycle: one claim, one publish per row, one
 * markSent, one store call per failed row, one renewal per third of the lease a batch is in
 * flight, and, once per purge interval, up to {@value #PURGE_STEPS_PER_CYCLE} purge statements of
 * {@value #PURGE_STEP} sent rows (every cycle while a purge is behind).
 */
public final class OutboxRelay implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(OutboxRelay.class.getName());
  /** The {@code destination} of the relay's metrics. */
  static final String METRICS_NAME = "outbox";
  /**
   * The {@code destination} under which the relay reports {@link MetricsListener#deadLetterDepth}:
   * one total over its whole {@link DeadLetterStore}, whatever the dead letters' sources.
   */
  public static final String DEAD_LETTERS_METRICS_NAME = "all";

  /**
   * The reason under which dead letters removed by the retention ({@link
   * Builder#deadLetterRetention}) are reported to {@link MetricsListener#dropped}, with {@link
   * #DEAD_LETTERS_METRICS_NAME} as the destination.
   */
  public static final String DEAD_LETTER_RETENTION_REASON = "dead-letter-retention";
  /** Sent rows deleted per purge statement, and statements per cycle. */
  static final int PURGE_STEP = 1_000;
  static final int PURGE_STEPS_PER_CYCLE = 10;
  /** The adaptive batch size's default lower bound. */
  public static final int DEFAULT_MIN_BATCH = 10;
  /** The adaptive batch size's default starting size. */
  public static final int DEFAULT_INITIAL_BATCH = 100;
  /**
   * Batches the background loop keeps published and awaiting their confirms at once (with at
   * most two claims' worth of rows between them): one ahead of the oldest. More would claim more
   * often for fewer rows each (more statements per row) for little gain once the claim overlaps
   * the confirms.
   */
  static final int MAX_BATCHES_IN_FLIGHT = 2;
  /** The adaptive batch size's default upper bound. */
  public static final int DEFAULT_MAX_BATCH = 1_000;
  /** Rows of one key a claim may take by default ({@link Builder#keyRun}). */
  public static final int DEFAULT_KEY_RUN = 100;

  private final OutboxStore store;
  private final Publisher publisher;
  private final DeadLetterStore deadLetters;
  private final RetryPolicy retryPolicy;
  private final LifecycleListener listener;
  private final InstantSource clock;
  private final String owner;
  private final int minBatch;
  private final int maxBatch;
  private final int keyRun;
  /** The next claim's size: adapted after every cycle between minBatch and maxBatch. */
  private volatile int batchSize;
  private final Duration slowConfirm;
  private final Duration lease;
  private final Duration confirmTimeout;
  private final Duration pollInterval;
  private final Backoff errorBackoff;
  private final Duration retention;
  private final Duration purgeInterval;
  private final MetricsListener metrics;
  private final boolean metering;
  private final Duration metricsInterval;
  private final boolean deadLetterDepth;
  /** Runs the dead-letter counts, off the relay's thread; created by the first due sample. */
  private ScheduledThreadPoolExecutor deadLetterSampler;
  /** Guards {@link #deadLetterSampler} and {@link #deadLetterSamplerClosed}. */
  private final Object deadLetterSamplerLock = new Object();
  private boolean deadLetterSamplerClosed;
  private final AtomicBoolean deadLetterCountRunning = new AtomicBoolean();
  private final AtomicLong deadLetterCountFailures = new AtomicLong();
  private final AtomicLong deadLetterCountsSkipped = new AtomicLong();

  private final ReentrantLock lock = new ReentrantLock();
  private final Condition wake = lock.newCondition();
  /** Null for a relay that only polls. */
  private final OutboxWakeup wakeup;
  private OutboxWakeup.Subscription wakeSubscription;
  /** A wake arrived since the last claim began: the next idle pause is skipped. */
  private final AtomicBoolean wakePending = new AtomicBoolean();
  /** Set, under {@link #lock}, while the loop waits in an idle pause that a wake may end. */
  private volatile boolean idle;
  private final AtomicLong wokenClaims = new AtomicLong();
  private Thread worker;
  private volatile boolean running;
  private boolean closed;
  private volatile Instant lastPurge;
  /** The last purge stopped at its bound with more to delete: the next cycle goes on at once. */
  private volatile boolean purgeBehind;
  private volatile Instant lastSample;
  private final Duration renewEvery;
  private final boolean bounded;
  private final BacklogMonitor backlog;
  private final Duration heartbeatTick;
  private ScheduledThreadPoolExecutor heartbeat;
  private final AtomicLong rowFailures = new AtomicLong();
  private final AtomicLong leaseRenewals = new AtomicLong();
  private final AtomicLong renewalFailures = new AtomicLong();
  private final AtomicLong leaseLostTotal = new AtomicLong();
  private final AtomicLong purgedTotal = new AtomicLong();
  private final AtomicLong purgeFailures = new AtomicLong();
  private final AtomicLong deadLettersPurgedTotal = new AtomicLong();
  private final Duration deadLetterMaxAge;
  private final long deadLetterMaxCount;
  private volatile boolean deadLetterRetentionSupported = true;

  private OutboxRelay(Builder b) {
    this.store = b.store;
    this.publisher = Tracing.publisher(b.publisher, b.tracePropagation);
    this.deadLetters = b.deadLetters;
    this.retryPolicy = b.retryPolicy;
    this.listener = b.listener;
    this.clock = b.clock;
    this.owner = b.owner;
    this.minBatch = b.minBatch;
    this.maxBatch = b.maxBatch;
    this.keyRun = b.keyRun;
    this.batchSize = b.initialBatch;
    this.slowConfirm = b.confirmTimeout.dividedBy(10);
    this.lease = b.lease;
    this.confirmTimeout = b.confirmTimeout;
    this.pollInterval = b.pollInterval;
    this.wakeup = b.wakeupSet ? b.wakeup : store.wakeup().orElse(null);
    this.errorBackoff = b.errorBackoff;
    this.retention = b.retention;
    this.purgeInterval = b.purgeInterval;
    this.metrics = b.metrics;
    this.metering = b.metricsSet;
    this.metricsInterval = b.metricsInterval;
    this.deadLetterDepth = b.metricsSet && b.deadLetterDepth;
    this.deadLetterMaxAge = b.deadLetterMaxAge;
    this.deadLetterMaxCount = b.deadLetterMaxCount;
    this.renewEvery = lease.dividedBy(3);
    OutboxBound bound = store.bound();
    this.bounded = bound != null && bound.isBounded();
    this.backlog = new BacklogMonitor(BacklogMonitor.Config.builder()
        .maxDepth(bounded ? bound.maxUnsent() : Long.MAX_VALUE).build(), clock);
    Duration tick = lease.dividedBy(10);
    Duration maxTick = Duration.ofMillis(100);
    this.heartbeatTick = tick.compareTo(maxTick) > 0 ? maxTick
        : tick.isZero() ? Duration.ofNanos(1) : tick;
  }

  /**
   * A builder for a relay from {@code store} through {@code publisher}.
   *
   * @param store the outbox to drain; not null
   * @param publisher where the rows are published; not null, not closed by the relay
   * @param deadLetters where rows that give up go; not null
   * @return a builder with the defaults the setters name
   * @throws IllegalArgumentException if an argument is null
   */
  public static Builder builder(OutboxStore store, Publisher publisher,
      DeadLetterStore deadLetters) {
    return new Builder(store, publisher, deadLetters);
  }

  /**
   * This relay's lease owner id.
   *
   * @return the owner id; never blank
   */
  public String owner() {
    return owner;
  }

  /**
   * How long this relay's claims hold rows (renewed while a batch is in flight).
   *
   * @return the lease; positive
   */
  public Duration lease() {
    return lease;
  }

  /**
   * How long sent rows are kept before this relay purges them.
   *
   * @return the retention; positive
   */
  public Duration retention() {
    return retention;
  }

  /**
   * One cycle: claim up to {@code batchSize} rows, publish them, wait up to {@code confirmTimeout}
   * for the confirms (renewing the batch's leases meanwhile), mark, reschedule or dead-letter each
   * row; purge old sent rows when due.
   *
   * <p>Poison isolation: once rows are claimed, a failure handling one of them (its dead letter
   * cannot be stored, marking or rescheduling it throws) affects that row and its key only. The
   * row is counted ({@link Batch#failed()}, {@link Counters#rowFailures()}), rescheduled with the
   * error backoff over its attempts where the store still answers (else it keeps its lease and is
   * claimed again when that expires), and the cycle carries on with the other rows.
   *
   * @return what happened to the claimed rows
   * @throws RuntimeException what the store's claim throws (an unreachable database): nothing was
   *     claimed, or the rows claimed keep their lease and are taken over when it expires
   */
  public Batch runOnce() {
    Cycle cycle = claimAndPublish(List.of());
    Batch batch = cycle == null ? new Batch(0, 0, 0, 0, 0, 0) : cycle.finish();
    purgeIfDue(clock.instant());
    return batch;
  }

  /**
   * The size of this relay's next claim (adaptive unless a fixed {@code batchSize} was set).
   *
   * @return the size, between the adaptive bounds (or the fixed size)
   */
  public int batchSize() {
    return batchSize;
  }

  /**
   * Claims a batch at the current size and publishes its rows (dead-lettering the expired ones);
   * null when the claim found nothing new. Rows of {@code window}, this relay's batches still in
   * flight, may come back when their lease ran out while they waited for confirms (renewals
   * failing, the clock stepping past the lease): the owner is the same, so the store hands them
   * out again. They stay their older batch's, which the new lease now covers: the claim drops
   * them, and releases unpublished the later rows of their keys it brought (a run), which must
   * not overtake them.
   */
  private Cycle claimAndPublish(java.util.Collection<Cycle> window) {
    // Cleared before the claim: a commit after this point wakes the next cycle.
    if (wakePending.getAndSet(false)) {
      wokenClaims.incrementAndGet();
    }
    Instant now = clock.instant();
    sampleIfDue(now);
    int size = batchSize;
    List<OutboxRecord> claimed = keyRun > 1 ? store.claim(owner, size, keyRun, lease, now)
        : store.claim(owner, size, lease, now);
    if (claimed.isEmpty()) {
      return null;
    }
    Set<String> parked = new HashSet<>();
    if (!window.isEmpty()) {
      Set<Long> inFlight = new HashSet<>();
      for (Cycle c : window) {
        c.addSequences(inFlight);
      }
      List<OutboxRecord> fresh = new ArrayList<>(claimed.size());
      for (OutboxRecord r : claimed) {
        if (inFlight.contains(r.sequence())) {
          r.message().key().ifPresent(parked::add);
        } else {
          fresh.add(r);
        }
      }
      if (fresh.size() < claimed.size()) {
        LOG.log(System.Logger.Level.DEBUG, "outbox relay " + owner + " claimed "
            + (claimed.size() - fresh.size()) + " of its own rows in flight again (their lease ran"
            + " out while they waited for confirms); they stay with their batch");
      }
      claimed = fresh;
      if (claimed.isEmpty()) {
        return null;
      }
    }
    Cycle cycle = new Cycle(claimed, size, now, parked);
    cycle.publishAll();
    return cycle;
  }

  /**
   * The adaptive batch size after a cycle claimed {@code claimed} rows at {@code size}: doubled
   * (up to {@code max}) when the claim came back full and every row was confirmed within {@code
   * slow}; halved (down to {@code min}) when a publish failed, a confirm was missing, a row's
   * handling failed or a lease was lost, or the confirms took longer than {@code slow}; else kept.
   */
  static int nextBatchSize(int size, int min, int max, int claimed, int publishFailures,
      int rowTrouble, Duration confirmWait, Duration slow) {
    if (publishFailures > 0 || rowTrouble > 0 || confirmWait.compareTo(slow) > 0) {
      return Math.max(min, size / 2);
    }
    if (claimed >= size) {
      return (int) Math.min(max, 2L * size);
    }
    return size;
  }

  /**
   * One claimed batch: published by {@link #publishAll}, its leases renewed from then on, and
   * finished (confirms awaited, rows marked, rescheduled or dead-lettered) by {@link #finish}.
   * The background loop may claim and publish the next batch between the two (claim-ahead).
   */
  private final class Cycle {
    private final List<OutboxRecord> claimed;
    private final int size;
    private final Instant now;
    /** Keys with an earlier row in an older batch in flight: their rows here are released. */
    private final Set<String> parked;
    private final List<OutboxRecord> toPublish;
    private final List<CompletableFuture<PublishReceipt>> confirms;
    /** Per key with more than one row here (a run): the indexes into toPublish, in order. */
    private final List<int[]> runs = new ArrayList<>();
    /** Per run: how many of its rows were published. */
    private int[] runPublished;
    private final List<Long> released = new ArrayList<>();
    private InFlight flight;
    /** All confirms of the first round; made by the loop's first wait on this batch. */
    private CompletableFuture<Void> allConfirmed;
    private long publishedAtNanos;
    private Instant publishedAt;
    private int dead;
    private int failed;

    Cycle(List<OutboxRecord> claimed, int size, Instant now, Set<String> parked) {
      this.claimed = claimed;
      this.size = size;
      this.now = now;
      this.parked = parked;
      this.toPublish = new ArrayList<>(claimed.size());
      this.confirms = new ArrayList<>(claimed.size());
    }

    boolean full() {
      return claimed.size() >= size;
    }

    int rows() {
      return claimed.size();
    }

    boolean hasRuns() {
      return !runs.isEmpty();
    }

    /** When this batch's confirm timeout ends, on {@link System#nanoTime()}. */
    long confirmDeadlineNanos() {
      return publishedAtNanos + confirmTimeout.toNanos();
    }

    void addSequences(Set<Long> into) {
      for (OutboxRecord r : claimed) {
        into.add(r.sequence());
      }
    }

    /**
     * Whether the loop finishes this batch before it claims again: every confirm published so far
     * is in (a key run then publishes its next rows), or the confirm timeout ran out (a missing
     * confirm counts as failed). So wakes, however many, never hold a batch past either.
     */
    boolean due() {
      return !confirmsPending()
          || System.nanoTime() - publishedAtNanos >= confirmTimeout.toNanos();
    }

    /**
     * Completes when every confirm published so far is in; {@code onDone} runs then (once per
     * batch, on the thread that completed the last confirm).
     */
    CompletableFuture<Void> confirmed(Runnable onDone) {
      if (allConfirmed == null) {
        allConfirmed = CompletableFuture.allOf(published().toArray(new CompletableFuture<?>[0]));
        allConfirmed.whenComplete((r, e) -> onDone.run());
      }
      return allConfirmed;
    }

    void publishAll() {
      // A key whose expired row could not be dead-lettered keeps its later rows of this claim
      // unpublished (released at the end): they must not overtake it.
      Set<String> stopped = new HashSet<>(parked);
      for (OutboxRecord r : claimed) {
        String key = r.message().key().orElse(null);
        if (key != null && stopped.contains(key)) {
          released.add(r.sequence());
        } else if (r.message().isExpiredAt(now)) {
          Outcome o = deadLetter(r, "expired at " + r.message().expiresAt().orElseThrow()
              + " before it could be published", null, r.attempts(), now, Stage.EXPIRED);
          dead += o == Outcome.DONE ? 1 : 0;
          failed += o == Outcome.FAILED ? 1 : 0;
          if (o != Outcome.DONE && key != null) {
            stopped.add(key);
          }
        } else {
          toPublish.add(r);
        }
      }
      // Rows of one key (a run the store handed out, in sequence order) are published one after
      // the other, each only once the previous one was confirmed; the first round publishes
      // every keyless row and the first row of each key.
      java.util.Map<String, List<Integer>> byKey = new java.util.LinkedHashMap<>();
      for (int i = 0; i < toPublish.size(); i++) {
        String key = toPublish.get(i).message().key().orElse(null);
        if (key != null) {
          byKey.computeIfAbsent(key, k -> new ArrayList<>(1)).add(i);
        }
        confirms.add(null);
      }
      boolean[] later = new boolean[toPublish.size()];
      for (List<Integer> rows : byKey.values()) {
        if (rows.size() > 1) {
          int[] run = rows.stream().mapToInt(Integer::intValue).toArray();
          runs.add(run);
          for (int j = 1; j < run.length; j++) {
            later[run[j]] = true;
          }
        }
      }
      runPublished = new int[runs.size()];
      java.util.Arrays.fill(runPublished, 1);
      flight = new InFlight(toPublish, now);
      flight.start();
      publishedAtNanos = System.nanoTime();
      publishedAt = clock.instant();
      try {
        for (int i = 0; i < toPublish.size(); i++) {
          if (!later[i]) {
            confirms.set(i, publish(toPublish.get(i)));
          }
        }
      } catch (RuntimeException | Error e) {
        flight.stop();
        throw e;
      }
    }

    /** Whether some confirm of this batch is still outstanding. */
    boolean confirmsPending() {
      for (CompletableFuture<PublishReceipt> f : confirms) {
        if (f != null && !f.isDone()) {
          return true;
        }
      }
      return false;
    }

    /**
     * Publishes the runs' rows in rounds, each row after its predecessor's confirm, until the
     * confirm timeout; a run stops at its first failed or missing confirm, and its unpublished
     * rows are released (their key's failed row parks them in the store).
     */
    private void publishRuns() {
      while (true) {
        long left = confirmTimeout.toNanos() - (System.nanoTime() - publishedAtNanos);
        awaitConfirms(published(), Math.max(0, left));
        boolean more = false;
        boolean timedOut = System.nanoTime() - publishedAtNanos >= confirmTimeout.toNanos();
        for (int k = 0; k < runs.size(); k++) {
          int[] run = runs.get(k);
          int n = runPublished[k];
          if (n >= run.length) {
            continue;
          }
          CompletableFuture<PublishReceipt> prev = confirms.get(run[n - 1]);
          if (!timedOut && prev.isDone() && !prev.isCompletedExceptionally()) {
            confirms.set(run[n], publish(toPublish.get(run[n])));
            runPublished[k] = n + 1;
            more |= n + 1 < run.length;
          } else {
            for (int j = n; j < run.length; j++) {
              released.add(toPublish.get(run[j]).sequence());
            }
            runPublished[k] = run.length;
          }
        }
        if (!more) {
          if (!runs.isEmpty() && !timedOut) {
            left = confirmTimeout.toNanos() - (System.nanoTime() - publishedAtNanos);
            awaitConfirms(published(), Math.max(0, left));
          }
          break;
        }
      }
    }

    /** Hands back the rows of stopped runs, unpublished. */
    private void releaseStopped() {
      if (released.isEmpty()) {
        return;
      }
      try {
        store.release(owner, released);
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "outbox relay " + owner + " could not release "
            + released.size() + " unpublished rows of failed key runs; they are claimed again"
            + " when their lease expires: " + e);
      }
    }

    private List<CompletableFuture<PublishReceipt>> published() {
      List<CompletableFuture<PublishReceipt>> out = new ArrayList<>(confirms.size());
      for (CompletableFuture<PublishReceipt> f : confirms) {
        if (f != null) {
          out.add(f);
        }
      }
      return out;
    }

    Batch finish() {
      try {
        if (runs.isEmpty()) {
          long left = confirmTimeout.toNanos() - (System.nanoTime() - publishedAtNanos);
          awaitConfirms(confirms, Math.max(0, left));
        } else {
          publishRuns();
        }
      } finally {
        // Stopped before any row is marked: a renewal racing a markSent would count a sent row
        // as lost.
        flight.stop();
      }
      releaseStopped();
      Duration confirmWait = Duration.between(publishedAt, clock.instant());
      Set<Long> lostByRenewal = flight.lost();

      List<Long> confirmed = new ArrayList<>(toPublish.size());
      List<Integer> failedPublish = new ArrayList<>();
      for (int i = 0; i < toPublish.size(); i++) {
        if (lostByRenewal.contains(toPublish.get(i).sequence())) {
          continue; // another relay holds it now: its results are not ours to mark
        }
        CompletableFuture<PublishReceipt> f = confirms.get(i);
        if (f == null) {
          continue; // released unpublished: an earlier row of its key failed
        }
        if (f.isDone() && !f.isCompletedExceptionally()) {
          confirmed.add(toPublish.get(i).sequence());
        } else {
          failedPublish.add(i);
        }
      }
      Instant doneAt = clock.instant();
      int[] marked = confirmed.isEmpty() ? new int[] {0, 0, 0} : markSent(confirmed, doneAt);
      int sent = marked[0];
      failed += marked[1];
      for (int i = 0; i < toPublish.size(); i++) {
        CompletableFuture<PublishReceipt> f = confirms.get(i);
        if (f != null && f.isDone() && !f.isCompletedExceptionally()) {
          OutboxRecord r = toPublish.get(i);
          emit(Stage.CONFIRMED, r, doneAt, f.join().position());
        }
      }
      int retried = 0;
      for (int i : failedPublish) {
        OutboxRecord r = toPublish.get(i);
        Throwable cause = failure(confirms.get(i));
        int attempt = r.attempts() + 1;
        Instant first = r.firstFailureAt() != null ? r.firstFailureAt() : doneAt;
        RetryPolicy.Decision d = retryPolicy.decide(attempt, first, doneAt, cause);
        if (d.retry()) {
          try {
            if (store.reschedule(owner, r.sequence(), attempt, doneAt, doneAt.plus(d.delay()),
                describe(cause))) {
              retried++;
              emit(Stage.RETRIED, r, doneAt, "attempt " + attempt + " failed, next in "
                  + d.delay() + ": " + describe(cause));
            }
          } catch (RuntimeException e) {
            // It keeps its lease and is claimed again when that expires.
            rowFailed(r, "reschedule", e);
            failed++;
          }
        } else {
          Outcome o = deadLetter(r, d.reason(), cause, attempt, doneAt, Stage.DEAD_LETTERED);
          dead += o == Outcome.DONE ? 1 : 0;
          failed += o == Outcome.FAILED ? 1 : 0;
        }
      }
      int lost = claimed.size() - sent - retried - dead - failed - released.size();
      if (lost > 0) {
        leaseLostTotal.addAndGet(lost);
        LOG.log(System.Logger.Level.WARNING, "outbox relay " + owner + " lost the lease of "
            + lost + " rows before marking them (its renewals failed, or a publish outlasted the"
            + " lease); another relay publishes them again" + (marked[2] == 0 ? ""
            : " (or a mark that threw had marked them: then they are sent and go out no more)"));
      }
      batchSize = nextBatchSize(batchSize, minBatch, maxBatch, claimed.size(),
          failedPublish.size(), failed + lost, confirmWait, slowConfirm);
      return new Batch(claimed.size(), sent, retried, dead, lost, failed);
    }
  }

  /**
   * Marks confirmed rows sent, trying a transient store failure (a lock timeout) twice more at
   * once; if the batch still fails, marks row by row, so that a row the store refuses is that
   * row's failure only (it keeps its lease and is published a second time when that expires).
   * After three row failures in a row the store is taken to be down and the rest count as failed.
   *
   * @return rows marked, rows that failed, and 1 when a mark threw before one returned (its
   *     reply may have been lost after it marked rows, which a repeat then counts as not marked)
   */
  private int[] markSent(List<Long> confirmed, Instant at) {
    RuntimeException last = null;
    for (int attempt = 1; attempt <= 3; attempt++) {
      try {
        return new int[] {store.markSent(owner, confirmed, at), 0, last == null ? 0 : 1};
      } catch (RuntimeException e) {
        if (last != null) {
          e.addSuppressed(last);
        }
        last = e;
      }
    }
    int sent = 0;
    int failed = 0;
    int inARow = 0;
    for (Long seq : confirmed) {
      if (inARow >= 3) {
        failed++;
        continue;
      }
      try {
        sent += store.markSent(owner, List.of(seq), at);
        inARow = 0;
      } catch (RuntimeException e) {
        failed++;
        inARow++;
        last = e;
      }
    }
    rowFailures.addAndGet(failed);
    if (failed > 0) {
      LOG.log(System.Logger.Level.WARNING, "outbox relay " + owner + " could not mark " + failed
          + " confirmed rows sent; they are published again when their lease expires: " + last,
          last);
    }
    return new int[] {sent, failed, 1};
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
    if (!f.isCompletedExceptionally()) {
      long started = System.nanoTime();
      String destination = r.destination();
      f.whenComplete((receipt, error) -> {
        if (error == null) {
          Duration took = Duration.ofNanos(System.nanoTime() - started);
          MetricsListener.safely(metrics, m -> m.publishConfirmDuration(destination, took));
        }
      });
    }
    return f;
  }

  private void awaitConfirms(List<CompletableFuture<PublishReceipt>> confirms, long nanos) {
    CompletableFuture<Void> all =
        CompletableFuture.allOf(confirms.toArray(new CompletableFuture<?>[0]));
    try {
      all.get(nanos, TimeUnit.NANOSECONDS);
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

  /** What became of one row the relay tried to move, mark or reschedule. */
  private enum Outcome { DONE, LOST, FAILED }

  /**
   * Moves the row to dead letters through {@link OutboxStore#moveToDeadLetters}, fenced by the
   * lease: a relay that lost the row stores no dead letter. A failure (the dead-letter store
   * refuses the letter or is down) is the row's alone: it is rescheduled with the error backoff.
   */
  private Outcome deadLetter(OutboxRecord r, String reason, Throwable cause, int attempts,
      Instant at, Stage stage) {
    Instant first = r.firstFailureAt() != null ? r.firstFailureAt() : at;
    boolean moved;
    try {
      moved = store.moveToDeadLetters(owner, r.sequence(), DeadLetter.of(r.message(),
          r.destination(), reason, cause, attempts, first, at), deadLetters);
    } catch (RuntimeException e) {
      rowFailed(r, "move to dead letters", e);
      backOff(r, "could not move to dead letters (" + reason + "): " + describe(e), at);
      return Outcome.FAILED;
    }
    if (moved) {
      emit(stage, r, at, reason);
      return Outcome.DONE;
    }
    return Outcome.LOST;
  }

  private void rowFailed(OutboxRecord r, String what, RuntimeException e) {
    rowFailures.incrementAndGet();
    LOG.log(System.Logger.Level.WARNING, "outbox relay " + owner + " could not " + what
        + " outbox row " + r.sequence() + " (message " + r.message().id() + " for "
        + r.destination() + "); its key waits, other rows go on: " + e, e);
  }

  /**
   * Reschedules a row whose handling failed, after the error backoff over its attempts, so a row
   * that keeps failing is tried less and less often and never holds up the claim; if even that
   * fails, the row keeps its lease and is claimed again when it expires.
   */
  private void backOff(OutboxRecord r, String error, Instant at) {
    int attempt = r.attempts() + 1;
    try {
      store.reschedule(owner, r.sequence(), attempt, at, at.plus(errorBackoff.delay(attempt)),
          error);
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.DEBUG, "outbox relay " + owner + " could not reschedule row "
          + r.sequence() + " either; it is claimed again when its lease expires: " + e);
    }
  }

  /**
   * Renews the leases of a batch in flight, on a heartbeat thread, while the relay's own thread
   * publishes and awaits confirms: every third of the lease on the relay's clock (checked every
   * tenth of the lease, at most every 100 ms). Rows a renewal no longer holds (taken over) are
   * given up: their results are not marked.
   */
  private final class InFlight implements Runnable {
    private final Set<Long> held = new HashSet<>();
    private final Set<Long> lost = new HashSet<>();
    private Instant renewedAt;
    private boolean stopped;
    private ScheduledFuture<?> task;

    InFlight(List<OutboxRecord> rows, Instant claimedAt) {
      for (OutboxRecord r : rows) {
        held.add(r.sequence());
      }
      this.renewedAt = claimedAt;
    }

    synchronized void start() {
      if (held.isEmpty()) {
        return;
      }
      ScheduledThreadPoolExecutor executor = heartbeat();
      if (executor == null) {
        return;
      }
      try {
        task = executor.scheduleWithFixedDelay(this, heartbeatTick.toNanos(),
            heartbeatTick.toNanos(), TimeUnit.NANOSECONDS);
      } catch (RejectedExecutionException e) {
        // Closed meanwhile: the batch runs inside its first lease.
      }
    }

    @Override
    public synchronized void run() {
      if (stopped || held.isEmpty()) {
        return;
      }
      Instant now = clock.instant();
      if (now.isBefore(renewedAt.plus(renewEvery))) {
        return;
      }
      List<Long> seqs = new ArrayList<>(held);
      try {
        Set<Long> kept = store.renewLease(owner, seqs, lease, now);
        renewedAt = now;
        leaseRenewals.incrementAndGet();
        for (Long seq : seqs) {
          if (!kept.contains(seq)) {
            held.remove(seq);
            lost.add(seq);
          }
        }
      } catch (UnsupportedOperationException e) {
        stopped = true;
        LOG.log(System.Logger.Level.DEBUG, "outbox relay " + owner + ": the store cannot renew"
            + " leases; batches must finish inside one lease: " + e);
      } catch (RuntimeException e) {
        renewalFailures.incrementAndGet();
        LOG.log(System.Logger.Level.WARNING, "outbox relay " + owner + " could not renew the"
            + " lease of " + seqs.size() + " rows in flight (retrying): " + e);
      }
    }

    /** Stops renewing; waits for a renewal in progress to finish. */
    synchronized void stop() {
      stopped = true;
      if (task != null) {
        task.cancel(false);
      }
    }

    synchronized Set<Long> lost() {
      return Set.copyOf(lost);
    }
  }

  /** The heartbeat executor, created on first use; null once the relay is closed. */
  private ScheduledThreadPoolExecutor heartbeat() {
    lock.lock();
    try {
      if (closed) {
        return null;
      }
      if (heartbeat == null) {
        ScheduledThreadPoolExecutor e = new ScheduledThreadPoolExecutor(1, r -> {
          Thread t = new Thread(r, "relaykit-outbox-lease-" + owner);
          t.setDaemon(true);
          return t;
        });
        e.setKeepAliveTime(10, TimeUnit.SECONDS);
        e.allowCoreThreadTimeOut(true);
        e.setRemoveOnCancelPolicy(true);
        heartbeat = e;
      }
      return heartbeat;
    } finally {
      lock.unlock();
    }
  }

  /**
   * What the relay has counted since it was built.
   *
   * @return a snapshot of the counters; the counts only grow
   */
  public Counters counters() {
    return new Counters(rowFailures.get(), leaseRenewals.get(), renewalFailures.get(),
        leaseLostTotal.get(), purgedTotal.get(), purgeFailures.get(),
        deadLettersPurgedTotal.get(), deadLetterCountFailures.get(),
        deadLetterCountsSkipped.get());
  }

  /**
   * What a relay counted since it was built.
   *
   * @param rowFailures rows whose handling failed (dead letter not stored, mark or reschedule
   *     threw) and were left for a later cycle
   * @param leaseRenewals renewals of in-flight batches' leases
   * @param renewalFailures renewals that failed (the store did not answer)
   * @param leaseLost rows whose lease another relay took over before this one marked them (and
   *     rows a mark whose reply was lost had marked, see {@link Batch#leaseLost})
   * @param purged sent rows purged
   * @param purgeFailures purge steps that failed (the next cycle tries again)
   * @param deadLettersPurged dead letters removed by the dead-letter retention
   * @param deadLetterCountFailures dead-letter depth samples lost because {@link
   *     DeadLetterStore#count} threw (the gauge keeps its last value)
   * @param deadLetterCountsSkipped dead-letter depth samples skipped because the previous count
   *     was still running
   */
  public record Counters(long rowFailures, long leaseRenewals, long renewalFailures,
      long leaseLost, long purged, long purgeFailures, long deadLettersPurged,
      long deadLetterCountFailures, long deadLetterCountsSkipped) {}

  /**
   * Reports the backlog (unsent rows, oldest unsent age) to the metrics listener at most once per
   * metrics interval. A store that cannot answer costs this sample, not the cycle.
   */
  private void sampleIfDue(Instant now) {
    if (!(metering || bounded)
        || (lastSample != null && now.isBefore(lastSample.plus(metricsInterval)))) {
      return;
    }
    lastSample = now;
    if (deadLetterDepth) {
      sampleDeadLetters();
    }
    OutboxStats stats;
    try {
      stats = store.stats(now);
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.DEBUG, "outbox relay " + owner + " could not sample the"
          + " backlog for metrics: " + e);
      return;
    }
    BacklogSnapshot snapshot;
    try {
      backlog.record(new BacklogSample(now, stats.unsent(), stats.oldestUnsentAge()));
      snapshot = backlog.snapshot();
    } catch (IllegalArgumentException e) {
      return; // the relay's clock went back: this sample does not fit the window
    }
    if (snapshot.verdict() == BacklogVerdict.OVER_BOUND) {
      LOG.log(System.Logger.Level.WARNING, "outbox backlog of " + stats.unsent()
          + " unsent rows is over its bound of " + store.bound().maxUnsent());
    }
    MetricsListener.safely(metrics, m -> {
      m.backlogDepth(METRICS_NAME, stats.unsent());
      m.oldestAge(METRICS_NAME, stats.oldestUnsentAge());
      m.backlog(METRICS_NAME, snapshot);
    });
  }

  /**
   * Hands one {@link DeadLetterStore#count} of every dead letter to the sampler thread, unless the
   * previous one still runs (then this sample is skipped and counted): a slow or hung store costs
   * samples, never the relay's cycle, and at most one count is ever in flight.
   */
  private void sampleDeadLetters() {
    if (!deadLetterCountRunning.compareAndSet(false, true)) {
      deadLetterCountsSkipped.incrementAndGet();
      return;
    }
    try {
      synchronized (deadLetterSamplerLock) {
        if (deadLetterSamplerClosed) {
          deadLetterCountRunning.set(false);
          return;
        }
        if (deadLetterSampler == null) {
          deadLetterSampler = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "relaykit-relay-dead-letter-count-" + owner);
            t.setDaemon(true);
            return t;
          });
        }
        deadLetterSampler.execute(this::countDeadLetters);
      }
    } catch (RejectedExecutionException e) {
      deadLetterCountRunning.set(false);
    }
  }

  /** The next count may start once this one has its answer (before it is reported). */
  private void countDeadLetters() {
    long depth;
    try {
      depth = deadLetters.count(DeadLetterQuery.all());
    } catch (RuntimeException | LinkageError e) {
      deadLetterCountRunning.set(false);
      deadLetterCountFailures.incrementAndGet();
      LOG.log(System.Logger.Level.DEBUG, "outbox relay " + owner + " could not count the dead"
          + " letters for metrics: " + e);
      return;
    } catch (Error e) {
      deadLetterCountRunning.set(false);
      throw e;
    }
    deadLetterCountRunning.set(false);
    MetricsListener.safely(metrics, m -> m.deadLetterDepth(DEAD_LETTERS_METRICS_NAME, depth));
  }

  /**
   * The backlog's verdict from this relay's samples (taken at most once per metrics interval,
   * when metrics are set or the store has an {@link OutboxBound}): {@link
   * BacklogVerdict#OVER_BOUND} while the unsent rows are over the store's bound.
   *
   * @return the latest snapshot; HEALTHY with no numbers before the first sample
   */
  public BacklogSnapshot backlog() {
    return backlog.snapshot();
  }

  /**
   * Purges sent rows older than the retention, on the purge interval, whether or not the cycle
   * found work (a relay that always has work still purges): at most {@link
   * #PURGE_STEPS_PER_CYCLE} statements of {@link #PURGE_STEP} rows per cycle, and when that bound
   * left rows behind, again in the next cycle until caught up. A purge that fails is counted and
   * costs nothing else: the cycle's rows are already handled.
   */
  private void purgeIfDue(Instant now) {
    if (!purgeBehind && lastPurge != null && now.isBefore(lastPurge.plus(purgeInterval))) {
      return;
    }
    lastPurge = now;
    // Retention is measured on the store's clock, so a relay whose clock runs ahead purges
    // nothing early; bounded steps keep each delete short.
    int purged = 0;
    boolean behind = true;
    try {
      for (int i = 0; i < PURGE_STEPS_PER_CYCLE && behind; i++) {
        int n = store.purgeSentOlderThan(retention, PURGE_STEP, now);
        purged += n;
        behind = n >= PURGE_STEP;
      }
    } catch (RuntimeException e) {
      behind = false;
      purgeFailures.incrementAndGet();
      LOG.log(System.Logger.Level.WARNING, "outbox relay " + owner + " could not purge sent"
          + " rows (tried again in " + purgeInterval + "): " + e);
    }
    purgedTotal.addAndGet(purged);
    if (purged > 0) {
      LOG.log(System.Logger.Level.DEBUG, "outbox relay " + owner + " purged " + purged
          + " sent rows older than " + retention);
    }
    purgeBehind = behind | purgeDeadLetters(now);
  }

  /**
   * Applies the dead-letter retention (age on the store's clock where it has one, else the
   * relay's, then count), in the same bounded
   * steps; returns whether it stopped at its bound with more to remove.
   */
  private boolean purgeDeadLetters(Instant now) {
    if (!deadLetterRetentionSupported) {
      return false;
    }
    long removed = 0;
    boolean behind = false;
    try {
      int steps = 0;
      long n;
      do {
        n = deadLetters.purgeFailedOlderThan(deadLetterMaxAge, PURGE_STEP, now);
        removed += n;
      } while (n >= PURGE_STEP && ++steps < PURGE_STEPS_PER_CYCLE);
      behind = n >= PURGE_STEP;
      steps = 0;
      do {
        n = deadLetters.trimTo(deadLetterMaxCount, PURGE_STEP);
        removed += n;
      } while (n >= PURGE_STEP && ++steps < PURGE_STEPS_PER_CYCLE);
      behind |= n >= PURGE_STEP;
    } catch (UnsupportedOperationException e) {
      deadLetterRetentionSupported = false;
      LOG.log(System.Logger.Level.INFO, "outbox relay " + owner + ": the dead-letter store"
          + " cannot apply retention, so its dead letters are kept until purged by hand: " + e);
    } catch (RuntimeException e) {
      purgeFailures.incrementAndGet();
      LOG.log(System.Logger.Level.WARNING, "outbox relay " + owner + " could not apply the"
          + " dead-letter retention (tried again in " + purgeInterval + "): " + e);
    }
    deadLettersPurgedTotal.addAndGet(removed);
    if (removed > 0) {
      long purged = removed;
      MetricsListener.safely(metrics, m -> m.dropped(DEAD_LETTERS_METRICS_NAME,
          DEAD_LETTER_RETENTION_REASON, purged));
    }
    return behind;
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
   * Starts the background loop on a daemon thread, subscribed to the {@link Builder#wakeup
   * wakeup} if there is one.
   *
   * @throws IllegalStateException if already started or closed, or if the wakeup already has
   *     {@value OutboxWakeup#MAX_SUBSCRIBERS} subscribers (nothing started then: close relays no
   *     longer used, or build this one with {@code wakeup(null)} to poll only, and start again)
   */
  public void start() {
    lock.lock();
    try {
      if (closed || worker != null) {
        throw new IllegalStateException("outbox relay " + owner
            + (closed ? " is closed" : " is already started"));
      }
      if (wakeup != null) {
        wakeSubscription = wakeup.subscribe(this::onWake);
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
    boolean progress = b.sent() > 0 || b.deadLettered() > 0
        || (b.claimed() >= batchSize && b.failed() < b.claimed());
    return progress ? Duration.ZERO : pollInterval;
  }

  /**
   * The background loop: published batches ({@link #MAX_BATCHES_IN_FLIGHT} at most, and at most
   * {@code 2 × batchSize} rows with the next claim), each finished (confirms awaited,
   * rows marked) oldest first. The loop claims while the last claim came back full, a batch just
   * finished with progress, or a wake says rows committed (so with wakes, rows committed while a
   * batch waits for its confirms are claimed and published at once instead of after that batch's
   * confirms and markSent); otherwise it waits for the oldest batch's confirms or a wake, and with
   * nothing in flight for the poll interval.
   */
  private void loop() {
    int failures = 0;
    java.util.ArrayDeque<Cycle> flight = new java.util.ArrayDeque<>();
    LoopState state = new LoopState();
    while (running) {
      Duration pause = Duration.ZERO;
      boolean wakeable = false;
      try {
        // Finish, oldest first, every batch that is due: its confirms are in (a quick mark each;
        // a key run publishes its next rows) or its confirm timeout ran out.
        while (!flight.isEmpty() && flight.peekFirst().due()) {
          finishOldest(flight, state);
        }
        boolean emptyClaim = false;
        boolean room = room(flight);
        if (running && !state.stalled && (state.claimable || wakePending.get()) && room) {
          Cycle c = claimAndPublish(flight);
          if (c != null) {
            flight.addLast(c);
            state.claimable = c.full();
          } else {
            state.claimable = false;
            emptyClaim = true;
          }
        } else if (!flight.isEmpty()) {
          Cycle head = flight.peekFirst();
          // Else wait for the oldest batch's confirms or a wake. A stalled loop or a full window
          // finishes the oldest batch first; so does a batch with key runs (it publishes a run's
          // next rows as confirms arrive, on this thread) and one whose confirm timeout ran out
          // (a missing confirm counts as failed).
          if (state.stalled || !room || head.hasRuns() || !awaitConfirmsOrWake(head)) {
            finishOldest(flight, state);
          }
        }
        purgeIfDue(clock.instant());
        if (failures > 0) {
          LOG.log(System.Logger.Level.INFO, "outbox relay " + owner + " resumed after "
              + failures + " failed cycles");
        }
        failures = 0;
        if (flight.isEmpty()) {
          if (state.stalled) {
            // A batch without progress (every row rescheduled: the publisher is failing) waits
            // the poll interval, wakes or not, so a retry delay near zero cannot spin the loop.
            pause = pollInterval;
          } else if (emptyClaim && !wakePending.get()) {
            pause = pollInterval;
            wakeable = true;
          }
        }
      } catch (RuntimeException e) {
        finishAllQuietly(flight);
        if (!running) {
          break;
        }
        failures++;
        pause = errorBackoff.delay(failures);
        wakeable = false;
        LOG.log(System.Logger.Level.WARNING, "outbox relay " + owner + " cycle failed ("
            + failures + " in a row), retrying in " + pause + ": " + e, e);
      } catch (Error e) {
        LOG.log(System.Logger.Level.ERROR, "outbox relay " + owner + " stopped: " + e, e);
        // Batches in flight were published: finish them, which also stops their renewals, so
        // what is not marked goes to another relay once the lease ends, not renewed forever.
        while (!flight.isEmpty()) {
          try {
            finishQuietly(flight.pollFirst());
          } catch (Error again) {
            e.addSuppressed(again);
          }
        }
        throw e;
      }
      if (!pause.isZero()) {
        pause(pause, wakeable);
        state.claimable = true;
        state.stalled = false;
      }
    }
    // Batches in flight were published: mark them before the loop ends.
    finishAllQuietly(flight);
  }

  /**
   * What the background loop knows between iterations: {@code claimable}, a claim is due without
   * a wake (the last claim came back full, a batch just finished with progress, or a pause
   * ended); {@code stalled}, a batch finished without progress, so the loop claims nothing more
   * until it has paused.
   */
  private static final class LoopState {
    boolean claimable = true;
    boolean stalled;
  }

  /** Finishes the oldest batch in flight and records in {@code state} whether it progressed. */
  private void finishOldest(java.util.ArrayDeque<Cycle> flight, LoopState state) {
    Cycle done = flight.pollFirst();
    Batch b = done.finish();
    if (pauseAfter(b, done.size, pollInterval).isZero()) {
      state.claimable = true;
    } else {
      state.stalled = true;
    }
  }

  /**
   * Whether the window takes one more batch: fewer than {@link #MAX_BATCHES_IN_FLIGHT} in flight,
   * and the rows in flight plus the next claim at most two claims' worth.
   */
  private boolean room(java.util.ArrayDeque<Cycle> flight) {
    if (flight.size() >= MAX_BATCHES_IN_FLIGHT) {
      return false;
    }
    int rows = 0;
    for (Cycle c : flight) {
      rows += c.rows();
    }
    return rows <= batchSize;
  }

  /**
   * Waits until every confirm of {@code head} is in, a wake arrives or the relay closes; false
   * when {@code head}'s confirm timeout ran out first.
   */
  private boolean awaitConfirmsOrWake(Cycle head) {
    long nanos = head.confirmDeadlineNanos() - System.nanoTime();
    if (nanos <= 0) {
      return false;
    }
    CompletableFuture<Void> confirmed = head.confirmed(this::signal);
    lock.lock();
    try {
      idle = true;
      while (running && nanos > 0 && !confirmed.isDone() && !wakePending.get()) {
        nanos = wake.awaitNanos(nanos);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      running = false;
    } finally {
      idle = false;
      lock.unlock();
    }
    return nanos > 0 || confirmed.isDone();
  }

  /** Wakes the loop from {@link #awaitConfirmsOrWake}: called when a batch's confirms are in. */
  private void signal() {
    lock.lock();
    try {
      wake.signalAll();
    } finally {
      lock.unlock();
    }
  }

  private void finishAllQuietly(java.util.ArrayDeque<Cycle> flight) {
    while (!flight.isEmpty()) {
      finishQuietly(flight.pollFirst());
    }
  }

  private Cycle finishQuietly(Cycle c) {
    if (c != null) {
      try {
        c.finish();
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "outbox relay " + owner + " could not finish a"
            + " batch claimed ahead; its rows are published again when their lease expires: "
            + e, e);
      }
    }
    return null;
  }

  /**
   * Waits {@code d}, or until close; an idle pause ({@code wakeable}) also ends at a wake. The
   * loop sets {@link #idle} before it reads {@link #wakePending}, and {@link #onWake} sets the
   * flag before it reads {@code idle} (both volatile), so a wake is either seen here or signalled.
   */
  private void pause(Duration d, boolean wakeable) {
    lock.lock();
    try {
      if (wakeable) {
        idle = true;
      }
      long nanos = d.toNanos();
      while (running && nanos > 0 && !(wakeable && wakePending.get())) {
        nanos = wake.awaitNanos(nanos);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      running = false;
    } finally {
      idle = false;
      lock.unlock();
    }
  }

  /** A wake: coalesced into one flag; the idle loop is signalled, a busy one sees the flag. */
  private void onWake() {
    if (wakePending.getAndSet(true) || !idle) {
      return;
    }
    lock.lock();
    try {
      wake.signalAll();
    } finally {
      lock.unlock();
    }
  }

  /**
   * Cycles whose claim followed a wake ({@link OutboxWakeup}) rather than the poll or a busy
   * loop: how often wakes ran a claim (many wakes between two claims count once).
   *
   * @return the count since the relay was built
   */
  public long wokenClaims() {
    return wokenClaims.get();
  }

  /**
   * Stops the loop: no new cycle starts, and this waits up to {@code deadline} for the cycle in
   * progress to finish (a cycle that outlives the deadline still ends by itself, within the confirm
   * timeout; its thread is never interrupted). Idempotent. Does not close the publisher or the
   * store.
   *
   * @param deadline the longest wait for the cycle in progress; not null
   * @return whether the loop stopped within the deadline
   * @throws IllegalArgumentException if {@code deadline} is null
   */
  public boolean close(Duration deadline) {
    Checks.requireNonNull("deadline", deadline);
    Thread t;
    lock.lock();
    try {
      closed = true;
      running = false;
      if (wakeSubscription != null) {
        wakeSubscription.close();
        wakeSubscription = null;
      }
      wake.signalAll();
      t = worker;
      if (heartbeat != null) {
        // No interrupt: a renewal in progress finishes its JDBC call.
        heartbeat.shutdown();
      }
    } finally {
      lock.unlock();
    }
    synchronized (deadLetterSamplerLock) {
      deadLetterSamplerClosed = true;
      if (deadLetterSampler != null) {
        // No interrupt either: a count in progress finishes (or, hung, holds a daemon thread).
        deadLetterSampler.shutdown();
      }
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
   * @param leaseLost rows whose lease another relay took over before this one could mark them;
   *     also rows a mark that threw had marked (its reply lost): a repeat finds them sent and
   *     cannot tell them from rows another relay took, so they count here although they are sent
   *     and go out no more
   * @param failed rows whose handling failed (their dead letter could not be stored, marking or
   *     rescheduling them threw): left for a later cycle, the rest of the batch unaffected
   *     ({@code claimed} minus the other five is the number of rows of key runs released
   *     unpublished because an earlier row of their key failed, see {@link Builder#keyRun})
   */
  public record Batch(int claimed, int sent, int retried, int deadLettered, int leaseLost,
      int failed) {}

  /** Builds an {@link OutboxRelay}; {@link #build()} names any invalid field. */
  public static final class Builder {
    private final OutboxStore store;
    private final Publisher publisher;
    private final DeadLetterStore deadLetters;
    private RetryPolicy retryPolicy = RetryPolicy.defaults();
    private LifecycleListener listener = LifecycleListener.noop();
    private InstantSource clock = InstantSource.system();
    private String owner = "relay-" + UUID.randomUUID();
    private int minBatch = DEFAULT_MIN_BATCH;
    private int initialBatch = DEFAULT_INITIAL_BATCH;
    private int maxBatch = DEFAULT_MAX_BATCH;
    private int keyRun = DEFAULT_KEY_RUN;
    private Duration lease = Duration.ofSeconds(30);
    private Duration confirmTimeout = Duration.ofSeconds(10);
    private Duration pollInterval = Duration.ofMillis(200);
    private Backoff errorBackoff = Backoff.exponential(Duration.ofMillis(100))
        .withMax(Duration.ofSeconds(30)).withJitter(Jitter.FULL);
    private Duration retention = Duration.ofDays(7);
    private Duration purgeInterval = Duration.ofMinutes(1);
    private Duration deadLetterMaxAge = Duration.ofDays(30);
    private long deadLetterMaxCount = 100_000;
    private MetricsListener metrics = MetricsListener.noop();
    private boolean metricsSet;
    private boolean deadLetterDepth = true;
    private Duration metricsInterval = Duration.ofSeconds(10);
    private TracePropagation tracePropagation = TracePropagation.discovered();
    private OutboxWakeup wakeup;
    private boolean wakeupSet;

    private Builder(OutboxStore store, Publisher publisher, DeadLetterStore deadLetters) {
      this.store = Checks.requireNonNull("store", store);
      this.publisher = Checks.requireNonNull("publisher", publisher);
      this.deadLetters = Checks.requireNonNull("deadLetters", deadLetters);
    }

    /**
     * Retries, backoff and permanent failures. Default {@link RetryPolicy#defaults()}.
     *
     * @param retryPolicy the policy; checked (not null) by {@link #build()}
     * @return this builder
     */
    public Builder retryPolicy(RetryPolicy retryPolicy) {
      this.retryPolicy = retryPolicy;
      return this;
    }

    /**
     * Sees every step of every row (published, confirmed, retried, dead-lettered). Default none.
     *
     * @param listener the listener; checked (not null) by {@link #build()}
     * @return this builder
     */
    public Builder listener(LifecycleListener listener) {
      this.listener = listener;
      return this;
    }

    /**
     * The relay's clock: when a cycle samples metrics or purges, message expiry, and the retry
     * policy's failure times. Leases, readiness and retention are decided on the store's clock
     * where it has one (see {@link OutboxStore}). Default the system clock.
     *
     * @param clock the clock; checked (not null) by {@link #build()}
     * @return this builder
     */
    public Builder clock(InstantSource clock) {
      this.clock = clock;
      return this;
    }

    /**
     * This relay's lease owner id, unique among relays. Default a random id.
     *
     * @param owner the owner id; checked (not blank) by {@link #build()}
     * @return this builder
     */
    public Builder owner(String owner) {
      this.owner = owner;
      return this;
    }

    /**
     * A fixed number of rows per claim, 1..10 000: turns the adaptive batch size off. Default:
     * adaptive, see {@link #adaptiveBatchSize}.
     *
     * @param batchSize the rows per claim; checked by {@link #build()}
     * @return this builder
     */
    public Builder batchSize(int batchSize) {
      this.minBatch = batchSize;
      this.initialBatch = batchSize;
      this.maxBatch = batchSize;
      return this;
    }

    /**
     * Rows of one key a claim may take (a run, see {@link OutboxStore#claim(String, int, int,
     * Duration, Instant)}), 1..10 000: the relay publishes a run's rows one after the other, each
     * after the previous one's confirm, and stops the run at its first failure, releasing the rest.
     * So a backlog over few keys drains in full batches instead of one row per key per claim; with
     * a broker, a key has one message in flight at a time either way. 1 takes one row per key per
     * claim. Default {@value OutboxRelay#DEFAULT_KEY_RUN}.
     *
     * @param keyRun the rows per key per claim; checked by {@link #build()}
     * @return this builder
     */
    public Builder keyRun(int keyRun) {
      this.keyRun = keyRun;
      return this;
    }

    /**
     * An adaptive batch size between {@code min} and {@code max} (1 &lt;= min &lt;= max &lt;= 10 000),
     * starting at 100 (or the nearer bound): after each cycle it doubles while claims come back
     * full and every row is confirmed within a tenth of the confirm timeout, and halves on a failed
     * or missing confirm, a row whose handling failed, a lost lease or confirms slower than that.
     * Memory: a batch holds up to {@code max} messages. Default {@value
     * OutboxRelay#DEFAULT_MIN_BATCH}..{@value OutboxRelay#DEFAULT_MAX_BATCH}.
     *
     * @param min the smallest batch; checked by {@link #build()}
     * @param max the largest batch; checked by {@link #build()}
     * @return this builder
     */
    public Builder adaptiveBatchSize(int min, int max) {
      this.minBatch = min;
      this.maxBatch = max;
      this.initialBatch = Math.max(min, Math.min(max, DEFAULT_INITIAL_BATCH));
      return this;
    }

    /**
     * How long claimed rows stay hidden from other relays, on the store's clock; renewed every
     * third of it while a batch is in flight. Default 30 s.
     *
     * @param lease the lease; checked (positive, longer than the confirm timeout) by {@link
     *     #build()}
     * @return this builder
     */
    public Builder lease(Duration lease) {
      this.lease = lease;
      return this;
    }

    /**
     * How long to wait for the broker's confirms; shorter than the lease. Default 10 s.
     *
     * @param confirmTimeout the timeout; checked (positive, shorter than the lease) by {@link
     *     #build()}
     * @return this builder
     */
    public Builder confirmTimeout(Duration confirmTimeout) {
      this.confirmTimeout = confirmTimeout;
      return this;
    }

    /**
     * The background loop's pause when the outbox is idle. Default 200 ms. With a {@link
     * #wakeup} (the store's by default) committed rows end the pause at once, so the interval is
     * then the safety net for wakes that were lost or never sent (rows committed by other
     * processes without a cross-process wake): it bounds their latency.
     *
     * @param pollInterval the pause; checked (positive) by {@link #build()}
     * @return this builder
     */
    public Builder pollInterval(Duration pollInterval) {
      this.pollInterval = pollInterval;
      return this;
    }

    /**
     * The signal that ends the background loop's idle pause at once ({@link OutboxWakeup}): the
     * relay subscribes when started and unsubscribes when closed. Default the store's {@link
     * OutboxStore#wakeup()}, so relays built on one store share the wakes of its appends; none for
     * a store without one. {@code null} turns wakes off: the relay then polls only.
     *
     * @param wakeup the wakeup, or null for none
     * @return this builder
     */
    public Builder wakeup(OutboxWakeup wakeup) {
      this.wakeup = wakeup;
      this.wakeupSet = true;
      return this;
    }

    /**
     * The background loop's pause after consecutive failed cycles. Default 100 ms to 30 s.
     *
     * @param errorBackoff the backoff over consecutive failed cycles; checked (not null) by {@link
     *     #build()}
     * @return this builder
     */
    public Builder errorBackoff(Backoff errorBackoff) {
      this.errorBackoff = errorBackoff;
      return this;
    }

    /**
     * How long sent rows are kept before purging. Default 7 days.
     *
     * @param retention the retention; checked (positive) by {@link #build()}
     * @return this builder
     */
    public Builder retention(Duration retention) {
      this.retention = retention;
      return this;
    }

    /**
     * How often the relay purges sent rows older than the retention and applies the dead-letter
     * retention, busy or idle. Default 1 min.
     *
     * @param purgeInterval the interval; checked (positive) by {@link #build()}
     * @return this builder
     */
    public Builder purgeInterval(Duration purgeInterval) {
      this.purgeInterval = purgeInterval;
      return this;
    }

    /**
     * Dead-letter retention, applied to the relay's dead-letter store on the purge schedule (in
     * steps of {@value OutboxRelay#PURGE_STEP}, counted in {@link Counters#deadLettersPurged()}):
     * dead letters whose last failure is older than {@code maxAge} on the relay's clock are
     * removed, and beyond {@code maxCount} the oldest are. A store that cannot apply retention
     * (a broker's dead-letter queue) is left alone. Default 30 days and 100 000.
     *
     * @param maxAge the age limit; checked (positive) by {@link #build()}
     * @param maxCount the count limit; checked ({@code >= 1}) by {@link #build()}
     * @return this builder
     */
    public Builder deadLetterRetention(Duration maxAge, long maxCount) {
      this.deadLetterMaxAge = maxAge;
      this.deadLetterMaxCount = maxCount;
      return this;
    }

    /**
     * Traces each publish with {@code tracePropagation}: a {@link
     * TracePropagation#publishing} scope (a producer span, the child of the context captured at
     * the append) around each publish, whose context the message carries on the wire (see {@link
     * Tracing#publisher}). Default {@link TracePropagation#discovered()}: none unless a tracing
     * module is on the class path.
     *
     * @param tracePropagation the propagation; not null
     * @return this builder
     * @throws IllegalArgumentException if {@code tracePropagation} is null
     */
    public Builder tracePropagation(TracePropagation tracePropagation) {
      this.tracePropagation = Checks.requireNonNull("tracePropagation", tracePropagation);
      return this;
    }

    /**
     * Where the backlog is reported: {@link MetricsListener#backlogDepth} (unsent rows) and
     * {@link MetricsListener#oldestAge} (oldest unsent message) for destination {@code
     * "outbox"}, sampled by a cycle at most once per {@link #metricsInterval} (one {@link
     * OutboxStore#stats} call: a count over the unsent rows), with the verdict ({@link
     * MetricsListener#backlog}) and, unless {@link #deadLetterDepth(boolean)} turns it off, the
     * dead-letter depth ({@link MetricsListener#deadLetterDepth} under {@value
     * OutboxRelay#DEAD_LETTERS_METRICS_NAME}). Default: none; {@link MetricsListener#noop()}
     * counts as none, so the relay then samples nothing for metrics.
     *
     * @param metrics the listener; checked (not null) by {@link #build()}
     * @return this builder
     */
    public Builder metrics(MetricsListener metrics) {
      this.metrics = metrics;
      this.metricsSet = metrics != MetricsListener.noop();
      return this;
    }

    /**
     * Whether the relay reports the dead-letter depth when it has a {@link #metrics} listener:
     * once per {@link #metricsInterval}, one {@link DeadLetterStore#count} of {@link
     * DeadLetterQuery#all()} on the relay's dead-letter store, reported as {@link
     * MetricsListener#deadLetterDepth} under {@value OutboxRelay#DEAD_LETTERS_METRICS_NAME}: one
     * total, not one per source, so the gauge has one series whatever the destinations. Default
     * on.
     *
     * <p>The count runs on a daemon thread of its own (created by the first sample, stopped by
     * {@link OutboxRelay#close(Duration)}), never on the relay's: a slow store delays only the
     * gauge, and while one count runs the next samples are skipped ({@link
     * Counters#deadLetterCountsSkipped}); a count that throws is counted ({@link
     * Counters#deadLetterCountFailures}), logged at DEBUG, and the gauge keeps its last value.
     * What a count costs is the store's: one {@code SELECT COUNT(*)} over the table on JDBC (on
     * PostgreSQL a scan, linear in the dead letters), one {@code ZLEXCOUNT} on Redis, but a read of the whole dead-letter topic on Kafka and a browse of the
     * whole dead-letter queue on RabbitMQ; turn it off, or lengthen the interval, for those.
     *
     * @param deadLetterDepth whether to sample the dead-letter depth
     * @return this builder
     */
    public Builder deadLetterDepth(boolean deadLetterDepth) {
      this.deadLetterDepth = deadLetterDepth;
      return this;
    }

    /**
     * How often the backlog is sampled for {@link #metrics}. Default 10 s.
     *
     * @param metricsInterval the interval; checked (positive) by {@link #build()}
     * @return this builder
     */
    public Builder metricsInterval(Duration metricsInterval) {
      this.metricsInterval = metricsInterval;
      return this;
    }

    /**
     * Checks the settings and builds the relay (not started).
     *
     * @return a new relay; call {@link OutboxRelay#start()} for the background loop, or drive it
     *     with {@link OutboxRelay#runOnce()}
     * @throws IllegalArgumentException naming the field: a null policy, listener, clock or
     *     backoff; a blank owner; a batch size outside 1..10 000; a non-positive lease, confirm
     *     timeout, poll interval, retention or purge interval; a confirm timeout not shorter than
     *     the lease
     */
    public OutboxRelay build() {
      Checks.requireNonNull("retryPolicy", retryPolicy);
      Checks.requireNonNull("listener", listener);
      Checks.requireNonNull("clock", clock);
      Checks.requireNonBlank("owner", owner);
      if (minBatch < 1 || minBatch > 10_000) {
        throw new IllegalArgumentException((minBatch == maxBatch ? "batchSize" : "batch size min")
            + " must be in 1..10000, was " + minBatch);
      }
      if (maxBatch < minBatch || maxBatch > 10_000) {
        throw new IllegalArgumentException("batch size max must be in " + minBatch
            + "..10000 (at least the min), was " + maxBatch);
      }
      if (keyRun < 1 || keyRun > 10_000) {
        throw new IllegalArgumentException("keyRun must be in 1..10000, was " + keyRun);
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
      Checks.requirePositive("deadLetterMaxAge", deadLetterMaxAge);
      Checks.requirePositive("deadLetterMaxCount", deadLetterMaxCount);
      Checks.requireNonNull("metrics", metrics);
      Checks.requirePositive("metricsInterval", metricsInterval);
      return new OutboxRelay(this);
    }
  }
}
