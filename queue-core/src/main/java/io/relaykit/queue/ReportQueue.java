package io.relaykit.queue;

import io.relaykit.internal.Checks;
import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleEvent.Stage;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.queue.QueueJournal.Removal;
import io.relaykit.retry.Backoff;
import java.time.DateTimeException;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A bounded, prioritized, persistent queue of {@link ReportEvent}s on their way to a server:
 * drained in batches, highest priority and oldest first, retried with backoff, dead-lettered when
 * out of attempts, deduplicated by event id, and recovered from its {@link QueueJournal} after a
 * restart. "Oldest" means first accepted: events are ordered by arrival (a sequence number taken
 * when the queue accepts an event, or at {@link #restore()} in the journal's append order), not by
 * their {@code enqueuedAt} timestamp, so a wall-clock step cannot reorder them.
 *
 * <p>Costs, for n queued events: enqueue, drain (per event) and ack (per id) are O(1) expected,
 * independent of n and of the dedupe window's size: a lookup in a hash index of the known ids and
 * a few list links, allocating only the event's {@link QueuedEvent} and a small entry. With a full
 * dedupe window an enqueue also forgets the oldest id; the id's lookup and that removal are the
 * two random memory accesses of an enqueue, and they overlap (outside the lock). Plus one journal
 * call per change; draining writes nothing. An event that waits for a retry or carries an expiry
 * adds O(log r) (r = such events) where it enters or leaves those orders. Evicting an event is
 * O(1), O(log r) if it is a retry. Only {@link #restore()} and the id listings are O(n). Memory:
 * under 100 bytes per known id (pending, in flight, dead, or remembered by the dedupe window)
 * beyond the id string, plus each pending or in-flight event's records.
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
 * LifecycleListener}, under the queue's lock; their details are built only when a listener is set.
 */
public final class ReportQueue {

  /*
   * Implementation notes. Every id the queue knows is in `index` (IdIndex): the ids of pending,
   * in-flight and dead events, which hold their Entry, and ids only remembered by the dedupe
   * window (acked, expired, purged), which hold nothing: an event's Entry and payload are garbage
   * as soon as it leaves. Age is the arrival sequence `seq`; an entry keeps it across retries.
   *
   * A pending entry of priority p is in exactly one of:
   *  - lanes[p].ready: an intrusive doubly-linked list in seq order. Fresh enqueues append at the
   *    tail (their seq is the largest yet), so it stays sorted at O(1); so do restored entries,
   *    which are appended in journal order before anything else;
   *  - lanes[p].due: retries whose time has come (a TreeSet by seq). A retry keeps its old seq, so
   *    it cannot be appended to the list; the drain takes the smaller seq of the two heads;
   *  - lanes[p].waiting (by seq) and `delayed` (by next attempt time): retries not yet due.
   * The oldest pending event of a lane (for eviction) is the smallest seq of the three heads. An
   * entry that can expire is also in `expiring` (by expiry). Comparator keys never change while an
   * entry is in a set: the event is replaced (rescheduled) only while in flight, in no set.
   * In-flight and dead entries sit in two more intrusive lists (drain order, death order), reusing
   * the same links. The hot path (a fresh event that never fails and never expires) touches no
   * TreeSet.
   *
   * The dedupe window is the index's ring of ids in first-seen order, trimmed from its head by
   * count and age without allocating. An id that leaves the window while its event is still
   * pending, in flight or dead stays in the index (still a duplicate); the journal forgets it once
   * the event leaves. With a full window, one enqueue costs two random accesses into the index's
   * table (the new id's lookup, the oldest id's removal); enqueue loads both slots before it
   * takes the lock (IdIndex.prefetch, a racy read-only peek), so the two cache misses overlap and
   * stay out of the critical section.
   */

  private static final Comparator<Entry> BY_SEQ = (a, b) -> Long.compare(a.seq, b.seq);
  private static final Comparator<Entry> BY_DUE =
      Comparator.<Entry, Instant>comparing(e -> e.event.nextAttemptAt())
          .thenComparingLong(e -> e.seq);
  private static final Comparator<Entry> BY_EXPIRY =
      Comparator.<Entry, Instant>comparing(e -> e.event.expiresAt()).thenComparingLong(e -> e.seq);

  private static final Priority[] HIGHEST_FIRST = {Priority.CRITICAL, Priority.NORMAL, Priority.LOW};

  private enum State {
    /** Pending and ready, in its lane's ready list. */
    READY,
    /** Pending, a retry whose time has come, in its lane's due set. */
    DUE,
    /** Pending, a retry whose time has not come, in {@code delayed} and its lane's waiting set. */
    WAITING,
    /** Drained, in the in-flight list. */
    INFLIGHT,
    /** Out of attempts or rejected, in the dead list. */
    DEAD,
    /** Left the queue (acked, expired, purged); the index keeps at most its id. */
    GONE
  }

  private static final class Entry {
    final String id;
    /** This entry's slot in {@code index}. */
    int ref;
    QueuedEvent event;
    long seq;
    int bytes;
    State state;
    /** Links of the one list the entry is in: its lane's ready list, in flight, or dead. */
    Entry prev;
    Entry next;
    String deadReason;

    Entry(String id) {
      this.id = id;
    }
  }

  /** An intrusive doubly-linked list of entries through {@code prev}/{@code next}. */
  private static final class EntryList {
    Entry head;
    Entry tail;
    int size;

    void addLast(Entry e) {
      e.prev = tail;
      e.next = null;
      if (tail == null) {
        head = e;
      } else {
        tail.next = e;
      }
      tail = e;
      size++;
    }

    void unlink(Entry e) {
      Entry p = e.prev;
      Entry n = e.next;
      if (p == null) {
        head = n;
      } else {
        p.next = n;
      }
      if (n == null) {
        tail = p;
      } else {
        n.prev = p;
      }
      e.prev = null;
      e.next = null;
      size--;
    }
  }

  /** The pending events of one priority. */
  private static final class Lane {
    final EntryList ready = new EntryList();
    final TreeSet<Entry> due = new TreeSet<>(BY_SEQ);
    final TreeSet<Entry> waiting = new TreeSet<>(BY_SEQ);
    int count;
    long bytes;

    /** The oldest ready entry (list head or due retry, whichever arrived first), or null. */
    Entry oldestReady() {
      Entry listed = ready.head;
      if (due.isEmpty()) {
        return listed;
      }
      Entry retry = due.first();
      return listed == null || retry.seq < listed.seq ? retry : listed;
    }

    /** The oldest pending entry, ready or waiting: the eviction order. */
    Entry oldest() {
      Entry oldest = oldestReady();
      if (!waiting.isEmpty()) {
        Entry w = waiting.first();
        if (oldest == null || w.seq < oldest.seq) {
          oldest = w;
        }
      }
      return oldest;
    }
  }

  private final InstantSource clock;
  private final QueueJournal journal;
  private final int capacity;
  private final long maxBytes;
  private final int batchSize;
  private final int maxAttempts;
  private final Backoff backoff;
  private final DropPolicy dropPolicy;
  private final long windowSeconds;
  private final int windowNanos;
  private final int dedupeMaxIds;
  private final LifecycleListener listener;
  private final boolean listening;
  private final MetricsListener metrics;
  private final boolean metering;
  private final String name;

  private final ReentrantLock lock = new ReentrantLock();
  private final IdIndex<Entry> index;
  private final Lane[] lanes = new Lane[Priority.values().length];
  private final EntryList inflight = new EntryList();
  private final EntryList dead = new EntryList();
  private final TreeSet<Entry> delayed = new TreeSet<>(BY_DUE);
  private final TreeSet<Entry> expiring = new TreeSet<>(BY_EXPIRY);
  /** Pending plus in-flight events. */
  private int live;
  private int readyCount;
  private long bytes;
  private long nextSeq;
  private long dropped;
  private long expired;
  private boolean used;
  /** Consumes {@link IdIndex#prefetch}'s loads so they are not optimized away; never read. */
  @SuppressWarnings("unused")
  private long prefetchSink;
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
    this.windowSeconds = b.dedupeWindow.getSeconds();
    this.windowNanos = b.dedupeWindow.getNano();
    this.dedupeMaxIds = b.dedupeMaxIds;
    this.listener = b.listener;
    this.listening = b.listenerSet;
    this.metrics = b.metrics;
    this.metering = b.metricsSet;
    this.name = b.name;
    // The id table is sized for the live events plus a full dedupe window, so the hot path never
    // rehashes it; capped so a huge configured bound does not cost memory up front.
    this.index = new IdIndex<>((int) Math.min((long) capacity + dedupeMaxIds, 1 << 18));
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
    // The id's lookup and, with a full window, the oldest id's removal are random accesses into a
    // large table: start both before taking the lock (a racy read, consumed under it).
    long prefetched = index.prefetch(event.eventId(), index.windowSize() >= dedupeMaxIds);
    lock.lock();
    try {
      prefetchSink ^= prefetched;
      used = true;
      Instant now = clock.instant();
      trimSeen(now);
      String id = event.eventId();
      if (index.find(id) != 0) {
        return EnqueueResult.rejected(EnqueueResult.Reason.DUPLICATE);
      }
      if (event.isExpiredAt(now)) {
        expired++;
        meterDrop("expired");
        if (listening) {
          emit(Stage.EXPIRED, id, now, "expired before it was queued (expiresAt "
              + event.expiresAt() + ")");
        }
        return EnqueueResult.rejected(EnqueueResult.Reason.EXPIRED);
      }
      int size = QueuedEvent.bytesOf(event.payload());
      if (size > maxBytes) {
        dropped++;
        meterDrop("rejected");
        if (listening) {
          emit(Stage.DROPPED, id, now, "too large: " + size + " bytes > maxBytes " + maxBytes);
        }
        return EnqueueResult.rejected(EnqueueResult.Reason.TOO_LARGE);
      }
      List<String> evicted = List.of();
      if (!fits(size)) {
        expireDue(now);
        if (!fits(size)) {
          evicted = evictFor(event, size, now);
          if (evicted == null) {
            dropped++;
            meterDrop("capacity");
            if (listening) {
              emit(Stage.DROPPED, id, now, "queue full (" + live + " events, " + bytes
                  + " bytes), policy " + dropPolicy);
            }
            return EnqueueResult.rejected(EnqueueResult.Reason.QUEUE_FULL);
          }
        }
      }
      QueuedEvent queuedEvent = QueuedEvent.accepted(event, now);
      ticket = journal.appendDeferringSync(queuedEvent);
      Entry e = new Entry(id);
      e.event = queuedEvent;
      e.seq = nextSeq++;
      e.bytes = size;
      e.ref = index.add(id, e, now.getEpochSecond(), now.getNano());
      live++;
      bytes += size;
      Lane lane = lanes[event.priority().ordinal()];
      lane.count++;
      lane.bytes += size;
      e.state = State.READY;
      lane.ready.addLast(e);
      readyCount++;
      if (event.expiresAt() != null) {
        expiring.add(e);
      }
      if (index.windowSize() > dedupeMaxIds) {
        // Trimmed by age at `now` above; the new id can only break the count bound.
        trimHead();
      }
      if (listening) {
        emit(Stage.ENQUEUED, id, now, event.priority().name());
      }
      result = EnqueueResult.ok(evicted);
      signal = readyCount >= batchSize;
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

  private boolean fits(long size) {
    return live < capacity && bytes + size <= maxBytes;
  }

  /**
   * Evicts pending events so that {@code incoming} fits, per the drop policy, and returns their
   * ids; returns null (evicting nothing) when the policy cannot make room.
   */
  private List<String> evictFor(ReportEvent incoming, int size, Instant now) {
    if (dropPolicy == DropPolicy.REJECT_NEW) {
      return null;
    }
    long needEvents = live + 1L - capacity;
    long needBytes = bytes + size - maxBytes;
    long candidateEvents = 0;
    long candidateBytes = 0;
    for (Priority p : Priority.values()) {
      if (dropPolicy == DropPolicy.DROP_LOWEST_PRIORITY && !incoming.priority().outranks(p)) {
        break;
      }
      candidateEvents += lanes[p.ordinal()].count;
      candidateBytes += lanes[p.ordinal()].bytes;
    }
    if (candidateEvents < needEvents || candidateBytes < needBytes) {
      return null;
    }
    List<String> evicted = new ArrayList<>(1);
    while (!fits(size)) {
      Entry victim = dropPolicy == DropPolicy.DROP_OLDEST ? oldestPending() : lowestPending();
      removePending(victim);
      live--;
      bytes -= victim.bytes;
      // A dropped event is not seen: forgotten here, and by the journal's DROPPED removal.
      index.drop(victim.ref);
      journal.remove(victim.id, Removal.DROPPED);
      dropped++;
      meterDrop("capacity");
      evicted.add(victim.id);
      if (listening) {
        emit(Stage.DROPPED, victim.id, now, "evicted (" + dropPolicy + ") for "
            + incoming.eventId() + " (" + incoming.priority() + ")");
      }
    }
    return evicted;
  }

  private Entry lowestPending() {
    for (Lane lane : lanes) {
      Entry oldest = lane.oldest();
      if (oldest != null) {
        return oldest;
      }
    }
    throw new IllegalStateException("no pending event to evict");
  }

  private Entry oldestPending() {
    Entry oldest = null;
    for (Lane lane : lanes) {
      Entry candidate = lane.oldest();
      if (candidate != null && (oldest == null || candidate.seq < oldest.seq)) {
        oldest = candidate;
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
      List<QueuedEvent> batch = new ArrayList<>(Math.min(batchSize, readyCount));
      int room = batchSize;
      for (Priority p : HIGHEST_FIRST) {
        Lane lane = lanes[p.ordinal()];
        while (room > 0) {
          Entry e = lane.oldestReady();
          if (e == null) {
            break;
          }
          if (e.state == State.READY) {
            lane.ready.unlink(e);
          } else {
            lane.due.remove(e);
          }
          readyCount--;
          lane.count--;
          lane.bytes -= e.bytes;
          if (e.event.expiresAt() != null) {
            expiring.remove(e);
          }
          e.state = State.INFLIGHT;
          inflight.addLast(e);
          batch.add(e.event);
          room--;
          if (listening) {
            emit(Stage.DELIVERED, e.id, at, "attempt " + (e.event.attempts() + 1));
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
      Instant now = listening ? clock.instant() : null;
      int acked = 0;
      for (String id : eventIds) {
        Entry e = entry(id);
        if (e == null || e.state != State.INFLIGHT) {
          continue;
        }
        inflight.unlink(e);
        live--;
        bytes -= e.bytes;
        journal.remove(id, Removal.ACKED);
        acked++;
        if (listening) {
          emit(Stage.ACKED, id, now, "after " + (e.event.attempts() + 1) + " attempt(s)");
        }
        leave(e);
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
        Entry e = entry(id);
        if (e == null || e.state != State.INFLIGHT) {
          continue;
        }
        inflight.unlink(e);
        int attempts = e.event.attempts() + 1;
        if (e.event.isExpiredAt(now)) {
          live--;
          bytes -= e.bytes;
          expire(e, now, listening ? "expired after " + attempts + " failed attempt(s)" : null);
          lapsed++;
        } else if (!retryable || attempts >= maxAttempts) {
          String reason = !retryable
              ? (deadReason == null || deadReason.isBlank() ? "rejected: not retryable"
                  : deadReason)
              : "attempts exhausted (" + attempts + " of " + maxAttempts + ")";
          live--;
          bytes -= e.bytes;
          e.event = e.event.rescheduled(attempts, e.event.nextAttemptAt());
          e.state = State.DEAD;
          e.deadReason = reason;
          dead.addLast(e);
          journal.deadLetter(id, attempts, reason);
          died++;
          if (listening) {
            emit(Stage.DEAD_LETTERED, id, now, reason);
          }
        } else {
          Duration delay = backoff.delay(attempts);
          if (delay.compareTo(minDelay) < 0) {
            delay = minDelay;
          }
          Instant next = plusSaturating(now, delay);
          e.event = e.event.rescheduled(attempts, next);
          journal.reschedule(id, attempts, next);
          requeue(e, now);
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
        Entry e = entry(id);
        if (e == null || e.state != State.DEAD) {
          continue;
        }
        dead.unlink(e);
        e.deadReason = null;
        journal.remove(id, Removal.PURGED);
        leave(e);
        purged++;
      }
      return purged;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Moves dead letters back to pending (an operator fixed the cause): ready now, attempts reset to
   * 0, same id, payload, priority and enqueue time, behind the events pending now; journaled (a
   * {@code CRITICAL} one durably before return, under the queue's lock), so a restart keeps them
   * pending. Emits {@code REPLAYED}. A dead letter comes back only while the queue has room
   * ({@code capacity} and {@code maxBytes}); the others stay dead letters. Ids that are not dead
   * letters are ignored.
   *
   * @return how many dead letters were replayed
   */
  public int replayDead(Collection<String> eventIds) {
    Checks.requireNonNull("eventIds", eventIds);
    lock.lock();
    try {
      Instant now = clock.instant();
      int replayed = 0;
      for (String id : eventIds) {
        Entry e = entry(id);
        if (e == null || e.state != State.DEAD || !fits(e.bytes)) {
          continue;
        }
        dead.unlink(e);
        e.deadReason = null;
        live++;
        bytes += e.bytes;
        e.event = e.event.rescheduled(0, now);
        e.seq = nextSeq++;
        // In the journal a replay is the dead letter's removal and a new append of the event
        // (same id and enqueue time, attempts 0): every journal already replays that pair.
        journal.remove(id, Removal.PURGED);
        journal.append(e.event);
        requeue(e, now);
        replayed++;
        if (listening) {
          emit(Stage.REPLAYED, id, now, "replayed from the dead letters");
        }
      }
      return replayed;
    } finally {
      lock.unlock();
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Restore

  /**
   * Loads the journal into this queue: pending events come back with their attempts and retry
   * times, events that were in flight are pending and ready now (at-least-once; the event id lets
   * the server drop the repeat), dead letters and the dedupe window come back too. Pending events
   * keep the journal's append order as their age. Events that expired meanwhile are discarded and
   * counted. Restored events are kept even beyond the capacity: a durable event is never dropped
   * by a restart.
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
      for (Map.Entry<String, Instant> seen : state.seen().entrySet()) {
        index.add(seen.getKey(), null, seen.getValue().getEpochSecond(), seen.getValue().getNano());
      }
      for (QueuedEvent event : state.pending()) {
        Entry e = restoredEntry(event);
        if (e == null) {
          continue;
        }
        if (event.isExpiredAt(now)) {
          expire(e, now, "expired while the queue was down");
          continue;
        }
        live++;
        bytes += e.bytes;
        Lane lane = lanes[event.priority().ordinal()];
        if (event.nextAttemptAt().isAfter(now)) {
          requeue(e, now);
        } else {
          // Restored in seq order before anything else: appending keeps the list sorted.
          lane.count++;
          lane.bytes += e.bytes;
          e.state = State.READY;
          lane.ready.addLast(e);
          readyCount++;
          if (event.expiresAt() != null) {
            expiring.add(e);
          }
        }
      }
      for (QueuedEvent event : state.dead()) {
        Entry e = restoredEntry(event);
        if (e == null) {
          continue;
        }
        e.state = State.DEAD;
        e.deadReason = state.deadReasons().getOrDefault(event.eventId(), "");
        dead.addLast(e);
      }
      trimSeen(now);
      return live;
    } finally {
      lock.unlock();
    }
  }

  /**
   * The entry for a restored event, seen at its enqueue time unless the journal's window already
   * holds it; null if the id is already pending or dead (a repeated record).
   */
  private Entry restoredEntry(QueuedEvent event) {
    String id = event.eventId();
    int ref = index.find(id);
    if (ref != 0 && index.value(ref) != null) {
      return null;
    }
    Entry e = new Entry(id);
    if (ref == 0) {
      e.ref = index.add(id, e, event.enqueuedAt().getEpochSecond(), event.enqueuedAt().getNano());
    } else {
      e.ref = ref;
      index.hold(ref, e);
    }
    e.event = event;
    e.seq = nextSeq++;
    e.bytes = event.payloadBytes();
    return e;
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
      return new QueueStats(live - inflight.size, inflight.size, index.windowSize(), dead.size,
          dropped, expired, bytes);
    } finally {
      lock.unlock();
    }
  }

  /**
   * How long the oldest pending event (ready or waiting for a retry) has been in the queue, by the
   * queue's clock (never negative); empty if nothing is pending. In-flight events do not count:
   * they are being delivered. The backlog's age for {@link io.relaykit.monitor.BacklogMonitor}.
   * O(1).
   */
  public Optional<Duration> oldestPendingAge() {
    lock.lock();
    try {
      Entry oldest = null;
      for (Lane lane : lanes) {
        Entry e = lane.oldest();
        if (e != null && (oldest == null || e.seq < oldest.seq)) {
          oldest = e;
        }
      }
      if (oldest == null) {
        return Optional.empty();
      }
      Duration age = Duration.between(oldest.event.enqueuedAt(), clock.instant());
      return Optional.of(age.isNegative() ? Duration.ZERO : age);
    } finally {
      lock.unlock();
    }
  }

  /** Ids of pending events, in drain order (ready and waiting retries mixed by age). O(n). */
  public List<String> pendingIds() {
    lock.lock();
    try {
      List<String> ids = new ArrayList<>(live - inflight.size);
      for (Priority p : HIGHEST_FIRST) {
        Lane lane = lanes[p.ordinal()];
        // Three runs sorted by seq: merge them.
        Entry listed = lane.ready.head;
        Iterator<Entry> dueIt = lane.due.iterator();
        Iterator<Entry> waitingIt = lane.waiting.iterator();
        Entry due = dueIt.hasNext() ? dueIt.next() : null;
        Entry waiting = waitingIt.hasNext() ? waitingIt.next() : null;
        while (listed != null || due != null || waiting != null) {
          Entry min = listed;
          if (due != null && (min == null || due.seq < min.seq)) {
            min = due;
          }
          if (waiting != null && (min == null || waiting.seq < min.seq)) {
            min = waiting;
          }
          ids.add(min.id);
          if (min == listed) {
            listed = listed.next;
          } else if (min == due) {
            due = dueIt.hasNext() ? dueIt.next() : null;
          } else {
            waiting = waitingIt.hasNext() ? waitingIt.next() : null;
          }
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
      return idsOf(inflight);
    } finally {
      lock.unlock();
    }
  }

  /** Ids of dead letters, in the order they died. O(n). */
  public List<String> deadIds() {
    lock.lock();
    try {
      return idsOf(dead);
    } finally {
      lock.unlock();
    }
  }

  /** Dead letters with their attempts, in the order they died. O(n). */
  public List<QueuedEvent> deadLetters() {
    lock.lock();
    try {
      List<QueuedEvent> events = new ArrayList<>(dead.size);
      for (Entry e = dead.head; e != null; e = e.next) {
        events.add(e.event);
      }
      return List.copyOf(events);
    } finally {
      lock.unlock();
    }
  }

  private static List<String> idsOf(EntryList list) {
    List<String> ids = new ArrayList<>(list.size);
    for (Entry e = list.head; e != null; e = e.next) {
      ids.add(e.id);
    }
    return ids;
  }

  /** Why a dead letter gave up; empty if {@code eventId} is not a dead letter. */
  public Optional<String> deadReason(String eventId) {
    lock.lock();
    try {
      Entry e = entry(eventId);
      return e != null && e.state == State.DEAD ? Optional.of(e.deadReason) : Optional.empty();
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
        Entry e = lane.oldestReady();
        if (e != null) {
          Instant at = e.event.nextAttemptAt();
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
   * time has come. O(1), plus O(log r) per retry that became due.
   */
  public int readyCount(Instant at) {
    Checks.requireNonNull("at", at);
    lock.lock();
    try {
      promoteDue(at);
      return readyCount;
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

  /** Puts a rescheduled (or restored, not yet due) entry back among the pending. */
  private void requeue(Entry e, Instant now) {
    Lane lane = lanes[e.event.priority().ordinal()];
    lane.count++;
    lane.bytes += e.bytes;
    if (e.event.nextAttemptAt().isAfter(now)) {
      e.state = State.WAITING;
      delayed.add(e);
      lane.waiting.add(e);
    } else {
      e.state = State.DUE;
      lane.due.add(e);
      readyCount++;
    }
    if (e.event.expiresAt() != null) {
      expiring.add(e);
    }
  }

  private void removePending(Entry e) {
    Lane lane = lanes[e.event.priority().ordinal()];
    switch (e.state) {
      case READY -> {
        lane.ready.unlink(e);
        readyCount--;
      }
      case DUE -> {
        lane.due.remove(e);
        readyCount--;
      }
      case WAITING -> {
        delayed.remove(e);
        lane.waiting.remove(e);
      }
      default -> throw new IllegalStateException("not pending: " + e.id + " " + e.state);
    }
    lane.count--;
    lane.bytes -= e.bytes;
    if (e.event.expiresAt() != null) {
      expiring.remove(e);
    }
  }

  private void promoteDue(Instant at) {
    while (!delayed.isEmpty() && !delayed.first().event.nextAttemptAt().isAfter(at)) {
      Entry e = delayed.pollFirst();
      Lane lane = lanes[e.event.priority().ordinal()];
      lane.waiting.remove(e);
      e.state = State.DUE;
      lane.due.add(e);
      readyCount++;
    }
  }

  private void expireDue(Instant at) {
    while (!expiring.isEmpty() && expiring.first().event.isExpiredAt(at)) {
      Entry e = expiring.first();
      removePending(e);
      live--;
      bytes -= e.bytes;
      expire(e, at, listening
          ? "expired at " + e.event.expiresAt() + " before it was sent" : null);
    }
  }

  /** Reports one lost event to the metrics listener, if one is set. */
  private void meterDrop(String reason) {
    if (metering) {
      MetricsListener.safely(metrics, m -> m.dropped(name, reason, 1));
    }
  }

  /** Records and reports an expired event that already left pending and in flight. */
  private void expire(Entry e, Instant now, String detail) {
    journal.remove(e.id, Removal.EXPIRED);
    expired++;
    meterDrop("expired");
    if (listening) {
      emit(Stage.EXPIRED, e.id, now, detail);
    }
    leave(e);
  }

  /**
   * An event left the queue for good (acked, expired, purged): its id stays seen while it is in
   * the dedupe window, else it is forgotten now, here and in the journal.
   */
  private void leave(Entry e) {
    e.state = State.GONE;
    if (!index.release(e.ref)) {
      journal.forget(e.id);
    }
  }

  /** The live or dead entry of {@code id}; null if it is unknown or only remembered. */
  private Entry entry(String id) {
    int ref = id == null ? 0 : index.find(id);
    return ref == 0 ? null : index.value(ref);
  }

  /** Trims the dedupe window to its count and age; amortized O(1), allocation-free. */
  private void trimSeen(Instant now) {
    long second = now.getEpochSecond();
    int nano = now.getNano();
    while (index.windowSize() > dedupeMaxIds
        || index.headOlderThan(second, nano, windowSeconds, windowNanos)) {
      trimHead();
    }
  }

  /**
   * Lets the window's oldest id go: forgotten here and in the journal if its event already left;
   * a pending, in-flight or dead event's id stays a duplicate, and the journal forgets it once the
   * event leaves.
   */
  private void trimHead() {
    String forgotten = index.trimHead();
    if (forgotten != null) {
      journal.forget(forgotten);
    }
  }

  private void emit(Stage stage, String id, Instant at, String detail) {
    LifecycleListener.safely(listener, new LifecycleEvent(stage, id, null, name, at, detail));
  }

  private static Instant plusSaturating(Instant t, Duration d) {
    try {
      return t.plus(d);
    } catch (ArithmeticException | DateTimeException e) {
      return Instant.MAX;
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
    private MetricsListener metrics = MetricsListener.noop();
    private boolean metricsSet;
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

    /**
     * Where lost events are counted: {@link MetricsListener#dropped} with this queue's {@link
     * #name}, reason {@code "capacity"} (evicted, or rejected as {@code QUEUE_FULL}), {@code
     * "rejected"} ({@code TOO_LARGE}) or {@code "expired"}, one call per event, under the queue's
     * lock (so it must be fast). Default: none. Gauges come from {@link ReportQueue#stats()} and
     * {@link ReportQueue#oldestPendingAge()}, sampled by the caller.
     */
    public Builder metrics(MetricsListener metrics) {
      this.metrics = metrics;
      this.metricsSet = true;
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
      Checks.requireNonNull("metrics", metrics);
      Checks.requireNonBlank("name", name);
      return new ReportQueue(this);
    }
  }
}
