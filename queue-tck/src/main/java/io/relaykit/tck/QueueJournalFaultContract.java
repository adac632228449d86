package io.relaykit.tck;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.queue.DropPolicy;
import io.relaykit.queue.EnqueueResult;
import io.relaykit.queue.JournalException;
import io.relaykit.queue.JournalState;
import io.relaykit.queue.NackResult;
import io.relaykit.queue.Priority;
import io.relaykit.queue.QueueJournal;
import io.relaykit.queue.QueuedEvent;
import io.relaykit.queue.ReportEvent;
import io.relaykit.queue.ReportQueue;
import io.relaykit.retry.Backoff;
import io.relaykit.tck.FaultyJournal.Call;
import io.relaykit.tck.FaultyJournal.Fault;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The fault-injection kit every {@link QueueJournal} backend runs: a {@link ReportQueue} on the
 * backend, wrapped in a {@link FaultyJournal}, is driven through random sequences of enqueue,
 * drain, ack, nack, replay, purge, flush, crash (a new queue on the same storage, the old journal
 * abandoned unflushed) and clean close/reopen, with one fault injected at a random call site of
 * about a third of the operations (before the write, after it with an unknown outcome, or as a
 * full journal). A simple model checks every step:
 * <ul>
 *   <li>each operation ends <b>accepted</b>, <b>refused</b> before any write ({@code
 *       NOT_RECORDED}, or a refusal result such as {@code JOURNAL_FULL}), or <b>unknown</b>;
 *   <li>after a refusal or an unknown outcome the queue is exactly as before (the documented
 *       exception: a critical enqueue whose sync failed is queued);
 *   <li>after a crash, every event is in a state it was in at or after the last point where its
 *       durability was promised (a critical enqueue that returned, a flush, a clean close), so an
 *       accepted change survives within its priority's durability; a refused event never comes
 *       back; an event touched by an unknown outcome may be in any state, but under its own id,
 *       with its own content, and never twice;
 *   <li>after a clean close and reopen, every event is exactly where the queue had it (in-flight
 *       events pending again).
 * </ul>
 *
 * <p>A backend's test is one method: {@link #backend()} returns fresh, empty storage. Each run is
 * reproducible from its seed; a failure is shrunk to a short operation list and reported with its
 * seed, which then belongs in {@link #REGRESSION_SEEDS}. The default is {@link #defaultTries()}
 * tries of {@link #steps()} operations (sized so each backend takes well under a minute on a busy
 * two-core machine); run more with {@code -DargLine="-Drelaykit.faults.tries=2000"} on the Maven
 * command line, and another base seed with {@code -Drelaykit.faults.seed=...} the same way.
 *
 * <p>The generator is a seeded {@link SplittableRandom} and a small shrinker, not jqwik: jqwik's
 * maintainer asks that AI coding agents not use it, and an agent wrote this kit.
 */
public abstract class QueueJournalFaultContract {

  /** Seeds that once failed on some backend: each runs first, every time. */
  protected static final long[] REGRESSION_SEEDS = {};

  private static final long BASE_SEED = 0x5eed_f1L;
  private static final int CAPACITY = 5;
  private static final int MAX_ATTEMPTS = 3;
  private static final int WINDOW = 6;

  /** Storage for one run, and how a crash abandons a journal on it. */
  @FunctionalInterface
  public interface Backend {
    /** A journal instance on this backend's storage: the same storage at every call. */
    QueueJournal open() throws Exception;

    /**
     * Abandons {@code journal} as a killed process would: without flushing what it buffers, and
     * so that it never writes again. The default does nothing (a backend that writes through).
     */
    default void crash(QueueJournal journal) throws Exception {
    }

    /** Removes the storage after the run. The default does nothing. */
    default void destroy() throws Exception {
    }
  }

  /** Fresh, empty storage for one run. */
  protected abstract Backend backend() throws Exception;

  /** Random tries per test run unless {@code relaykit.faults.tries} says otherwise. */
  protected int defaultTries() {
    return 60;
  }

  /** Operations per try. */
  protected int steps() {
    return 40;
  }

  private int tries() {
    return Integer.getInteger("relaykit.faults.tries", defaultTries());
  }

  private static long baseSeed() {
    return Long.getLong("relaykit.faults.seed", BASE_SEED);
  }

  @Test
  @DisplayName("random operations with faults at every call site keep every promise of the queue and journal")
  void randomOperationsWithFaults() throws Exception {
    for (long seed : REGRESSION_SEEDS) {
      check(seed);
    }
    long base = baseSeed();
    for (int i = 0; i < tries(); i++) {
      check(base + i);
    }
  }

  @Test
  @DisplayName("a fault of each kind at each call site of each operation, one at a time")
  void everyCallSite() throws Exception {
    for (Kind kind : Kind.values()) {
      for (Call call : kind.calls) {
        for (Fault fault : Fault.values()) {
          List<Op> ops = new ArrayList<>(scenarioBefore(kind));
          ops.add(target(kind, call, fault));
          ops.add(new Op(Kind.DRAIN, null, null, null, null));
          ops.add(new Op(Kind.CRASH, null, null, null, null));
          ops.add(new Op(Kind.REOPEN, null, null, null, null));
          String failure = run(ops);
          if (failure != null) {
            throw new AssertionError(kind + " with " + fault + " at " + call + " broke a promise: "
                + failure + "\n  operations: " + ops);
          }
        }
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Operations

  /** What an operation does, and the journal calls it may make (where faults go). */
  enum Kind {
    ENQUEUE(Call.APPEND, Call.RECORD_ATOMICALLY, Call.AWAIT_DURABLE, Call.FORGET),
    RETRY_ENQUEUE(Call.APPEND, Call.RECORD_ATOMICALLY, Call.AWAIT_DURABLE),
    DRAIN(Call.FORGET),
    ACK(Call.REMOVE, Call.RECORD_ATOMICALLY),
    NACK(Call.RESCHEDULE, Call.DEAD_LETTER),
    REJECT(Call.DEAD_LETTER),
    REPLAY(Call.APPEND),
    PURGE(Call.REMOVE, Call.RECORD_ATOMICALLY),
    FLUSH(Call.FLUSH),
    CRASH(Call.LOAD),
    REOPEN(Call.LOAD);

    final List<Call> calls;

    Kind(Call... calls) {
      this.calls = List.of(calls);
    }
  }

  /** One concrete operation: replayable, so a failing list can be shrunk. */
  record Op(Kind kind, String id, Priority priority, Call call, Fault fault) {
    @Override
    public String toString() {
      return kind.name().toLowerCase(java.util.Locale.ROOT) + (id == null ? "" : " " + id)
          + (priority == null ? "" : " " + priority)
          + (call == null ? "" : " [" + fault + " at " + call + "]");
    }
  }

  private static Op target(Kind kind, Call call, Fault fault) {
    return switch (kind) {
      case ENQUEUE, RETRY_ENQUEUE -> new Op(kind, "t", Priority.CRITICAL, call, fault);
      case ACK, NACK, REJECT -> new Op(kind, "s1", null, call, fault);
      case REPLAY, PURGE -> new Op(kind, "d1", null, call, fault);
      default -> new Op(kind, null, null, call, fault);
    };
  }

  /**
   * A queue state in which the target operation has something to do: a full queue (so an enqueue
   * evicts), an id out of the dedupe window (so an ack forgets too), one in flight, one dead.
   */
  private static List<Op> scenarioBefore(Kind kind) {
    List<Op> ops = new ArrayList<>();
    ops.add(new Op(Kind.ENQUEUE, "s1", Priority.NORMAL, null, null));
    ops.add(new Op(Kind.DRAIN, null, null, null, null));
    for (int i = 0; i < WINDOW + 1; i++) {
      ops.add(new Op(Kind.ENQUEUE, "w" + i, Priority.LOW, null, null));
      ops.add(new Op(Kind.DRAIN, null, null, null, null));
      ops.add(new Op(Kind.ACK, "w" + i, null, null, null));
    }
    // s1 is in flight and out of the dedupe window now: its ack forgets it in the same change.
    ops.add(new Op(Kind.ENQUEUE, "d1", Priority.NORMAL, null, null));
    ops.add(new Op(Kind.DRAIN, null, null, null, null));
    ops.add(new Op(Kind.REJECT, "d1", null, null, null));
    if (kind == Kind.ENQUEUE || kind == Kind.RETRY_ENQUEUE) {
      // A full queue: the critical target evicts a LOW event in one atomic change.
      for (int i = 0; i < CAPACITY - 1; i++) {
        ops.add(new Op(Kind.ENQUEUE, "l" + i, Priority.LOW, null, null));
      }
    }
    if (kind == Kind.RETRY_ENQUEUE) {
      ops.add(new Op(Kind.ENQUEUE, "t", Priority.CRITICAL, Call.APPEND, Fault.BEFORE_WRITE));
    }
    ops.add(new Op(Kind.FLUSH, null, null, null, null));
    return ops;
  }

  /** Generates {@link #steps()} operations from {@code seed}, consulting the model as it goes. */
  private final class Generator {
    private final SplittableRandom random;
    private int nextId;

    Generator(long seed) {
      this.random = new SplittableRandom(seed);
    }

    Op next(Model model) {
      int roll = random.nextInt(100);
      Kind kind;
      if (roll < 28) {
        kind = Kind.ENQUEUE;
      } else if (roll < 33) {
        kind = Kind.RETRY_ENQUEUE;
      } else if (roll < 48) {
        kind = Kind.DRAIN;
      } else if (roll < 62) {
        kind = Kind.ACK;
      } else if (roll < 71) {
        kind = Kind.NACK;
      } else if (roll < 75) {
        kind = Kind.REJECT;
      } else if (roll < 80) {
        kind = Kind.REPLAY;
      } else if (roll < 83) {
        kind = Kind.PURGE;
      } else if (roll < 89) {
        kind = Kind.FLUSH;
      } else if (roll < 95) {
        kind = Kind.CRASH;
      } else {
        kind = Kind.REOPEN;
      }
      String id = switch (kind) {
        case ENQUEUE -> "e" + nextId++;
        case RETRY_ENQUEUE -> pick(model.retryable(), "e" + nextId++);
        case ACK, NACK, REJECT -> pick(model.ids(Mem.INFLIGHT), pick(model.known(), null));
        case REPLAY, PURGE -> pick(model.ids(Mem.DEAD), pick(model.known(), null));
        default -> null;
      };
      if (id == null && kind != Kind.DRAIN && kind != Kind.FLUSH && kind != Kind.CRASH
          && kind != Kind.REOPEN) {
        kind = Kind.DRAIN;
      }
      Priority priority = kind == Kind.ENQUEUE
          ? Priority.values()[random.nextInt(Priority.values().length)]
          : kind == Kind.RETRY_ENQUEUE ? model.offeredPriority(id) : null;
      Call call = null;
      Fault fault = null;
      if (random.nextInt(3) == 0) {
        call = kind.calls.get(random.nextInt(kind.calls.size()));
        fault = Fault.values()[random.nextInt(Fault.values().length)];
      }
      return new Op(kind, id, priority, call, fault);
    }

    private String pick(List<String> from, String otherwise) {
      return from.isEmpty() ? otherwise : from.get(random.nextInt(from.size()));
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Running and checking

  private void check(long seed) throws Exception {
    List<Op> ops = new ArrayList<>();
    String failure = run(seed, ops);
    if (failure == null) {
      return;
    }
    List<Op> shrunk = shrink(ops);
    String shrunkFailure = run(shrunk);
    throw new AssertionError("seed " + seed + " broke a promise: " + failure
        + "\n  shortest failing operations found (" + shrunk.size() + " of " + ops.size() + "): "
        + shrunk + (shrunkFailure == null ? "" : "\n  which fail with: " + shrunkFailure)
        + "\n  keep the seed in QueueJournalFaultContract.REGRESSION_SEEDS once fixed");
  }

  /** Runs {@link #steps()} operations generated from {@code seed}, recording them in {@code ops}. */
  private String run(long seed, List<Op> ops) throws Exception {
    return run(ops, new Generator(seed));
  }

  /** Runs the concrete list {@code ops}. */
  private String run(List<Op> ops) throws Exception {
    return run(new ArrayList<>(ops), null);
  }

  /**
   * Runs {@code ops}, or, with a generator, {@link #steps()} operations it generates (appended to
   * {@code ops}), then a clean reopen; returns why a promise broke, or null.
   */
  private String run(List<Op> ops, Generator generator) throws Exception {
    Run run = new Run(backend());
    int step = 0;
    try {
      int count = generator == null ? ops.size() : steps();
      for (; step < count; step++) {
        if (generator != null) {
          ops.add(generator.next(run.model));
        }
        Op op = ops.get(step);
        String failure = run.apply(op);
        if (failure != null) {
          return "step " + (step + 1) + " (" + op + "): " + failure;
        }
      }
      return run.apply(new Op(Kind.REOPEN, null, null, null, null));
    } catch (AssertionError | RuntimeException e) {
      return "step " + (step + 1) + " (" + (step < ops.size() ? ops.get(step) : "reopen")
          + ") threw " + e;
    } finally {
      run.close();
    }
  }

  /** Removes chunks of operations while the list still fails; at most 120 re-runs. */
  private List<Op> shrink(List<Op> failing) throws Exception {
    List<Op> current = new ArrayList<>(failing);
    int budget = 120;
    for (int chunk = Math.max(1, current.size() / 2); chunk >= 1 && budget > 0; chunk /= 2) {
      for (int from = 0; from + chunk <= current.size() && budget > 0; ) {
        List<Op> candidate = new ArrayList<>(current.subList(0, from));
        candidate.addAll(current.subList(from + chunk, current.size()));
        budget--;
        if (run(candidate) != null) {
          current = candidate;
        } else {
          from += chunk;
        }
      }
    }
    return current;
  }

  /** Where the queue holds an id. */
  enum Mem { PENDING, INFLIGHT, DEAD, ABSENT }

  /** Durable states: in flight is pending to a journal (drains are not recorded). */
  private static Mem durable(Mem m) {
    return m == Mem.INFLIGHT ? Mem.PENDING : m;
  }

  /** What the queue should hold, and which states a crash may bring back. */
  private static final class Model {
    /** Every id the queue holds, by where; absent ids are not listed. */
    final Map<String, Mem> memory = new LinkedHashMap<>();
    /** Every event ever offered, by id (a retry offers the same event). */
    final Map<String, ReportEvent> offered = new LinkedHashMap<>();
    /** Ids whose offer was refused or unknown, and that are not queued: a producer retries them. */
    final Set<String> failedOffers = new LinkedHashSet<>();
    /**
     * Per id, the durable states it went through since the last point where durability was
     * promised; the first is its state at that point. Ids never accepted are not listed.
     */
    final Map<String, List<Mem>> since = new HashMap<>();
    /** Ids an unknown outcome touched since the last restore: any state, never twice. */
    final Set<String> uncertain = new HashSet<>();

    Mem at(String id) {
      return memory.getOrDefault(id, Mem.ABSENT);
    }

    void set(String id, Mem m) {
      if (m == Mem.ABSENT) {
        memory.remove(id);
      } else {
        memory.put(id, m);
      }
      since.computeIfAbsent(id, k -> new ArrayList<>(List.of(Mem.ABSENT))).add(durable(m));
    }

    /** Everything recorded so far is durable now. */
    void durablePoint() {
      since.replaceAll((id, states) -> new ArrayList<>(List.of(durable(at(id)))));
    }

    List<String> ids(Mem m) {
      return memory.entrySet().stream().filter(e -> e.getValue() == m).map(Map.Entry::getKey)
          .toList();
    }

    List<String> known() {
      return new ArrayList<>(offered.keySet());
    }

    List<String> retryable() {
      return failedOffers.stream().filter(id -> at(id) == Mem.ABSENT).toList();
    }

    Priority offeredPriority(String id) {
      ReportEvent e = offered.get(id);
      return e == null ? Priority.NORMAL : e.priority();
    }

    int live() {
      return (int) memory.values().stream().filter(m -> m == Mem.PENDING || m == Mem.INFLIGHT)
          .count();
    }
  }

  /** One run: a backend, the queue on it, the model beside it. */
  private final class Run {
    final Backend backend;
    final FakeClock clock = new FakeClock();
    final Model model = new Model();
    FaultyJournal journal;
    ReportQueue queue;

    Run(Backend backend) throws Exception {
      this.backend = backend;
      this.journal = new FaultyJournal(backend.open());
      this.queue = newQueue();
      queue.restore();
    }

    ReportQueue newQueue() {
      return ReportQueue.builder().clock(clock).journal(journal).capacity(CAPACITY)
          .maxAttempts(MAX_ATTEMPTS).backoff(Backoff.fixed(Duration.ofMillis(1)))
          .dropPolicy(DropPolicy.DROP_LOWEST_PRIORITY).batchSize(3)
          .dedupeWindow(Duration.ofDays(3650), WINDOW).build();
    }

    ReportEvent event(String id, Priority priority) {
      return model.offered.computeIfAbsent(id,
          k -> new ReportEvent(k, "fault.kit", "payload of " + k, priority, null));
    }

    /** Applies {@code op} to the queue and the model; returns why a promise broke, or null. */
    String apply(Op op) throws Exception {
      clock.advance(Duration.ofMillis(10));
      long injectedBefore = journal.injected();
      if (op.call() != null && op.kind() != Kind.CRASH && op.kind() != Kind.REOPEN) {
        journal.failNext(op.call(), op.fault());
      }
      Map<String, Mem> before = new LinkedHashMap<>(model.memory);
      String failure;
      try {
        failure = switch (op.kind()) {
          case ENQUEUE, RETRY_ENQUEUE -> enqueue(op, injectedBefore);
          case DRAIN -> drain();
          case ACK -> settle(op, () -> {
            int acked = queue.ack(List.of(op.id()));
            boolean expected = model.at(op.id()) == Mem.INFLIGHT;
            if (acked != (expected ? 1 : 0)) {
              return "ack of " + op.id() + " (" + model.at(op.id()) + ") acked " + acked;
            }
            if (expected) {
              model.set(op.id(), Mem.ABSENT);
            }
            return null;
          });
          case NACK, REJECT -> settle(op, () -> nack(op));
          case REPLAY -> settle(op, () -> {
            boolean room = model.live() < CAPACITY;
            int replayed = queue.replayDead(List.of(op.id()));
            boolean expected = model.at(op.id()) == Mem.DEAD && room;
            if (replayed != (expected ? 1 : 0)) {
              return "replay of " + op.id() + " (" + model.at(op.id()) + ", live "
                  + model.live() + ") replayed " + replayed;
            }
            if (expected) {
              model.set(op.id(), Mem.PENDING);
            }
            return null;
          });
          case PURGE -> settle(op, () -> {
            int purged = queue.purgeDead(List.of(op.id()));
            boolean expected = model.at(op.id()) == Mem.DEAD;
            if (purged != (expected ? 1 : 0)) {
              return "purge of " + op.id() + " (" + model.at(op.id()) + ") purged " + purged;
            }
            if (expected) {
              model.set(op.id(), Mem.ABSENT);
            }
            return null;
          });
          case FLUSH -> {
            try {
              queue.flush();
              model.durablePoint();
            } catch (JournalException e) {
              // Not a durable point; nothing else changes.
            }
            yield null;
          }
          case CRASH -> restart(true, op);
          case REOPEN -> restart(false, op);
        };
      } finally {
        journal.heal();
      }
      if (failure == null && op.kind() != Kind.CRASH && op.kind() != Kind.REOPEN) {
        failure = compareMemory(op, before);
      }
      return failure;
    }

    private String enqueue(Op op, long injectedBefore) {
      String id = op.id();
      Priority priority = op.kind() == Kind.RETRY_ENQUEUE ? model.offeredPriority(id)
          : op.priority();
      ReportEvent event = event(id, priority);
      Mem wasAt = model.at(id);
      boolean full = model.live() >= CAPACITY;
      EnqueueResult result;
      try {
        result = queue.enqueue(event);
      } catch (JournalException e) {
        boolean triggered = journal.injected() > injectedBefore;
        if (triggered && op.call() == Call.AWAIT_DURABLE) {
          // Recorded, durability unknown: queued in this process (the one documented case).
          syncFromQueue();
          model.uncertain.addAll(model.memory.keySet());
          model.uncertain.add(id);
          return at(id) == Mem.PENDING ? null
              : "a critical enqueue whose sync failed is not queued";
        }
        model.failedOffers.add(id);
        if (e.outcome() == JournalException.Outcome.UNKNOWN) {
          model.uncertain.add(id);
          if (full) {
            model.uncertain.addAll(model.ids(Mem.PENDING)); // possible victims in the journal
          }
        }
        return null;
      }
      switch (result.reason()) {
        case OK -> {
          if (wasAt != Mem.ABSENT) {
            return "accepted " + id + " though it was " + wasAt;
          }
          for (String victim : result.droppedIds()) {
            if (model.at(victim) != Mem.PENDING) {
              return "evicted " + victim + ", which was " + model.at(victim);
            }
            model.set(victim, Mem.ABSENT);
            model.failedOffers.add(victim);
          }
          model.set(id, Mem.PENDING);
          model.failedOffers.remove(id);
          if (priority == Priority.CRITICAL) {
            model.durablePoint();
          }
        }
        case DUPLICATE -> {
          if (wasAt == Mem.ABSENT && !model.since.containsKey(id)
              && !model.uncertain.contains(id)) {
            return "DUPLICATE for " + id + ", which was never accepted";
          }
        }
        case QUEUE_FULL -> {
          if (!full) {
            return "QUEUE_FULL with " + model.live() + " of " + CAPACITY + " live";
          }
          model.failedOffers.add(id);
        }
        case JOURNAL_FULL -> {
          if (op.fault() != Fault.FULL || priority == Priority.CRITICAL) {
            return "JOURNAL_FULL without a full journal, or for a critical event";
          }
          model.failedOffers.add(id);
        }
        default -> {
          return "unexpected " + result;
        }
      }
      return null;
    }

    private String drain() {
      List<QueuedEvent> batch = queue.drainBatch(clock.instant().plusSeconds(1));
      for (QueuedEvent e : batch) {
        if (model.at(e.eventId()) != Mem.PENDING) {
          return "drained " + e.eventId() + ", which was " + model.at(e.eventId());
        }
        model.memory.put(e.eventId(), Mem.INFLIGHT);
      }
      if (batch.size() < 3 && !model.ids(Mem.PENDING).isEmpty()) {
        return "drained " + batch.size() + " while " + model.ids(Mem.PENDING) + " were pending";
      }
      return null;
    }

    private String nack(Op op) {
      boolean retryable = op.kind() == Kind.NACK;
      NackResult r = queue.nack(List.of(op.id()), retryable, Duration.ZERO, "rejected by kit");
      boolean inflight = model.at(op.id()) == Mem.INFLIGHT;
      int total = r.requeued() + r.dead() + r.expired();
      if (total != (inflight ? 1 : 0) || r.expired() != 0 || (!retryable && r.requeued() != 0)) {
        return "nack of " + op.id() + " (" + model.at(op.id()) + ") gave " + r;
      }
      if (inflight) {
        model.set(op.id(), r.dead() == 1 ? Mem.DEAD : Mem.PENDING);
      }
      return null;
    }

    /** Runs a settling operation; a journal failure leaves everything as before. */
    private String settle(Op op, java.util.function.Supplier<String> action) {
      try {
        return action.get();
      } catch (JournalException e) {
        if (e.outcome() == JournalException.Outcome.UNKNOWN) {
          model.uncertain.add(op.id());
          if (op.call() == Call.RECORD_ATOMICALLY) {
            model.uncertain.addAll(model.ids(Mem.DEAD)); // dead letters it may have pushed out
          }
        }
        return null;
      }
    }

    /** Crash (abandon the journal) or clean close, then a new queue on the same storage. */
    private String restart(boolean crash, Op op) throws Exception {
      journal.heal();
      if (crash) {
        backend.crash(journal.delegate());
      } else {
        journal.close();
        model.durablePoint();
      }
      journal = new FaultyJournal(backend.open());
      if (op.call() != null) {
        journal.failNext(op.call(), op.fault());
      }
      Call loadFault = null;
      queue = newQueue();
      try {
        queue.restore();
      } catch (JournalException e) {
        loadFault = Call.LOAD;
        if (queue.stats().pending() + queue.stats().deadLetters() != 0) {
          return "a restore whose load failed changed the queue: " + queue.stats();
        }
        queue.restore(); // a failed load changed nothing; the same queue restores again
      }
      String failure = checkRestored(crash);
      // What the journal holds is the truth now, and durable.
      syncFromQueue();
      model.uncertain.clear();
      model.durablePoint();
      return failure == null ? null : failure + (loadFault == null ? "" : " (after a failed load)");
    }

    private String checkRestored(boolean crash) {
      Map<String, Mem> restored = queueState();
      List<String> all = new ArrayList<>(queue.pendingIds());
      all.addAll(queue.inflightIds());
      all.addAll(queue.deadIds());
      if (new HashSet<>(all).size() != all.size()) {
        return "an id is held twice after the restart: " + all;
      }
      JournalState loaded = journal.lastLoad();
      List<QueuedEvent> events = new ArrayList<>(loaded.pending());
      events.addAll(loaded.dead());
      for (QueuedEvent e : events) {
        ReportEvent offered = model.offered.get(e.eventId());
        if (offered == null) {
          return "the journal holds " + e.eventId() + ", which was never offered";
        }
        if (!offered.payload().equals(e.payload()) || !offered.name().equals(e.name())
            || offered.priority() != e.priority()) {
          return "the journal holds " + e + ", not the offered " + offered.eventId();
        }
      }
      for (String id : model.offered.keySet()) {
        Mem now = restored.getOrDefault(id, Mem.ABSENT);
        if (model.uncertain.contains(id)) {
          continue;
        }
        List<Mem> allowed = crash ? model.since.getOrDefault(id, List.of(Mem.ABSENT))
            : List.of(durable(model.at(id)));
        if (!allowed.contains(now)) {
          return id + " is " + now + " after the " + (crash ? "crash" : "clean reopen")
              + ", but its states since the last durable point were " + allowed
              + (model.since.containsKey(id) ? "" : " (it was never accepted)");
        }
      }
      return null;
    }

    private Map<String, Mem> queueState() {
      Map<String, Mem> state = new LinkedHashMap<>();
      queue.pendingIds().forEach(id -> state.put(id, Mem.PENDING));
      queue.inflightIds().forEach(id -> state.put(id, Mem.INFLIGHT));
      queue.deadIds().forEach(id -> state.put(id, Mem.DEAD));
      return state;
    }

    private Mem at(String id) {
      return queueState().getOrDefault(id, Mem.ABSENT);
    }

    private void syncFromQueue() {
      Map<String, Mem> state = queueState();
      for (String id : new ArrayList<>(model.offered.keySet())) {
        Mem m = state.getOrDefault(id, Mem.ABSENT);
        if (m != model.at(id)) {
          model.set(id, m);
        }
        if (m != Mem.ABSENT) {
          model.failedOffers.remove(id);
        }
      }
    }

    /** The queue must hold exactly what the model says, after every operation. */
    private String compareMemory(Op op, Map<String, Mem> before) {
      Map<String, Mem> actual = queueState();
      if (!actual.equals(model.memory)) {
        return "the queue holds " + actual + " but should hold " + model.memory
            + (actual.equals(before) ? "" : " (it held " + before + " before)");
      }
      var stats = queue.stats();
      if (stats.pending() + stats.inflight() != model.live() || stats.deadLetters()
          != model.ids(Mem.DEAD).size() || stats.pending() < 0 || stats.inflight() < 0) {
        return "stats " + stats + " disagree with " + model.memory;
      }
      return null;
    }

    void close() throws Exception {
      try {
        journal.close();
      } catch (RuntimeException ignored) {
        // A run that failed may leave a journal that refuses to close.
      }
      backend.destroy();
    }
  }
}
