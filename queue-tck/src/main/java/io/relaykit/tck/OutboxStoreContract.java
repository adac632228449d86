package io.relaykit.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.message.Message;
import io.relaykit.outbox.OutboxRecord;
import io.relaykit.outbox.OutboxStats;
import io.relaykit.outbox.OutboxStore;
import io.relaykit.queue.Priority;
import io.relaykit.trace.TraceContext;
import io.relaykit.trace.TracePropagation;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * The contract every {@link OutboxStore} keeps: subclass it, implement {@link #createStore} and
 * {@link #appendCommitted} (how a row is appended is backend-specific: JDBC inserts it through a
 * {@code Connection} in a transaction and commits).
 *
 * <h2>Time</h2>
 * The store decides readiness, lease expiry and retention on a clock of its own (see {@link
 * OutboxStore}'s "one clock" rule): {@link #createStore} must build it on {@link #clock()}, a
 * {@link FakeClock} that {@link #advance} moves (the JDBC store through {@code
 * DatabaseClock.of(clock())}, the in-memory one through {@code new InMemoryOutboxStore(clock())}).
 * The kit passes that clock's time as the callers' {@code now}, except in the "one clock" cases,
 * which play relays whose clocks run fast or slow.
 *
 * <p>Every test gets a fresh store that must start empty (the kit checks the stats it reports).
 */
public abstract class OutboxStoreContract {

  /** For a subclass that binds the kit to one backend. */
  protected OutboxStoreContract() {}

  private final FakeClock fakeClock = new FakeClock();
  private OutboxStore store;
  private final String destination = "tck-orders-" + UUID.randomUUID();

  /**
   * A new, empty outbox that decides time on {@link #clock()}; called before every test.
   *
   * @return an outbox holding no rows
   */
  protected abstract OutboxStore createStore();

  /**
   * Appends a row to the store {@link #createStore} returned last, committed when this returns, as
   * the business transaction would.
   *
   * @param destination where the row is to be published
   * @param message the message to append
   */
  protected abstract void appendCommitted(String destination, Message message);

  /**
   * A new, empty outbox as {@link #createStore()}, whose appends capture the caller's trace
   * context from {@code propagation} ({@code new InMemoryOutboxStore(clock, bound, propagation)},
   * {@code JdbcOutboxStore.withTracePropagation(propagation)}); {@link #appendCommitted} then
   * appends to it. The default throws: a store without it fails the "trace capture" cases.
   *
   * @param propagation where the store's appends capture the caller's trace context from
   * @return the new store
   */
  protected OutboxStore createStore(TracePropagation propagation) {
    throw new UnsupportedOperationException(getClass().getName()
        + " does not override createStore(TracePropagation)");
  }

  /**
   * Where "now" comes from for every call the kit makes.
   *
   * @return the kit's {@link FakeClock} by default
   */
  protected InstantSource clock() {
    return fakeClock;
  }

  /**
   * Makes at least {@code duration} pass on {@link #clock()}.
   *
   * @param duration how much time must pass
   */
  protected void advance(Duration duration) {
    fakeClock.advance(duration);
  }

  /**
   * The lease relays claim with in the kit.
   *
   * @return 30 s by default
   */
  protected Duration lease() {
    return Duration.ofSeconds(30);
  }

  /**
   * Whether appends accept a caller's unique request id that makes them safe to retry ({@link
   * #appendWithRequestId}).
   *
   * @return false by default; true to run the request-id cases
   */
  protected boolean supportsRequestIds() {
    return false;
  }

  /**
   * Appends {@code message} committed, under the caller's {@code requestId} (the JDBC store's
   * {@code append(Connection, String, Message, String)} in an auto-commit connection).
   *
   * @param destination where the row is to be published
   * @param message the message to append
   * @param requestId the caller's unique id for this append
   * @return the row's sequence: the new one, or the existing row's for a repeat
   * @throws UnsupportedOperationException by default, for a store without request ids
   */
  protected long appendWithRequestId(String destination, Message message, String requestId) {
    throw new UnsupportedOperationException(getClass().getName() + " has no request ids");
  }

  /**
   * A business transaction the kit appends through, open until {@link #commit} or {@link
   * #rollback}; see {@link #begin}.
   */
  public interface OpenTransaction {
    /**
     * Appends {@code message} in this transaction, through the store {@link #begin} was given.
     *
     * @param destination where the row is to be published
     * @param message the message
     */
    void append(String destination, Message message);

    /** Commits the transaction and ends it. */
    void commit();

    /** Rolls the transaction back and ends it. */
    void rollback();
  }

  /**
   * A new, empty outbox as {@link #createStore()}, whose appends are checked against {@code
   * bound}. The default throws: a store without it fails the "bounds" cases.
   *
   * @param bound the bound appends are checked against
   * @return the new store
   */
  protected OutboxStore createStore(io.relaykit.outbox.OutboxBound bound) {
    throw new UnsupportedOperationException(getClass().getName()
        + " does not override createStore(OutboxBound)");
  }

  /**
   * Opens a business transaction on {@code store} (one of this backend's, from a {@code
   * createStore} method), or empty when appends of this backend are not transactional (the
   * in-memory store: an append is visible at once and cannot roll back); the "bounds" cases then
   * check appends made one after another from many threads.
   *
   * @param store the store appends go through
   * @return the open transaction, or empty
   */
  protected Optional<OpenTransaction> begin(OutboxStore store) {
    return Optional.empty();
  }

  /**
   * The store's key-head rows that claims walk (keys whose head points at a row), or -1 when the
   * store keeps no such rows; the "key heads" cases then check only what claims return.
   *
   * @return how many key heads a claim may walk right now
   */
  protected long walkableKeyHeads() {
    return -1;
  }

  @BeforeEach
  void createFreshStore() {
    store = createStore();
  }

  /**
   * The store under test.
   *
   * @return this test's store, from {@link #createStore()}
   */
  protected OutboxStore store() {
    return store;
  }

  private Instant now() {
    return clock().instant();
  }

  private int appended;

  /** Appends a message with {@code key} (null for none) and returns it; createdAt grows by 1 ms. */
  private Message append(String key) {
    Message m = Message.builder()
        .id("ob-" + UUID.randomUUID())
        .type("order.paid")
        .key(key)
        .payload("{\"n\":" + appended + "}")
        .createdAt(FakeClock.EPOCH.minusSeconds(60).plusMillis(appended++))
        .build();
    appendCommitted(destination, m);
    return m;
  }

  private List<OutboxRecord> claim(String owner, int max) {
    return store.claim(owner, max, lease(), now());
  }

  private static List<String> messageIds(List<OutboxRecord> records) {
    List<String> ids = new ArrayList<>();
    for (OutboxRecord r : records) {
      ids.add(r.message().id());
    }
    return ids;
  }

  private static List<String> ids(Message... messages) {
    List<String> ids = new ArrayList<>();
    for (Message m : messages) {
      ids.add(m.id());
    }
    return ids;
  }

  private static OutboxRecord only(List<OutboxRecord> records) {
    assertThat(records).hasSize(1);
    return records.get(0);
  }

  @Nested
  @DisplayName("claim")
  class Claim {

    @Test
    @DisplayName("an empty outbox has nothing to claim")
    void empty() {
      assertThat(claim("relay-a", 10)).isEmpty();
    }

    @Test
    @DisplayName("claims return the oldest rows first, with increasing sequences")
    void oldestFirst() {
      Message m1 = append(null);
      Message m2 = append("k1");
      Message m3 = append(null);
      Message m4 = append("k2");

      List<OutboxRecord> got = claim("relay-a", 3);

      assertThat(messageIds(got)).containsExactlyElementsOf(ids(m1, m2, m3));
      assertThat(got.get(0).sequence()).isLessThan(got.get(1).sequence());
      assertThat(got.get(1).sequence()).isLessThan(got.get(2).sequence());
      assertThat(messageIds(claim("relay-a", 3))).containsExactlyElementsOf(ids(m4));
    }

    @Test
    @DisplayName("a claimed record carries the destination, the whole message and the lease")
    void recordFields() {
      Message m = Message.builder()
          .id("ob-" + UUID.randomUUID()).type("order.paid").schemaVersion(2).key("order-7")
          .payload(new byte[] {0, 1, 2, (byte) 255})
          .header("tenant", "acme").header("note", "a=b; c")
          .createdAt(FakeClock.EPOCH.minusMillis(1500))
          .expiresAt(FakeClock.EPOCH.plusSeconds(3600))
          .priority(Priority.CRITICAL).traceId("0af7651916cd43dd8448eb211c80319c")
          .build();
      appendCommitted(destination, m);
      Instant before = now();

      OutboxRecord r = only(claim("relay-a", 10));

      assertThat(r.destination()).isEqualTo(destination);
      assertThat(r.message()).isEqualTo(m);
      assertThat(r.message().payload()).containsExactly(0, 1, 2, 255);
      assertThat(r.attempts()).isZero();
      assertThat(r.firstFailureAt()).isNull();
      assertThat(r.leaseOwner()).isEqualTo("relay-a");
      assertThat(r.leaseExpiresAt()).isBetween(before.plus(lease()), now().plus(lease()));
    }

    @Test
    @DisplayName("a W3C trace context captured at the append comes back on the claimed record")
    void traceContextSurvives() {
      TraceContext sent = new TraceContext("0af7651916cd43dd8448eb211c80319c",
          "b7ad6b7169203331", 1, "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7");
      Message m = Message.builder().type("order.paid").key("order-8").payload("x")
          .traceContext(sent).build();
      appendCommitted(destination, m);

      OutboxRecord r = only(claim("relay-a", 10));

      assertThat(r.message().traceContext().context()).contains(sent);
      assertThat(r.message().traceId()).isEqualTo(sent.traceId());
    }

    @Test
    @DisplayName("a claim returns at most max rows")
    void atMostMax() {
      for (int i = 0; i < 5; i++) {
        append(null);
      }

      assertThat(claim("relay-a", 2)).hasSize(2);
      assertThat(claim("relay-a", 2)).hasSize(2);
      assertThat(claim("relay-a", 2)).hasSize(1);
    }
  }

  @Nested
  @DisplayName("leases")
  class Leases {

    @Test
    @DisplayName("a live lease hides claimed rows from every other claim")
    void leaseHides() {
      Message m1 = append(null);
      Message m2 = append(null);
      Message m3 = append(null);

      assertThat(messageIds(claim("relay-a", 2))).containsExactlyElementsOf(ids(m1, m2));

      assertThat(messageIds(claim("relay-b", 10))).containsExactlyElementsOf(ids(m3));
      assertThat(claim("relay-b", 10)).isEmpty();
      assertThat(claim("relay-a", 10)).isEmpty();
    }

    @Test
    @DisplayName("an expired lease's row can be claimed by another relay")
    void expiredReclaimable() {
      Message m = append("k1");
      OutboxRecord first = only(claim("relay-a", 10));

      advance(lease().plusMillis(1));
      OutboxRecord taken = only(claim("relay-b", 10));

      assertThat(taken.message().id()).isEqualTo(m.id());
      assertThat(taken.sequence()).isEqualTo(first.sequence());
      assertThat(taken.leaseOwner()).isEqualTo("relay-b");
    }

    @Test
    @DisplayName("after a takeover, the old owner's markSent, reschedule and markDead do nothing"
        + " and say so")
    void staleOwnerAfterTakeover() {
      append("k1");
      OutboxRecord first = only(claim("relay-a", 10));
      advance(lease().plusMillis(1));
      only(claim("relay-b", 10));

      assertThat(store.markSent("relay-a", List.of(first.sequence()), now())).isZero();
      assertThat(store.reschedule("relay-a", first.sequence(), 1, now(),
          now().plusSeconds(60), "boom")).isFalse();
      assertThat(store.markDead("relay-a", first.sequence())).isFalse();

      assertThat(store.stats(now()).unsent()).isEqualTo(1);
      assertThat(store.markSent("relay-b", List.of(first.sequence()), now())).isEqualTo(1);
      assertThat(store.stats(now()).unsent()).isZero();
    }

    @Test
    @DisplayName("a relay that is not the owner cannot mark, reschedule or kill a held row")
    void nonOwner() {
      append(null);
      OutboxRecord r = only(claim("relay-a", 10));

      assertThat(store.markSent("relay-b", List.of(r.sequence()), now())).isZero();
      assertThat(store.reschedule("relay-b", r.sequence(), 1, now(), now(), "x")).isFalse();
      assertThat(store.markDead("relay-b", r.sequence())).isFalse();

      assertThat(claim("relay-c", 10)).as("still leased to relay-a").isEmpty();
      assertThat(store.stats(now()).unsent()).isEqualTo(1);
    }

    @Test
    @DisplayName("rows nobody claimed cannot be marked sent")
    void unclaimedNotMarked() {
      append(null);
      OutboxRecord r = only(claim("relay-a", 10));
      assertThat(store.markSent("relay-a", List.of(r.sequence()), now())).isEqualTo(1);
      append(null);

      assertThat(store.markSent("relay-a", List.of(r.sequence() + 1, r.sequence() + 1000),
          now())).isZero();
      assertThat(store.markSent("relay-a", List.of(), now())).isZero();
      assertThat(store.stats(now()).unsent()).isEqualTo(1);
    }
  }

  @Nested
  @DisplayName("lease renewal and moving to dead letters, fenced by the owner")
  class RenewAndMove {

    private io.relaykit.deadletter.DeadLetter deadLetterOf(OutboxRecord r) {
      return io.relaykit.deadletter.DeadLetter.of(r.message(), r.destination(), "gave up", null,
          1, now(), now());
    }

    @Test
    @DisplayName("renewLease extends a held lease from the store's now; another relay cannot take"
        + " the row until the renewed lease ends")
    void renewExtends() {
      append("k1");
      OutboxRecord r = only(claim("relay-a", 10));
      advance(lease().dividedBy(2));
      assertThat(store.renewLease("relay-a", List.of(r.sequence()), lease(), now()))
          .containsExactly(r.sequence());
      advance(lease().dividedBy(2).plusMillis(1));
      assertThat(claim("relay-b", 10)).as("renewed lease still live").isEmpty();
      advance(lease().dividedBy(2));
      assertThat(only(claim("relay-b", 10)).leaseOwner()).isEqualTo("relay-b");
    }

    @Test
    @DisplayName("renewLease keeps only what the caller still holds: not a row taken over, sent or"
        + " rescheduled; an expired lease nobody took is renewed")
    void renewFenced() {
      append(null);
      append(null);
      append(null);
      append(null);
      List<OutboxRecord> rs = claim("relay-a", 4);
      long taken = rs.get(0).sequence();
      long sent = rs.get(1).sequence();
      long rescheduled = rs.get(2).sequence();
      long kept = rs.get(3).sequence();
      assertThat(store.markSent("relay-a", List.of(sent), now())).isEqualTo(1);
      assertThat(store.reschedule("relay-a", rescheduled, 1, now(), now().plus(lease()).plus(
          lease()), "x")).isTrue();
      advance(lease().plusMillis(1));
      // relay-b takes one expired row; the other expired row nobody took.
      List<OutboxRecord> b = store.claim("relay-b", 1, lease(), now());
      assertThat(b).extracting(OutboxRecord::sequence).containsExactly(taken);

      assertThat(store.renewLease("relay-a", List.of(taken, sent, rescheduled, kept), lease(),
          now())).containsExactly(kept);
      assertThat(store.renewLease("relay-a", List.of(), lease(), now())).isEmpty();
      assertThat(claim("relay-c", 10)).isEmpty();
    }

    @Test
    @DisplayName("moveToDeadLetters by a stale owner moves nothing and stores no dead letter; the"
        + " holder's move stores it and the row leaves")
    void moveFenced() {
      io.relaykit.deadletter.InMemoryDeadLetterStore dead =
          new io.relaykit.deadletter.InMemoryDeadLetterStore();
      append("k1");
      OutboxRecord first = only(claim("relay-a", 10));
      advance(lease().plusMillis(1));
      OutboxRecord taken = only(claim("relay-b", 10));

      assertThat(store.moveToDeadLetters("relay-a", first.sequence(), deadLetterOf(first), dead))
          .isFalse();
      assertThat(dead.count(io.relaykit.deadletter.DeadLetterQuery.all())).isZero();
      assertThat(store.stats(now()).unsent()).isEqualTo(1);

      assertThat(store.moveToDeadLetters("relay-b", taken.sequence(), deadLetterOf(taken), dead))
          .isTrue();
      assertThat(dead.find(deadLetterOf(taken).id())).isPresent();
      assertThat(store.stats(now()).unsent()).isZero();
      assertThat(claim("relay-c", 10)).isEmpty();
    }

    @Test
    @DisplayName("a dead-letter store that throws leaves the row in the outbox, still held by the"
        + " caller")
    void moveFailureKeepsRow() {
      append("k1");
      OutboxRecord r = only(claim("relay-a", 10));
      io.relaykit.deadletter.DeadLetterStore refusing = new ForwardingDeadLetterStore(
          new io.relaykit.deadletter.InMemoryDeadLetterStore()) {
        @Override
        public void add(io.relaykit.deadletter.DeadLetter d) {
          throw new IllegalArgumentException("over the size limit");
        }
      };
      assertThatThrownBy(() -> store.moveToDeadLetters("relay-a", r.sequence(), deadLetterOf(r),
          refusing)).hasMessageContaining("over the size limit");
      assertThat(store.stats(now()).unsent()).isEqualTo(1);
      assertThat(claim("relay-b", 10)).as("still leased to relay-a").isEmpty();
      assertThat(store.markSent("relay-a", List.of(r.sequence()), now())).isEqualTo(1);
    }
  }

  @Nested
  @DisplayName("per-key order")
  class KeyOrder {

    @Test
    @DisplayName("only the oldest unsent row of a key is claimable; later rows of it wait until"
        + " it is sent")
    void oneKeyAtATime() {
      Message a1 = append("A");
      Message a2 = append("A");
      Message b1 = append("B");
      Message a3 = append("A");

      List<OutboxRecord> first = claim("relay-a", 10);
      assertThat(messageIds(first)).containsExactlyElementsOf(ids(a1, b1));
      assertThat(claim("relay-b", 10)).as("A's next row waits behind a claimed row").isEmpty();

      assertThat(store.markSent("relay-a", List.of(first.get(0).sequence()), now())).isEqualTo(1);
      OutboxRecord second = only(claim("relay-b", 10));
      assertThat(second.message().id()).isEqualTo(a2.id());

      assertThat(store.markSent("relay-b", List.of(second.sequence()), now())).isEqualTo(1);
      assertThat(messageIds(claim("relay-a", 10))).containsExactlyElementsOf(ids(a3));
    }

    @Test
    @DisplayName("a key's later rows wait behind an expired lease too, until it is taken over and"
        + " sent")
    void waitBehindExpired() {
      Message a1 = append("A");
      append("A");
      only(claim("relay-a", 10));

      advance(lease().plusMillis(1));

      OutboxRecord again = only(claim("relay-b", 10));
      assertThat(again.message().id()).isEqualTo(a1.id());
    }

    @Test
    @DisplayName("a failing key parks its own later rows and nothing else")
    void failingKeyParksOnlyItself() {
      append("A");
      Message a2 = append("A");
      Message b1 = append("B");
      Message free = append(null);
      List<OutboxRecord> got = claim("relay-a", 1);
      OutboxRecord a1 = only(got);

      assertThat(store.reschedule("relay-a", a1.sequence(), 1, now(), now().plusSeconds(60),
          "broker down")).isTrue();

      List<OutboxRecord> others = claim("relay-a", 10);
      assertThat(messageIds(others)).containsExactlyElementsOf(ids(b1, free));
      assertThat(claim("relay-a", 10)).isEmpty();
      assertThat(store.markSent("relay-a",
          List.of(others.get(0).sequence(), others.get(1).sequence()), now())).isEqualTo(2);
      advance(Duration.ofSeconds(60));
      OutboxRecord retried = only(claim("relay-a", 10));
      assertThat(retried.sequence()).isEqualTo(a1.sequence());
      assertThat(store.markSent("relay-a", List.of(retried.sequence()), now())).isEqualTo(1);
      assertThat(messageIds(claim("relay-a", 10))).containsExactlyElementsOf(ids(a2));
    }

    @Test
    @DisplayName("rows without a key have no order: all are claimable at once")
    void keylessUnordered() {
      Message n1 = append(null);
      Message n2 = append(null);
      Message n3 = append(null);

      assertThat(messageIds(claim("relay-a", 10))).containsExactlyElementsOf(ids(n1, n2, n3));
    }

    @Test
    @DisplayName("a dead row frees its key's next row")
    void deadFreesKey() {
      append("A");
      Message a2 = append("A");
      OutboxRecord a1 = only(claim("relay-a", 10));

      assertThat(store.markDead("relay-a", a1.sequence())).isTrue();

      assertThat(messageIds(claim("relay-a", 10))).containsExactlyElementsOf(ids(a2));
      assertThat(store.stats(now()).unsent()).isEqualTo(1);
    }
  }

  @Nested
  @DisplayName("one clock for shared decisions")
  class OneClock {
    private final Duration fast = Duration.ofSeconds(31);

    @Test
    @DisplayName("a relay whose clock runs 31 s (or a day) fast cannot take another relay's fresh"
        + " lease")
    void fastRelayCannotTakeFreshLease() {
      append("k1");
      OutboxRecord mine = only(claim("relay-a", 10));

      assertThat(store.claim("relay-b", 10, lease(), now().plus(fast))).isEmpty();
      assertThat(store.claim("relay-b", 10, lease(), now().plus(Duration.ofDays(1)))).isEmpty();
      assertThat(store.markSent("relay-a", List.of(mine.sequence()), now())).isEqualTo(1);
    }

    @Test
    @DisplayName("a relay whose clock runs an hour slow still takes over a lease that ran out")
    void slowRelayTakesOverExpiredLease() {
      Message m = append("k1");
      only(claim("relay-a", 10));
      advance(lease().plusMillis(1));

      OutboxRecord taken = only(store.claim("relay-b", 10, lease(),
          now().minus(Duration.ofHours(1))));

      assertThat(taken.message().id()).isEqualTo(m.id());
      assertThat(taken.leaseOwner()).isEqualTo("relay-b");
    }

    @Test
    @DisplayName("a lease lasts its duration from the store's now, whatever the claimer's clock"
        + " says")
    void leaseRunsOnStoreClock() {
      append(null);
      Instant storeNow = now();

      OutboxRecord r = only(store.claim("relay-a", 10, lease(), now().plus(Duration.ofHours(1))));

      assertThat(r.leaseExpiresAt()).isEqualTo(storeNow.plus(lease()));
      advance(lease().plusMillis(1));
      assertThat(only(claim("relay-b", 10)).sequence()).as("taken over on the store's clock")
          .isEqualTo(r.sequence());
    }

    @Test
    @DisplayName("a retry delay runs on the store's clock: neither a fast nor a slow relay moves"
        + " the time a rescheduled row is claimable again")
    void retryDelayOnStoreClock() {
      append(null);
      append(null);
      List<OutboxRecord> got = claim("relay-a", 2);
      Duration delay = Duration.ofSeconds(10);
      Instant fastNow = now().plus(fast);
      Instant slowNow = now().minus(Duration.ofHours(1));
      assertThat(store.reschedule("relay-a", got.get(0).sequence(), 1, fastNow,
          fastNow.plus(delay), "fast relay")).isTrue();
      assertThat(store.reschedule("relay-a", got.get(1).sequence(), 1, slowNow,
          slowNow.plus(delay), "slow relay")).isTrue();

      assertThat(claim("relay-b", 10)).as("before the delay ran out on the store's clock")
          .isEmpty();
      advance(delay);
      assertThat(claim("relay-b", 10)).extracting(OutboxRecord::sequence)
          .containsExactly(got.get(0).sequence(), got.get(1).sequence());
    }

    @Test
    @DisplayName("sent-row retention runs on the store's clock: a relay 8 days fast purges"
        + " nothing early, and one 8 days slow does not make fresh rows look old")
    void retentionOnStoreClock() {
      Duration retention = Duration.ofDays(7);
      Duration skew = Duration.ofDays(8);
      append(null);
      append(null);
      List<OutboxRecord> got = claim("relay-a", 2);
      assertThat(store.markSent("relay-a", List.of(got.get(0).sequence()), now().plus(skew)))
          .isEqualTo(1);
      assertThat(store.markSent("relay-a", List.of(got.get(1).sequence()), now().minus(skew)))
          .isEqualTo(1);

      assertThat(store.purgeSentOlderThan(retention, 100, now().plus(skew))).isZero();
      assertThat(store.purgeSentOlderThan(retention, 100, now())).isZero();
      assertThat(store.stats(now()).sent()).isEqualTo(2);

      advance(retention.plusMillis(1));
      assertThat(store.purgeSentOlderThan(retention, 100, now().minus(skew))).isEqualTo(2);
      assertThat(store.stats(now()).sent()).isZero();
    }

    @Test
    @DisplayName("purgeSentOlderThan deletes at most max rows per call, keeps unsent rows, and"
        + " rejects a negative retention, max below 1 and a null now")
    void purgeSentOlderThanIsBounded() {
      for (int i = 0; i < 4; i++) {
        append(null);
      }
      List<OutboxRecord> got = claim("relay-a", 3);
      store.markSent("relay-a", List.of(got.get(0).sequence(), got.get(1).sequence(),
          got.get(2).sequence()), now());
      advance(Duration.ofMinutes(1).plusMillis(1));

      assertThat(store.purgeSentOlderThan(Duration.ofMinutes(1), 2, now())).isEqualTo(2);
      assertThat(store.purgeSentOlderThan(Duration.ofMinutes(1), 2, now())).isEqualTo(1);
      assertThat(store.purgeSentOlderThan(Duration.ZERO, 2, now())).isZero();
      assertThat(store.stats(now())).extracting(OutboxStats::unsent, OutboxStats::sent)
          .containsExactly(1L, 0L);

      assertThatThrownBy(() -> store.purgeSentOlderThan(Duration.ofSeconds(-1), 1, now()))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("retention");
      assertThatThrownBy(() -> store.purgeSentOlderThan(Duration.ZERO, 0, now()))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("max");
      assertThatThrownBy(() -> store.purgeSentOlderThan(Duration.ZERO, 1, null))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("now");
    }
  }

  @Nested
  @DisplayName("reschedule")
  class Reschedule {

    @Test
    @DisplayName("reschedule records attempts and first failure, and hides the row until notBefore")
    void hidesUntilNotBefore() {
      Message m = append(null);
      OutboxRecord r = only(claim("relay-a", 10));
      Instant failedAt = now();
      Instant notBefore = now().plusSeconds(10);

      assertThat(store.reschedule("relay-a", r.sequence(), 1, failedAt, notBefore, "timeout"))
          .isTrue();

      assertThat(claim("relay-a", 10)).as("before notBefore").isEmpty();
      assertThat(claim("relay-b", 10)).as("before notBefore, other relay").isEmpty();
      advance(Duration.ofSeconds(10));
      OutboxRecord again = only(claim("relay-b", 10));
      assertThat(again.message().id()).isEqualTo(m.id());
      assertThat(again.attempts()).isEqualTo(1);
      assertThat(again.firstFailureAt()).isEqualTo(failedAt);
      assertThat(again.leaseOwner()).isEqualTo("relay-b");
    }

    @Test
    @DisplayName("a second failure raises attempts and keeps the first failure time")
    void keepsFirstFailure() {
      append(null);
      OutboxRecord r = only(claim("relay-a", 10));
      Instant firstFailure = now();
      store.reschedule("relay-a", r.sequence(), 1, firstFailure, now().plusSeconds(1), "e1");
      advance(Duration.ofSeconds(1));
      OutboxRecord r2 = only(claim("relay-a", 10));

      assertThat(store.reschedule("relay-a", r2.sequence(), 2, now(), now().plusSeconds(2), "e2"))
          .isTrue();

      advance(Duration.ofSeconds(2));
      OutboxRecord r3 = only(claim("relay-a", 10));
      assertThat(r3.attempts()).isEqualTo(2);
      assertThat(r3.firstFailureAt()).isEqualTo(firstFailure);
    }

    @Test
    @DisplayName("a rescheduled row is released: the old owner cannot mark it sent any more")
    void rescheduleReleases() {
      append(null);
      OutboxRecord r = only(claim("relay-a", 10));
      store.reschedule("relay-a", r.sequence(), 1, now(), now(), "e1");

      assertThat(store.markSent("relay-a", List.of(r.sequence()), now())).isZero();
      assertThat(store.reschedule("relay-a", r.sequence(), 2, now(), now(), "e2")).isFalse();
      assertThat(only(claim("relay-b", 10)).sequence()).isEqualTo(r.sequence());
    }
  }

  @Nested
  @DisplayName("sent rows, dead rows and stats")
  class SentAndStats {

    @Test
    @DisplayName("a sent row is never claimed again, and a second markSent reports zero")
    void sentIsFinal() {
      append(null);
      OutboxRecord r = only(claim("relay-a", 10));

      assertThat(store.markSent("relay-a", List.of(r.sequence()), now())).isEqualTo(1);
      assertThat(store.markSent("relay-a", List.of(r.sequence()), now())).isZero();

      advance(lease().plusMillis(1));
      assertThat(claim("relay-b", 10)).isEmpty();
    }

    @Test
    @DisplayName("stats count unsent rows and the age of the oldest one's message; zero when none")
    void stats() {
      OutboxStats empty = store.stats(now());
      assertThat(empty.unsent()).isZero();
      assertThat(empty.oldestUnsentAge()).isEqualTo(Duration.ZERO);
      assertThat(empty.sent()).isZero();

      Message m1 = append(null);
      append(null);
      append("k");
      OutboxStats three = store.stats(now());
      assertThat(three.unsent()).isEqualTo(3);
      assertThat(three.oldestUnsentAge()).isEqualTo(Duration.between(m1.createdAt(), now()));

      List<OutboxRecord> claimed = claim("relay-a", 1);
      assertThat(store.stats(now()).unsent()).as("claimed rows are still unsent").isEqualTo(3);
      store.markSent("relay-a", List.of(claimed.get(0).sequence()), now());

      OutboxStats after = store.stats(now());
      assertThat(after.unsent()).isEqualTo(2);
      assertThat(after.sent()).isEqualTo(1);
      assertThat(after.oldestUnsentAge()).isLessThan(three.oldestUnsentAge());
    }

    @Test
    @DisplayName("a dead row leaves the outbox: not unsent, not sent, never claimed again")
    void deadLeaves() {
      append(null);
      OutboxRecord r = only(claim("relay-a", 10));

      assertThat(store.markDead("relay-a", r.sequence())).isTrue();
      assertThat(store.markDead("relay-a", r.sequence())).isFalse();

      OutboxStats s = store.stats(now());
      assertThat(s.unsent()).isZero();
      assertThat(s.sent()).isZero();
      advance(lease().plusMillis(1));
      assertThat(claim("relay-b", 10)).isEmpty();
    }

    @Test
    @DisplayName("purgeSent deletes rows sent before the cutoff and keeps later and unsent rows")
    void purgeByTime() {
      append(null);
      append(null);
      append(null);
      List<OutboxRecord> claimed = claim("relay-a", 3);
      Instant early = now();
      store.markSent("relay-a", List.of(claimed.get(0).sequence()), early);
      advance(Duration.ofMinutes(5));
      Instant late = now();
      store.markSent("relay-a", List.of(claimed.get(1).sequence()), late);

      assertThat(store.purgeSent(early)).as("strictly before the cutoff").isZero();
      assertThat(store.purgeSent(late)).isEqualTo(1);
      assertThat(store.stats(now()).sent()).isEqualTo(1);
      assertThat(store.stats(now()).unsent()).isEqualTo(1);
      assertThat(store.purgeSent(late.plusMillis(1))).isEqualTo(1);
      assertThat(store.stats(now()).sent()).isZero();
    }
  }

  @Nested
  @DisplayName("bounds under concurrent transactions")
  class BoundsUnderConcurrency {

    private OutboxStore bounded;

    private Message message(String key) {
      return Message.builder().id("bd-" + UUID.randomUUID()).type("order.paid").key(key)
          .payload("{}").createdAt(FakeClock.EPOCH).build();
    }

    /** Appends through a transaction held open until all threads appended; commits what took. */
    private List<Boolean> appendConcurrently(int threads) {
      java.util.concurrent.CyclicBarrier appended = new java.util.concurrent.CyclicBarrier(threads);
      return Race.run(threads, Duration.ofSeconds(60), i -> {
        Optional<OpenTransaction> tx = begin(bounded);
        boolean took;
        try {
          if (tx.isPresent()) {
            tx.get().append(destination, message(null));
          } else {
            appendTo(bounded, message(null));
          }
          took = true;
        } catch (io.relaykit.outbox.OutboxFullException e) {
          took = false;
        }
        try {
          appended.await(60, java.util.concurrent.TimeUnit.SECONDS);
        } catch (Exception e) {
          throw new AssertionError(e);
        }
        if (tx.isPresent()) {
          if (took) {
            tx.get().commit();
          } else {
            tx.get().rollback();
          }
        }
        return took;
      });
    }

    private void appendTo(OutboxStore s, Message m) {
      Optional<OpenTransaction> tx = begin(s);
      if (tx.isEmpty()) {
        appendCommitted(destination, m);
        return;
      }
      try {
        tx.get().append(destination, m);
      } catch (RuntimeException e) {
        tx.get().rollback();
        throw e;
      }
      tx.get().commit();
    }

    @Test
    @DisplayName("7 transactions appending at once to a REFUSE bound of 3: exactly 3 commit, 4 are"
        + " refused, and the backlog holds 3")
    void concurrentTransactionsKeepTheBound() {
      bounded = createStore(io.relaykit.outbox.OutboxBound.refuseAbove(3));
      List<Boolean> took = appendConcurrently(7);
      assertThat(took.stream().filter(t -> t).count()).as("appends that took: %s", took)
          .isEqualTo(3);
      assertThat(bounded.stats(now()).unsent()).isEqualTo(3);
      assertThat(bounded.refusedAppends()).isEqualTo(4);
    }

    @Test
    @DisplayName("a rolled-back append gives its room back: the next appends up to the bound take")
    void rollbackGivesRoomBack() {
      bounded = createStore(io.relaykit.outbox.OutboxBound.refuseAbove(2));
      Optional<OpenTransaction> tx = begin(bounded);
      org.junit.jupiter.api.Assumptions.assumeTrue(tx.isPresent(),
          "appends of this store are not transactional");
      tx.get().append(destination, message(null));
      tx.get().rollback();
      appendTo(bounded, message(null));
      appendTo(bounded, message("k"));
      assertThatThrownBy(() -> appendTo(bounded, message(null)))
          .isInstanceOf(io.relaykit.outbox.OutboxFullException.class);
      assertThat(bounded.stats(now()).unsent()).isEqualTo(2);
    }

    @Test
    @DisplayName("an open transaction keeps its room across recounts: with a bound of 2 and two"
        + " transactions open, a third append is refused however often the count is refreshed")
    void openTransactionsKeepTheirRoom() {
      bounded = createStore(io.relaykit.outbox.OutboxBound.refuseAbove(2));
      Optional<OpenTransaction> first = begin(bounded);
      org.junit.jupiter.api.Assumptions.assumeTrue(first.isPresent(),
          "appends of this store are not transactional");
      OpenTransaction second = begin(bounded).orElseThrow();
      try {
        first.get().append(destination, message(null));
        advance(Duration.ofSeconds(2));
        second.append(destination, message("k"));
        advance(Duration.ofSeconds(2));
        assertThatThrownBy(() -> appendTo(bounded, message(null)))
            .isInstanceOf(io.relaykit.outbox.OutboxFullException.class);
        advance(Duration.ofSeconds(2));
        assertThatThrownBy(() -> appendTo(bounded, message("other")))
            .isInstanceOf(io.relaykit.outbox.OutboxFullException.class);
        first.get().commit();
        second.commit();
      } finally {
        first.get().rollback();
        second.rollback();
      }
      assertThat(bounded.stats(now()).unsent()).isEqualTo(2);
    }

    @Test
    @DisplayName("rows sent give their room back: after the backlog was sent, appends take again")
    void sentRowsGiveRoomBack() {
      bounded = createStore(io.relaykit.outbox.OutboxBound.refuseAbove(2));
      appendTo(bounded, message(null));
      appendTo(bounded, message("k"));
      assertThatThrownBy(() -> appendTo(bounded, message(null)))
          .isInstanceOf(io.relaykit.outbox.OutboxFullException.class);
      List<Long> seqs = new ArrayList<>();
      for (OutboxRecord r : bounded.claim("r", 10, lease(), now())) {
        seqs.add(r.sequence());
      }
      assertThat(bounded.markSent("r", seqs, now())).isEqualTo(2);
      appendTo(bounded, message(null));
      appendTo(bounded, message("k"));
      assertThat(bounded.stats(now()).unsent()).isEqualTo(2);
    }
  }

  @Nested
  @DisplayName("key heads")
  class KeyHeads {

    @Test
    @DisplayName("300 keys whose rows went to dead letters (moveToDeadLetters, markDead) leave no"
        + " head for claims to walk; a live key's row is still claimed")
    void deadLetteredKeysLeaveNoHeads() {
      io.relaykit.deadletter.InMemoryDeadLetterStore dead =
          new io.relaykit.deadletter.InMemoryDeadLetterStore();
      for (int i = 0; i < 300; i++) {
        append("dead-" + i);
      }
      List<OutboxRecord> got = claim("r", 300);
      assertThat(got).hasSize(300);
      for (OutboxRecord r : got) {
        boolean moved = r.sequence() % 2 == 0
            ? store.moveToDeadLetters("r", r.sequence(), io.relaykit.deadletter.DeadLetter.of(
                r.message(), r.destination(), "gave up", null, 1, now(), now()), dead)
            : store.markDead("r", r.sequence());
        assertThat(moved).isTrue();
      }
      Message live = append("live");
      if (walkableKeyHeads() >= 0) {
        assertThat(walkableKeyHeads()).as("heads claims walk").isEqualTo(1);
      }
      assertThat(messageIds(claim("r", 10))).containsExactly(live.id());
    }

    @Test
    @DisplayName("an append that held a key's head while its previous row was sent, then rolled"
        + " back, leaves no head walked after the retention purge")
    void rolledBackAppendLeavesNoHead() {
      Optional<OpenTransaction> probe = begin(store);
      org.junit.jupiter.api.Assumptions.assumeTrue(probe.isPresent(),
          "appends of this store are not transactional");
      probe.get().rollback();
      append("k");
      OutboxRecord first = only(claim("r", 10));
      OpenTransaction tx = begin(store).orElseThrow();
      tx.append(destination, Message.builder().type("order.paid").key("k").payload("{}")
          .createdAt(FakeClock.EPOCH).build());
      assertThat(store.markSent("r", List.of(first.sequence()), now())).isEqualTo(1);
      tx.rollback();
      advance(Duration.ofDays(8));
      store.purgeSentOlderThan(Duration.ofDays(7), 100, now());
      if (walkableKeyHeads() >= 0) {
        assertThat(walkableKeyHeads()).as("heads claims walk").isZero();
      }
      assertThat(claim("r", 10)).isEmpty();
      Message next = append("k");
      assertThat(messageIds(claim("r", 10))).containsExactly(next.id());
    }
  }

  @Nested
  @DisplayName("concurrency")
  class Concurrency {

    @Test
    @DisplayName("4 relays claiming 2 000 rows concurrently never get the same row twice, and each"
        + " key's rows are sent in order")
    void concurrentClaimers() {
      int rows = 2_000;
      int keys = 40;
      for (int i = 0; i < rows; i++) {
        append(i % 2 == 0 ? null : "key-" + (i % keys));
      }
      Set<Long> everClaimed = ConcurrentHashMap.newKeySet();
      Map<String, List<Long>> sentByKey = new ConcurrentHashMap<>();
      List<Integer> perRelay = Race.run(4, Duration.ofSeconds(120), relay -> {
        String owner = "relay-" + relay;
        int mine = 0;
        int idle = 0;
        while (idle < 50) {
          List<OutboxRecord> got = store.claim(owner, 25, Duration.ofHours(1), now());
          if (got.isEmpty()) {
            idle++;
            Thread.onSpinWait();
            continue;
          }
          idle = 0;
          List<Long> seqs = new ArrayList<>();
          for (OutboxRecord r : got) {
            assertThat(everClaimed.add(r.sequence()))
                .as("row %d claimed twice", r.sequence()).isTrue();
            seqs.add(r.sequence());
            r.message().key().ifPresent(k -> sentByKey
                .computeIfAbsent(k, x -> Collections.synchronizedList(new ArrayList<>()))
                .add(r.sequence()));
          }
          assertThat(store.markSent(owner, seqs, now())).isEqualTo(seqs.size());
          mine += seqs.size();
        }
        return mine;
      });

      assertThat(perRelay.stream().mapToInt(Integer::intValue).sum()).isEqualTo(rows);
      assertThat(everClaimed).hasSize(rows);
      assertThat(store.stats(now()).unsent()).isZero();
      assertThat(store.stats(now()).sent()).isEqualTo(rows);
      assertThat(sentByKey).hasSize(keys / 2);
      for (Map.Entry<String, List<Long>> e : sentByKey.entrySet()) {
        assertThat(e.getValue()).as("sequences of %s in claim order", e.getKey()).isSorted();
        assertThat(new HashSet<>(e.getValue())).hasSameSizeAs(e.getValue());
      }
    }
  }

  @Nested
  @DisplayName("bad input")
  class BadInput {

    @Test
    @DisplayName("claim rejects a blank owner, max below 1, a non-positive lease and a null now,"
        + " naming the argument")
    void badClaim() {
      append(null);
      assertThatThrownBy(() -> store.claim(" ", 1, lease(), now()))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("owner");
      assertThatThrownBy(() -> store.claim(null, 1, lease(), now()))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("owner");
      assertThatThrownBy(() -> store.claim("relay-a", 0, lease(), now()))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("max");
      assertThatThrownBy(() -> store.claim("relay-a", 1, Duration.ZERO, now()))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lease");
      assertThatThrownBy(() -> store.claim("relay-a", 1, lease(), null))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("now");

      assertThat(claim("relay-a", 10)).as("nothing was claimed by the bad calls").hasSize(1);
    }

    @Test
    @DisplayName("markSent, reschedule and markDead reject a blank owner")
    void badOwner() {
      assertThatThrownBy(() -> store.markSent("", List.of(1L), now()))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("owner");
      assertThatThrownBy(() -> store.reschedule("", 1, 1, now(), now(), "e"))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("owner");
      assertThatThrownBy(() -> store.markDead(null, 1))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("owner");
    }

    @Test
    @DisplayName("reschedule rejects attempts below 1 and null times; markSent null sequences;"
        + " purgeSent and stats a null instant; the held row is untouched")
    void badArguments() {
      append(null);
      OutboxRecord r = only(claim("relay-a", 10));

      assertThatThrownBy(() -> store.reschedule("relay-a", r.sequence(), 0, now(), now(), "e"))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("attempts");
      assertThatThrownBy(() -> store.reschedule("relay-a", r.sequence(), 1, null, now(), "e"))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("failedAt");
      assertThatThrownBy(() -> store.reschedule("relay-a", r.sequence(), 1, now(), null, "e"))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("notBefore");
      assertThatThrownBy(() -> store.markSent("relay-a", null, now()))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("sequences");
      assertThatThrownBy(() -> store.purgeSent(null))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("sentBefore");
      assertThatThrownBy(() -> store.stats(null))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("now");

      assertThat(store.markSent("relay-a", List.of(r.sequence()), now())).isEqualTo(1);
    }

    @Test
    @DisplayName("renewLease and moveToDeadLetters reject a blank owner, null sequences, a"
        + " non-positive lease, a null now, a null dead letter or store; the held row is untouched")
    void badRenewAndMove() {
      append(null);
      OutboxRecord r = only(claim("relay-a", 10));
      List<Long> seqs = List.of(r.sequence());
      io.relaykit.deadletter.DeadLetterStore dead =
          new io.relaykit.deadletter.InMemoryDeadLetterStore();
      io.relaykit.deadletter.DeadLetter d = io.relaykit.deadletter.DeadLetter.of(r.message(),
          r.destination(), "gave up", null, 1, now(), now());

      assertThatThrownBy(() -> store.renewLease(" ", seqs, lease(), now()))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("owner");
      assertThatThrownBy(() -> store.renewLease("relay-a", null, lease(), now()))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("sequences");
      assertThatThrownBy(() -> store.renewLease("relay-a", seqs, Duration.ZERO, now()))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lease");
      assertThatThrownBy(() -> store.renewLease("relay-a", seqs, lease(), null))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("now");
      assertThatThrownBy(() -> store.moveToDeadLetters("", r.sequence(), d, dead))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("owner");
      assertThatThrownBy(() -> store.moveToDeadLetters("relay-a", r.sequence(), null, dead))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("deadLetter");
      assertThatThrownBy(() -> store.moveToDeadLetters("relay-a", r.sequence(), d, null))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("deadLetters");

      assertThat(dead.count(io.relaykit.deadletter.DeadLetterQuery.all())).isZero();
      assertThat(store.markSent("relay-a", seqs, now())).isEqualTo(1);
    }
  }

  @Nested
  @DisplayName("trace capture")
  class CapturesTrace {
    private final TraceContext callers = new TraceContext("4bf92f3577b34da6a3ce929d0e0e4736",
        "00f067aa0ba902b7", 1, "rojo=00f067aa0ba902b7");
    private final AtomicInteger asked = new AtomicInteger();

    /** A propagation whose current context is {@code current}, counting how often it is asked. */
    private TracePropagation returning(Optional<TraceContext> current) {
      return () -> {
        asked.incrementAndGet();
        return current;
      };
    }

    private Message plain() {
      return Message.builder().type("order.paid").key("order-9").payload("x").build();
    }

    @Test
    @DisplayName("a message without a context gets the caller's current one at the append")
    void capturedAtAppend() {
      store = createStore(returning(Optional.of(callers)));
      Message m = plain();
      appendCommitted(destination, m);

      OutboxRecord r = only(claim("relay-a", 10));

      assertThat(asked).hasValue(1);
      assertThat(r.message().id()).isEqualTo(m.id());
      assertThat(r.message().traceContext().context()).contains(callers);
      assertThat(r.message().traceId()).isEqualTo(callers.traceId());
      assertThat(r.message().headers()).containsEntry("traceparent", callers.traceparent())
          .containsEntry("tracestate", "rojo=00f067aa0ba902b7");
    }

    @Test
    @DisplayName("an explicit context on the message wins and the caller's is not asked for")
    void explicitWins() {
      store = createStore(returning(Optional.of(callers)));
      TraceContext explicit = TraceContext.of("0af7651916cd43dd8448eb211c80319c",
          "b7ad6b7169203331", false);
      appendCommitted(destination, plain().toBuilder().traceContext(explicit).build());

      OutboxRecord r = only(claim("relay-a", 10));

      assertThat(asked).hasValue(0);
      assertThat(r.message().traceContext().context()).contains(explicit);
      assertThat(r.message().traceId()).isEqualTo(explicit.traceId());
    }

    @Test
    @DisplayName("no current context leaves the message as it was built")
    void noCurrentContext() {
      store = createStore(returning(Optional.empty()));
      Message m = plain();
      appendCommitted(destination, m);

      OutboxRecord r = only(claim("relay-a", 10));

      assertThat(asked).hasValue(1);
      assertThat(r.message().headers()).doesNotContainKey("traceparent");
      assertThat(r.message().traceId()).isEqualTo(m.traceId());
    }

    @Test
    @DisplayName("a propagation that throws never fails the append: the row is stored without a"
        + " context")
    void throwingSourceNeverFailsAppend() {
      store = createStore(() -> {
        asked.incrementAndGet();
        throw new IllegalStateException("tracer broken");
      });
      Message m = plain();
      appendCommitted(destination, m);
      appendCommitted(destination, plain().toBuilder().key("order-10").build());

      List<OutboxRecord> rows = claim("relay-a", 10);

      assertThat(asked).hasValue(2);
      assertThat(rows).hasSize(2);
      assertThat(rows.get(0).message().id()).isEqualTo(m.id());
      assertThat(rows.get(0).message().headers()).doesNotContainKey("traceparent");
      assertThat(rows.get(0).message().traceId()).isEqualTo(m.traceId());
    }
  }

  @Nested
  @DisplayName("lost replies: every write committed, its reply dropped")
  class LostReplies {

    private LostReply<OutboxStore> seam() {
      return LostReply.over(OutboxStore.class, store);
    }

    private void dropAndCall(LostReply<OutboxStore> seam, String method, Runnable call) {
      seam.dropNextReplyOf(method);
      assertThatThrownBy(call::run).isInstanceOf(LostReply.LostReplyException.class);
      assertThat(seam.dropped()).isEqualTo(1);
    }

    @Test
    @DisplayName("claim: not done for the caller (it knows no rows); they come back to any relay"
        + " when the lease runs out: safe to retry after the lease, nothing lost")
    void claimLost() {
      LostReply<OutboxStore> seam = seam();
      Message m = append(null);

      dropAndCall(seam, "claim", () -> seam.store().claim("relay-a", 10, lease(), now()));

      assertThat(seam.store().claim("relay-a", 10, lease(), now())).isEmpty();
      advance(lease().plusMillis(1));
      assertThat(messageIds(claim("relay-b", 10))).containsExactly(m.id());
    }

    @Test
    @DisplayName("markSent: done; the repeat answers 0 and the row is sent, never handed out again")
    void markSent() {
      LostReply<OutboxStore> seam = seam();
      append("k");
      OutboxRecord r = only(claim("relay-a", 10));

      dropAndCall(seam, "markSent",
          () -> seam.store().markSent("relay-a", List.of(r.sequence()), now()));

      assertThat(seam.store().markSent("relay-a", List.of(r.sequence()), now())).isZero();
      assertThat(store.stats(now()).unsent()).isZero();
      advance(lease().plusMillis(1));
      assertThat(claim("relay-b", 10)).isEmpty();
    }

    @Test
    @DisplayName("reschedule: done; the repeat answers false and the row waits for its time, then"
        + " is claimed once")
    void reschedule() {
      LostReply<OutboxStore> seam = seam();
      Message m = append("k");
      OutboxRecord r = only(claim("relay-a", 10));

      dropAndCall(seam, "reschedule", () -> seam.store().reschedule("relay-a", r.sequence(), 1,
          now(), now().plusSeconds(5), "boom"));

      assertThat(seam.store().reschedule("relay-a", r.sequence(), 1, now(), now().plusSeconds(5),
          "boom")).isFalse();
      assertThat(claim("relay-b", 10)).isEmpty();
      advance(Duration.ofSeconds(6));
      assertThat(messageIds(claim("relay-b", 10))).containsExactly(m.id());
    }

    @Test
    @DisplayName("release: done; the repeat releases nothing and the row is claimable once")
    void release() {
      LostReply<OutboxStore> seam = seam();
      Message m = append("k");
      OutboxRecord r = only(store.claim("relay-a", 10, 2, lease(), now()));
      try {
        store.release("relay-a", List.of());
      } catch (UnsupportedOperationException e) {
        return; // a store without runs has no release: nothing to lose
      }

      dropAndCall(seam, "release", () -> seam.store().release("relay-a", List.of(r.sequence())));

      assertThat(seam.store().release("relay-a", List.of(r.sequence()))).isZero();
      assertThat(messageIds(claim("relay-b", 10))).containsExactly(m.id());
    }

    @Test
    @DisplayName("renewLease: unknown and safe to retry; the repeat renews the same rows")
    void renewLease() {
      LostReply<OutboxStore> seam = seam();
      append("k");
      OutboxRecord r = only(claim("relay-a", 10));

      dropAndCall(seam, "renewLease",
          () -> seam.store().renewLease("relay-a", List.of(r.sequence()), lease(), now()));

      assertThat(seam.store().renewLease("relay-a", List.of(r.sequence()), lease(), now()))
          .containsExactly(r.sequence());
    }

    @Test
    @DisplayName("markDead and moveToDeadLetters: done; the repeat answers false, the row is gone"
        + " and its dead letter stored once")
    void dead() {
      io.relaykit.deadletter.InMemoryDeadLetterStore dls =
          new io.relaykit.deadletter.InMemoryDeadLetterStore();
      LostReply<OutboxStore> seam = seam();
      append("k1");
      append("k2");
      List<OutboxRecord> rs = claim("relay-a", 10);
      OutboxRecord first = rs.get(0);
      OutboxRecord second = rs.get(1);
      io.relaykit.deadletter.DeadLetter d = io.relaykit.deadletter.DeadLetter.of(
          second.message(), second.destination(), "gave up", null, 1, now(), now());

      dropAndCall(seam, "markDead", () -> seam.store().markDead("relay-a", first.sequence()));
      assertThat(seam.store().markDead("relay-a", first.sequence())).isFalse();
      LostReply<OutboxStore> again = seam();
      dropAndCall(again, "moveToDeadLetters",
          () -> again.store().moveToDeadLetters("relay-a", second.sequence(), d, dls));
      assertThat(again.store().moveToDeadLetters("relay-a", second.sequence(), d, dls)).isFalse();

      assertThat(dls.find(d.id())).contains(d);
      assertThat(dls.count(io.relaykit.deadletter.DeadLetterQuery.all())).isEqualTo(1);
      assertThat(store.stats(now()).unsent()).isZero();
      advance(lease().plusMillis(1));
      assertThat(claim("relay-b", 10)).isEmpty();
    }

    @Test
    @DisplayName("purgeSent and purgeSentOlderThan: unknown and safe to retry; the repeat deletes"
        + " nothing more, unsent rows stay")
    void purge() {
      LostReply<OutboxStore> seam = seam();
      append(null);
      OutboxRecord r = only(claim("relay-a", 10));
      store.markSent("relay-a", List.of(r.sequence()), now());
      Message kept = append(null);
      advance(Duration.ofHours(2));

      dropAndCall(seam, "purgeSentOlderThan",
          () -> seam.store().purgeSentOlderThan(Duration.ofHours(1), 10, now()));
      assertThat(seam.store().purgeSentOlderThan(Duration.ofHours(1), 10, now())).isZero();
      LostReply<OutboxStore> again = seam();
      dropAndCall(again, "purgeSent", () -> again.store().purgeSent(now()));
      assertThat(again.store().purgeSent(now())).isZero();

      assertThat(store.stats(now()).sent()).isZero();
      assertThat(messageIds(claim("relay-b", 10))).containsExactly(kept.id());
    }

    @Test
    @DisplayName("append with a request id: a repeat after a lost reply returns the first row's"
        + " sequence and writes nothing; the same id with another payload is refused")
    void appendWithRequestIdCase() {
      if (!supportsRequestIds()) {
        assertThatThrownBy(() -> appendWithRequestId(destination, appendable("x"), "r-1"))
            .isInstanceOf(UnsupportedOperationException.class);
        return;
      }
      String id = "req-" + UUID.randomUUID();
      Message m = appendable("{\"n\":1}");
      long first = appendWithRequestId(destination, m, id);
      // The caller saw an error (its reply was lost) and retries, with a rebuilt message.
      Message rebuilt = Message.builder().type(m.type()).key(m.key().orElse(null))
          .payload(m.payload()).build();

      assertThat(appendWithRequestId(destination, rebuilt, id)).isEqualTo(first);
      assertThat(store.stats(now()).unsent()).isEqualTo(1);
      assertThatThrownBy(() -> appendWithRequestId(destination, appendable("{\"n\":2}"), id))
          .isInstanceOf(IllegalStateException.class).hasMessageContaining(id);
      assertThat(store.stats(now()).unsent()).isEqualTo(1);
      OutboxRecord r = only(claim("relay-a", 10));
      assertThat(r.message().id()).isEqualTo(m.id());
      store.markSent("relay-a", List.of(r.sequence()), now());
      assertThat(appendWithRequestId(destination, rebuilt, id))
          .as("a sent row still dedupes until retention purges it").isEqualTo(first);
      assertThat(store.stats(now()).unsent()).isZero();
    }

    private Message appendable(String payload) {
      return Message.builder().id("ob-" + UUID.randomUUID()).type("order.paid").key("k-req")
          .payload(payload).createdAt(FakeClock.EPOCH.minusSeconds(60)).build();
    }
  }
}
