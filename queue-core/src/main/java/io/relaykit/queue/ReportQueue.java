package io.relaykit.queue;

import io.relaykit.internal.Checks;
import io.relaykit.internal.Utf8;
import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleEvent.Stage;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.queue.QueueJournal.Change;
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
 * apart, outside the capacity, until {@link #purgeDead purged}, within bounds of their own ({@link
 * Builder#deadLetters}). By default nothing is kept longer than 7 days ({@link Builder#maxAge}). Lifecycle steps (ENQUEUED,
 * DELIVERED, ACKED, RETRIED, DEAD_LETTERED, DROPPED, EXPIRED) go to the configured {@link
 * LifecycleListener}, under the queue's lock; their details are built only when a listener is set.
 */
public final class ReportQueue {

  private static final System.Logger LOG = System.getLogger(ReportQueue.class.getName());

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
   *
   * Journal first. Every operation calls the journal before it changes anything here, and changes
   * the in-memory state only after the journal call returned; no code between a journal call and
   * the state change it stands for can fail. If the call throws, the queue is exactly as it was
   * before the call and the caller gets a JournalException (JournalFullException for a full
   * journal) naming the queue and the operation, with the journal's outcome (NOT_RECORDED or
   * UNKNOWN). Where one change of this state takes several records, they are one
   * recordAtomically call, ordered so that a backend that falls back to recording them one by one
   * loses nothing in a crash half way: an enqueue and the evictions it causes (the new event
   * first); an ack, expiry or purge of an id that already left the dedupe window, and its forget;
   * a dead letter and the oldest dead letters it pushes out. A replay of a dead letter is a single
   * append (the journal's replay rule). ack, nack and purgeDead make one change for all their ids
   * (all or none; a retry with the same ids finishes the job, as each ignores ids no longer in the
   * state it expects); replayDead makes one change per id (the ids before a failure are done).
   * Housekeeping follows the same rule but does not fail the operation that triggers it: an id
   * whose forget fails stays in the dedupe window (remembered longer) and is retried at the next
   * trim; the window then holds at most one id over its bound before enqueues are refused. The
   * one way out of in flight without a journal call is release(), which puts events back among
   * the pending: the journal never recorded the drain, so there is nothing to record.
   * A CRITICAL enqueue waits for its sync after the lock; if the sync fails the event stays queued
   * (it was recorded, and a drain may already have it) and the caller is told the outcome is
   * unknown.
   */

  private static final Comparator<Entry> BY_SEQ = (a, b) -> Long.compare(a.seq, b.seq);
  private static final Comparator<Entry> BY_DUE =
      Comparator.<Entry, Instant>comparing(e -> e.event.nextAttemptAt())
          .thenComparingLong(e -> e.seq);
  /** By the monotonic reading at which a waiting retry is due in this process, then by age. */
  private static final Comparator<Entry> BY_DUE_NANOS = (a, b) -> {
    long d = a.dueNanos - b.dueNanos;
    return d < 0 ? -1 : d > 0 ? 1 : Long.compare(a.seq, b.seq);
  };
  private static final Comparator<Entry> BY_EXPIRY =
      Comparator.<Entry, Instant>comparing(e -> e.event.expiresAt()).thenComparingLong(e -> e.seq);

  /**
   * The most ids one operation lets go from the dedupe window, and the most expired events one
   * drain or enqueue discards: the work any one call does under the lock, whatever the window's
   * or the queue's size (a wall clock stepped forward past the window's age would otherwise age
   * out the whole window in one call). What is left goes with the next calls.
   */
  static final int HOUSEKEEPING_BATCH = 64;

  /** The default most age of a pending event and of a dead letter ({@link Builder#maxAge}). */
  static final Duration DEFAULT_MAX_AGE = Duration.ofDays(7);

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
    /** What a dead letter costs against the dead letters' byte bound: payload plus reason bytes. */
    long deadCost;
    /**
     * A waiting retry: the monotonic reading at which it is due in this process, whatever the
     * wall clock says (its wait, measured when it started waiting).
     */
    long dueNanos;
    /**
     * The monotonic reading from which the event's age counts against {@code maxAge} in this
     * process: when it was accepted; for a restored event, its wall-clock age at restore (at most
     * {@code maxAge}) before the restore; for a dead letter, when it died (restored: its last
     * attempt's wall-clock age).
     */
    long bornNanos;

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

  private final TimeSource clock;
  /** The dedupe window's length in nanoseconds (saturated): its elapsed-time bound. */
  private final long windowTotalNanos;
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
  private final int maxDeadLetters;
  private final long maxDeadBytes;
  /** Most elapsed nanoseconds a pending event is kept; Long.MAX_VALUE for no bound. */
  private final long maxAgeNanos;
  /** Most elapsed nanoseconds a dead letter is kept; Long.MAX_VALUE for no bound. */
  private final long maxDeadAgeNanos;
  private final LifecycleListener listener;
  private final boolean listening;
  private final MetricsListener metrics;
  private final boolean metering;
  private final String name;

  private final ReentrantLock lock = new ReentrantLock();
  /** Scratch for trimSeen (lock held). */
  private final int[] trimRefs = new int[HOUSEKEEPING_BATCH];
  private final IdIndex<Entry> index;
  private final Lane[] lanes = new Lane[Priority.values().length];
  private final EntryList inflight = new EntryList();
  private final EntryList dead = new EntryList();
  private final TreeSet<Entry> delayed = new TreeSet<>(BY_DUE);
  /** The same retries as {@code delayed}, by when their wait ends on the monotonic reading. */
  private final TreeSet<Entry> delayedMono = new TreeSet<>(BY_DUE_NANOS);
  private final TreeSet<Entry> expiring = new TreeSet<>(BY_EXPIRY);
  /** Pending plus in-flight events. */
  private int live;
  private int readyCount;
  private long bytes;
  private long nextSeq;
  private long dropped;
  private long expired;
  private long journalFull;
  private long deadDropped;
  /** Payload plus reason bytes of the dead letters (their {@code deadCost}). */
  private long deadBytes;
  /** Whether the last discard by age failed in the journal (logged once until one succeeds). */
  private boolean ageFailing;
  /** Why the last forget of an id leaving the dedupe window failed; null once one succeeds. */
  private String lastForgetFailure;
  private boolean used;
  /** Consumes {@link IdIndex#prefetch}'s loads so they are not optimized away; never read. */
  @SuppressWarnings("unused")
  private long prefetchSink;
  private volatile Runnable batchReadySignal = () -> { };

  private ReportQueue(Builder b) {
    this.clock = TimeSource.of(b.clock);
    this.journal = b.journal != null ? b.journal : NoJournal.INSTANCE;
    this.capacity = b.capacity;
    this.maxBytes = b.maxBytes;
    this.batchSize = b.batchSize;
    this.maxAttempts = b.maxAttempts;
    this.backoff = b.backoff;
    this.dropPolicy = b.dropPolicy;
    this.windowSeconds = b.dedupeWindow.getSeconds();
    this.windowNanos = b.dedupeWindow.getNano();
    long total;
    try {
      total = b.dedupeWindow.toNanos();
    } catch (ArithmeticException e) {
      total = Long.MAX_VALUE / 4; // centuries: never reached
    }
    this.windowTotalNanos = total;
    this.dedupeMaxIds = b.dedupeMaxIds;
    this.maxDeadLetters = b.maxDeadLetters;
    this.maxDeadBytes = b.maxDeadBytes;
    this.maxAgeNanos = b.maxAgeSet ? saturatedNanos(b.maxAge) : Long.MAX_VALUE;
    this.maxDeadAgeNanos = b.maxAgeSet ? saturatedNanos(b.maxDeadAge) : Long.MAX_VALUE;
    this.listener = b.listener;
    this.listening = b.listenerSet;
    this.metrics = b.metrics;
    this.metering = b.metricsSet;
    this.name = b.name;
    // The id table is sized for the live events plus a full dedupe window, so the hot path never
    // rehashes it; capped so a huge configured bound does not cost memory up front.
    this.index = new IdIndex<>((int) Math.min((long) capacity + dedupeMaxIds, 1 << 18));
    // A compaction after a burst renumbers refs; each entry keeps its own.
    this.index.onMove((e, ref) -> e.ref = ref);
    for (int i = 0; i < lanes.length; i++) {
      lanes[i] = new Lane();
    }
  }

  /**
   * A builder with the defaults listed on each setter.
   *
   * @return a new builder
   */
  public static Builder builder() {
    return new Builder();
  }

  // ---------------------------------------------------------------------------------------------
  // Enqueue

  /**
   * Offers an event. An accepted event is journaled first (durably before return when {@code
   * CRITICAL}) and only then queued, and its id is remembered for the dedupe window. A full queue
   * applies the drop policy: the new event and the evictions it causes are one atomic journal
   * change ({@link QueueJournal#recordAtomically}), so either both happen or neither; an evicted
   * event is reported and forgotten.
   *
   * <p>When the journal fails, nothing changed: not the new event, not an eviction. A journal
   * whose buffer for its backend is full answers {@link EnqueueResult.Reason#JOURNAL_FULL} for a
   * non-critical event (counted in {@link QueueStats#journalFull()}) and a {@link
   * JournalFullException} for a critical one.
   *
   * <p>A {@code CRITICAL} event whose record was written but whose sync failed ({@link
   * QueueJournal#awaitDurable} threw) is the one case where the outcome is unknown: the call throws
   * a {@link JournalException} with {@link JournalException.Outcome#UNKNOWN}, and the event <em>is
   * queued</em> in this process and will be sent (it was recorded, and a concurrent drain may
   * already have taken it), but it may not survive a crash. Retrying with the <em>same</em> id is
   * safe: while the event is queued the retry answers {@code DUPLICATE}; after a restart that kept
   * it, {@code DUPLICATE} too; after one that lost it, it is accepted once. Never retry under a new
   * id.
   *
   * @param event the event to offer
   * @return {@code OK} with any evicted ids, or why it was not accepted
   * @throws IllegalArgumentException if {@code event} is null, or the journal refuses it (over the
   *     backend's size limits); nothing changed
   * @throws JournalFullException for a {@code CRITICAL} event when the journal's buffer is full;
   *     nothing changed
   * @throws JournalException if the journal cannot record the event; nothing changed (see {@link
   *     JournalException#outcome()} for whether the record may still come back after a restart),
   *     except after a failed sync of a critical event, as above
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
    String id = event.eventId();
    lock.lock();
    try {
      prefetchSink ^= prefetched;
      used = true;
      Instant now = clock.instant();
      trimSeen(now);
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
      if (index.windowSize() > dedupeMaxIds) {
        // An earlier forget failed and its retry in trimSeen failed again: the window would grow
        // past its bound by more than the one id it may hold over it.
        throw new JournalException(name + ": enqueue of " + id + " refused: the dedupe window holds "
            + index.windowSize() + " ids, over its bound of " + dedupeMaxIds + ", because the "
            + "journal cannot record that the oldest left it (" + lastForgetFailure
            + "); nothing was recorded", null, JournalException.Outcome.NOT_RECORDED);
      }
      List<Entry> victims = null;
      if (!fits(size)) {
        try {
          expireDue(now);
        } catch (JournalException e) {
          throw failure("enqueue of " + id + " (expiring events to make room)", e,
              JournalException.Outcome.NOT_RECORDED);
        }
        discardAged(now);
        if (!fits(size)) {
          victims = victimsFor(event, size);
          if (victims == null) {
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
      try {
        if (victims == null) {
          ticket = journal.appendDeferringSync(queuedEvent);
        } else {
          // The new event first: a backend that records the list one change at a time and
          // crashes half way keeps the event and some victims, losing nothing.
          List<Change> changes = new ArrayList<>(victims.size() + 1);
          changes.add(new Change.Append(queuedEvent));
          for (Entry v : victims) {
            changes.add(new Change.Remove(v.id, Removal.DROPPED));
          }
          ticket = journal.recordAtomically(changes);
        }
      } catch (JournalFullException e) {
        if (critical) {
          throw new JournalFullException(name + ": enqueue of critical event " + id
              + " refused, nothing recorded: " + e.getMessage(), e);
        }
        journalFull++;
        meterDrop("journal-full");
        if (listening) {
          emit(Stage.DROPPED, id, now, "journal full: " + e.getMessage());
        }
        return EnqueueResult.rejected(EnqueueResult.Reason.JOURNAL_FULL);
      } catch (IllegalArgumentException e) {
        throw e;
      } catch (RuntimeException e) {
        throw failure("enqueue of " + id, e, null);
      }
      // Recorded: now the queue changes, and nothing below calls the journal but the best-effort
      // trim of the dedupe window.
      List<String> evicted = victims == null ? List.of() : evict(victims, event, now);
      Entry e = new Entry(id);
      e.event = queuedEvent;
      e.seq = nextSeq++;
      e.bytes = size;
      e.ref = index.add(id, e, now.getEpochSecond(), now.getNano());
      e.bornNanos = clock.nanoTime();
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
      try {
        journal.awaitDurable(ticket);
      } catch (RuntimeException e) {
        throw new JournalException(name + ": critical event " + id + " was recorded but the "
            + "journal cannot prove it durable, so its outcome is unknown: it is queued in this "
            + "process and will be sent, but it may not survive a crash; retry with the same id "
            + "(never a new one): " + e.getMessage(), e, JournalException.Outcome.UNKNOWN);
      }
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
   * The pending events to evict so that {@code incoming} fits, per the drop policy, in eviction
   * order: the lowest priority first, oldest first within it (CRITICAL events only once no LOW or
   * NORMAL event is pending); null when the policy cannot make room. Changes nothing: the evictions happen
   * in {@link #evict} once the journal recorded them.
   */
  private List<Entry> victimsFor(ReportEvent incoming, int size) {
    if (dropPolicy == DropPolicy.REJECT_NEW) {
      return null;
    }
    long needEvents = live + 1L - capacity;
    long needBytes = bytes + size - maxBytes;
    long candidateEvents = 0;
    long candidateBytes = 0;
    int lanesToUse = 0;
    for (Priority p : Priority.values()) {
      if (dropPolicy == DropPolicy.DROP_LOWEST_PRIORITY && !incoming.priority().outranks(p)) {
        break;
      }
      candidateEvents += lanes[p.ordinal()].count;
      candidateBytes += lanes[p.ordinal()].bytes;
      lanesToUse++;
    }
    if (candidateEvents < needEvents || candidateBytes < needBytes) {
      return null;
    }
    LaneCursor[] cursors = new LaneCursor[lanesToUse];
    for (int i = 0; i < lanesToUse; i++) {
      cursors[i] = new LaneCursor(lanes[i]);
    }
    List<Entry> victims = new ArrayList<>(1);
    long liveAfter = live;
    long bytesAfter = bytes;
    while (!(liveAfter < capacity && bytesAfter + size <= maxBytes)) {
      // Both policies take the oldest event of the lowest lane that still has one; they differ
      // in which lanes may give (above) and so in whether the new event may be refused.
      Entry victim = null;
      for (LaneCursor c : cursors) {
        victim = c.peek();
        if (victim != null) {
          break;
        }
      }
      if (victim == null) {
        throw new IllegalStateException("no pending event to evict");
      }
      cursors[victim.event.priority().ordinal()].next();
      victims.add(victim);
      liveAfter--;
      bytesAfter -= victim.bytes;
    }
    return victims;
  }

  /** Evicts {@code victims} (their removal is journaled) and returns their ids. */
  private List<String> evict(List<Entry> victims, ReportEvent incoming, Instant now) {
    List<String> ids = new ArrayList<>(victims.size());
    for (Entry victim : victims) {
      removePending(victim);
      live--;
      bytes -= victim.bytes;
      // A dropped event is not seen: forgotten here, as by the journal's DROPPED removal.
      index.drop(victim.ref);
      victim.state = State.GONE;
      dropped++;
      meterDrop("capacity");
      ids.add(victim.id);
      if (listening) {
        emit(Stage.DROPPED, victim.id, now, "evicted (" + dropPolicy + ") for "
            + incoming.eventId() + " (" + incoming.priority() + ")");
      }
    }
    return ids;
  }

  /**
   * Walks one lane's pending entries in arrival order without changing them: the merge of its
   * three runs sorted by seq (ready list, due retries, waiting retries). For choosing victims.
   */
  private static final class LaneCursor {
    private Entry listed;
    private final Iterator<Entry> dueIt;
    private final Iterator<Entry> waitingIt;
    private Entry due;
    private Entry waiting;

    LaneCursor(Lane lane) {
      listed = lane.ready.head;
      dueIt = lane.due.iterator();
      waitingIt = lane.waiting.iterator();
      due = dueIt.hasNext() ? dueIt.next() : null;
      waiting = waitingIt.hasNext() ? waitingIt.next() : null;
    }

    /** The oldest entry not yet passed, or null. */
    Entry peek() {
      Entry min = listed;
      if (due != null && (min == null || due.seq < min.seq)) {
        min = due;
      }
      if (waiting != null && (min == null || waiting.seq < min.seq)) {
        min = waiting;
      }
      return min;
    }

    /** Passes the entry {@link #peek} returned. */
    void next() {
      Entry min = peek();
      if (min == listed) {
        listed = listed.next;
      } else if (min == due) {
        due = dueIt.hasNext() ? dueIt.next() : null;
      } else if (min == waiting) {
        waiting = waitingIt.hasNext() ? waitingIt.next() : null;
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Drain, ack, nack

  /**
   * {@link #drainBatch(Instant)} at the clock's current time.
   *
   * @return the drained events, at most {@link #batchSize()}; empty when none is ready
   * @throws JournalException as for {@link #drainBatch(Instant)}
   */
  public List<QueuedEvent> drainBatch() {
    return drainBatch(clock.instant());
  }

  /**
   * Moves up to {@code batchSize} events that are ready at {@code at} to in flight and returns
   * them: highest priority first, oldest first within a priority. Events whose retry time has not
   * come stay behind without blocking others; expired events are discarded, counted and reported,
   * never returned. Draining itself writes nothing to the journal; discarding an expired event
   * does, first. One call discards at most 64 expired events (and lets
   * at most as many ids go from the dedupe window), so its work under the lock is bounded
   * whatever the queue's size; while more expired events are left, it returns an empty batch and
   * the next call goes on. Likewise it discards pending events and dead letters older than their
   * max age ({@link Builder#maxAge}, elapsed time), at most 64 per call in one journal change,
   * and returns an empty batch while more pending events over their age are left.
   *
   * @param at the time readiness and expiry are judged at
   * @return the drained events, at most {@link #batchSize()}; empty when none is ready
   * @throws IllegalArgumentException if {@code at} is null
   * @throws JournalException if the journal cannot record that an expired event left; nothing is
   *     drained (the expiries recorded before it stay done)
   */
  public List<QueuedEvent> drainBatch(Instant at) {
    Checks.requireNonNull("at", at);
    lock.lock();
    try {
      used = true;
      trimSeen(at);
      try {
        expireDue(at);
      } catch (JournalException e) {
        throw failure("drainBatch (expiring events)", e, null);
      }
      if (discardAged(at)) {
        // More events over their max age than one call discards: they are not sent, so this
        // drain returns nothing and the next one goes on discarding.
        return new ArrayList<>(0);
      }
      if (!expiring.isEmpty() && expiring.first().event.isExpiredAt(at)) {
        // More expired events than one call discards: none may be sent, so this drain returns
        // nothing and the next one goes on discarding.
        return new ArrayList<>(0);
      }
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
   * dedupe window. Ids that are not in flight (or repeated) are ignored, so a caller may retry an
   * ack that threw. All the acks of one call are one journal change (one round trip to a remote
   * journal, whatever the number of ids): they are recorded together or not at all.
   *
   * @param eventIds the ids to acknowledge; not null
   * @return how many in-flight events were acknowledged
   * @throws IllegalArgumentException if {@code eventIds} is null
   * @throws JournalException if the journal cannot record the acks: none of them is acked, every
   *     one is still in flight, exactly as before (after a lost reply the journal may have removed
   *     them; a retried ack removes them again, which is harmless)
   */
  public int ack(Collection<String> eventIds) {
    Checks.requireNonNull("eventIds", eventIds);
    eventIds = copyIds(eventIds);
    lock.lock();
    try {
      List<Entry> acking = new ArrayList<>();
      for (String id : eventIds) {
        Entry e = entry(id);
        if (e == null || e.state != State.INFLIGHT) {
          continue;
        }
        e.state = State.GONE; // marks a repeated id; restored below if the journal fails
        acking.add(e);
      }
      if (acking.isEmpty()) {
        return 0;
      }
      try {
        if (acking.size() == 1) {
          recordLeaving(acking.get(0), Removal.ACKED);
        } else {
          List<Change> changes = new ArrayList<>(acking.size() + 1);
          for (Entry e : acking) {
            changes.add(new Change.Remove(e.id, Removal.ACKED));
            if (!index.inWindow(e.ref)) {
              changes.add(new Change.Forget(e.id));
            }
          }
          journal.recordAtomically(changes);
        }
      } catch (RuntimeException x) {
        for (Entry e : acking) {
          e.state = State.INFLIGHT;
        }
        throw failure("ack of " + acking.get(0).id + (acking.size() == 1 ? ""
            : " and " + (acking.size() - 1) + " more") + " (none acked, all still in flight)",
            x, null);
      }
      Instant now = listening ? clock.instant() : null;
      for (Entry e : acking) {
        inflight.unlink(e);
        live--;
        bytes -= e.bytes;
        if (listening) {
          emit(Stage.ACKED, e.id, now, "after " + (e.event.attempts() + 1) + " attempt(s)");
        }
        leave(e);
      }
      return acking.size();
    } finally {
      lock.unlock();
    }
  }

  /**
   * Reports failed delivery of in-flight events. A retryable event with attempts left is requeued
   * with {@code attempts + 1}, not before {@code now + backoff(attempts + 1)}; otherwise it becomes
   * a dead letter. An event whose expiry has passed (by the queue's clock) is expired instead,
   * whatever {@code retryable} says, exactly as a drain expires a pending one: its removal is
   * journaled, it leaves the queue for good (its id stays seen for the dedupe window), it is
   * counted in {@link QueueStats#expired()} and {@link NackResult#expired()} and reported as
   * {@code EXPIRED}. Ids that are not in flight are ignored (so a late ack or nack of it finds
   * nothing).
   *
   * @param eventIds the in-flight ids that failed; not null
   * @param retryable false to dead-letter them at once
   * @return how many were requeued, became dead letters, or expired
   * @throws IllegalArgumentException if {@code eventIds} is null
   * @throws JournalException if the journal cannot record an outcome (see {@link #nack(Collection,
   *     boolean, Duration, String)})
   */
  public NackResult nack(Collection<String> eventIds, boolean retryable) {
    return nack(eventIds, retryable, Duration.ZERO,
        retryable ? null : "rejected: not retryable");
  }

  /**
   * Like {@link #nack(Collection, boolean)} with a floor under the retry delay (a server's
   * {@code Retry-After}) and the reason recorded for any event that becomes a dead letter. A dead
   * letter beyond the bounds ({@link Builder#deadLetters(int, long)}) pushes the oldest dead
   * letters out, in the same journal change; they are counted in {@link QueueStats#deadDropped()}
   * and reported as {@code DROPPED}. An event too large on its own for the dead letters' bytes
   * (payload plus reason) is dropped instead of kept.
   *
   * @param minDelay the retry waits at least this long, even if the backoff is shorter
   * @param deadReason why a non-retryable event gave up; null or blank for a generic reason (an
   *     unpaired surrogate or U+0000 in it is replaced with U+FFFD, so that every journal can
   *     store it)
   * @param eventIds the in-flight ids that failed; not null
   * @param retryable false to dead-letter them at once
   * @return how many were requeued, became dead letters, or expired
   * @throws IllegalArgumentException if {@code eventIds} or {@code minDelay} is null, or {@code
   *     minDelay} is negative
   * @throws JournalException if the journal cannot record the outcomes: all the outcomes of one
   *     call are one journal change (one round trip to a remote journal, whatever the number of
   *     ids), so none is settled, every one is still in flight, exactly as before, and a retry
   *     with the same ids settles them
   */
  public NackResult nack(
      Collection<String> eventIds, boolean retryable, Duration minDelay, String deadReason) {
    Checks.requireNonNull("eventIds", eventIds);
    Checks.requireNonNull("minDelay", minDelay);
    if (minDelay.isNegative()) {
      throw new IllegalArgumentException("minDelay must not be negative, was " + minDelay);
    }
    String rejection = deadReason == null || deadReason.isBlank() ? "rejected: not retryable"
        : wellFormed(deadReason);
    eventIds = copyIds(eventIds);
    lock.lock();
    try {
      Instant now = clock.instant();
      List<Settle> settling = new ArrayList<>();
      for (String id : eventIds) {
        Entry e = entry(id);
        if (e == null || e.state != State.INFLIGHT) {
          continue;
        }
        e.state = State.GONE; // marks a repeated id; restored below if the journal fails
        int attempts = e.event.attempts() + 1;
        if (e.event.isExpiredAt(now)) {
          settling.add(new Settle(e, Settle.LAPSED, attempts, null, null, 0));
        } else if (!retryable || attempts >= maxAttempts) {
          String reason = !retryable ? rejection
              : "attempts exhausted (" + attempts + " of " + maxAttempts + ")";
          long cost = deadCost(e.bytes, reason);
          settling.add(new Settle(e, cost > maxDeadBytes ? Settle.TOO_LARGE : Settle.DIED,
              attempts, reason, null, cost));
        } else {
          Duration delay = backoff.delay(attempts);
          if (delay.compareTo(minDelay) < 0) {
            delay = minDelay;
          }
          settling.add(new Settle(e, Settle.RETRY, attempts, null, plusSaturating(now, delay), 0));
        }
      }
      if (settling.isEmpty()) {
        return new NackResult(0, 0, 0);
      }
      // One journal change for the whole call: the outcomes first, then the dead letters they
      // push out (oldest first, possibly ones that died in this call), then the forgets of ids
      // that leave for good after leaving the dedupe window. A backend that records the list one
      // change at a time and crashes half way keeps a prefix, which loses nothing: more dead
      // letters than the bounds, or ids remembered longer.
      List<Change> changes = new ArrayList<>(settling.size() + 1);
      List<Entry> leaving = new ArrayList<>();
      List<Entry> died = new ArrayList<>();
      int deadAfter = dead.size;
      long deadBytesAfter = deadBytes;
      for (Settle s : settling) {
        switch (s.kind) {
          case Settle.LAPSED -> {
            changes.add(new Change.Remove(s.e.id, Removal.EXPIRED));
            leaving.add(s.e);
          }
          case Settle.TOO_LARGE -> {
            changes.add(new Change.Remove(s.e.id, Removal.PURGED));
            leaving.add(s.e);
          }
          case Settle.DIED -> {
            changes.add(new Change.DeadLetter(s.e.id, s.attempts, s.reason));
            died.add(s.e);
            deadAfter++;
            deadBytesAfter += s.cost;
          }
          default -> changes.add(new Change.Reschedule(s.e.id, s.attempts, s.next));
        }
      }
      List<Entry> pushedOut = new ArrayList<>(0);
      List<Long> pushedCosts = new ArrayList<>(0);
      if (deadAfter > maxDeadLetters || deadBytesAfter > maxDeadBytes) {
        Entry old = dead.head;
        int fresh = 0;
        int settleAt = 0;
        while (deadAfter > maxDeadLetters || deadBytesAfter > maxDeadBytes) {
          Entry victim;
          long cost;
          if (old != null) {
            victim = old;
            cost = old.deadCost;
            old = old.next;
          } else {
            while (settling.get(settleAt).kind != Settle.DIED) {
              settleAt++;
            }
            Settle s = settling.get(settleAt++);
            victim = s.e;
            cost = s.cost;
            fresh++;
          }
          pushedOut.add(victim);
          pushedCosts.add(cost);
          changes.add(new Change.Remove(victim.id, Removal.PURGED));
          deadAfter--;
          deadBytesAfter -= cost;
        }
        leaving.addAll(pushedOut);
      }
      for (Entry e : leaving) {
        if (!index.inWindow(e.ref)) {
          changes.add(new Change.Forget(e.id));
        }
      }
      try {
        record(changes);
      } catch (RuntimeException x) {
        for (Settle s : settling) {
          s.e.state = State.INFLIGHT;
        }
        throw failure("nack of " + settling.get(0).e.id + (settling.size() == 1 ? ""
            : " and " + (settling.size() - 1) + " more") + " (none settled, all still in flight)",
            x, null);
      }
      // Recorded: now the queue changes; nothing below calls the journal.
      int requeued = 0;
      int deadCount = 0;
      int lapsed = 0;
      for (Settle s : settling) {
        Entry e = s.e;
        inflight.unlink(e);
        switch (s.kind) {
          case Settle.LAPSED -> {
            live--;
            bytes -= e.bytes;
            countExpired(e, now, listening
                ? "expired after " + s.attempts + " failed attempt(s)" : null);
            leave(e);
            lapsed++;
          }
          case Settle.TOO_LARGE -> {
            live--;
            bytes -= e.bytes;
            deadDropped++;
            meterDrop("dead-letter-overflow");
            if (listening) {
              emit(Stage.DROPPED, e.id, now, "not kept as a dead letter (" + s.reason + "): its "
                  + s.cost + " bytes (payload and reason) exceed the dead letters' bound of "
                  + maxDeadBytes);
            }
            leave(e);
            deadCount++;
          }
          case Settle.DIED -> {
            live--;
            bytes -= e.bytes;
            e.event = e.event.rescheduled(s.attempts, e.event.nextAttemptAt());
            e.state = State.DEAD;
            e.deadReason = s.reason;
            e.deadCost = s.cost;
            e.bornNanos = clock.nanoTime();
            dead.addLast(e);
            deadBytes += s.cost;
            if (listening) {
              emit(Stage.DEAD_LETTERED, e.id, now, s.reason);
            }
            deadCount++;
          }
          default -> {
            e.event = e.event.rescheduled(s.attempts, s.next);
            requeue(e, now);
            requeued++;
            if (listening) {
              emit(Stage.RETRIED, e.id, now, "attempt " + s.attempts + " failed; next at "
                  + s.next);
            }
          }
        }
      }
      String by = died.isEmpty() ? null : died.get(died.size() - 1).id;
      for (Entry old : pushedOut) {
        dead.unlink(old);
        deadBytes -= old.deadCost;
        old.deadReason = null;
        deadDropped++;
        meterDrop("dead-letter-overflow");
        if (listening) {
          emit(Stage.DROPPED, old.id, now, "pushed out of the dead letters (bounds "
              + maxDeadLetters + " events, " + maxDeadBytes + " bytes) by " + by);
        }
        leave(old);
      }
      return new NackResult(requeued, deadCount, lapsed);
    } finally {
      lock.unlock();
    }
  }

  /** One in-flight event's outcome in a {@link #nack}, decided before anything is recorded. */
  private record Settle(Entry e, int kind, int attempts, String reason, Instant next, long cost) {
    static final int LAPSED = 0;
    static final int TOO_LARGE = 1;
    static final int DIED = 2;
    static final int RETRY = 3;
  }

  /**
   * Records {@code changes} as one journal change: the single call for a one-element list, else
   * {@link QueueJournal#recordAtomically}.
   */
  private void record(List<Change> changes) {
    if (changes.size() > 1) {
      journal.recordAtomically(changes);
      return;
    }
    Change c = changes.get(0);
    if (c instanceof Change.Remove r) {
      journal.remove(r.eventId(), r.removal());
    } else if (c instanceof Change.Reschedule r) {
      journal.reschedule(r.eventId(), r.attempts(), r.nextAttemptAt());
    } else if (c instanceof Change.DeadLetter d) {
      journal.deadLetter(d.eventId(), d.attempts(), d.reason());
    } else if (c instanceof Change.Forget f) {
      journal.forget(f.eventId());
    } else {
      journal.recordAtomically(changes);
    }
  }

  /**
   * Removes dead letters for good (an operator decided); their ids stay seen for the dedupe
   * window. Ids that are not dead letters are ignored. All the purges of one call are one journal
   * change (one round trip to a remote journal, whatever the number of ids): recorded together
   * or not at all.
   *
   * @param eventIds the dead letters' ids; not null
   * @return how many dead letters were removed
   * @throws JournalException if the journal cannot record the purges: none is purged, every one
   *     is still a dead letter, exactly as before, and a retry with the same ids purges them
   * @throws IllegalArgumentException if {@code eventIds} is null
   */
  public int purgeDead(Collection<String> eventIds) {
    Checks.requireNonNull("eventIds", eventIds);
    eventIds = copyIds(eventIds);
    lock.lock();
    try {
      List<Entry> purging = new ArrayList<>();
      for (String id : eventIds) {
        Entry e = entry(id);
        if (e == null || e.state != State.DEAD) {
          continue;
        }
        e.state = State.GONE; // marks a repeated id; restored below if the journal fails
        purging.add(e);
      }
      if (purging.isEmpty()) {
        return 0;
      }
      List<Change> changes = new ArrayList<>(purging.size() + 1);
      for (Entry e : purging) {
        changes.add(new Change.Remove(e.id, Removal.PURGED));
      }
      for (Entry e : purging) {
        if (!index.inWindow(e.ref)) {
          changes.add(new Change.Forget(e.id));
        }
      }
      try {
        record(changes);
      } catch (RuntimeException x) {
        for (Entry e : purging) {
          e.state = State.DEAD;
        }
        throw failure("purgeDead of " + purging.get(0).id + (purging.size() == 1 ? ""
            : " and " + (purging.size() - 1) + " more") + " (none purged, all still dead letters)",
            x, null);
      }
      for (Entry e : purging) {
        dead.unlink(e);
        deadBytes -= e.deadCost;
        e.deadReason = null;
        leave(e);
      }
      return purging.size();
    } finally {
      lock.unlock();
    }
  }

  /**
   * Moves dead letters back to pending (an operator fixed the cause): ready now, attempts reset to
   * 0, same id, payload, priority and enqueue time, behind the events pending now; journaled first
   * as one append of the dead id (the journal's replay rule, so the move is atomic in every
   * backend; a {@code CRITICAL} one durably before return, under the queue's lock), so a restart
   * keeps them pending. Emits {@code REPLAYED}. A dead letter comes back only while the queue has
   * room ({@code capacity} and {@code maxBytes}); the others stay dead letters. Ids that are not
   * dead letters are ignored.
   *
   * @param eventIds the dead letters' ids; not null
   * @return how many dead letters were replayed
   * @throws JournalException if the journal cannot record a replay: the ids before it are
   *     pending, it and the ids after it are still dead letters
   * @throws IllegalArgumentException if {@code eventIds} is null
   */
  public int replayDead(Collection<String> eventIds) {
    Checks.requireNonNull("eventIds", eventIds);
    eventIds = copyIds(eventIds);
    lock.lock();
    try {
      Instant now = clock.instant();
      int replayed = 0;
      for (String id : eventIds) {
        Entry e = entry(id);
        if (e == null || e.state != State.DEAD || !fits(e.bytes)) {
          continue;
        }
        QueuedEvent back = e.event.rescheduled(0, now);
        try {
          journal.append(back);
        } catch (RuntimeException x) {
          throw failure("replayDead of " + id + " (" + replayed + " replayed before it)", x,
              null);
        }
        dead.unlink(e);
        deadBytes -= e.deadCost;
        e.deadReason = null;
        live++;
        bytes += e.bytes;
        e.event = back;
        e.seq = nextSeq++;
        e.bornNanos = clock.nanoTime(); // a replayed dead letter's age starts again here
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

  /**
   * Puts in-flight events back among the pending without a journal write and without counting an
   * attempt, not to be drained before {@code notBefore} (in this process: after a restart they are
   * ready at once, as every in-flight event is). The journal still holds them as pending, so
   * nothing needs recording; this is the one way out of in flight that cannot fail. For a
   * dispatcher that could not record a batch's outcome, or never sent it. Ids not in flight are
   * ignored.
   *
   * @return how many events went back to pending
   */
  int release(Collection<String> eventIds, Instant notBefore) {
    Checks.requireNonNull("eventIds", eventIds);
    Checks.requireNonNull("notBefore", notBefore);
    lock.lock();
    try {
      Instant now = clock.instant();
      int released = 0;
      for (String id : eventIds) {
        Entry e = entry(id);
        if (e == null || e.state != State.INFLIGHT) {
          continue;
        }
        inflight.unlink(e);
        if (notBefore.isAfter(e.event.nextAttemptAt())) {
          e.event = e.event.rescheduled(e.event.attempts(), notBefore);
        }
        requeue(e, now);
        released++;
      }
      return released;
    } finally {
      lock.unlock();
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Restore

  /**
   * Loads the journal into this queue: pending events come back with their attempts and retry
   * times (a waiting retry waits at most its backoff of elapsed time from now, so a wall clock
   * set back while the queue was down cannot hold it longer; a longer {@code Retry-After} floor is
   * not kept across a restart), events that were in flight are pending and ready now (at-least-once; the event id lets
   * the server drop the repeat), dead letters and the dedupe window come back too. Pending events
   * keep the journal's append order as their age. Events that expired meanwhile are discarded and
   * counted (if the journal cannot record such an expiry, the event stays pending and is expired
   * at the next drain instead); the journal is flushed once after such expiries, so a later crash
   * cannot bring them back. Restored events are kept even beyond the capacity, and dead
   * letters beyond their bounds: a durable event is never dropped by a restart.
   *
   * @return the number of pending events after the restore
   * @throws IllegalStateException if this queue was already used or restored
   * @throws JournalException if the journal cannot be read; nothing changed, and restore may be
   *     called again
   */
  public int restore() {
    lock.lock();
    try {
      if (used) {
        throw new IllegalStateException(
            "restore() must be called once, before the queue is used");
      }
      JournalState state;
      try {
        state = journal.load();
      } catch (RuntimeException e) {
        throw failure("restore", e, null);
      }
      used = true;
      Instant now = clock.instant();
      index.monotonicNow(clock.nanoTime(), windowTotalNanos);
      long expiredBefore = expired;
      for (Map.Entry<String, Instant> seen : state.seen().entrySet()) {
        index.add(seen.getKey(), null, seen.getValue().getEpochSecond(), seen.getValue().getNano(),
            restoredMono(seen.getValue(), now));
      }
      for (QueuedEvent event : state.pending()) {
        Entry e = restoredEntry(event);
        if (e == null) {
          continue;
        }
        if (event.isExpiredAt(now) && expireRestored(e, now)) {
          continue;
        }
        live++;
        bytes += e.bytes;
        Lane lane = lanes[event.priority().ordinal()];
        if (event.nextAttemptAt().isAfter(now)) {
          requeue(e, now, restoredWaitCap(event));
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
        e.deadCost = deadCost(e.bytes, e.deadReason);
        e.bornNanos = clock.nanoTime() - Math.min(maxDeadAgeNanos,
            nanosUntil(event.nextAttemptAt(), now));
        dead.addLast(e);
        deadBytes += e.deadCost;
      }
      trimSeen(now);
      if (expired != expiredBefore) {
        // The expiries were counted (reported): make them durable, or a crash before the next
        // group commit and a wall clock set back would bring the events back.
        try {
          journal.flush();
        } catch (RuntimeException x) {
          LOG.log(System.Logger.Level.WARNING, name + ": could not make the expiries of the"
              + " restore durable; the journal commits them with its next commit", x);
        }
      }
      return live;
    } finally {
      lock.unlock();
    }
  }

  /** Records and counts a restored event that expired while the queue was down; false if not. */
  private boolean expireRestored(Entry e, Instant now) {
    try {
      recordLeaving(e, Removal.EXPIRED);
    } catch (RuntimeException x) {
      LOG.log(System.Logger.Level.WARNING, name + ": could not record that " + e.id
          + " expired while the queue was down; it is expired at the next drain instead", x);
      return false;
    }
    countExpired(e, now, "expired while the queue was down");
    e.state = State.GONE;
    index.release(e.ref);
    return true;
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
      e.ref = index.add(id, e, event.enqueuedAt().getEpochSecond(), event.enqueuedAt().getNano(),
          restoredMono(event.enqueuedAt(), clock.instant()));
    } else {
      e.ref = ref;
      index.hold(ref, e);
    }
    e.event = event;
    e.seq = nextSeq++;
    e.bytes = event.payloadBytes();
    e.bornNanos = clock.nanoTime() - Math.min(maxAgeNanos,
        nanosUntil(event.enqueuedAt(), clock.instant()));
    return e;
  }

  // ---------------------------------------------------------------------------------------------
  // Views

  /**
   * Counts, as one consistent snapshot. A query: it changes nothing and writes nothing to the
   * journal (so it never fails for a failing journal). {@code seen} counts the ids the dedupe window
   * still holds at the clock's time, not those that left it by age (they are forgotten, and the
   * journal told, by the next enqueue or drain); it is one over the count bound while the journal
   * cannot record a forget (the id is still remembered). O(1): it looks at no more than the 64
   * oldest ids, as one enqueue or drain lets at most 64 go; when more than that left by age at
   * once (a wall clock stepped forward), the rest still count until the next calls let them go
   * (until then they are still remembered, and a duplicate of one is still refused).
   *
   * @return the counts at the clock's current time
   */
  public QueueStats stats() {
    lock.lock();
    try {
      Instant now = clock.instant();
      index.monotonicNow(clock.nanoTime(), windowTotalNanos);
      int seen = index.windowSizeAfterAgeTrim(now.getEpochSecond(), now.getNano(), windowSeconds,
          windowNanos, HOUSEKEEPING_BATCH);
      return new QueueStats(live - inflight.size, inflight.size, seen, dead.size,
          dropped, expired, bytes, journalFull, deadDropped);
    } finally {
      lock.unlock();
    }
  }

  /**
   * How long the oldest pending event (ready or waiting for a retry) has been in the queue, by the
   * queue's clock (never negative); empty if nothing is pending. In-flight events do not count:
   * they are being delivered. The backlog's age for {@link io.relaykit.monitor.BacklogMonitor}.
   * O(1).
   *
   * @return the age, or empty
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

  /**
   * Ids of pending events, in drain order (ready and waiting retries mixed by age). O(n).
   *
   * @return a new list of the ids
   */
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

  /**
   * Ids of in-flight events, in the order they were drained. O(n).
   *
   * @return a new list of the ids
   */
  public List<String> inflightIds() {
    lock.lock();
    try {
      return idsOf(inflight);
    } finally {
      lock.unlock();
    }
  }

  /**
   * Ids of dead letters, in the order they died. O(n).
   *
   * @return a new list of the ids
   */
  public List<String> deadIds() {
    lock.lock();
    try {
      return idsOf(dead);
    } finally {
      lock.unlock();
    }
  }

  /**
   * Dead letters with their attempts, in the order they died. O(n).
   *
   * @return a new list of the dead events
   */
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

  /**
   * Why a dead letter gave up; empty if {@code eventId} is not a dead letter.
   *
   * @param eventId the event's id
   * @return the reason, or empty
   */
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
   *
   * @return the instant, or empty
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
        // Its wait may end sooner on the monotonic reading (the wall clock was set back).
        Instant now = clock.instant();
        Instant byWait = plusSaturating(now,
            Duration.ofNanos(Math.max(0, delayedMono.first().dueNanos - clock.nanoTime())));
        if (byWait.isBefore(earliest)) {
          earliest = byWait;
        }
      }
      return Optional.ofNullable(earliest);
    } finally {
      lock.unlock();
    }
  }

  /**
   * How many events a drain at {@code at} could return (before expiry), counting retries whose
   * time has come by then. A query: it changes nothing (a retry counted here for a later {@code
   * at} still waits for its time) and writes nothing to the journal. O(1), plus O(1) per waiting
   * retry due by {@code at}.
   *
   * @param at the time to count at; not null
   * @return the count, {@code >= 0}
   * @throws IllegalArgumentException if {@code at} is null
   */
  public int readyCount(Instant at) {
    Checks.requireNonNull("at", at);
    lock.lock();
    try {
      int ready = readyCount;
      for (Entry e : delayed) {
        if (e.event.nextAttemptAt().isAfter(at)) {
          break;
        }
        ready++;
      }
      long nanos = clock.nanoTime();
      for (Entry e : delayedMono) {
        if (nanos - e.dueNanos < 0) {
          break;
        }
        if (e.event.nextAttemptAt().isAfter(at)) {
          ready++; // due by its wait, not yet by the wall clock: not counted above
        }
      }
      return ready;
    } finally {
      lock.unlock();
    }
  }

  /**
   * The most events one {@link #drainBatch} returns.
   *
   * @return the batch size, {@code >= 1}
   */
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

  /** The time source, for a dispatcher built without one of its own. */
  TimeSource timeSource() {
    return clock;
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
    requeue(e, now, Long.MAX_VALUE);
  }

  /**
   * The longest a restored retry waits in elapsed time: its backoff for the attempts it made. Its
   * stored retry time is a wall-clock instant, which a clock set back while the queue was down
   * would push out by as much; so after a restart a retry waits at most its backoff (a {@code
   * Retry-After} floor longer than that is not kept across a restart). O(1).
   */
  private long restoredWaitCap(QueuedEvent event) {
    if (event.attempts() < 1) {
      return 0; // never failed: it waits for nothing
    }
    try {
      return backoff.delay(event.attempts()).toNanos();
    } catch (ArithmeticException e) {
      return Long.MAX_VALUE;
    }
  }

  private void requeue(Entry e, Instant now, long maxWaitNanos) {
    Lane lane = lanes[e.event.priority().ordinal()];
    lane.count++;
    lane.bytes += e.bytes;
    if (e.event.nextAttemptAt().isAfter(now)) {
      e.state = State.WAITING;
      e.dueNanos = clock.nanoTime()
          + Math.min(maxWaitNanos, nanosUntil(now, e.event.nextAttemptAt()));
      delayed.add(e);
      delayedMono.add(e);
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
        delayedMono.remove(e);
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

  /**
   * Makes the waiting retries due whose time came at {@code at} on the wall clock, or whose wait
   * has passed on the monotonic reading: a wall clock stepped back never holds a retry longer
   * than its backoff.
   */
  private void promoteDue(Instant at) {
    while (!delayed.isEmpty() && !delayed.first().event.nextAttemptAt().isAfter(at)) {
      promote(delayed.first());
    }
    long nanos = clock.nanoTime();
    while (!delayedMono.isEmpty() && nanos - delayedMono.first().dueNanos >= 0) {
      promote(delayedMono.first());
    }
  }

  private void promote(Entry e) {
    delayed.remove(e);
    delayedMono.remove(e);
    Lane lane = lanes[e.event.priority().ordinal()];
    lane.waiting.remove(e);
    e.state = State.DUE;
    lane.due.add(e);
    readyCount++;
  }

  /** Nanoseconds from {@code now} to {@code at} on the wall clock, saturated; 0 if past. */
  private static long nanosUntil(Instant now, Instant at) {
    try {
      return Math.max(0, Duration.between(now, at).toNanos());
    } catch (ArithmeticException e) {
      return at.isAfter(now) ? Long.MAX_VALUE / 4 : 0;
    }
  }

  /**
   * Discards up to 64 pending events expired at {@code at}, journaled first as one change (one
   * round trip to a remote journal, whatever the number).
   *
   * @throws JournalException when the journal cannot record it; nothing was discarded
   */
  private void expireDue(Instant at) {
    if (expiring.isEmpty() || !expiring.first().event.isExpiredAt(at)) {
      return;
    }
    List<Entry> due = new ArrayList<>();
    for (Entry e : expiring) {
      if (due.size() == HOUSEKEEPING_BATCH || !e.event.isExpiredAt(at)) {
        break;
      }
      due.add(e);
    }
    List<Change> changes = new ArrayList<>(due.size() + 1);
    for (Entry e : due) {
      changes.add(new Change.Remove(e.id, Removal.EXPIRED));
    }
    for (Entry e : due) {
      if (!index.inWindow(e.ref)) {
        changes.add(new Change.Forget(e.id));
      }
    }
    try {
      record(changes);
    } catch (RuntimeException x) {
      throw failure("expiry of " + due.get(0).id + (due.size() == 1 ? ""
          : " and " + (due.size() - 1) + " more") + " (none expired)", x, null);
    }
    for (Entry e : due) {
      removePending(e);
      live--;
      bytes -= e.bytes;
      countExpired(e, at, listening
          ? "expired at " + e.event.expiresAt() + " before it was sent" : null);
      leave(e);
    }
  }

  /**
   * Discards, as one journal change, up to 64 of the oldest pending events older than {@code
   * maxAge} and dead letters older than the dead letters' max age, by elapsed time on the
   * monotonic reading (a wall clock stepped forward ages nothing). Counted as expired ({@code
   * EXPIRED}) and as dead letters dropped ({@code DROPPED}). Best effort: when the journal cannot
   * record the change, nothing changes and the next call tries again. O(1) per discarded event
   * plus O(log r) for a retry; nothing when none is over its age. Returns whether pending events
   * over their age are left for the next call (never while the journal fails: then they are
   * sent rather than held).
   */
  private boolean discardAged(Instant now) {
    if (maxAgeNanos == Long.MAX_VALUE && maxDeadAgeNanos == Long.MAX_VALUE) {
      return false;
    }
    long nanos = clock.nanoTime();
    List<Entry> pending = null;
    LaneCursor[] cursors = null;
    int budget = HOUSEKEEPING_BATCH;
    boolean more = false;
    if (maxAgeNanos != Long.MAX_VALUE && live - inflight.size > 0) {
      cursors = new LaneCursor[lanes.length];
      for (int i = 0; i < lanes.length; i++) {
        cursors[i] = new LaneCursor(lanes[i]);
      }
      while (budget > 0) {
        // The oldest pending event by arrival; fresh events arrive in their age order.
        LaneCursor from = null;
        Entry oldest = null;
        for (LaneCursor c : cursors) {
          Entry e = c.peek();
          if (e != null && (oldest == null || e.seq < oldest.seq)) {
            oldest = e;
            from = c;
          }
        }
        if (oldest == null || nanos - oldest.bornNanos < maxAgeNanos) {
          break;
        }
        if (budget == 1) {
          more = true;
        }
        from.next();
        if (pending == null) {
          pending = new ArrayList<>();
        }
        pending.add(oldest);
        budget--;
      }
    }
    List<Entry> deadAged = null;
    if (maxDeadAgeNanos != Long.MAX_VALUE) {
      for (Entry e = dead.head; e != null && budget > 0
          && nanos - e.bornNanos >= maxDeadAgeNanos; e = e.next, budget--) {
        if (deadAged == null) {
          deadAged = new ArrayList<>();
        }
        deadAged.add(e);
      }
    }
    if (pending == null && deadAged == null) {
      return false;
    }
    List<Change> changes = new ArrayList<>();
    List<Entry> all = new ArrayList<>();
    if (pending != null) {
      for (Entry e : pending) {
        changes.add(new Change.Remove(e.id, Removal.EXPIRED));
        all.add(e);
      }
    }
    if (deadAged != null) {
      for (Entry e : deadAged) {
        changes.add(new Change.Remove(e.id, Removal.PURGED));
        all.add(e);
      }
    }
    for (Entry e : all) {
      if (!index.inWindow(e.ref)) {
        changes.add(new Change.Forget(e.id));
      }
    }
    try {
      record(changes);
    } catch (RuntimeException x) {
      if (!ageFailing) {
        LOG.log(System.Logger.Level.WARNING, name + ": the journal could not record that "
            + all.size() + " event(s) over their max age left; they stay until it can", x);
      }
      ageFailing = true;
      return false;
    }
    ageFailing = false;
    if (pending != null) {
      for (Entry e : pending) {
        removePending(e);
        live--;
        bytes -= e.bytes;
        countExpired(e, now, listening ? "older than the queue's max age of "
            + Duration.ofNanos(maxAgeNanos) + " (enqueued at " + e.event.enqueuedAt() + ")"
            : null);
        leave(e);
      }
    }
    if (deadAged != null) {
      for (Entry e : deadAged) {
        dead.unlink(e);
        deadBytes -= e.deadCost;
        e.deadReason = null;
        deadDropped++;
        meterDrop("dead-letter-overflow");
        if (listening) {
          emit(Stage.DROPPED, e.id, now, "dead letter older than the dead letters' max age of "
              + Duration.ofNanos(maxDeadAgeNanos));
        }
        leave(e);
      }
    }
    return more && oldestPendingAged(nanos);
  }

  /** Whether the oldest pending event (by arrival) is over its max age at {@code nanos}. */
  private boolean oldestPendingAged(long nanos) {
    Entry oldest = null;
    for (Lane lane : lanes) {
      Entry e = lane.oldest();
      if (e != null && (oldest == null || e.seq < oldest.seq)) {
        oldest = e;
      }
    }
    return oldest != null && nanos - oldest.bornNanos >= maxAgeNanos;
  }

  /** {@code d} in nanoseconds, saturated at {@code Long.MAX_VALUE / 4} (centuries). */
  private static long saturatedNanos(Duration d) {
    try {
      return Math.min(d.toNanos(), Long.MAX_VALUE / 4);
    } catch (ArithmeticException e) {
      return Long.MAX_VALUE / 4;
    }
  }

  /** A dead letter's cost against {@code maxDeadBytes}: its payload and its reason, in UTF-8. */
  private static long deadCost(int payloadBytes, String reason) {
    return payloadBytes + Utf8.length(reason);
  }

  /** Reports one lost event to the metrics listener, if one is set. */
  private void meterDrop(String reason) {
    if (metering) {
      MetricsListener.safely(metrics, m -> m.dropped(name, reason, 1));
    }
  }

  /** Counts and reports an expired event whose removal is journaled. */
  private void countExpired(Entry e, Instant now, String detail) {
    expired++;
    meterDrop("expired");
    if (listening) {
      emit(Stage.EXPIRED, e.id, now, detail);
    }
  }

  /**
   * Journals that {@code e} leaves the queue for good (acked, expired, purged). An id still in
   * the dedupe window stays seen; one that already left the window is forgotten in the same
   * atomic change, because {@link #leave} forgets it here once this returns.
   */
  private void recordLeaving(Entry e, Removal removal) {
    if (index.inWindow(e.ref)) {
      journal.remove(e.id, removal);
    } else {
      journal.recordAtomically(List.of(new Change.Remove(e.id, removal),
          new Change.Forget(e.id)));
    }
  }

  /**
   * An event whose leaving {@link #recordLeaving} journaled left the queue: its id stays seen while
   * it is in the dedupe window, else it is forgotten now (the journal forgot it in that change).
   */
  private void leave(Entry e) {
    e.state = State.GONE;
    index.release(e.ref);
  }

  /** The live or dead entry of {@code id}; null if it is unknown or only remembered. */
  private Entry entry(String id) {
    int ref = id == null ? 0 : index.find(id);
    return ref == 0 ? null : index.value(ref);
  }

  /**
   * Trims the dedupe window to its count and age, at most 64 ids per
   * call, with one journal change for all the ids it forgets (their events already left); the
   * rest go with the next calls. Best effort: when the journal cannot record the forgets, the ids
   * stay in the window (remembered a little longer, which dedupe can afford) until the next call.
   */
  /**
   * The monotonic reading at which a restored id counts as first seen: its wall-clock age at
   * restore (never negative, at most the window) before now, since a reading of an earlier process
   * does not survive the restart.
   */
  private long restoredMono(Instant seenAt, Instant now) {
    long age = Math.min(windowTotalNanos, nanosUntil(seenAt, now));
    return clock.nanoTime() - age;
  }

  private void trimSeen(Instant now) {
    index.monotonicNow(clock.nanoTime(), windowTotalNanos);
    int[] refs = trimRefs;
    int n = index.trimCandidates(refs, index.windowSize() - dedupeMaxIds, now.getEpochSecond(),
        now.getNano(), windowSeconds, windowNanos);
    if (n == 0) {
      return;
    }
    // One journal change forgets every id that leaves with nothing held (its event left).
    List<Change> forgets = null;
    for (int i = 0; i < n; i++) {
      if (index.value(refs[i]) == null) {
        if (forgets == null) {
          forgets = new ArrayList<>(n - i);
        }
        forgets.add(new Change.Forget(index.key(refs[i])));
      }
    }
    if (forgets != null) {
      try {
        if (forgets.size() == 1) {
          journal.forget(((Change.Forget) forgets.get(0)).eventId());
        } else {
          journal.recordAtomically(forgets);
        }
      } catch (RuntimeException e) {
        if (lastForgetFailure == null) {
          LOG.log(System.Logger.Level.WARNING, name + ": the journal could not forget "
              + forgets.size() + " id(s) that left the dedupe window; they stay remembered until"
              + " a forget succeeds", e);
        }
        lastForgetFailure = e.toString();
        return;
      }
      lastForgetFailure = null;
    }
    for (int i = 0; i < n; i++) {
      index.trimHead();
    }
  }

  /**
   * Lets the window's oldest id go: forgotten in the journal first and then here if its event
   * already left; a pending, in-flight or dead event's id stays a duplicate, and is forgotten with
   * the change that makes the event leave. Returns false, changing nothing, when the journal
   * cannot record the forget.
   */
  private boolean trimHead() {
    int ref = index.headRef();
    if (ref == 0) {
      return false;
    }
    if (index.value(ref) == null) {
      String id = index.key(ref);
      try {
        journal.forget(id);
      } catch (RuntimeException e) {
        if (lastForgetFailure == null) {
          LOG.log(System.Logger.Level.WARNING, name + ": the journal could not forget " + id
              + ", which left the dedupe window; it stays remembered until a forget succeeds", e);
        }
        lastForgetFailure = e.toString();
        return false;
      }
      lastForgetFailure = null;
    }
    index.trimHead();
    return true;
  }

  /**
   * The exception a caller sees when the journal failed during {@code operation}: a {@link
   * JournalException} naming the queue and the operation, with the journal's outcome (or {@code
   * outcome} when given; {@code UNKNOWN} for an exception that is not a JournalException, except
   * an IllegalArgumentException, which refuses before writing), and a {@link
   * JournalFullException} for a full journal.
   */
  private JournalException failure(String operation, RuntimeException e,
      JournalException.Outcome outcome) {
    String message = name + ": " + operation + " failed in the journal: " + e.getMessage();
    if (e instanceof JournalFullException) {
      return new JournalFullException(message, e);
    }
    JournalException.Outcome o = outcome != null ? outcome
        : e instanceof JournalException je ? je.outcome()
        : e instanceof IllegalArgumentException ? JournalException.Outcome.NOT_RECORDED
        : JournalException.Outcome.UNKNOWN;
    return new JournalException(message, e, o);
  }

  /**
   * {@code s} with every unpaired surrogate and U+0000 replaced by U+FFFD, so every journal can
   * store it.
   */
  private static String wellFormed(String s) {
    int at = Utf8.firstUnstorable(s);
    if (at < 0) {
      return s;
    }
    StringBuilder b = new StringBuilder(s);
    for (int i = at; i < b.length(); i++) {
      char c = b.charAt(i);
      if (Character.isHighSurrogate(c) && i + 1 < b.length()
          && Character.isLowSurrogate(b.charAt(i + 1))) {
        i++;
      } else if (Character.isSurrogate(c) || c == 0) {
        b.setCharAt(i, '\uFFFD');
      }
    }
    return b.toString();
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

  /**
   * The caller's ids, copied before the lock is taken: iterating a collection runs the caller's
   * code, which may throw half way (a list changed by another thread) or be slow; under the lock,
   * after some events were marked as settling, either would leave them stuck. O(ids), no lock.
   */
  private static List<String> copyIds(Collection<String> eventIds) {
    return new ArrayList<>(eventIds);
  }

  /**
   * Housekeeping for an idle queue (its dispatcher calls it when it has nothing to drain): lets up
   * to 64 ids leave the dedupe window and discards up to 64 pending events and dead letters older
   * than their max age, as {@link #drainBatch(Instant)} does, so that the age bound holds without
   * traffic. Bounded work under the lock; a journal failure changes nothing and is logged (the
   * next call tries again); never throws for it.
   */
  void sweep() {
    lock.lock();
    try {
      Instant now = clock.instant();
      trimSeen(now);
      discardAged(now);
    } finally {
      lock.unlock();
    }
  }

  /**
   * The id index's capacity: table slots, per-id slots and window ring slots (for tests that check
   * memory comes back after a burst).
   */
  int[] indexCapacity() {
    lock.lock();
    try {
      return new int[] {index.tableSlots(), index.refSlots(), index.ringSlots()};
    } finally {
      lock.unlock();
    }
  }

  /** The queue's name and counts; a query like {@link #stats()}: changes and writes nothing. */
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
    private long maxBytes = 64L * 1024 * 1024;
    private int batchSize = 20;
    private int maxAttempts = 5;
    private Backoff backoff = Backoff.exponential(Duration.ofSeconds(1));
    private DropPolicy dropPolicy = DropPolicy.DROP_LOWEST_PRIORITY;
    private Duration dedupeWindow = Duration.ofHours(24);
    private int dedupeMaxIds = 100_000;
    private int maxDeadLetters = 10_000;
    private long maxDeadBytes = 64L * 1024 * 1024;
    private Duration maxAge = DEFAULT_MAX_AGE;
    private Duration maxDeadAge = DEFAULT_MAX_AGE;
    private boolean maxAgeSet = true;
    private LifecycleListener listener = LifecycleListener.noop();
    private boolean listenerSet;
    private MetricsListener metrics = MetricsListener.noop();
    private boolean metricsSet;
    private String name = "report-queue";

    private Builder() {
    }

    /**
     * The time source: its wall clock stamps enqueue times, retry and expiry instants and the
     * dedupe window's first-seen times (what is stored or shown); a waiting retry is also due once
     * its backoff has passed on the monotonic reading ({@link TimeSource#nanoTime()}; {@link
     * System#nanoTime()} for a plain {@link InstantSource}), so a wall clock set back never holds
     * retries longer than their backoff. Default: {@link TimeSource#system()}.
     *
     * @param clock the clock; checked (not null) by {@link #build()}
     * @return this builder
     */
    public Builder clock(InstantSource clock) {
      this.clock = clock;
      return this;
    }

    /**
     * Where changes are recorded. Default: none (memory only): nothing is recorded, so {@link
     * ReportQueue#restore()} finds an empty queue. Use {@link InMemoryJournal} to simulate
     * restarts in memory.
     *
     * @param journal the journal, or null for none
     * @return this builder
     */
    public Builder journal(QueueJournal journal) {
      this.journal = journal;
      return this;
    }

    /**
     * Most pending plus in-flight events. Default 100.
     *
     * @param capacity the bound; checked ({@code >= 1}) by {@link #build()}
     * @return this builder
     */
    public Builder capacity(int capacity) {
      this.capacity = capacity;
      return this;
    }

    /**
     * Most UTF-8 payload bytes of pending plus in-flight events. Default 64 MiB, so that what the
     * journal holds for them is bounded by default in bytes as well as in events (an event larger
     * than the bound on its own is {@code TOO_LARGE}); {@code Long.MAX_VALUE} for no bound.
     *
     * @param maxBytes the bound; checked ({@code >= 1}) by {@link #build()}
     * @return this builder
     */
    public Builder maxBytes(long maxBytes) {
      this.maxBytes = maxBytes;
      return this;
    }

    /**
     * Most events one drain returns. Default 20.
     *
     * @param batchSize the size; checked ({@code >= 1}) by {@link #build()}
     * @return this builder
     */
    public Builder batchSize(int batchSize) {
      this.batchSize = batchSize;
      return this;
    }

    /**
     * Delivery attempts before an event becomes a dead letter. Default 5.
     *
     * @param maxAttempts the attempts; checked ({@code >= 1}) by {@link #build()}
     * @return this builder
     */
    public Builder maxAttempts(int maxAttempts) {
      this.maxAttempts = maxAttempts;
      return this;
    }

    /**
     * The wait before each retry. Default: exponential from 1 s, factor 2, no cap, no jitter.
     *
     * @param backoff the backoff; checked (not null) by {@link #build()}
     * @return this builder
     */
    public Builder backoff(Backoff backoff) {
      this.backoff = backoff;
      return this;
    }

    /**
     * What a full queue does. Default {@link DropPolicy#DROP_LOWEST_PRIORITY}.
     *
     * @param dropPolicy the policy; checked (not null) by {@link #build()}
     * @return this builder
     */
    public Builder dropPolicy(DropPolicy dropPolicy) {
      this.dropPolicy = dropPolicy;
      return this;
    }

    /**
     * How long and how many event ids stay seen for deduplication, whichever bound is hit first.
     * Default 24 h, 100 000 ids. The time bound is both wall-clock and elapsed time: an id leaves
     * by age once both its wall-clock age and its elapsed time since first seen (its wall-clock
     * age at restore, for an id restored from the journal) reach {@code window}, so a wall clock
     * stepped forward never lets ids go early.
     *
     * @param window how long an id stays seen; checked (positive) by {@link #build()}
     * @param maxIds how many ids stay seen; checked ({@code >= 1}) by {@link #build()}
     * @return this builder
     */
    public Builder dedupeWindow(Duration window, int maxIds) {
      this.dedupeWindow = window;
      this.dedupeMaxIds = maxIds;
      return this;
    }

    /**
     * The most dead letters kept, by count and by UTF-8 bytes of payload plus dead reason,
     * whichever bound is hit first: a new dead letter beyond them pushes the oldest out (reported as {@code DROPPED},
     * counted in {@link QueueStats#deadDropped()} and as {@code "dead-letter-overflow"} by the
     * metrics listener). Default 10 000 events, 64 MiB.
     *
     * @param maxCount the most dead letters; checked ({@code >= 1}) by {@link #build()}
     * @param maxBytes the most bytes of dead letters; checked ({@code >= 1}) by {@link #build()}
     * @return this builder
     */
    public Builder deadLetters(int maxCount, long maxBytes) {
      this.maxDeadLetters = maxCount;
      this.maxDeadBytes = maxBytes;
      return this;
    }

    /**
     * The oldest a pending event and a dead letter may get before they are discarded, so that
     * what the journal holds is bounded by age as well as by size by default. Default 7 days for
     * both: an outage of a long weekend and more is bridged, while a report a week late is rarely
     * worth sending, and an operator reviewing dead letters weekly still finds them. An event
     * older than {@code pending} is discarded as expired (counted in {@link
     * QueueStats#expired()} and as {@code "expired"} by the metrics listener, reported as {@code
     * EXPIRED}); a dead letter older than {@code deadLetters} (counted from when it died) is
     * discarded as dropped ({@link QueueStats#deadDropped()}, {@code "dead-letter-overflow"},
     * {@code DROPPED}). In-flight events are not discarded by age. Ages are elapsed time on the
     * monotonic reading, so a wall clock stepped forward discards nothing; an event restored
     * after a restart starts with its wall-clock age at the restore (at most the bound), a dead
     * letter with the wall-clock age of its last attempt, and a replayed dead letter starts again
     * at zero (until a restart, which counts from its enqueue time). Drains (and an enqueue into
     * a full queue) discard at most 64 per call, in one journal change; when the journal cannot
     * record it, nothing is discarded and the next call tries again. Use {@link #noMaxAge()} to
     * keep events for any age.
     *
     * @param pending the most age of a pending event; checked (positive) by {@link #build()}
     * @param deadLetters the most age of a dead letter; checked (positive) by {@link #build()}
     * @return this builder
     */
    public Builder maxAge(Duration pending, Duration deadLetters) {
      this.maxAge = pending;
      this.maxDeadAge = deadLetters;
      this.maxAgeSet = true;
      return this;
    }

    /**
     * Keeps pending events and dead letters for any age (only the size bounds, {@link
     * #capacity}, {@link #maxBytes} and {@link #deadLetters}, and an event's own expiry apply).
     *
     * @return this builder
     */
    public Builder noMaxAge() {
      this.maxAgeSet = false;
      return this;
    }

    /**
     * Receives every lifecycle step. Default: none.
     *
     * @param listener the listener; checked (not null) by {@link #build()}
     * @return this builder
     */
    public Builder listener(LifecycleListener listener) {
      this.listener = listener;
      this.listenerSet = true;
      return this;
    }

    /**
     * Where lost events are counted: {@link MetricsListener#dropped} with this queue's {@link
     * #name}, reason {@code "capacity"} (evicted, or rejected as {@code QUEUE_FULL}), {@code
     * "rejected"} ({@code TOO_LARGE}), {@code "expired"}, {@code "journal-full"} ({@code
     * JOURNAL_FULL}) or {@code "dead-letter-overflow"} (a dead letter pushed out of full dead
     * letters), one call per event, under the queue's
     * lock (so it must be fast). Default: none. Gauges come from {@link ReportQueue#stats()} and
     * {@link ReportQueue#oldestPendingAge()}, sampled by the caller.
     *
     * @param metrics the listener; checked (not null) by {@link #build()}
     * @return this builder
     */
    public Builder metrics(MetricsListener metrics) {
      this.metrics = metrics;
      this.metricsSet = true;
      return this;
    }

    /**
     * The {@code where} of lifecycle events. Default {@code "report-queue"}.
     *
     * @param name the name; checked (not blank) by {@link #build()}
     * @return this builder
     */
    public Builder name(String name) {
      this.name = name;
      return this;
    }

    /**
     * A queue with this configuration. It starts empty: call {@link ReportQueue#restore()} to
     * load what the journal holds.
     *
     * @return a new, empty queue
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
      Checks.requirePositive("maxDeadLetters", maxDeadLetters);
      Checks.requirePositive("maxDeadBytes", maxDeadBytes);
      if (maxAgeSet) {
        Checks.requirePositive("maxAge (pending events; noMaxAge() keeps events for any age)",
            maxAge);
        Checks.requirePositive("maxAge (dead letters; noMaxAge() keeps them for any age)",
            maxDeadAge);
      }
      Checks.requireNonNull("listener", listener);
      Checks.requireNonNull("metrics", metrics);
      Checks.requireNonBlank("name", name);
      return new ReportQueue(this);
    }
  }
}
