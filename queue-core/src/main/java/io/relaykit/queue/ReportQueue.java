package io.relaykit.queue;

import io.relaykit.internal.Checks;
import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleEvent.Stage;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.queue.QueueJournal.Removal;
import io.relaykit.retry.Backoff;
import java.time.DateTimeException;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A bounded, prioritized, persistent queue of {@link ReportEvent}s on their way to a server:
 * drained in batches, highest priority and oldest first, retried with backoff, dead-lettered when
 * out of attempts, deduplicated by event id, and recovered from its {@link QueueJournal} after a
 * restart. Every operation costs O(log n) in the number of queued events (O(1) amortized for the
 * dedupe window), plus one journal call per change; draining writes nothing. Only {@link
 * #restore()} and the id listings are O(n).
 *
 * <p>Thread-safe: producers may enqueue from many threads while a sender drains, acks and nacks.
 * One lock guards the state and orders the journal calls; a {@code CRITICAL} enqueue waits for its
 * journal sync after releasing it, so concurrent critical producers can share a sync.
 *
 * <pre>{@code
 * ReportQueue queue = ReportQueue.builder()
 *     .journal(FileJournal.builder(Path.of("reports")).build())
 *     .capacity(10_000)
 *     .build();
 * queue.restore();
 * queue.enqueue(new ReportEvent(UUID.randomUUID().toString(), "page.viewed", "{...}"));
 * }</pre>
 *
 * <p>Capacity counts pending and in-flight events (and their payload bytes); dead letters are held
 * apart, outside the capacity, until {@link #purgeDead purged}. Lifecycle steps (ENQUEUED,
 * DELIVERED, ACKED, RETRIED, DEAD_LETTERED, DROPPED, EXPIRED) go to the configured {@link
 * LifecycleListener}, under the queue's lock.
 */
public final class ReportQueue {

  /*
   * Implementation notes. Each live event has one Entry, found by id in `live` (pending and in
   * flight) or `dead`. A pending entry sits in lanes[priority].queued (ordered by enqueue time, then
   * sequence: the eviction order) and in exactly one of lanes[priority].ready (same order: the drain
   * order) or `delayed` (ordered by next attempt time: the retry heap); if it can expire it is also
   * in `expiring`. Sets are TreeSets so an arbitrary entry is removed in O(log n) when evicted or
   * expired. A comparator's keys never change while the entry is in that set: an entry leaves
   * every set when drained and is rescheduled only while in flight. The dedupe window `seen` is an
   * insertion-ordered map trimmed from its head by count and age; an id trimmed while its event is
   * still live is flagged so the journal forgets it once the event leaves.
   */

  private static final Comparator<Entry> BY_AGE =
      Comparator.<Entry, Instant>comparing(e -> e.event.enqueuedAt()).thenComparingLong(e -> e.seq);
  private static final Comparator<Entry> BY_DUE =
      Comparator.<Entry, Instant>comparing(e -> e.event.nextAttemptAt())
          .thenComparingLong(e -> e.seq);
  private static final Comparator<Entry> BY_EXPIRY =
      Comparator.<Entry, Instant>comparing(e -> e.event.expiresAt()).thenComparingLong(e -> e.seq);

  private static final Priority[] HIGHEST_FIRST = {Priority.CRITICAL, Priority.NORMAL, Priority.LOW};

  private enum State { READY, DELAYED, INFLIGHT, DEAD }

  private static final class Entry {
    QueuedEvent event;
    final long seq;
    final int bytes;
    State state;
    /** The dedupe window let go of this id while the event was live. */
    boolean seenTrimmed;

    Entry(QueuedEvent event, long seq) {
      this(event, seq, event.payloadBytes());
    }

    Entry(QueuedEvent event, long seq, int bytes) {
      this.event = event;
      this.seq = seq;
      this.bytes = bytes;
    }
  }

  /** The pending events of one priority. */
  private static final class Lane {
    /** Ready and delayed, oldest first: the eviction order. */
    final TreeSet<Entry> queued = new TreeSet<>(BY_AGE);
    /** Ready only, oldest first: the drain order. */
    final TreeSet<Entry> ready = new TreeSet<>(BY_AGE);
    long bytes;
  }

  private final InstantSource clock;
  private final QueueJournal journal;
  private final int capacity;
  private final long maxBytes;
  private final int batchSize;
  private final int maxAttempts;
  private final Backoff backoff;
  private final DropPolicy dropPolicy;
  private final Duration dedupeWindow;
  private final int dedupeMaxIds;
  private final LifecycleListener listener;
  private final boolean listening;
  private final String name;

  private final ReentrantLock lock = new ReentrantLock();
  private final Map<String, Entry> live;
  private final Map<String, Entry> inflight;
  private final Map<String, Entry> dead = new LinkedHashMap<>();
  private final Map<String, String> deadReasons = new HashMap<>();
  private final LinkedHashMap<String, Instant> seen;
  private final Lane[] lanes = new Lane[Priority.values().length];
  private final TreeSet<Entry> delayed = new TreeSet<>(BY_DUE);
  private final TreeSet<Entry> expiring = new TreeSet<>(BY_EXPIRY);
  private long bytes;
  private long nextSeq;
  private long dropped;
  private long expired;
  private boolean used;
  private volatile Runnable batchReadySignal = () -> { };

  private ReportQueue(Builder b) {
    this.clock = b.clock;
    this.journal = b.journal != null ? b.journal : NoJournal.INSTANCE;
    this.capacity = b.capacity;
    this.maxBytes = b.maxBytes;
    this.batchSize = b.batchSize;
    this.maxAttempts = b.maxAttempts;
    this.backoff = b.backoff;
    this.dropPolicy = b.dropPolicy;
    this.dedupeWindow = b.dedupeWindow;
    this.dedupeMaxIds = b.dedupeMaxIds;
    this.listener = b.listener;
    this.listening = b.listenerSet;
    this.name = b.name;
    // Presized where the bound is known, so the hot path never rehashes; capped so a huge
    // configured bound does not cost memory up front.
    this.live = new HashMap<>(mapCapacity(capacity));
    this.inflight = new LinkedHashMap<>(mapCapacity(Math.min(capacity, batchSize * 4)));
    this.seen = new LinkedHashMap<>(mapCapacity(dedupeMaxIds));
    for (int i = 0; i < lanes.length; i++) {
      lanes[i] = new Lane();
    }
  }

  /** A builder with the defaults listed on each setter. */
  public static Builder builder() {
    return new Builder();
  }

  // ---------------------------------------------------------------------------------------------
  // Enqueue

  /**
   * Offers an event. Accepted events are journaled (durably before return when {@code CRITICAL})
   * and their id is remembered for the dedupe window. A full queue applies the drop policy; an
   * evicted event is journaled as dropped, reported, and forgotten.
   *
   * @throws IllegalArgumentException if {@code event} is null
   * @throws JournalException if the journal cannot record the event (it is then not queued)
   */
  public EnqueueResult enqueue(ReportEvent event) {
    Checks.requireNonNull("event", event);
    long ticket;
    boolean critical = event.priority() == Priority.CRITICAL;
    EnqueueResult result;
    boolean signal;
    lock.lock();
    try {
      used = true;
      Instant now = clock.instant();
      trimSeen(now);
      String id = event.eventId();
      if (live.containsKey(id) || dead.containsKey(id) || seen.containsKey(id)) {
        return EnqueueResult.rejected(EnqueueResult.Reason.DUPLICATE);
      }
      if (event.isExpiredAt(now)) {
        expired++;
        emit(Stage.EXPIRED, id, now, "expired before it was queued (expiresAt " + event.expiresAt()
            + ")");
        return EnqueueResult.rejected(EnqueueResult.Reason.EXPIRED);
      }
      QueuedEvent queuedEvent = QueuedEvent.accepted(event, now);
      int size = queuedEvent.payloadBytes();
      if (size > maxBytes) {
        dropped++;
        emit(Stage.DROPPED, id, now, "too large: " + size + " bytes > maxBytes " + maxBytes);
        return EnqueueResult.rejected(EnqueueResult.Reason.TOO_LARGE);
      }
      List<String> evicted = List.of();
      if (!fits(1, size)) {
        expireDue(now);
        if (!fits(1, size)) {
          evicted = evictFor(queuedEvent, size, now);
          if (evicted == null) {
            dropped++;
            emit(Stage.DROPPED, id, now, "queue full (" + live.size() + " events, " + bytes
                + " bytes), policy " + dropPolicy);
            return EnqueueResult.rejected(EnqueueResult.Reason.QUEUE_FULL);
          }
        }
      }
      ticket = journal.appendDeferringSync(queuedEvent);
      Entry entry = new Entry(queuedEvent, nextSeq++, size);
      live.put(id, entry);
      bytes += entry.bytes;
      enqueuePending(entry, now);
      seen.put(id, now);
      if (seen.size() > dedupeMaxIds) {
        // Trimmed by age at `now` above; the new id can only break the count bound.
        trimSeen(now);
      }
      emit(Stage.ENQUEUED, id, now, queuedEvent.priority().name());
      result = EnqueueResult.ok(evicted);
      signal = readyCountLocked() >= batchSize;
    } finally {
      lock.unlock();
    }
    if (critical) {
      journal.awaitDurable(ticket);
    }
    if (signal) {
      batchReadySignal.run();
    }
    return result;
  }

  /** A HashMap capacity holding {@code entries} without a resize, capped at 2^17 up front. */
  private static int mapCapacity(int entries) {
    int bounded = Math.min(entries, 1 << 17);
    return (int) Math.min(1L << 30, bounded * 4L / 3 + 1);
  }

  private boolean fits(int events, long size) {
    return live.size() + events <= capacity && bytes + size <= maxBytes;
  }

  /**
   * Evicts pending events so that {@code incoming} fits, per the drop policy, and returns their
   * ids; returns null (evicting nothing) when the policy cannot make room.
   */
  private List<String> evictFor(QueuedEvent incoming, int size, Instant now) {
    if (dropPolicy == DropPolicy.REJECT_NEW) {
      return null;
    }
    long needEvents = live.size() + 1L - capacity;
    long needBytes = bytes + size - maxBytes;
    long candidateEvents = 0;
    long candidateBytes = 0;
    for (Priority p : Priority.values()) {
      if (dropPolicy == DropPolicy.DROP_LOWEST_PRIORITY && !incoming.priority().outranks(p)) {
        break;
      }
      candidateEvents += lanes[p.ordinal()].queued.size();
      candidateBytes += lanes[p.ordinal()].bytes;
    }
    if (candidateEvents < needEvents || candidateBytes < needBytes) {
      return null;
    }
    List<String> evicted = new ArrayList<>(1);
    while (!fits(1, size)) {
      Entry victim = dropPolicy == DropPolicy.DROP_OLDEST ? oldestPending() : lowestPending();
      removePending(victim);
      live.remove(victim.event.eventId());
      bytes -= victim.bytes;
      seen.remove(victim.event.eventId());
      journal.remove(victim.event.eventId(), Removal.DROPPED);
      dropped++;
      evicted.add(victim.event.eventId());
      emit(Stage.DROPPED, victim.event.eventId(), now, "evicted (" + dropPolicy + ") for "
          + incoming.eventId() + " (" + incoming.priority() + ")");
    }
    return evicted;
  }

  private Entry lowestPending() {
    for (Lane lane : lanes) {
      if (!lane.queued.isEmpty()) {
        return lane.queued.first();
      }
    }
    throw new IllegalStateException("no pending event to evict");
  }

  private Entry oldestPending() {
    Entry oldest = null;
    for (Lane lane : lanes) {
      if (!lane.queued.isEmpty()
          && (oldest == null || BY_AGE.compare(lane.queued.first(), oldest) < 0)) {
        oldest = lane.queued.first();
      }
    }
    if (oldest == null) {
      throw new IllegalStateException("no pending event to evict");
    }
    return oldest;
  }

  // ---------------------------------------------------------------------------------------------
  // Drain, ack, nack

  /** {@link #drainBatch(Instant)} at the clock's current time. */
  public List<QueuedEvent> drainBatch() {
    return drainBatch(clock.instant());
  }

  /**
   * Moves up to {@code batchSize} events that are ready at {@code at} to in flight and returns
   * them: highest priority first, oldest first within a priority. Events whose retry time has not
   * come stay behind without blocking others; expired events are discarded, counted and reported,
   * never returned. Writes nothing to the journal.
   *
   * @throws IllegalArgumentException if {@code at} is null
   */
  public List<QueuedEvent> drainBatch(Instant at) {
    Checks.requireNonNull("at", at);
    lock.lock();
    try {
      used = true;
      trimSeen(at);
      expireDue(at);
      promoteDue(at);
      List<QueuedEvent> batch = new ArrayList<>(Math.min(batchSize, live.size()));
      for (Priority p : HIGHEST_FIRST) {
        TreeSet<Entry> set = lanes[p.ordinal()].ready;
        while (batch.size() < batchSize && !set.isEmpty()) {
          Entry e = set.pollFirst();
          lanes[p.ordinal()].queued.remove(e);
          lanes[p.ordinal()].bytes -= e.bytes;
          if (e.event.expiresAt() != null) {
            expiring.remove(e);
          }
          e.state = State.INFLIGHT;
          inflight.put(e.event.eventId(), e);
          batch.add(e.event);
          if (listening) {
            emit(Stage.DELIVERED, e.event.eventId(), at, "attempt " + (e.event.attempts() + 1));
          }
        }
      }
      return batch;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Acknowledges in-flight events: they leave the queue for good and their ids stay seen for the
   * dedupe window. Ids that are not in flight are ignored.
   *
   * @return how many in-flight events were acknowledged
   * @throws IllegalArgumentException if {@code eventIds} is null
   */
  public int ack(Collection<String> eventIds) {
    Checks.requireNonNull("eventIds", eventIds);
    lock.lock();
    try {
      Instant now = clock.instant();
      int acked = 0;
      for (String id : eventIds) {
        Entry e = id == null ? null : inflight.remove(id);
        if (e == null) {
          continue;
        }
        live.remove(id);
        bytes -= e.bytes;
        journal.remove(id, Removal.ACKED);
        forgetIfTrimmed(e);
        acked++;
        if (listening) {
          emit(Stage.ACKED, id, now, "after " + (e.event.attempts() + 1) + " attempt(s)");
        }
      }
      return acked;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Reports failed delivery of in-flight events. A retryable event with attempts left is requeued
   * with {@code attempts + 1}, not before {@code now + backoff(attempts + 1)}; otherwise it becomes
   * a dead letter. Ids that are not in flight are ignored.
   *
   * @throws IllegalArgumentException if {@code eventIds} is null
   */
  public NackResult nack(Collection<String> eventIds, boolean retryable) {
    return nack(eventIds, retryable, Duration.ZERO,
        retryable ? null : "rejected: not retryable");
  }

  /**
   * Like {@link #nack(Collection, boolean)} with a floor under the retry delay (a server's
   * {@code Retry-After}) and the reason recorded for any event that becomes a dead letter.
   *
   * @param minDelay the retry waits at least this long, even if the backoff is shorter
   * @param deadReason why a non-retryable event gave up; null for a generic reason
   * @throws IllegalArgumentException if {@code eventIds} or {@code minDelay} is null, or {@code
   *     minDelay} is negative
   */
  public NackResult nack(
      Collection<String> eventIds, boolean retryable, Duration minDelay, String deadReason) {
    Checks.requireNonNull("eventIds", eventIds);
    Checks.requireNonNull("minDelay", minDelay);
    if (minDelay.isNegative()) {
      throw new IllegalArgumentException("minDelay must not be negative, was " + minDelay);
    }
    lock.lock();
    try {
      Instant now = clock.instant();
      int requeued = 0;
      int died = 0;
      int lapsed = 0;
      for (String id : eventIds) {
        Entry e = id == null ? null : inflight.remove(id);
        if (e == null) {
          continue;
        }
        int attempts = e.event.attempts() + 1;
        if (e.event.isExpiredAt(now)) {
          live.remove(id);
          bytes -= e.bytes;
          expire(e, now, "expired after " + attempts + " failed attempt(s)");
          lapsed++;
        } else if (!retryable || attempts >= maxAttempts) {
          String reason = !retryable
              ? (deadReason == null ? "rejected: not retryable" : deadReason)
              : "attempts exhausted (" + attempts + " of " + maxAttempts + ")";
          live.remove(id);
          bytes -= e.bytes;
          e.event = e.event.rescheduled(attempts, e.event.nextAttemptAt());
          e.state = State.DEAD;
          dead.put(id, e);
          deadReasons.put(id, reason);
          journal.deadLetter(id, attempts, reason);
          died++;
          emit(Stage.DEAD_LETTERED, id, now, reason);
        } else {
          Duration delay = backoff.delay(attempts);
          if (delay.compareTo(minDelay) < 0) {
            delay = minDelay;
          }
          Instant next = plusSaturating(now, delay);
          e.event = e.event.rescheduled(attempts, next);
          journal.reschedule(id, attempts, next);
          enqueuePending(e, now);
          requeued++;
          if (listening) {
            emit(Stage.RETRIED, id, now, "attempt " + attempts + " failed; next at " + next);
          }
        }
      }
      return new NackResult(requeued, died, lapsed);
    } finally {
      lock.unlock();
    }
  }

  /**
   * Removes dead letters for good (an operator decided); their ids stay seen for the dedupe
   * window. Ids that are not dead letters are ignored.
   *
   * @return how many dead letters were removed
   */
  public int purgeDead(Collection<String> eventIds) {
    Checks.requireNonNull("eventIds", eventIds);
    lock.lock();
    try {
      int purged = 0;
      for (String id : eventIds) {
        Entry e = id == null ? null : dead.remove(id);
        if (e != null) {
          deadReasons.remove(id);
          journal.remove(id, Removal.PURGED);
          forgetIfTrimmed(e);
          purged++;
        }
      }
      return purged;
    } finally {
      lock.unlock();
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Restore

  /**
   * Loads the journal into this queue: pending events come back with their attempts and retry
   * times, events that were in flight are pending and ready now (at-least-once; the event id lets
   * the server drop the repeat), dead letters and the dedupe window come back too. Events that
   * expired meanwhile are discarded and counted. Restored events are kept even beyond the
   * capacity: a durable event is never dropped by a restart.
   *
   * @return the number of pending events after the restore
   * @throws IllegalStateException if this queue was already used or restored
   * @throws JournalException if the journal cannot be read
   */
  public int restore() {
    lock.lock();
    try {
      if (used) {
        throw new IllegalStateException(
            "restore() must be called once, before the queue is used");
      }
      used = true;
      JournalState state = journal.load();
      Instant now = clock.instant();
      seen.putAll(state.seen());
      for (QueuedEvent event : state.pending()) {
        if (live.containsKey(event.eventId())) {
          continue;
        }
        Entry e = new Entry(event, nextSeq++);
        seen.putIfAbsent(event.eventId(), event.enqueuedAt());
        if (event.isExpiredAt(now)) {
          expire(e, now, "expired while the queue was down");
          continue;
        }
        live.put(event.eventId(), e);
        bytes += e.bytes;
        enqueuePending(e, now);
      }
      for (QueuedEvent event : state.dead()) {
        Entry e = new Entry(event, nextSeq++);
        e.state = State.DEAD;
        dead.put(event.eventId(), e);
        deadReasons.put(event.eventId(), state.deadReasons().getOrDefault(event.eventId(), ""));
        seen.putIfAbsent(event.eventId(), event.enqueuedAt());
      }
      trimSeen(now);
      return live.size();
    } finally {
      lock.unlock();
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Views

  /**
   * Counts, as one consistent snapshot. The dedupe window is trimmed to the clock's time first, so
   * {@code seen} counts only ids still in it.
   */
  public QueueStats stats() {
    lock.lock();
    try {
      trimSeen(clock.instant());
      return new QueueStats(live.size() - inflight.size(), inflight.size(), seen.size(),
          dead.size(), dropped, expired, bytes);
    } finally {
      lock.unlock();
    }
  }

  /** Ids of pending events, in drain order (ready and waiting retries mixed by age). O(n). */
  public List<String> pendingIds() {
    lock.lock();
    try {
      List<String> ids = new ArrayList<>(live.size() - inflight.size());
      for (Priority p : HIGHEST_FIRST) {
        for (Entry e : lanes[p.ordinal()].queued) {
          ids.add(e.event.eventId());
        }
      }
      return ids;
    } finally {
      lock.unlock();
    }
  }

  /** Ids of in-flight events, in the order they were drained. O(n). */
  public List<String> inflightIds() {
    lock.lock();
    try {
      return new ArrayList<>(inflight.keySet());
    } finally {
      lock.unlock();
    }
  }

  /** Ids of dead letters, in the order they died. O(n). */
  public List<String> deadIds() {
    lock.lock();
    try {
      return new ArrayList<>(dead.keySet());
    } finally {
      lock.unlock();
    }
  }

  /** Dead letters with their attempts, in the order they died. O(n). */
  public List<QueuedEvent> deadLetters() {
    lock.lock();
    try {
      return dead.values().stream().map(e -> e.event).toList();
    } finally {
      lock.unlock();
    }
  }

  /** Why a dead letter gave up; empty if {@code eventId} is not a dead letter. */
  public Optional<String> deadReason(String eventId) {
    lock.lock();
    try {
      return Optional.ofNullable(deadReasons.get(eventId));
    } finally {
      lock.unlock();
    }
  }

  /**
   * When the next drain can return something: an instant not after now if an event is ready,
   * else the earliest retry time; empty if nothing is pending. O(1).
   */
  public Optional<Instant> nextReadyAt() {
    lock.lock();
    try {
      Instant earliest = null;
      for (Lane lane : lanes) {
        if (!lane.ready.isEmpty()) {
          Instant at = lane.ready.first().event.nextAttemptAt();
          earliest = earliest == null || at.isBefore(earliest) ? at : earliest;
        }
      }
      if (earliest == null && !delayed.isEmpty()) {
        earliest = delayed.first().event.nextAttemptAt();
      }
      return Optional.ofNullable(earliest);
    } finally {
      lock.unlock();
    }
  }

  /**
   * How many events a drain at {@code at} could return (before expiry), counting retries whose
   * time has come. O(log n) per retry that became due.
   */
  public int readyCount(Instant at) {
    Checks.requireNonNull("at", at);
    lock.lock();
    try {
      promoteDue(at);
      return readyCountLocked();
    } finally {
      lock.unlock();
    }
  }

  /** The most events one {@link #drainBatch} returns. */
  public int batchSize() {
    return batchSize;
  }

  /**
   * Makes every change recorded so far durable (delegates to the journal, outside the queue's
   * lock, so producers are not held up by the sync).
   */
  public void flush() {
    journal.flush();
  }

  /**
   * Installs a callback run (outside the lock, on the enqueuing thread) whenever an enqueue leaves
   * a full batch ready; a {@link ReportDispatcher} uses it to wake up. Must be fast.
   */
  void onBatchReady(Runnable signal) {
    this.batchReadySignal = signal == null ? () -> { } : signal;
  }

  // ---------------------------------------------------------------------------------------------
  // Internals (lock held)

  private int readyCountLocked() {
    int n = 0;
    for (Lane lane : lanes) {
      n += lane.ready.size();
    }
    return n;
  }

  private void enqueuePending(Entry e, Instant now) {
    int p = e.event.priority().ordinal();
    lanes[p].queued.add(e);
    lanes[p].bytes += e.bytes;
    if (e.event.nextAttemptAt().isAfter(now)) {
      e.state = State.DELAYED;
      delayed.add(e);
    } else {
      e.state = State.READY;
      lanes[p].ready.add(e);
    }
    if (e.event.expiresAt() != null) {
      expiring.add(e);
    }
  }

  private void removePending(Entry e) {
    int p = e.event.priority().ordinal();
    lanes[p].queued.remove(e);
    lanes[p].bytes -= e.bytes;
    if (e.state == State.DELAYED) {
      delayed.remove(e);
    } else {
      lanes[p].ready.remove(e);
    }
    if (e.event.expiresAt() != null) {
      expiring.remove(e);
    }
  }

  private void promoteDue(Instant at) {
    while (!delayed.isEmpty() && !delayed.first().event.nextAttemptAt().isAfter(at)) {
      Entry e = delayed.pollFirst();
      e.state = State.READY;
      lanes[e.event.priority().ordinal()].ready.add(e);
    }
  }

  private void expireDue(Instant at) {
    while (!expiring.isEmpty() && expiring.first().event.isExpiredAt(at)) {
      Entry e = expiring.first();
      removePending(e);
      live.remove(e.event.eventId());
      bytes -= e.bytes;
      expire(e, at, "expired at " + e.event.expiresAt() + " before it was sent");
    }
  }

  private void expire(Entry e, Instant now, String detail) {
    journal.remove(e.event.eventId(), Removal.EXPIRED);
    forgetIfTrimmed(e);
    expired++;
    emit(Stage.EXPIRED, e.event.eventId(), now, detail);
  }

  private void forgetIfTrimmed(Entry e) {
    if (e.seenTrimmed) {
      journal.forget(e.event.eventId());
    }
  }

  /** Trims the dedupe window to its count and age; amortized O(1). */
  private void trimSeen(Instant now) {
    Instant horizon = minusSaturating(now, dedupeWindow);
    Iterator<Map.Entry<String, Instant>> it = seen.entrySet().iterator();
    while (it.hasNext()) {
      Map.Entry<String, Instant> oldest = it.next();
      if (seen.size() <= dedupeMaxIds && oldest.getValue().isAfter(horizon)) {
        return;
      }
      it.remove();
      String id = oldest.getKey();
      Entry e = live.get(id);
      if (e == null) {
        e = dead.get(id);
      }
      if (e != null) {
        e.seenTrimmed = true;
      } else {
        journal.forget(id);
      }
    }
  }

  private void emit(Stage stage, String id, Instant at, String detail) {
    if (listening) {
      LifecycleListener.safely(listener, new LifecycleEvent(stage, id, null, name, at, detail));
    }
  }


  private static Instant plusSaturating(Instant t, Duration d) {
    try {
      return t.plus(d);
    } catch (ArithmeticException | DateTimeException e) {
      return Instant.MAX;
    }
  }

  private static Instant minusSaturating(Instant t, Duration d) {
    try {
      return t.minus(d);
    } catch (ArithmeticException | DateTimeException e) {
      return Instant.MIN;
    }
  }

  @Override
  public String toString() {
    QueueStats s = stats();
    return "ReportQueue[" + name + ", pending=" + s.pending() + ", inflight=" + s.inflight()
        + ", dead=" + s.deadLetters() + "]";
  }

  // ---------------------------------------------------------------------------------------------

  /**
   * Configuration for a {@link ReportQueue}. Setters record values; {@link #build()} validates
   * them all and names the first bad field and value.
   */
  public static final class Builder {
    private InstantSource clock = InstantSource.system();
    private QueueJournal journal;
    private int capacity = 100;
    private long maxBytes = Long.MAX_VALUE;
    private int batchSize = 20;
    private int maxAttempts = 5;
    private Backoff backoff = Backoff.exponential(Duration.ofSeconds(1));
    private DropPolicy dropPolicy = DropPolicy.DROP_LOWEST_PRIORITY;
    private Duration dedupeWindow = Duration.ofHours(24);
    private int dedupeMaxIds = 100_000;
    private LifecycleListener listener = LifecycleListener.noop();
    private boolean listenerSet;
    private String name = "report-queue";

    private Builder() {
    }

    /** The time source for enqueue times, retries, expiry and the dedupe window. Default: system. */
    public Builder clock(InstantSource clock) {
      this.clock = clock;
      return this;
    }

    /**
     * Where changes are recorded. Default: none (memory only): nothing is recorded, so {@link
     * ReportQueue#restore()} finds an empty queue. Use {@link InMemoryJournal} to simulate
     * restarts in memory.
     */
    public Builder journal(QueueJournal journal) {
      this.journal = journal;
      return this;
    }

    /** Most pending plus in-flight events. Default 100. */
    public Builder capacity(int capacity) {
      this.capacity = capacity;
      return this;
    }

    /** Most UTF-8 payload bytes of pending plus in-flight events. Default unlimited. */
    public Builder maxBytes(long maxBytes) {
      this.maxBytes = maxBytes;
      return this;
    }

    /** Most events one drain returns. Default 20. */
    public Builder batchSize(int batchSize) {
      this.batchSize = batchSize;
      return this;
    }

    /** Delivery attempts before an event becomes a dead letter. Default 5. */
    public Builder maxAttempts(int maxAttempts) {
      this.maxAttempts = maxAttempts;
      return this;
    }

    /** The wait before each retry. Default: exponential from 1 s, factor 2, no cap, no jitter. */
    public Builder backoff(Backoff backoff) {
      this.backoff = backoff;
      return this;
    }

    /** What a full queue does. Default {@link DropPolicy#DROP_LOWEST_PRIORITY}. */
    public Builder dropPolicy(DropPolicy dropPolicy) {
      this.dropPolicy = dropPolicy;
      return this;
    }

    /**
     * How long and how many event ids stay seen for deduplication, whichever bound is hit first.
     * Default 24 h, 100 000 ids.
     */
    public Builder dedupeWindow(Duration window, int maxIds) {
      this.dedupeWindow = window;
      this.dedupeMaxIds = maxIds;
      return this;
    }

    /** Receives every lifecycle step. Default: none. */
    public Builder listener(LifecycleListener listener) {
      this.listener = listener;
      this.listenerSet = true;
      return this;
    }

    /** The {@code where} of lifecycle events. Default {@code "report-queue"}. */
    public Builder name(String name) {
      this.name = name;
      return this;
    }

    /**
     * A queue with this configuration. It starts empty: call {@link ReportQueue#restore()} to
     * load what the journal holds.
     *
     * @throws IllegalArgumentException naming the field and value when a setting is invalid
     */
    public ReportQueue build() {
      Checks.requireNonNull("clock", clock);
      Checks.requirePositive("capacity", capacity);
      Checks.requirePositive("maxBytes", maxBytes);
      Checks.requirePositive("batchSize", batchSize);
      Checks.requirePositive("maxAttempts", maxAttempts);
      Checks.requireNonNull("backoff", backoff);
      Checks.requireNonNull("dropPolicy", dropPolicy);
      Checks.requirePositive("dedupeWindow", dedupeWindow);
      Checks.requirePositive("dedupeMaxIds", dedupeMaxIds);
      Checks.requireNonNull("listener", listener);
      Checks.requireNonBlank("name", name);
      return new ReportQueue(this);
    }
  }
}
