package io.relaykit.tck;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.message.Message;
import io.relaykit.message.MessageRejectedException;
import io.relaykit.message.PublishReceipt;
import io.relaykit.message.Publisher;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.outbox.OutboxStore;
import io.relaykit.retry.Backoff;
import io.relaykit.retry.RetryPolicy;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * What an {@link OutboxRelay} guarantees on top of an {@link OutboxStore} and a {@link
 * DeadLetterStore}, checked on every backend: poison isolation, dead letters fenced by the lease,
 * lease renewal while a batch is in flight, and purging sent rows on its own schedule. Subclass it
 * and implement {@link #createStore}, {@link #createDeadLetterStore} and {@link #appendCommitted};
 * the store must decide time on {@link #clock()} (see {@link OutboxStoreContract}).
 */
public abstract class OutboxRelayContract {

  /** For a subclass that binds the kit to one backend. */
  protected OutboxRelayContract() {}

  /** The lease every relay of the kit claims with. */
  protected static final Duration LEASE = Duration.ofSeconds(30);

  private final FakeClock clock = new FakeClock();
  private final String destination = "tck-relay-" + UUID.randomUUID();
  private final List<OutboxRelay> relays = new ArrayList<>();
  private OutboxStore store;
  private DeadLetterStore deadLetters;

  /**
   * A new, empty outbox deciding time on {@link #clock()}; called before every test.
   *
   * @return an outbox holding no rows
   */
  protected abstract OutboxStore createStore();

  /**
   * A new, empty outbox like {@link #createStore} whose appends are checked against {@code
   * bound}; {@link #appendCommitted} then appends to it.
   *
   * @param bound the most unsent rows, and whether an append over it is refused or accepted
   * @return an outbox holding no rows
   */
  protected abstract OutboxStore createStore(io.relaykit.outbox.OutboxBound bound);

  /**
   * The dead-letter store that goes with the store {@link #createStore} returned last (for JDBC,
   * the dead-letter table of the same database), empty.
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

  /**
   * The kit's clock: relays and the store read it.
   *
   * @return the kit's {@link FakeClock}
   */
  protected final InstantSource clock() {
    return clock;
  }

  @BeforeEach
  void createStores() {
    store = createStore();
    deadLetters = createDeadLetterStore();
  }

  @AfterEach
  void closeRelays() {
    relays.forEach(r -> r.close(Duration.ofSeconds(10)));
  }

  private Message append(String key, String body, String type, Instant expiresAt) {
    Message m = Message.builder().id("rk-" + UUID.randomUUID()).type(type).key(key)
        .payload(body).createdAt(clock.instant()).expiresAt(expiresAt).build();
    appendCommitted(destination, m);
    return m;
  }

  private Message append(String key, String body) {
    return append(key, body, "order.placed", null);
  }

  private OutboxRelay.Builder relay(String owner, OutboxStore on, DeadLetterStore dead,
      Publisher publisher) {
    return OutboxRelay.builder(on, publisher, dead).owner(owner).clock(clock).lease(LEASE)
        .confirmTimeout(Duration.ofSeconds(20)).errorBackoff(Backoff.fixed(Duration.ofSeconds(5)))
        .retryPolicy(RetryPolicy.builder().maxAttempts(3)
            .backoff(Backoff.fixed(Duration.ofSeconds(1))).build());
  }

  private OutboxRelay built(OutboxRelay.Builder b) {
    OutboxRelay r = b.build();
    relays.add(r);
    return r;
  }

  /**
   * A broker that records what it was given and confirms at once, fails what {@link #fail}
   * selects with {@link MessageRejectedException}, and holds the confirms of what {@link #hold}
   * selects until {@link #release}.
   */
  protected static final class TestBroker implements Publisher {
    /** A broker that has published nothing. */
    public TestBroker() {}

    private final List<String> published = java.util.Collections.synchronizedList(
        new ArrayList<>());
    private final Map<String, CompletableFuture<PublishReceipt>> held = new ConcurrentHashMap<>();
    private volatile Predicate<Message> fail = m -> false;
    private volatile Predicate<Message> hold = m -> false;

    void fail(Predicate<Message> p) {
      fail = p;
    }

    void hold(Predicate<Message> p) {
      hold = p;
    }

    /** Confirms every held message ({@code ok}) or fails it permanently. */
    void release(boolean ok) {
      for (Map.Entry<String, CompletableFuture<PublishReceipt>> e : held.entrySet()) {
        if (ok) {
          e.getValue().complete(new PublishReceipt(e.getKey(), "d", "held"));
        } else {
          e.getValue().completeExceptionally(new MessageRejectedException("rejected late"));
        }
      }
      held.clear();
    }

    /** Fails every held message with {@code e} (a transient failure: retried). */
    void releaseFailing(RuntimeException e) {
      for (CompletableFuture<PublishReceipt> f : held.values()) {
        f.completeExceptionally(e);
      }
      held.clear();
    }

    int heldCount() {
      return held.size();
    }

    List<String> payloads() {
      synchronized (published) {
        return List.copyOf(published);
      }
    }

    @Override
    public CompletableFuture<PublishReceipt> publish(String destination, Message message) {
      published.add(message.payloadUtf8());
      if (fail.test(message)) {
        return CompletableFuture.failedFuture(new MessageRejectedException("no route"));
      }
      if (hold.test(message)) {
        CompletableFuture<PublishReceipt> f = new CompletableFuture<>();
        held.put(message.id(), f);
        return f;
      }
      return CompletableFuture.completedFuture(
          new PublishReceipt(message.id(), destination, "p"));
    }

    @Override
    public void close() {}
  }

  /** A dead-letter store that refuses what {@link #refuse} selects, as one over its size would. */
  private static final class RefusingDeadLetters extends ForwardingDeadLetterStore {
    volatile Predicate<DeadLetter> refuse = d -> false;

    RefusingDeadLetters(DeadLetterStore real) {
      super(real);
    }

    @Override
    public void add(DeadLetter deadLetter) {
      if (refuse.test(deadLetter)) {
        throw new IllegalArgumentException("dead letter " + deadLetter.id()
            + " is over the store's size limit");
      }
      super.add(deadLetter);
    }
  }

  /** A relay's view of the store whose renewals fail while {@link #cut} is set. */
  private static final class CutOffStore extends ForwardingOutboxStore {
    final AtomicBoolean cut = new AtomicBoolean();

    CutOffStore(OutboxStore real) {
      super(real);
    }

    @Override
    public Set<Long> renewLease(String owner, Collection<Long> sequences, Duration lease,
        Instant now) {
      if (cut.get()) {
        throw new IllegalStateException("the database does not answer this relay");
      }
      return super.renewLease(owner, sequences, lease, now);
    }
  }

  private long deadLetterCount() {
    return deadLetters.count(DeadLetterQuery.all());
  }

  @Nested
  @DisplayName("poison isolation")
  class Poison {

    @Test
    @DisplayName("an expired row whose dead letter cannot be stored parks its own key only: other"
        + " keys and later rows are published, the failure is counted and backed off")
    void expiredPoisonAtTheHead() {
      TestBroker broker = new TestBroker();
      RefusingDeadLetters refusing = new RefusingDeadLetters(deadLetters);
      refusing.refuse = d -> d.message().type().equals("poison");
      Message poison = append("a", "poison", "poison", clock.instant().plusSeconds(1));
      append("a", "a2");
      append("b", "b1");
      append(null, "n1");
      clock.advance(Duration.ofSeconds(2));
      OutboxRelay relay = built(relay("r", store, refusing, broker).batchSize(10));

      OutboxRelay.Batch first = relay.runOnce();
      assertThat(first.failed()).isEqualTo(1);
      assertThat(first.sent()).isEqualTo(2);
      assertThat(broker.payloads()).containsExactly("b1", "n1");
      assertThat(relay.counters().rowFailures()).isEqualTo(1);
      // Backed off: the next cycle does not try it again at once, and its key waits.
      OutboxRelay.Batch second = relay.runOnce();
      assertThat(second.claimed()).isZero();
      append("b", "b2");
      assertThat(relay.runOnce().sent()).isEqualTo(1);
      assertThat(broker.payloads()).containsExactly("b1", "n1", "b2");

      refusing.refuse = d -> false;
      clock.advance(Duration.ofSeconds(6));
      assertThat(relay.runOnce().deadLettered()).isEqualTo(1);
      assertThat(deadLetters.find(DeadLetter.idOf(poison.id(), destination, null))).isPresent();
      relay.runOnce();
      assertThat(broker.payloads()).containsExactly("b1", "n1", "b2", "a2");
      assertThat(store.stats(clock.instant()).unsent()).isZero();
    }

    @Test
    @DisplayName("a dead-letter store that is down fails the rejected row only: the rest of the"
        + " batch is marked sent, and the row is dead-lettered once the store is back")
    void deadLetterStoreDown() {
      TestBroker broker = new TestBroker();
      broker.fail(m -> m.payloadUtf8().equals("rejected"));
      RefusingDeadLetters down = new RefusingDeadLetters(deadLetters);
      down.refuse = d -> true;
      Message rejected = append("a", "rejected");
      append("a", "a2");
      for (int i = 0; i < 5; i++) {
        append("k" + i, "ok" + i);
      }
      OutboxRelay relay = built(relay("r", store, down, broker).batchSize(10));

      OutboxRelay.Batch b = relay.runOnce();
      assertThat(b.sent()).isEqualTo(5);
      assertThat(b.failed()).isEqualTo(1);
      assertThat(deadLetterCount()).isZero();
      assertThat(store.stats(clock.instant()).unsent()).isEqualTo(2);

      down.refuse = d -> false;
      clock.advance(Duration.ofSeconds(6));
      relay.runOnce();
      relay.runOnce();
      assertThat(deadLetters.find(DeadLetter.idOf(rejected.id(), destination, null)))
          .isPresent();
      assertThat(broker.payloads()).endsWith("rejected", "a2");
      assertThat(store.stats(clock.instant()).unsent()).isZero();
    }

    @Test
    @DisplayName("payloads are never logged: a row the broker rejects while the dead-letter store"
        + " is down, then dead-lettered, leaves its payload in no relaykit log line at any level")
    void payloadsAreNeverLogged() {
      String marker = "payload-marker-" + UUID.randomUUID();
      try (LogCapture logs = LogCapture.open()) {
        TestBroker broker = new TestBroker();
        broker.fail(m -> m.payloadUtf8().contains(marker));
        RefusingDeadLetters down = new RefusingDeadLetters(deadLetters);
        down.refuse = d -> true;
        Message rejected = append("a", "{\"card\":\"" + marker + "\"}");
        append("b", "ok");
        OutboxRelay relay = built(relay("r", store, down, broker).batchSize(10));

        assertThat(relay.runOnce().failed()).isEqualTo(1);
        down.refuse = d -> false;
        clock.advance(Duration.ofSeconds(6));
        relay.runOnce();

        DeadLetter dead = deadLetters.find(DeadLetter.idOf(rejected.id(), destination, null))
            .orElseThrow();
        assertThat(dead.message().payloadUtf8()).contains(marker);
        assertThat(logs.lines()).as("the relay logged the failed row")
            .anyMatch(l -> l.contains(rejected.id()));
        logs.assertNeverContains(marker);
        assertThat(dead.toString()).doesNotContain(marker);
      }
    }
  }

  @Nested
  @DisplayName("dead letters are fenced by the lease")
  class Fencing {

    @Test
    @DisplayName("a relay that lost its lease to another relay, which sent the row, stores no dead"
        + " letter for it")
    void staleRelayStoresNoDeadLetter() throws Exception {
      Message m = append("a", "m");
      TestBroker slow = new TestBroker();
      slow.hold(x -> true);
      CutOffStore cutOff = new CutOffStore(store);
      cutOff.cut.set(true);
      OutboxRelay stale = built(relay("stale", cutOff, deadLetters, slow));
      AtomicReference<OutboxRelay.Batch> staleBatch = new AtomicReference<>();
      Thread t = new Thread(() -> staleBatch.set(stale.runOnce()));
      t.start();
      Await.until(Duration.ofSeconds(10), "the stale relay published", () -> slow.heldCount() == 1);

      clock.advance(LEASE.plusSeconds(1));
      TestBroker fast = new TestBroker();
      OutboxRelay taker = built(relay("taker", store, deadLetters, fast));
      assertThat(taker.runOnce().sent()).isEqualTo(1);

      slow.release(false); // the stale relay's broker rejects it: it would dead-letter the row
      t.join(10_000);
      assertThat(staleBatch.get().leaseLost()).isEqualTo(1);
      assertThat(staleBatch.get().deadLettered()).isZero();
      assertThat(deadLetters.find(DeadLetter.idOf(m.id(), destination, null))).isEmpty();
      assertThat(deadLetterCount()).isZero();
      assertThat(store.stats(clock.instant()).sent()).isEqualTo(1);
    }
  }

  @Nested
  @DisplayName("lease renewal")
  class Renewal {

    @Test
    @DisplayName("a broker slower than the lease: the relay renews, no second relay takes the rows,"
        + " and its confirms are marked")
    void renewsWhileInFlight() throws Exception {
      append("a", "a1");
      append(null, "n1");
      TestBroker slow = new TestBroker();
      slow.hold(x -> true);
      OutboxRelay first = built(relay("first", store, deadLetters, slow));
      AtomicReference<OutboxRelay.Batch> batch = new AtomicReference<>();
      Thread t = new Thread(() -> batch.set(first.runOnce()));
      t.start();
      Await.until(Duration.ofSeconds(10), "both published", () -> slow.heldCount() == 2);

      TestBroker other = new TestBroker();
      OutboxRelay second = built(relay("second", store, deadLetters, other));
      for (int i = 1; i <= 4; i++) {
        clock.advance(LEASE.dividedBy(2));
        long renewals = i;
        Await.until(Duration.ofSeconds(10), "renewal " + i,
            () -> first.counters().leaseRenewals() >= renewals);
        assertThat(second.runOnce().claimed()).as("claimed by a second relay after %s leases",
            i / 2.0).isZero();
      }
      slow.release(true);
      t.join(10_000);
      assertThat(batch.get().sent()).isEqualTo(2);
      assertThat(other.payloads()).isEmpty();
      assertThat(store.stats(clock.instant()).sent()).isEqualTo(2);
    }

    @Test
    @DisplayName("a relay whose renewals fail loses its rows to another relay once the lease ran"
        + " out, and does not mark them: the rows are the taker's")
    void failedRenewalMarksNothing() throws Exception {
      append("a", "a1");
      TestBroker slow = new TestBroker();
      slow.hold(x -> true);
      CutOffStore cutOff = new CutOffStore(store);
      cutOff.cut.set(true);
      OutboxRelay stale = built(relay("stale", cutOff, deadLetters, slow));
      AtomicReference<OutboxRelay.Batch> batch = new AtomicReference<>();
      Thread t = new Thread(() -> batch.set(stale.runOnce()));
      t.start();
      Await.until(Duration.ofSeconds(10), "published", () -> slow.heldCount() == 1);
      clock.advance(LEASE.plusSeconds(1));
      Await.until(Duration.ofSeconds(10), "a renewal failed",
          () -> stale.counters().renewalFailures() >= 1);

      TestBroker takerBroker = new TestBroker();
      takerBroker.hold(x -> true);
      OutboxRelay taker = built(relay("taker", store, deadLetters, takerBroker));
      AtomicReference<OutboxRelay.Batch> taken = new AtomicReference<>();
      Thread t2 = new Thread(() -> taken.set(taker.runOnce()));
      t2.start();
      Await.until(Duration.ofSeconds(10), "the taker published", () -> takerBroker.heldCount() == 1);
      // The database answers the stale relay again: its next renewal finds the row taken.
      cutOff.cut.set(false);
      clock.advance(LEASE.dividedBy(2));
      Await.until(Duration.ofSeconds(10), "the stale relay's renewal",
          () -> stale.counters().leaseRenewals() >= 1);
      slow.release(true);
      t.join(10_000);
      assertThat(batch.get().sent()).isZero();
      assertThat(batch.get().leaseLost()).isEqualTo(1);
      assertThat(store.stats(clock.instant()).unsent()).isEqualTo(1);

      takerBroker.release(true);
      t2.join(10_000);
      assertThat(taken.get().sent()).isEqualTo(1);
      assertThat(store.stats(clock.instant()).sent()).isEqualTo(1);
    }
  }

  @Nested
  @DisplayName("purging sent rows")
  class Purging {

    @Test
    @DisplayName("a relay that always has work still purges sent rows older than the retention,"
        + " in bounded steps")
    void busyRelayPurges() {
      TestBroker broker = new TestBroker();
      OutboxRelay relay = built(relay("r", store, deadLetters, broker).batchSize(1)
          .retention(Duration.ofDays(1)).purgeInterval(Duration.ofMinutes(1)));
      for (int day = 0; day < 5; day++) {
        append(null, "d" + day + "-1");
        append(null, "d" + day + "-2");
        // Each cycle finds work: the claim is never empty.
        assertThat(relay.runOnce().sent()).isEqualTo(1);
        clock.advance(Duration.ofHours(12));
        assertThat(relay.runOnce().sent()).isEqualTo(1);
        clock.advance(Duration.ofHours(12));
      }
      append(null, "last");
      assertThat(relay.runOnce().sent()).isEqualTo(1);
      // Rows sent more than a day ago are gone; at most the last day's stay.
      assertThat(store.stats(clock.instant()).sent()).isLessThanOrEqualTo(3);
      assertThat(relay.counters().purged()).isGreaterThanOrEqualTo(7);
      assertThat(broker.payloads()).hasSize(11);
    }

    @Test
    @DisplayName("a purge that fails (sent rows or dead letters) is counted and costs nothing else:"
        + " the cycle's rows are sent, and the next interval purges again")
    void failingPurge() {
      TestBroker broker = new TestBroker();
      AtomicBoolean down = new AtomicBoolean(true);
      OutboxStore failingPurges = new ForwardingOutboxStore(store) {
        @Override
        public int purgeSentOlderThan(Duration retention, int max, Instant now) {
          if (down.get()) {
            throw new IllegalStateException("purge statement timed out");
          }
          return super.purgeSentOlderThan(retention, max, now);
        }
      };
      DeadLetterStore failingRetention = new ForwardingDeadLetterStore(deadLetters) {
        @Override
        public long purgeFailedBefore(Instant failedBefore, int max) {
          if (down.get()) {
            throw new IllegalStateException("dead-letter store unreachable");
          }
          return super.purgeFailedBefore(failedBefore, max);
        }

        @Override
        public long purgeFailedOlderThan(Duration maxAge, int max, Instant now) {
          if (down.get()) {
            throw new IllegalStateException("dead-letter store unreachable");
          }
          return super.purgeFailedOlderThan(maxAge, max, now);
        }
      };
      OutboxRelay relay = built(relay("r", failingPurges, failingRetention, broker)
          .retention(Duration.ofHours(1)).purgeInterval(Duration.ofMinutes(1)));
      append(null, "m1");
      assertThat(relay.runOnce().sent()).isEqualTo(1);
      assertThat(relay.counters().purgeFailures()).isEqualTo(2);
      down.set(false);
      clock.advance(Duration.ofHours(2));
      append(null, "m2");
      assertThat(relay.runOnce().sent()).isEqualTo(1);
      assertThat(relay.counters().purged()).isEqualTo(1);
      assertThat(relay.counters().purgeFailures()).isEqualTo(2);
    }

    @Test
    @DisplayName("the relay applies the dead-letter retention on its purge schedule: by age, then"
        + " by count, counted")
    void deadLetterRetention() {
      TestBroker broker = new TestBroker();
      broker.fail(m -> true);
      java.util.Map<String, Long> dropped = new java.util.concurrent.ConcurrentHashMap<>();
      io.relaykit.monitor.MetricsListener metrics = new io.relaykit.monitor.MetricsListener() {
        @Override
        public void dropped(String destination, String reason, long count) {
          dropped.merge(destination + "/" + reason, count, Long::sum);
        }
      };
      OutboxRelay relay = built(relay("r", store, deadLetters, broker).batchSize(10)
          .purgeInterval(Duration.ofMinutes(1)).deadLetterRetention(Duration.ofDays(2), 3)
          .metrics(metrics));
      for (int i = 0; i < 5; i++) {
        append("k" + i, "old" + i);
      }
      assertThat(relay.runOnce().deadLettered()).isEqualTo(5);
      assertThat(deadLetterCount()).as("over the count, trimmed in the same cycle").isEqualTo(3);
      clock.advance(Duration.ofDays(1));
      append("n", "new");
      assertThat(relay.runOnce().deadLettered()).isEqualTo(1);
      assertThat(deadLetterCount()).isEqualTo(3);
      clock.advance(Duration.ofDays(1).plusMinutes(1));
      relay.runOnce();
      // The five old ones failed over two days ago: gone; the new one stays.
      assertThat(deadLetters.list(DeadLetterQuery.all())).extracting(d -> d.message().payloadUtf8())
          .containsExactly("new");
      assertThat(relay.counters().deadLettersPurged()).isEqualTo(5);
      assertThat(dropped).as("dead letters purged by retention, reported as dropped")
          .containsEntry(OutboxRelay.DEAD_LETTERS_METRICS_NAME + "/"
              + OutboxRelay.DEAD_LETTER_RETENTION_REASON, 5L);
    }
  }

  @Nested
  @DisplayName("backlog bound")
  class Bound {

    @Test
    @DisplayName("REFUSE: an append at the bound throws OutboxFullException naming it, writes"
        + " nothing and is counted; once the relay drained the backlog, appends succeed again")
    void refuse() {
      store = createStore(io.relaykit.outbox.OutboxBound.refuseAbove(3));
      append("a", "1");
      append("b", "2");
      append(null, "3");
      org.assertj.core.api.Assertions.assertThatThrownBy(() -> append("c", "4"))
          .isInstanceOf(io.relaykit.outbox.OutboxFullException.class)
          .hasMessageContaining("3 unsent rows, at its bound of 3")
          .hasMessageContaining("nothing was written");
      assertThat(store.stats(clock.instant()).unsent()).isEqualTo(3);
      assertThat(store.refusedAppends()).isEqualTo(1);

      TestBroker broker = new TestBroker();
      assertThat(built(relay("r", store, deadLetters, broker)).runOnce().sent()).isEqualTo(3);
      append("c", "4");
      assertThat(store.stats(clock.instant()).unsent()).isEqualTo(1);
      assertThat(broker.payloads()).containsExactly("1", "2", "3");
    }

    @Test
    @DisplayName("ACCEPT: appends over the bound succeed and are counted, and the relay's backlog"
        + " verdict is OVER_BOUND until it drained below the bound")
    void accept() {
      store = createStore(io.relaykit.outbox.OutboxBound.acceptAbove(2));
      for (int i = 0; i < 5; i++) {
        append(null, "m" + i);
      }
      assertThat(store.stats(clock.instant()).unsent()).isEqualTo(5);
      assertThat(store.overBoundAppends()).isEqualTo(3);
      TestBroker broker = new TestBroker();
      OutboxRelay relay = built(relay("r", store, deadLetters, broker).batchSize(10)
          .metricsInterval(Duration.ofSeconds(1)));
      assertThat(relay.runOnce().sent()).isEqualTo(5);
      assertThat(relay.backlog().verdict())
          .isEqualTo(io.relaykit.monitor.BacklogVerdict.OVER_BOUND);
      assertThat(relay.backlog().depth()).isEqualTo(5);
      clock.advance(Duration.ofSeconds(2));
      relay.runOnce();
      assertThat(relay.backlog().verdict())
          .isNotEqualTo(io.relaykit.monitor.BacklogVerdict.OVER_BOUND);
    }
  }

  @Nested
  @DisplayName("batch size and claim-ahead")
  class Throughput {

    @Test
    @DisplayName("the adaptive batch size halves on failed confirms down to its min, doubles while"
        + " claims come back full and confirm at once up to its max, and halves on slow confirms")
    void adaptiveBatchBounds() {
      for (int i = 0; i < 120; i++) {
        append(null, "m" + i);
      }
      TestBroker broker = new TestBroker();
      OutboxRelay relay = built(relay("r", store, deadLetters, broker).adaptiveBatchSize(4, 16));
      assertThat(relay.batchSize()).isEqualTo(16);
      broker.fail(m -> true);
      List<Integer> claims = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        claims.add(relay.runOnce().claimed());
      }
      assertThat(claims).containsExactly(16, 8, 4, 4);
      assertThat(relay.batchSize()).isEqualTo(4);
      broker.fail(m -> false);
      claims.clear();
      for (int i = 0; i < 4; i++) {
        OutboxRelay.Batch b = relay.runOnce();
        assertThat(b.sent()).isEqualTo(b.claimed());
        claims.add(b.claimed());
      }
      assertThat(claims).containsExactly(4, 8, 16, 16);
      assertThat(relay.batchSize()).isEqualTo(16);

      // Confirms slower than a tenth of the confirm timeout (20 s here) halve it.
      OutboxRelay slow = built(relay("slow", store, deadLetters, new Publisher() {
        @Override
        public CompletableFuture<PublishReceipt> publish(String d, Message m) {
          clock.advance(Duration.ofMillis(300));
          return broker.publish(d, m);
        }

        @Override
        public void close() {}
      }).adaptiveBatchSize(4, 16));
      assertThat(slow.runOnce().claimed()).isEqualTo(16); // 16 × 300 ms = 4.8 s > 2 s
      assertThat(slow.batchSize()).isEqualTo(8);
      assertThat(store.stats(clock.instant()).sent()).isEqualTo(44 + 16);
    }

    @Test
    @DisplayName("batch sizes outside 1..10 000 or a max below the min are refused, naming them")
    void batchBoundsValidated() {
      TestBroker broker = new TestBroker();
      org.assertj.core.api.Assertions.assertThatThrownBy(() -> relay("r", store, deadLetters,
          broker).adaptiveBatchSize(0, 10).build()).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("batch size min");
      org.assertj.core.api.Assertions.assertThatThrownBy(() -> relay("r", store, deadLetters,
          broker).adaptiveBatchSize(10, 5).build()).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("batch size max");
      org.assertj.core.api.Assertions.assertThatThrownBy(() -> relay("r", store, deadLetters,
          broker).adaptiveBatchSize(1, 10_001).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("10000");
      assertThat(relay("r", store, deadLetters, broker).build().batchSize())
          .isEqualTo(OutboxRelay.DEFAULT_INITIAL_BATCH);
    }

    @Test
    @DisplayName("claim-ahead: while a full batch's confirm is outstanding the started relay claims"
        + " and publishes the next batch, which holds none of its keys; when that confirm fails,"
        + " the key's later row goes out only after the retried row was confirmed")
    void claimAheadKeepsKeyOrder() {
      append("k", "k1");
      append(null, "u1");
      append("k", "k2");
      append(null, "u2");
      append(null, "u3");
      append(null, "u4");
      TestBroker broker = new TestBroker();
      AtomicBoolean first = new AtomicBoolean(true);
      broker.hold(m -> m.payloadUtf8().equals("k1") && first.getAndSet(false));
      OutboxRelay relay = built(relay("r", store, deadLetters, broker).batchSize(2));
      relay.start();
      // Batch N = [k1, u1], k1's confirm held; the relay claims ahead [u2, u3] (k2 must wait).
      Await.until(Duration.ofSeconds(10), "the batch after [k1, u1] published while k1's"
          + " confirm is held", () -> broker.payloads().contains("u3"));
      assertThat(broker.heldCount()).isEqualTo(1);
      assertThat(broker.payloads()).doesNotContain("k2");
      // k1's confirm fails (transient): rescheduled, 1 s backoff on the kit's clock.
      broker.releaseFailing(new io.relaykit.message.PublishException("broker nacked"));
      Await.until(Duration.ofSeconds(20), "u4 published", () -> broker.payloads().contains("u4")
          && store.stats(clock.instant()).unsent() == 2);
      assertThat(broker.payloads()).doesNotContain("k2");
      clock.advance(Duration.ofSeconds(2));
      Await.until(Duration.ofSeconds(20), "everything sent",
          () -> store.stats(clock.instant()).unsent() == 0);
      List<String> out = broker.payloads();
      assertThat(out).containsSubsequence("k1", "k1", "k2");
      assertThat(out.lastIndexOf("k1")).isLessThan(out.indexOf("k2"));
      assertThat(out.indexOf("u3")).isLessThan(out.lastIndexOf("k1"));
      assertThat(out.stream().filter("k2"::equals).count()).isEqualTo(1);
    }

    @Test
    @DisplayName("publish window: rows committed while a batch waits for its confirm are claimed"
        + " and published on a wake before that confirm arrives; a key in flight stays out until"
        + " its row is confirmed, and every batch is marked sent once confirmed")
    void wakeClaimsWhileEarlierBatchAwaitsConfirm() {
      append("k", "k1");
      TestBroker broker = new TestBroker();
      broker.hold(m -> true);
      io.relaykit.outbox.OutboxWakeup wakeup = io.relaykit.outbox.OutboxWakeup.create();
      // A poll interval no test waits out: whatever goes out after the first claim was woken.
      OutboxRelay relay = built(relay("r", store, deadLetters, broker).batchSize(10)
          .pollInterval(Duration.ofMinutes(10)).wakeup(wakeup));
      relay.start();
      Await.until(Duration.ofSeconds(10), "k1 published, its confirm held",
          () -> broker.heldCount() == 1);
      append(null, "u1");
      append("k", "k2");
      wakeup.wake();
      Await.until(Duration.ofSeconds(10), "u1 published while k1's confirm is held",
          () -> broker.payloads().contains("u1"));
      assertThat(broker.heldCount()).isEqualTo(2);
      assertThat(broker.payloads()).doesNotContain("k2");
      assertThat(store.stats(clock.instant()).unsent()).isEqualTo(3);
      broker.hold(m -> false);
      broker.release(true);
      Await.until(Duration.ofSeconds(20), "everything sent",
          () -> store.stats(clock.instant()).unsent() == 0);
      assertThat(broker.payloads()).containsExactly("k1", "u1", "k2");
      assertThat(relay.wokenClaims()).isPositive();
    }

    @Test
    @DisplayName("key runs: a claim takes a run of a key's consecutive rows and publishes them in"
        + " order, each after the previous one's confirm; the run stops at its first failure, the"
        + " rest is released unpublished and goes out, in order, after the failed row's retry")
    void keyRunsStopAtFirstFailure() {
      for (int i = 1; i <= 5; i++) {
        append("k", "k" + i);
      }
      for (int i = 1; i <= 3; i++) {
        append("j", "j" + i);
      }
      TestBroker broker = new TestBroker();
      AtomicBoolean failK3 = new AtomicBoolean(true);
      List<String> order = java.util.Collections.synchronizedList(new ArrayList<>());
      Publisher publisher = new Publisher() {
        @Override
        public CompletableFuture<PublishReceipt> publish(String d, Message m) {
          order.add(m.payloadUtf8());
          if (m.payloadUtf8().equals("k3") && failK3.getAndSet(false)) {
            return CompletableFuture.failedFuture(
                new io.relaykit.message.PublishException("broker nacked"));
          }
          return broker.publish(d, m);
        }

        @Override
        public void close() {}
      };
      OutboxRelay relay = built(relay("r", store, deadLetters, publisher).batchSize(10));

      OutboxRelay.Batch first = relay.runOnce();
      assertThat(first.claimed()).isEqualTo(8); // one claim for both keys' runs
      assertThat(first.sent()).isEqualTo(5);
      assertThat(first.retried()).isEqualTo(1);
      assertThat(first.leaseLost()).isZero();
      assertThat(order).doesNotContain("k4", "k5");
      assertThat(relay.runOnce().claimed()).isZero(); // k3 waits for its retry, k4 and k5 behind

      clock.advance(Duration.ofSeconds(2));
      OutboxRelay.Batch retry = relay.runOnce();
      assertThat(retry.claimed()).isEqualTo(3); // k3, and k4, k5 released (not leased for 30 s)
      assertThat(retry.sent()).isEqualTo(3);
      assertThat(store.stats(clock.instant()).unsent()).isZero();
      List<String> k = order.stream().filter(x -> x.startsWith("k")).toList();
      assertThat(k).containsExactly("k1", "k2", "k3", "k3", "k4", "k5");
      assertThat(order.stream().filter(x -> x.startsWith("j")).toList())
          .containsExactly("j1", "j2", "j3");
    }

    @Test
    @DisplayName("key runs: when handing a stopped run's rows back fails (the store is out), the"
        + " batch still ends and reports them; they stay leased until the lease ends, then go out"
        + " in order after the failed row's retry")
    void keyRunReleaseFailureWaitsForTheLease() {
      for (int i = 1; i <= 4; i++) {
        append("k", "k" + i);
      }
      AtomicBoolean failK2 = new AtomicBoolean(true);
      List<String> order = java.util.Collections.synchronizedList(new ArrayList<>());
      TestBroker broker = new TestBroker();
      Publisher publisher = new Publisher() {
        @Override
        public CompletableFuture<PublishReceipt> publish(String d, Message m) {
          order.add(m.payloadUtf8());
          if (m.payloadUtf8().equals("k2") && failK2.getAndSet(false)) {
            return CompletableFuture.failedFuture(
                new io.relaykit.message.PublishException("broker nacked"));
          }
          return broker.publish(d, m);
        }

        @Override
        public void close() {}
      };
      java.util.concurrent.atomic.AtomicInteger releaseCalls =
          new java.util.concurrent.atomic.AtomicInteger();
      OutboxStore releaseFails = new ForwardingOutboxStore(store) {
        @Override
        public int release(String owner, java.util.Collection<Long> sequences) {
          releaseCalls.incrementAndGet();
          throw new IllegalStateException("store unreachable (injected)");
        }
      };
      OutboxRelay relay = built(relay("r", releaseFails, deadLetters, publisher).batchSize(10));

      OutboxRelay.Batch first = relay.runOnce();
      assertThat(releaseCalls.get()).isEqualTo(1);
      assertThat(first.claimed()).isEqualTo(4);
      assertThat(first.sent()).isEqualTo(1);
      assertThat(first.retried()).isEqualTo(1);
      assertThat(order).containsExactly("k1", "k2");
      // k2's retry is due in ~1 s, but k3 and k4 are still leased by r: nothing overtakes k2.
      clock.advance(Duration.ofSeconds(2));
      OutboxRelay.Batch retry = relay.runOnce();
      assertThat(retry.sent()).isEqualTo(1);
      assertThat(order).containsExactly("k1", "k2", "k2");
      assertThat(store.stats(clock.instant()).unsent()).isEqualTo(2);
      clock.advance(LEASE.plusSeconds(1));
      OutboxRelay.Batch rest = relay.runOnce();
      assertThat(rest.sent()).isEqualTo(2);
      assertThat(store.stats(clock.instant()).unsent()).isZero();
      assertThat(order).containsExactly("k1", "k2", "k2", "k3", "k4");
    }

    @Test
    @DisplayName("keyRun(1) claims one row per key, as the store's plain claim")
    void keyRunOne() {
      for (int i = 1; i <= 4; i++) {
        append("k", "k" + i);
      }
      TestBroker broker = new TestBroker();
      OutboxRelay relay = built(relay("r", store, deadLetters, broker).batchSize(10).keyRun(1));
      assertThat(relay.runOnce().claimed()).isEqualTo(1);
      OutboxRelay two = built(relay("r2", store, deadLetters, broker).batchSize(10).keyRun(2));
      assertThat(two.runOnce().claimed()).isEqualTo(2);
      assertThat(broker.payloads()).containsExactly("k1", "k2", "k3");
    }
  }
}
