package io.relaykit.tck;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.message.Message;
import io.relaykit.message.MessageRejectedException;
import io.relaykit.message.PublishException;
import io.relaykit.message.PublishReceipt;
import io.relaykit.message.Publisher;
import io.relaykit.outbox.OutboxRecord;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.outbox.OutboxStats;
import io.relaykit.outbox.OutboxStore;
import io.relaykit.retry.Backoff;
import io.relaykit.retry.RetryPolicy;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The outbox under concurrency, model-checked: {@value #RELAYS} relays whose clocks are skewed
 * independently (from an hour slow to 8 days fast) share one store whose leases are decided on
 * the store's clock, while a seeded driver moves that clock (leases expire mid-publish), appends
 * more rows, makes the broker fail (transiently, permanently), confirm late or block inside the
 * publish call (so the heartbeat must keep the lease), wakes the relays as a commit does (so they
 * claim while earlier batches await their confirms), and kills relays
 * (a killed relay's store calls and publishes fail from then on, as for a dead process) and
 * starts new ones. At the end it checks:
 *
 * <ul>
 *   <li>every committed row was published at least once, and is sent or dead-lettered;
 *   <li>no row was leased to two relays at once: the lease intervals each relay held on a row,
 *       from its claim to its lease's end (as renewed) or its release, are disjoint, so no two
 *       relays published a row while both held a valid lease;
 *   <li>per-key order: a row of a key is first published only after the previous row of that key
 *       (in append order, which is commit order here) was first confirmed, unless that one was
 *       dead-lettered;
 *   <li>no dead letter for a row that was sent, and the counts add up: sent + dead letters =
 *       appended, nothing unsent.
 * </ul>
 *
 * <p>Each run is reproducible from its seed in what the driver and the brokers decide (thread
 * timing is the machine's); a failure names its seed, which then belongs in {@link
 * #REGRESSION_SEEDS}. {@code -Drelaykit.outbox.concurrency.seed=...} adds a seed. CI-sized: a
 * few seconds per seed.
 *
 * <p>Subclass it and implement {@link #createStore}, {@link #createDeadLetterStore} and {@link
 * #appendCommitted}; the store must decide time on the given clock, as in {@link
 * OutboxStoreContract}.
 */
public abstract class OutboxConcurrencyContract {

  /** For a subclass that binds the kit to one backend. */
  protected OutboxConcurrencyContract() {}

  /** Seeds that found defects, kept as regression cases, plus a few fixed ones. */
  protected static final long[] REGRESSION_SEEDS = {1L, 42L, 20261202L};

  private static final int RELAYS = 3;
  private static final int INITIAL_ROWS = 90;
  private static final int LATER_ROWS = 30;
  private static final int KEYS = 9;
  private static final int MAX_KILLS = 3;
  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final Duration DEADLINE = Duration.ofSeconds(60);

  /**
   * A new, empty outbox that decides readiness, leases and retention on {@code storeClock}; called
   * once per seed.
   *
   * @param storeClock the one clock the store decides time on (the relays' clocks are skewed
   *     from it)
   * @return an outbox holding no rows
   */
  protected abstract OutboxStore createStore(InstantSource storeClock);

  /**
   * The dead-letter store that goes with the store {@link #createStore} returned last, empty.
   *
   * @return the dead letters of that outbox, holding none
   */
  protected abstract DeadLetterStore createDeadLetterStore();

  /**
   * Appends a row to the store {@link #createStore} returned last, committed when this returns, as
   * the business transaction would.
   *
   * @param destination where the row is to be published
   * @param message the message to append
   */
  protected abstract void appendCommitted(String destination, Message message);

  @Test
  @DisplayName("3 relays with skewed clocks, failing brokers, expiring leases and kills: every"
      + " row published, leases never overlap, per-key order, counts add up (regression seeds)")
  void regressionSeeds() {
    for (long seed : REGRESSION_SEEDS) {
      run(seed);
    }
  }

  @Test
  @DisplayName("the same with a fresh seed (printed on failure)")
  void freshSeed() {
    Long fixed = Long.getLong("relaykit.outbox.concurrency.seed");
    run(fixed != null ? fixed : System.nanoTime());
  }

  private void run(long seed) {
    try {
      new Run(seed).execute();
    } catch (AssertionError | RuntimeException e) {
      AssertionError failure = new AssertionError("outbox concurrency run failed with seed "
          + seed + " (rerun with -Drelaykit.outbox.concurrency.seed=" + seed + ", then keep it in"
          + " OutboxConcurrencyContract.REGRESSION_SEEDS once fixed): " + e.getMessage(), e);
      throw failure;
    }
  }

  /** A lease one relay held on one row, on the store's clock: [start, end). */
  private static final class Interval {
    final String owner;
    final Instant start;
    Instant end;

    Interval(String owner, Instant start, Instant end) {
      this.owner = owner;
      this.start = start;
      this.end = end;
    }

    @Override
    public String toString() {
      return owner + "[" + start + ", " + end + ")";
    }
  }

  /** One run of the model. */
  private final class Run {
    private final long seed;
    private final SplittableRandom random;
    private final FakeClock storeClock = new FakeClock();
    /** Store calls hold the read lock, clock moves the write lock: one store now per call. */
    private final ReentrantReadWriteLock clockLock = new ReentrantReadWriteLock();
    private final String destination = "tck-concurrency-" + java.util.UUID.randomUUID();
    private final OutboxStore store;
    private final DeadLetterStore deadLetters;
    private final Map<Long, List<Interval>> leases = new HashMap<>();
    private final Map<String, String> keyOf = new ConcurrentHashMap<>();
    private final Map<String, List<String>> byKey = new HashMap<>();
    private final List<String> appended = new ArrayList<>();
    private final AtomicLong events = new AtomicLong();
    private final Map<String, Long> firstPublish = new ConcurrentHashMap<>();
    private final Map<String, Long> firstConfirm = new ConcurrentHashMap<>();
    private final Set<String> publishedIds = ConcurrentHashMap.newKeySet();
    private final List<CompletableFuture<PublishReceipt>> late = new ArrayList<>();
    /** Publishes blocked inside the publish call; guarded by {@link #late}. */
    private final List<java.util.concurrent.CountDownLatch> blocked = new ArrayList<>();
    private final List<Node> nodes = new ArrayList<>();
    private final List<String> problems = java.util.Collections.synchronizedList(
        new ArrayList<>());
    private int started;

    Run(long seed) {
      this.seed = seed;
      this.random = new SplittableRandom(seed);
      this.store = createStore(storeClock);
      this.deadLetters = createDeadLetterStore();
    }

    /** One relay process: its clock, its view of the store, its broker connection. */
    private final class Node {
      final String owner;
      final OutboxRelay relay;
      final Tracking view;
      volatile boolean killed;

      Node(String owner, Duration skew, SplittableRandom brokerRandom, int batchSize) {
        this.owner = owner;
        this.view = new Tracking(owner, this);
        InstantSource clock = () -> storeClock.instant().plus(skew);
        this.relay = OutboxRelay.builder(view, new Broker(this, brokerRandom), deadLetters)
            .owner(owner).clock(clock).lease(LEASE).batchSize(batchSize)
            .confirmTimeout(Duration.ofMillis(200)).pollInterval(Duration.ofMillis(2))
            .errorBackoff(Backoff.fixed(Duration.ofMillis(5)))
            .deadLetterRetention(Duration.ofDays(10_000), Long.MAX_VALUE)
            .retryPolicy(RetryPolicy.builder().maxAttempts(1_000)
                .backoff(Backoff.fixed(Duration.ofSeconds(1))).build())
            .build();
      }
    }

    /** The store as one relay sees it: records its leases, and fails once it is killed. */
    private final class Tracking extends ForwardingOutboxStore {
      final String owner;
      final Node node;

      Tracking(String owner, Node node) {
        super(store);
        this.owner = owner;
        this.node = node;
      }

      private void alive() {
        if (node.killed) {
          throw new IllegalStateException("relay " + owner + " was killed");
        }
      }

      @Override
      public List<OutboxRecord> claim(String o, int max, Duration lease, Instant now) {
        return claim(o, max, 1, lease, now);
      }

      @Override
      public List<OutboxRecord> claim(String o, int max, int maxRun, Duration lease,
          Instant now) {
        clockLock.readLock().lock();
        try {
          alive();
          List<OutboxRecord> claimed = maxRun == 1 ? super.claim(o, max, lease, now)
              : super.claim(o, max, maxRun, lease, now);
          Instant at = storeClock.instant();
          synchronized (leases) {
            for (OutboxRecord r : claimed) {
              if (!r.leaseExpiresAt().equals(at.plus(lease))) {
                problems.add("row " + r.sequence() + " claimed at " + at + " by " + owner
                    + " with a lease ending " + r.leaseExpiresAt() + ", not at now + lease");
              }
              leases.computeIfAbsent(r.sequence(), s -> new ArrayList<>())
                  .add(new Interval(owner, at, r.leaseExpiresAt()));
            }
          }
          return claimed;
        } finally {
          clockLock.readLock().unlock();
        }
      }

      @Override
      public Set<Long> renewLease(String o, Collection<Long> sequences, Duration lease,
          Instant now) {
        clockLock.readLock().lock();
        try {
          alive();
          Set<Long> kept = super.renewLease(o, sequences, lease, now);
          Instant until = storeClock.instant().plus(lease);
          synchronized (leases) {
            for (Long seq : kept) {
              Interval last = latest(seq);
              if (last == null) {
                problems.add("row " + seq + " renewed by " + owner + ", which never claimed it");
              } else {
                last.end = until;
              }
            }
          }
          return kept;
        } finally {
          clockLock.readLock().unlock();
        }
      }

      @Override
      public int release(String o, Collection<Long> sequences) {
        clockLock.readLock().lock();
        try {
          alive();
          int n = super.release(o, sequences);
          Instant at = storeClock.instant();
          synchronized (leases) {
            for (Long seq : sequences) {
              Interval last = latest(seq);
              if (last != null && last.owner.equals(owner) && last.end.isAfter(at)) {
                last.end = at; // released: another relay may take it from now on
              }
            }
          }
          return n;
        } finally {
          clockLock.readLock().unlock();
        }
      }

      @Override
      public int markSent(String o, Collection<Long> sequences, Instant now) {
        clockLock.readLock().lock();
        try {
          alive();
          return super.markSent(o, sequences, now);
        } finally {
          clockLock.readLock().unlock();
        }
      }

      @Override
      public boolean reschedule(String o, long sequence, int attempts, Instant failedAt,
          Instant notBefore, String error) {
        clockLock.readLock().lock();
        try {
          alive();
          boolean held = super.reschedule(o, sequence, attempts, failedAt, notBefore, error);
          if (held) {
            release(sequence);
          }
          return held;
        } finally {
          clockLock.readLock().unlock();
        }
      }

      @Override
      public boolean moveToDeadLetters(String o, long sequence, DeadLetter deadLetter,
          DeadLetterStore dead) {
        clockLock.readLock().lock();
        try {
          alive();
          boolean moved = super.moveToDeadLetters(o, sequence, deadLetter, dead);
          if (moved) {
            release(sequence);
          }
          return moved;
        } finally {
          clockLock.readLock().unlock();
        }
      }

      @Override
      public int purgeSentOlderThan(Duration retention, int max, Instant now) {
        clockLock.readLock().lock();
        try {
          alive();
          return super.purgeSentOlderThan(retention, max, now);
        } finally {
          clockLock.readLock().unlock();
        }
      }

      @Override
      public OutboxStats stats(Instant now) {
        alive();
        return super.stats(now);
      }

      /** This relay's latest lease on {@code seq}; the caller holds the leases lock. */
      private Interval latest(long seq) {
        List<Interval> list = leases.get(seq);
        if (list == null) {
          return null;
        }
        for (int i = list.size() - 1; i >= 0; i--) {
          if (list.get(i).owner.equals(owner)) {
            return list.get(i);
          }
        }
        return null;
      }

      private void release(long seq) {
        Instant at = storeClock.instant();
        synchronized (leases) {
          Interval last = latest(seq);
          if (last != null && at.isBefore(last.end)) {
            last.end = at;
          }
        }
      }
    }

    /** One relay's broker connection: seeded outcomes; nothing gets through once killed. */
    private final class Broker implements Publisher {
      final Node node;
      final SplittableRandom random;

      Broker(Node node, SplittableRandom random) {
        this.node = node;
        this.random = random;
      }

      @Override
      public CompletableFuture<PublishReceipt> publish(String dest, Message m) {
        if (node.killed) {
          throw new PublishException("relay " + node.owner + " was killed");
        }
        int roll;
        synchronized (this) {
          roll = random.nextInt(100);
        }
        long index = events.incrementAndGet();
        firstPublish.putIfAbsent(m.id(), index);
        publishedIds.add(m.id());
        if (roll < 8) {
          return CompletableFuture.failedFuture(new PublishException("broker nack"));
        }
        if (roll < 10) {
          return CompletableFuture.failedFuture(new MessageRejectedException("no route"));
        }
        PublishReceipt receipt = new PublishReceipt(m.id(), dest, Long.toString(index));
        if (roll < 14) {
          // The publish call itself blocks (a full confirm window, Kafka's max.block.ms) until
          // the driver lets it go; the relay's heartbeat must keep the lease meanwhile.
          java.util.concurrent.CountDownLatch gate = new java.util.concurrent.CountDownLatch(1);
          synchronized (late) {
            blocked.add(gate);
          }
          try {
            if (!gate.await(5, java.util.concurrent.TimeUnit.SECONDS)) {
              return CompletableFuture.failedFuture(new PublishException("blocked too long"));
            }
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return CompletableFuture.failedFuture(new PublishException("interrupted"));
          }
          if (node.killed) {
            return CompletableFuture.failedFuture(new PublishException("killed while blocked"));
          }
          firstConfirm.putIfAbsent(m.id(), events.incrementAndGet());
          return CompletableFuture.completedFuture(receipt);
        }
        if (roll < 25) {
          // Confirmed late: after the driver moved the clock, maybe past the lease.
          CompletableFuture<PublishReceipt> f = new CompletableFuture<>();
          synchronized (late) {
            late.add(f);
          }
          return f.thenApply(x -> {
            firstConfirm.putIfAbsent(m.id(), events.incrementAndGet());
            return receipt;
          });
        }
        firstConfirm.putIfAbsent(m.id(), events.incrementAndGet());
        return CompletableFuture.completedFuture(receipt);
      }

      @Override
      public void close() {}
    }

    private void append(int n) {
      for (int i = 0; i < n; i++) {
        String key = random.nextInt(10) < 3 ? null : "key-" + random.nextInt(KEYS);
        Message m = Message.builder().id("cc-" + seed + "-" + appended.size()).type("order.placed")
            .key(key).payload("{\"n\":" + appended.size() + "}").createdAt(storeClock.instant())
            .build();
        appendCommitted(destination, m);
        appended.add(m.id());
        if (key != null) {
          keyOf.put(m.id(), key);
          byKey.computeIfAbsent(key, k -> new ArrayList<>()).add(m.id());
        }
      }
    }

    private Node startNode() {
      // Independently skewed: from an hour slow to 8 days fast.
      long skewSeconds = random.nextLong(-3_600, 8L * 86_400);
      Node node = new Node("relay-" + seed + "-" + (started++), Duration.ofSeconds(skewSeconds),
          random.split(), 1 + random.nextInt(12));
      nodes.add(node);
      node.relay.start();
      return node;
    }

    void execute() {
      append(INITIAL_ROWS);
      for (int i = 0; i < RELAYS; i++) {
        startNode();
      }
      int kills = 0;
      int laterLeft = LATER_ROWS;
      long deadline = System.nanoTime() + DEADLINE.toNanos();
      try {
        while (unsent() > 0 || laterLeft > 0) {
          if (System.nanoTime() > deadline) {
            throw new AssertionError("not drained within " + DEADLINE + ": " + unsent()
                + " rows unsent; leases " + describeLeases());
          }
          int action = random.nextInt(100);
          if (action < 50) {
            advance(Duration.ofMillis(random.nextLong(100, LEASE.toMillis() / 2)));
          } else if (action < 60) {
            advance(Duration.ofMillis(random.nextLong(LEASE.toMillis(), 2 * LEASE.toMillis())));
          } else if (action < 80) {
            completeLate();
          } else if (action < 90 && laterLeft > 0) {
            int n = Math.min(laterLeft, 1 + random.nextInt(5));
            append(n);
            laterLeft -= n;
          } else if (action < 93 && kills < MAX_KILLS) {
            List<Node> alive = new ArrayList<>();
            for (Node n : nodes) {
              if (!n.killed) {
                alive.add(n);
              }
            }
            Node victim = alive.get(random.nextInt(alive.size()));
            victim.killed = true;
            victim.relay.close(Duration.ofMillis(1));
            kills++;
            startNode();
          } else if (action < 97) {
            // A commit's wake: relays claim at once, also while earlier batches await confirms
            // (the started relay's publish window).
            store.committed();
          }
          // Pace by progress: give the relays a moment (bounded) to act on the new state.
          long before = events.get();
          long pauseEnd = System.nanoTime() + 20_000_000L;
          Await.until(Duration.ofSeconds(5), "some relay activity or a 20 ms pause",
              () -> events.get() > before || System.nanoTime() - pauseEnd >= 0);
        }
      } finally {
        for (Node n : nodes) {
          n.killed = true;
        }
        completeAllLate();
        for (Node n : nodes) {
          n.relay.close(Duration.ofSeconds(5));
        }
      }
      check();
    }

    private void advance(Duration d) {
      clockLock.writeLock().lock();
      try {
        storeClock.advance(d);
      } finally {
        clockLock.writeLock().unlock();
      }
    }

    private void completeLate() {
      List<CompletableFuture<PublishReceipt>> now;
      synchronized (late) {
        now = new ArrayList<>(late);
        late.clear();
        blocked.forEach(java.util.concurrent.CountDownLatch::countDown);
        blocked.clear();
      }
      for (CompletableFuture<PublishReceipt> f : now) {
        if (random.nextInt(10) < 8) {
          f.complete(new PublishReceipt("late", destination, "late"));
        } else {
          f.completeExceptionally(new PublishException("late nack"));
        }
      }
    }

    private void completeAllLate() {
      synchronized (late) {
        blocked.forEach(java.util.concurrent.CountDownLatch::countDown);
        blocked.clear();
        for (CompletableFuture<PublishReceipt> f : late) {
          f.completeExceptionally(new PublishException("run over"));
        }
        late.clear();
      }
    }

    private long unsent() {
      return store.stats(storeClock.instant()).unsent();
    }

    private String describeLeases() {
      synchronized (leases) {
        return leases.toString();
      }
    }

    private void check() {
      assertThat(problems).as("problems seen while running").isEmpty();
      assertThat(nodes.stream().mapToLong(n -> n.relay.wokenClaims()).sum())
          .as("claims that followed a wake (the run exercised woken claims)").isPositive();
      OutboxStats stats = store.stats(storeClock.instant());
      long dead = deadLetters.count(DeadLetterQuery.all());
      assertThat(stats.unsent()).as("unsent rows at the end").isZero();
      assertThat(stats.sent() + dead).as("sent (%s) + dead letters (%s) = appended",
          stats.sent(), dead).isEqualTo(appended.size());

      Set<String> deadIds = new HashSet<>();
      for (DeadLetter d : deadLetters.list(DeadLetterQuery.all().withPage(0,
          DeadLetterQuery.MAX_LIMIT))) {
        deadIds.add(d.messageId());
      }
      assertThat(deadIds).hasSize((int) dead);
      assertThat(appended).as("every committed row published at least once")
          .allMatch(publishedIds::contains);
      for (String id : appended) {
        if (!deadIds.contains(id)) {
          assertThat(firstConfirm).as("sent row %s was confirmed", id).containsKey(id);
        }
      }

      synchronized (leases) {
        for (Map.Entry<Long, List<Interval>> e : leases.entrySet()) {
          List<Interval> list = e.getValue();
          for (int i = 0; i < list.size(); i++) {
            for (int j = i + 1; j < list.size(); j++) {
              Interval a = list.get(i);
              Interval b = list.get(j);
              boolean disjoint = !a.start.isBefore(b.end) || !b.start.isBefore(a.end);
              assertThat(disjoint || a.owner.equals(b.owner))
                  .as("row %s leased to two relays at once: %s and %s", e.getKey(), a, b)
                  .isTrue();
            }
          }
        }
      }

      for (Map.Entry<String, List<String>> e : byKey.entrySet()) {
        List<String> ids = e.getValue();
        for (int i = 1; i < ids.size(); i++) {
          String previous = ids.get(i - 1);
          if (deadIds.contains(previous)) {
            continue;
          }
          long confirmed = firstConfirm.get(previous);
          long next = firstPublish.get(ids.get(i));
          assertThat(next).as("key %s: %s first published (event %s) before %s was confirmed"
              + " (event %s)", e.getKey(), ids.get(i), next, previous, confirmed)
              .isGreaterThan(confirmed);
        }
      }
    }
  }
}
