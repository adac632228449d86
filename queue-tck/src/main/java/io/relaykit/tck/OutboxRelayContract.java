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

  /**
   * A broker for the publish window's cases: each publish gets its own confirm, recorded with its
   * outcome in one event log ({@code pub:x}, {@code ok:x}, {@code fail:x}, in the order the relay
   * could see them: an outcome is logged before the relay can learn it); {@link #hold} selects the
   * publishes whose confirms wait for {@link #confirm} or {@link #reject}, {@link #bug} the
   * publishes that throw an {@link Error}.
   */
  private static final class WindowBroker implements Publisher {
    final List<String> events = java.util.Collections.synchronizedList(new ArrayList<>());
    private final List<Map.Entry<String, CompletableFuture<PublishReceipt>>> pending =
        new ArrayList<>();
    volatile Predicate<Message> hold = m -> false;
    volatile Predicate<Message> bug = m -> false;
    final AtomicBoolean threw = new AtomicBoolean();

    @Override
    public CompletableFuture<PublishReceipt> publish(String destination, Message message) {
      String p = message.payloadUtf8();
      if (bug.test(message)) {
        threw.set(true);
        throw new BrokerBug("publisher bug while publishing " + p);
      }
      events.add("pub:" + p);
      if (hold.test(message)) {
        CompletableFuture<PublishReceipt> f = new CompletableFuture<>();
        synchronized (pending) {
          pending.add(Map.entry(p, f));
          pending.notifyAll();
        }
        return f;
      }
      events.add("ok:" + p);
      return CompletableFuture.completedFuture(new PublishReceipt(message.id(), destination, "p"));
    }

    /** Confirms the oldest held publish of {@code payload}. */
    void confirm(String payload) {
      take(payload, null);
    }

    /** Fails the oldest held publish of {@code payload} with {@code e}. */
    void reject(String payload, RuntimeException e) {
      take(payload, e);
    }

    /** Confirms every held publish. */
    void confirmAll() {
      List<Map.Entry<String, CompletableFuture<PublishReceipt>>> all;
      synchronized (pending) {
        all = new ArrayList<>(pending);
        pending.clear();
      }
      for (Map.Entry<String, CompletableFuture<PublishReceipt>> e : all) {
        events.add("ok:" + e.getKey());
        e.getValue().complete(new PublishReceipt(e.getKey(), "d", "late"));
      }
    }

    /**
     * Completes one held publish, picked by {@code random}, with success, waiting up to 100 ms
     * for one; false if none came.
     */
    boolean confirmOne(java.util.SplittableRandom random) throws InterruptedException {
      Map.Entry<String, CompletableFuture<PublishReceipt>> e;
      synchronized (pending) {
        if (pending.isEmpty()) {
          pending.wait(100);
        }
        if (pending.isEmpty()) {
          return false;
        }
        e = pending.remove(random.nextInt(pending.size()));
      }
      events.add("ok:" + e.getKey());
      e.getValue().complete(new PublishReceipt(e.getKey(), "d", "random"));
      return true;
    }

    private void take(String payload, RuntimeException error) {
      CompletableFuture<PublishReceipt> f = null;
      synchronized (pending) {
        for (int i = 0; i < pending.size(); i++) {
          if (pending.get(i).getKey().equals(payload)) {
            f = pending.remove(i).getValue();
            break;
          }
        }
      }
      if (f == null) {
        throw new AssertionError("no held publish of " + payload);
      }
      events.add((error == null ? "ok:" : "fail:") + payload);
      if (error == null) {
        f.complete(new PublishReceipt(payload, "d", "held"));
      } else {
        f.completeExceptionally(error);
      }
    }

    int pendingCount() {
      synchronized (pending) {
        return pending.size();
      }
    }

    long count(String event) {
      synchronized (events) {
        return events.stream().filter(event::equals).count();
      }
    }

    List<String> log() {
      synchronized (events) {
        return List.copyOf(events);
      }
    }

    @Override
    public void close() {}
  }

  /** An {@link Error} from the publisher (a linkage or assertion failure in a client library). */
  private static final class BrokerBug extends Error {
    private static final long serialVersionUID = 1L;

    BrokerBug(String message) {
      super(message);
    }
  }

  /**
   * Per-key order in a broker's event log: for each key's rows in append order, every publish of
   * a row comes after a confirm of the row before it (unless {@code deadLettered} names that one).
   */
  private static void assertKeyOrder(List<String> log, List<String> rows, Set<String> deadLettered) {
    for (int i = 1; i < rows.size(); i++) {
      String previous = rows.get(i - 1);
      int firstPublish = log.indexOf("pub:" + rows.get(i));
      if (firstPublish < 0 || deadLettered.contains(previous)) {
        continue;
      }
      int confirmed = log.indexOf("ok:" + previous);
      assertThat(confirmed).as("%s published (event %s) only after %s was confirmed, in %s",
          rows.get(i), firstPublish, previous, log).isBetween(0, firstPublish);
    }
  }

  /** The relay's loop thread, found by the name {@link OutboxRelay#start()} gives it. */
  private static Thread loopThread(OutboxRelay relay) {
    String name = "relaykit-outbox-relay-" + relay.owner();
    return Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().equals(name))
        .findFirst().orElseThrow(() -> new AssertionError("no thread " + name));
  }

  @Nested
  @DisplayName("publish window (started relay): order, leases and faults while batches await"
      + " their confirms")
  class PublishWindow {
    private final io.relaykit.outbox.OutboxWakeup wakeup = io.relaykit.outbox.OutboxWakeup.create();

    /** A started-relay builder: woken by {@link #wakeup}, polling every 50 ms, batches of 10. */
    private OutboxRelay.Builder windowRelay(OutboxStore on, Publisher publisher) {
      return relay("win-" + UUID.randomUUID(), on, deadLetters, publisher).batchSize(10)
          .pollInterval(Duration.ofMillis(50)).wakeup(wakeup);
    }

    private long unsent() {
      return store.stats(clock.instant()).unsent();
    }

    @Test
    @DisplayName("confirms out of order across batches: the later batch confirms first, the earlier"
        + " one's row fails and is retried; the key's next row goes out only after the retry was"
        + " confirmed, and once")
    void outOfOrderConfirmsEarlierFails() {
      append("k", "k1");
      WindowBroker broker = new WindowBroker();
      AtomicBoolean first = new AtomicBoolean(true);
      broker.hold = m -> m.payloadUtf8().equals("k1") && first.getAndSet(false);
      OutboxRelay relay = built(windowRelay(store, broker));
      relay.start();
      Await.until(Duration.ofSeconds(10), "k1 held", () -> broker.pendingCount() == 1);
      append(null, "u1");
      append("k", "k2");
      wakeup.wake();
      Await.until(Duration.ofSeconds(10), "u1 published and confirmed while k1 waits",
          () -> broker.count("ok:u1") == 1);
      broker.reject("k1", new io.relaykit.message.PublishException("broker nacked"));
      Await.until(Duration.ofSeconds(10), "k1 rescheduled, u1 sent",
          () -> unsent() == 2 && store.stats(clock.instant()).sent() == 1);
      clock.advance(Duration.ofSeconds(2));
      Await.until(Duration.ofSeconds(20), "everything sent", () -> unsent() == 0);
      List<String> log = broker.log();
      assertKeyOrder(log, List.of("k1", "k2"), Set.of());
      assertThat(log.indexOf("pub:k2")).isGreaterThan(log.lastIndexOf("pub:k1"));
      assertThat(broker.count("pub:k1")).isEqualTo(2);
      assertThat(broker.count("pub:k2")).isEqualTo(1);
    }

    @Test
    @DisplayName("a confirm that never comes: the earlier batch times out while a later one is"
        + " confirmed; its row is retried before the key's next row, and the late confirm changes"
        + " nothing")
    void confirmTimeoutInTheWindow() {
      append("k", "k1");
      WindowBroker broker = new WindowBroker();
      AtomicBoolean first = new AtomicBoolean(true);
      broker.hold = m -> m.payloadUtf8().equals("k1") && first.getAndSet(false);
      OutboxRelay relay = built(windowRelay(store, broker).confirmTimeout(Duration.ofSeconds(1)));
      relay.start();
      Await.until(Duration.ofSeconds(10), "k1 held", () -> broker.pendingCount() == 1);
      append(null, "u1");
      append("k", "k2");
      wakeup.wake();
      Await.until(Duration.ofSeconds(20), "k1 given up after its confirm timeout, u1 sent",
          () -> unsent() == 2 && store.stats(clock.instant()).sent() == 1);
      clock.advance(Duration.ofSeconds(2));
      Await.until(Duration.ofSeconds(20), "everything sent", () -> unsent() == 0);
      broker.confirm("k1"); // the first publish's confirm, far too late
      List<String> log = broker.log();
      assertThat(log.indexOf("pub:k2")).isGreaterThan(log.indexOf("ok:k1"));
      assertThat(log.indexOf("pub:k2")).isGreaterThan(log.lastIndexOf("pub:k1"));
      assertThat(broker.count("pub:k2")).isEqualTo(1);
      assertThat(store.stats(clock.instant()).sent()).isEqualTo(3);
    }

    @Test
    @DisplayName("the earlier batch's markSent fails (store down for it): its confirmed row stays"
        + " leased while the later batch is marked; after the lease it goes out again before the"
        + " key's next row (at least once, in order)")
    void earlierMarkSentFails() {
      Message k1 = append("k", "k1");
      WindowBroker broker = new WindowBroker();
      broker.hold = m -> m.payloadUtf8().equals("k1");
      AtomicBoolean marksFail = new AtomicBoolean(true);
      java.util.concurrent.atomic.AtomicLong k1Seq = new java.util.concurrent.atomic.AtomicLong();
      OutboxStore failing = new ForwardingOutboxStore(store) {
        @Override
        public List<io.relaykit.outbox.OutboxRecord> claim(String owner, int max, int maxRun,
            Duration lease, Instant now) {
          List<io.relaykit.outbox.OutboxRecord> c = super.claim(owner, max, maxRun, lease, now);
          c.stream().filter(r -> r.message().id().equals(k1.id()))
              .forEach(r -> k1Seq.set(r.sequence()));
          return c;
        }

        @Override
        public int markSent(String owner, Collection<Long> sequences, Instant now) {
          if (marksFail.get() && sequences.contains(k1Seq.get())) {
            throw new IllegalStateException("lock wait timeout (injected)");
          }
          return super.markSent(owner, sequences, now);
        }
      };
      OutboxRelay relay = built(windowRelay(failing, broker));
      relay.start();
      Await.until(Duration.ofSeconds(10), "k1 held", () -> broker.pendingCount() == 1);
      append(null, "u1");
      append("k", "k2");
      wakeup.wake();
      Await.until(Duration.ofSeconds(10), "u1 published", () -> broker.count("ok:u1") == 1);
      broker.hold = m -> false;
      broker.confirm("k1");
      Await.until(Duration.ofSeconds(10), "k1's marks failed, u1 marked",
          () -> relay.counters().rowFailures() >= 1 && store.stats(clock.instant()).sent() == 1);
      assertThat(broker.count("pub:k2")).isZero();
      marksFail.set(false);
      clock.advance(LEASE.plusSeconds(1));
      Await.until(Duration.ofSeconds(20), "everything sent", () -> unsent() == 0);
      List<String> log = broker.log();
      assertThat(broker.count("pub:k1")).isEqualTo(2);
      assertThat(log.indexOf("pub:k2")).isGreaterThan(log.lastIndexOf("ok:k1"));
      assertThat(broker.count("pub:k2")).isEqualTo(1);
    }

    @Test
    @DisplayName("the earlier batch's markSent commits but its reply is lost: the row is sent, the"
        + " later batch is marked, the key's next row follows, nothing goes out twice")
    void earlierMarkSentLostReply() {
      append("k", "k1");
      WindowBroker broker = new WindowBroker();
      broker.hold = m -> m.payloadUtf8().equals("k1");
      AtomicBoolean loseNext = new AtomicBoolean(true);
      OutboxStore lossy = new ForwardingOutboxStore(store) {
        @Override
        public int markSent(String owner, Collection<Long> sequences, Instant now) {
          int n = super.markSent(owner, sequences, now);
          if (n > 0 && broker.count("ok:k1") == 1 && loseNext.getAndSet(false)) {
            throw new LostReply.LostReplyException("markSent");
          }
          return n;
        }
      };
      OutboxRelay relay = built(windowRelay(lossy, broker));
      relay.start();
      Await.until(Duration.ofSeconds(10), "k1 held", () -> broker.pendingCount() == 1);
      append(null, "u1");
      append("k", "k2");
      wakeup.wake();
      Await.until(Duration.ofSeconds(10), "u1 confirmed", () -> broker.count("ok:u1") == 1);
      broker.hold = m -> false;
      broker.confirm("k1");
      Await.until(Duration.ofSeconds(20), "everything sent", () -> unsent() == 0);
      assertThat(loseNext.get()).as("a reply was lost").isFalse();
      List<String> log = broker.log();
      assertThat(broker.count("pub:k1")).isEqualTo(1);
      assertThat(broker.count("pub:k2")).isEqualTo(1);
      assertThat(log.indexOf("pub:k2")).isGreaterThan(log.indexOf("ok:k1"));
      assertThat(store.stats(clock.instant()).sent()).isEqualTo(3);
    }

    @Test
    @DisplayName("renewals fail and the lease of a batch waiting for its confirm runs out: the same"
        + " relay's next claim gets the row back, but does not publish it a second time, nor its"
        + " key's next row; the row is dead-lettered once, never both dead-lettered and delivered")
    void ownExpiredRowIsNotPublishedTwice() {
      Message a1 = append("a", "a1");
      WindowBroker broker = new WindowBroker();
      broker.hold = m -> m.payloadUtf8().equals("a1");
      CutOffStore cutOff = new CutOffStore(store);
      cutOff.cut.set(true);
      OutboxRelay relay = built(windowRelay(cutOff, broker));
      relay.start();
      Await.until(Duration.ofSeconds(10), "a1 held", () -> broker.pendingCount() == 1);
      clock.advance(LEASE.plusSeconds(1));
      Await.until(Duration.ofSeconds(10), "a renewal failed",
          () -> relay.counters().renewalFailures() >= 1);
      append(null, "u1");
      append("a", "a2");
      wakeup.wake();
      Await.until(Duration.ofSeconds(10), "u1 published", () -> broker.count("pub:u1") == 1);
      assertThat(broker.count("pub:a1")).as("a1 published again by the relay that still waits"
          + " for its confirm, in %s", broker.log()).isEqualTo(1);
      assertThat(broker.count("pub:a2")).isZero();

      broker.reject("a1", new MessageRejectedException("no route"));
      Await.until(Duration.ofSeconds(20), "a1 dead-lettered, everything else sent",
          () -> unsent() == 0 && deadLetterCount() == 1);
      assertThat(deadLetters.find(DeadLetter.idOf(a1.id(), destination, null))).isPresent();
      assertThat(broker.count("pub:a1")).isEqualTo(1);
      assertThat(broker.count("ok:a1")).as("a dead-lettered row was never delivered").isZero();
      assertThat(broker.count("pub:a2")).isEqualTo(1);
      assertThat(broker.log().indexOf("pub:a2")).isGreaterThan(broker.log().indexOf("fail:a1"));
    }

    @Test
    @DisplayName("renewals fail while a batch waits in the window and another relay takes its row"
        + " over and sends it: the stale relay's late confirm marks nothing, and the key's next row"
        + " goes out once, after the taker's confirm")
    void staleWindowBatchIsFenced() {
      append("a", "a1");
      WindowBroker broker = new WindowBroker();
      AtomicBoolean first = new AtomicBoolean(true);
      broker.hold = m -> m.payloadUtf8().equals("a1") && first.getAndSet(false);
      CutOffStore cutOff = new CutOffStore(store);
      cutOff.cut.set(true);
      OutboxRelay stale = built(windowRelay(cutOff, broker));
      stale.start();
      Await.until(Duration.ofSeconds(10), "a1 held", () -> broker.pendingCount() == 1);
      append(null, "u1");
      wakeup.wake();
      Await.until(Duration.ofSeconds(10), "u1 confirmed while a1 waits",
          () -> broker.count("ok:u1") == 1);
      clock.advance(LEASE.plusSeconds(1));
      Await.until(Duration.ofSeconds(10), "a renewal failed",
          () -> stale.counters().renewalFailures() >= 1);
      OutboxRelay taker = built(relay("taker", store, deadLetters, broker));
      // Both leases of the stale relay ran out: u1 (confirmed, not yet marked behind a1) too.
      assertThat(taker.runOnce().sent()).as("a1 and u1 taken over").isEqualTo(2);
      append("a", "a2");
      broker.confirm("a1"); // the stale relay's confirm, late
      Await.until(Duration.ofSeconds(10), "the stale relay gave a1 up as taken over",
          () -> stale.counters().leaseLost() >= 1);
      Await.until(Duration.ofSeconds(20), "a2 sent", () -> unsent() == 0);
      assertThat(broker.count("pub:a1")).isEqualTo(2);
      assertThat(broker.count("pub:a2")).isEqualTo(1);
      assertKeyOrder(broker.log(), List.of("a1", "a2"), Set.of());
      assertThat(store.stats(clock.instant()).sent()).isEqualTo(3);
      assertThat(deadLetterCount()).isZero();
    }

    @Test
    @DisplayName("a clock step past the lease while a batch waits (renewals working): every row"
        + " goes out once, in key order")
    void clockStepForwardPastTheLease() {
      everyRowOnceAcrossAClockStep(() -> clock.advance(LEASE.plusSeconds(1)));
    }

    @Test
    @DisplayName("a clock step back an hour while batches are in flight: renewals and marks go on,"
        + " every row goes out once, in key order")
    void clockStepBack() {
      everyRowOnceAcrossAClockStep(() -> clock.stepWall(Duration.ofHours(-1)));
    }

    /**
     * a1 waits in the window for its confirm while {@code step} moves the clock; then u1 (no key)
     * and a2 are appended and the relay woken: u1 goes out at once, and once a1 is confirmed every
     * row has gone out exactly once, a1 before a2.
     */
    private void everyRowOnceAcrossAClockStep(Runnable step) {
      append("a", "a1");
      WindowBroker broker = new WindowBroker();
      broker.hold = m -> m.payloadUtf8().equals("a1");
      OutboxRelay relay = built(windowRelay(store, broker));
      relay.start();
      Await.until(Duration.ofSeconds(10), "a1 held", () -> broker.pendingCount() == 1);
      step.run();
      append(null, "u1");
      append("a", "a2");
      wakeup.wake();
      Await.until(Duration.ofSeconds(10), "u1 published", () -> broker.count("ok:u1") == 1);
      broker.hold = m -> false;
      broker.confirmAll();
      Await.until(Duration.ofSeconds(20), "everything sent", () -> unsent() == 0);
      assertThat(broker.count("pub:a1")).isEqualTo(1);
      assertThat(broker.count("pub:a2")).isEqualTo(1);
      assertKeyOrder(broker.log(), List.of("a1", "a2"), Set.of());
    }

    @Test
    @DisplayName("commits during every claim (a wake always pending) do not keep a batch past its"
        + " confirm timeout: the missing confirm counts as failed and the row is rescheduled")
    void wakesDoNotOutliveTheConfirmTimeout() {
      append("k", "k1");
      WindowBroker broker = new WindowBroker();
      broker.hold = m -> true;
      AtomicBoolean storm = new AtomicBoolean(true);
      java.util.concurrent.atomic.AtomicInteger rescheduled =
          new java.util.concurrent.atomic.AtomicInteger();
      OutboxStore waking = new ForwardingOutboxStore(store) {
        @Override
        public List<io.relaykit.outbox.OutboxRecord> claim(String owner, int max, int maxRun,
            Duration lease, Instant now) {
          try {
            return super.claim(owner, max, maxRun, lease, now);
          } finally {
            if (storm.get()) {
              wakeup.wake(); // a commit lands during every claim
            }
          }
        }

        @Override
        public boolean reschedule(String owner, long sequence, int attempts, Instant failedAt,
            Instant notBefore, String error) {
          boolean held = super.reschedule(owner, sequence, attempts, failedAt, notBefore, error);
          rescheduled.incrementAndGet();
          return held;
        }
      };
      OutboxRelay relay = built(windowRelay(waking, broker)
          .confirmTimeout(Duration.ofMillis(500)));
      relay.start();
      try {
        Await.until(Duration.ofSeconds(15), "k1's missing confirm counted as failed within its"
            + " timeout", () -> rescheduled.get() >= 1);
      } finally {
        storm.set(false);
      }
      assertThat(broker.count("pub:k1")).isEqualTo(1);
      assertThat(unsent()).isEqualTo(1);
    }

    @Test
    @DisplayName("commits during every claim (a wake always pending) do not stall a key run: its"
        + " next rows go out as each confirm arrives, well within the confirm timeout")
    void wakesDoNotStallKeyRuns() {
      append("k", "k1");
      append("k", "k2");
      append("k", "k3");
      WindowBroker broker = new WindowBroker();
      AtomicBoolean storm = new AtomicBoolean(true);
      OutboxStore waking = new ForwardingOutboxStore(store) {
        @Override
        public List<io.relaykit.outbox.OutboxRecord> claim(String owner, int max, int maxRun,
            Duration lease, Instant now) {
          try {
            return super.claim(owner, max, maxRun, lease, now);
          } finally {
            if (storm.get()) {
              wakeup.wake();
            }
          }
        }
      };
      OutboxRelay relay = built(windowRelay(waking, broker));
      relay.start();
      try {
        // The confirm timeout is 20 s: a run that waited for it would not be done in 10.
        Await.until(Duration.ofSeconds(10), "the run k1, k2, k3 sent", () -> unsent() == 0);
      } finally {
        storm.set(false);
      }
      assertThat(broker.log()).containsExactly("pub:k1", "ok:k1", "pub:k2", "ok:k2", "pub:k3",
          "ok:k3");
    }

    @Test
    @DisplayName("an Error from the publisher ends the loop while an earlier batch waits: that"
        + " batch is still finished (its confirmed row marked, its renewals stopped), and the"
        + " row whose publish threw is taken over after its lease")
    void errorEndsTheLoopCleanly() throws Exception {
      append("a", "a1");
      WindowBroker broker = new WindowBroker();
      broker.hold = m -> m.payloadUtf8().equals("a1");
      broker.bug = m -> m.payloadUtf8().equals("u1");
      OutboxRelay relay = built(windowRelay(store, broker));
      relay.start();
      Thread loop = loopThread(relay);
      Await.until(Duration.ofSeconds(10), "a1 held", () -> broker.pendingCount() == 1);
      append(null, "u1");
      wakeup.wake();
      Await.until(Duration.ofSeconds(10), "the publisher threw", broker.threw::get);
      broker.confirm("a1");
      Await.until(Duration.ofSeconds(10), "a1 marked sent although the loop ended",
          () -> store.stats(clock.instant()).sent() == 1);
      loop.join(10_000);
      assertThat(loop.isAlive()).isFalse();

      clock.advance(LEASE.plusSeconds(1));
      WindowBroker takerBroker = new WindowBroker();
      OutboxRelay taker = built(relay("taker", store, deadLetters, takerBroker));
      assertThat(taker.runOnce().sent()).isEqualTo(1);
      assertThat(takerBroker.log()).containsExactly("pub:u1", "ok:u1");
      assertThat(unsent()).isZero();
    }

    @Test
    @DisplayName("an interrupt of the relay thread with two batches awaiting confirms ends the"
        + " loop; nothing unconfirmed is marked, renewals stop, and another relay takes every row"
        + " over after the lease")
    void interruptWithBatchesInFlight() throws Exception {
      append("a", "a1");
      WindowBroker broker = new WindowBroker();
      broker.hold = m -> true;
      OutboxRelay relay = built(windowRelay(store, broker));
      relay.start();
      Thread loop = loopThread(relay);
      Await.until(Duration.ofSeconds(10), "a1 held", () -> broker.pendingCount() == 1);
      append(null, "u1");
      append("a", "a2");
      wakeup.wake();
      Await.until(Duration.ofSeconds(10), "u1 held too: two batches in the window",
          () -> broker.pendingCount() == 2);
      loop.interrupt();
      loop.join(10_000);
      assertThat(loop.isAlive()).as("the loop ended").isFalse();
      broker.confirmAll(); // too late for the relay that was interrupted
      assertThat(unsent()).isEqualTo(3);

      clock.advance(LEASE.plusSeconds(1));
      WindowBroker takerBroker = new WindowBroker();
      OutboxRelay taker = built(relay("taker", store, deadLetters, takerBroker).batchSize(10));
      taker.runOnce();
      taker.runOnce();
      assertThat(unsent()).isZero();
      assertThat(takerBroker.log()).containsSubsequence("pub:a1", "ok:a1", "pub:a2");
      assertThat(broker.count("pub:a2")).isZero();
    }

    @Test
    @DisplayName("close while two batches await confirms waits for them: confirms that arrive"
        + " before the deadline are marked, close returns true, the loop thread ends")
    void closeWaitsForTheWindow() throws Exception {
      append("a", "a1");
      WindowBroker broker = new WindowBroker();
      broker.hold = m -> true;
      OutboxRelay relay = built(windowRelay(store, broker));
      relay.start();
      Thread loop = loopThread(relay);
      Await.until(Duration.ofSeconds(10), "a1 held", () -> broker.pendingCount() == 1);
      append(null, "u1");
      wakeup.wake();
      Await.until(Duration.ofSeconds(10), "two batches in the window",
          () -> broker.pendingCount() == 2);
      CompletableFuture<Boolean> closed = new CompletableFuture<>();
      Thread closer = new Thread(() -> closed.complete(relay.close(Duration.ofSeconds(20))));
      closer.start();
      Await.until(Duration.ofSeconds(10), "close waits for the loop",
          () -> closer.getState() == Thread.State.TIMED_WAITING);
      broker.confirmAll();
      assertThat(closed.get(30, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
      assertThat(loop.isAlive()).isFalse();
      assertThat(store.stats(clock.instant()).sent()).isEqualTo(2);
    }

    @Test
    @DisplayName("close with a deadline shorter than the missing confirms returns false; the loop"
        + " still ends within the confirm timeout, nothing is marked that was not confirmed, and a"
        + " restarted relay sends every row")
    void closeBeforeConfirmsThenRestart() throws Exception {
      append("a", "a1");
      WindowBroker broker = new WindowBroker();
      broker.hold = m -> true;
      OutboxRelay relay = built(windowRelay(store, broker).confirmTimeout(Duration.ofSeconds(1)));
      relay.start();
      Thread loop = loopThread(relay);
      Await.until(Duration.ofSeconds(10), "a1 held", () -> broker.pendingCount() == 1);
      append(null, "u1");
      append("a", "a2");
      wakeup.wake();
      Await.until(Duration.ofSeconds(10), "two batches in the window",
          () -> broker.pendingCount() == 2);
      assertThat(relay.close(Duration.ofMillis(1))).isFalse();
      loop.join(15_000);
      assertThat(loop.isAlive()).isFalse();
      assertThat(unsent()).isEqualTo(3);
      assertThat(store.stats(clock.instant()).sent()).isZero();

      clock.advance(LEASE.plusSeconds(1));
      WindowBroker restartedBroker = new WindowBroker();
      OutboxRelay restarted = built(windowRelay(store, restartedBroker));
      restarted.start();
      Await.until(Duration.ofSeconds(20), "everything sent after the restart",
          () -> unsent() == 0);
      assertKeyOrder(restartedBroker.log(), List.of("a1", "a2"), Set.of());
      assertThat(restartedBroker.count("pub:a2")).isEqualTo(1);
    }

    @Test
    @DisplayName("a broker that never confirms: the window never holds more than two claims' worth"
        + " of rows, each batch gives up at its confirm timeout, and every row ends dead-lettered"
        + " after its attempts")
    void neverConfirmingBrokerStaysBounded() {
      for (int i = 0; i < 24; i++) {
        append(i % 3 == 0 ? null : "k" + (i % 8), "m" + i);
      }
      WindowBroker broker = new WindowBroker();
      broker.hold = m -> true;
      Set<Long> outstanding = ConcurrentHashMap.newKeySet();
      java.util.concurrent.atomic.AtomicInteger most =
          new java.util.concurrent.atomic.AtomicInteger();
      java.util.concurrent.atomic.AtomicInteger finishes =
          new java.util.concurrent.atomic.AtomicInteger();
      OutboxStore counting = new ForwardingOutboxStore(store) {
        @Override
        public List<io.relaykit.outbox.OutboxRecord> claim(String owner, int max, int maxRun,
            Duration lease, Instant now) {
          List<io.relaykit.outbox.OutboxRecord> c = super.claim(owner, max, maxRun, lease, now);
          c.forEach(r -> outstanding.add(r.sequence()));
          most.accumulateAndGet(outstanding.size(), Math::max);
          return c;
        }

        @Override
        public boolean reschedule(String owner, long sequence, int attempts, Instant failedAt,
            Instant notBefore, String error) {
          outstanding.remove(sequence);
          finishes.incrementAndGet();
          return super.reschedule(owner, sequence, attempts, failedAt, notBefore, error);
        }

        @Override
        public boolean moveToDeadLetters(String owner, long sequence, DeadLetter deadLetter,
            DeadLetterStore dead) {
          outstanding.remove(sequence);
          finishes.incrementAndGet();
          return super.moveToDeadLetters(owner, sequence, deadLetter, dead);
        }

        @Override
        public int release(String owner, Collection<Long> sequences) {
          outstanding.removeAll(sequences);
          return super.release(owner, sequences);
        }
      };
      OutboxRelay relay = built(windowRelay(counting, broker).batchSize(5)
          .confirmTimeout(Duration.ofMillis(200)));
      relay.start();
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (deadLetterCount() < 24) {
        assertThat(System.nanoTime() - deadline).as("all dead-lettered in time").isNegative();
        int before = finishes.get();
        clock.advance(Duration.ofSeconds(2));
        Await.until(Duration.ofSeconds(10), "the relay gave up on more rows",
            () -> finishes.get() > before || deadLetterCount() >= 24);
      }
      assertThat(most.get()).as("rows claimed and not yet given up, at most").isBetween(5, 10);
      assertThat(unsent()).isZero();
      assertThat(broker.count("ok:m0")).isZero();
    }

    @Test
    @DisplayName("two started relays with windows on one store, confirms in random order: every row"
        + " published once, each key in order, every row sent")
    void twinRelaysRandomConfirms() throws Exception {
      WindowBroker broker = new WindowBroker();
      broker.hold = m -> true;
      OutboxRelay one = built(windowRelay(store, broker));
      OutboxRelay two = built(windowRelay(store, broker));
      java.util.SplittableRandom random = new java.util.SplittableRandom(20261207L);
      AtomicBoolean stop = new AtomicBoolean();
      Thread confirmer = new Thread(() -> {
        java.util.SplittableRandom r = new java.util.SplittableRandom(7L);
        try {
          while (!stop.get()) {
            broker.confirmOne(r);
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }, "twin-confirmer");
      one.start();
      two.start();
      confirmer.start();
      Map<String, List<String>> byKey = new java.util.LinkedHashMap<>();
      int n = 0;
      try {
        for (int burst = 0; burst < 6; burst++) {
          for (int i = 0; i < 10; i++) {
            String key = random.nextInt(4) == 0 ? null : "k" + random.nextInt(5);
            String body = "m" + n++;
            append(key, body);
            if (key != null) {
              byKey.computeIfAbsent(key, k -> new ArrayList<>()).add(body);
            }
          }
          wakeup.wake();
        }
        Await.until(Duration.ofSeconds(30), "every row sent", () -> unsent() == 0);
      } finally {
        stop.set(true);
        confirmer.join(10_000);
      }
      List<String> log = broker.log();
      for (int i = 0; i < n; i++) {
        assertThat(broker.count("pub:m" + i)).as("m%s published once", i).isEqualTo(1);
      }
      for (List<String> rows : byKey.values()) {
        assertKeyOrder(log, rows, Set.of());
      }
      assertThat(store.stats(clock.instant()).sent()).isEqualTo(n);
    }
  }
}
