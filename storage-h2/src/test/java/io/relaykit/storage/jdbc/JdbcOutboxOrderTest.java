package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.message.Message;
import io.relaykit.outbox.OutboxRecord;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.tck.Await;
import io.relaykit.tck.FakeClock;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Per-key order by commit order (an append locks its key's head row until the caller's
 * transaction ends), the order scope, and the key-head table under markSent, markDead and retry;
 * on H2 (memory and file) and PostgreSQL.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class JdbcOutboxOrderTest {
  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final Duration WAIT = Duration.ofSeconds(30);

  private final FakeClock clock = new FakeClock();
  private final List<TestDatabase> databases = new ArrayList<>();

  @BeforeAll
  void open(@TempDir Path tempDir) {
    for (TestDatabase.Kind kind : TestDatabase.Kind.values()) {
      databases.add(TestDatabase.open(kind, tempDir));
    }
  }

  @AfterAll
  void close() {
    databases.forEach(TestDatabase::close);
  }

  Stream<TestDatabase> databases() {
    return databases.stream();
  }

  private static Message message(String key, String body) {
    return Message.builder().type("order.event").key(key).payload(body).build();
  }

  private static void appendCommitted(JdbcStorage storage, JdbcOutboxStore outbox,
      String destination, Message m) {
    try (Connection c = storage.dataSource().getConnection()) {
      c.setAutoCommit(false);
      outbox.append(c, destination, m);
      c.commit();
    } catch (SQLException e) {
      throw new AssertionError(e);
    }
  }

  /**
   * Whether {@code thread} waits for a row lock of the head table right now: on PostgreSQL a
   * backend waits for a lock on a statement of the head table; on embedded H2 the thread itself
   * is parked inside H2's lock wait, or its session keeps retrying a statement on the head table.
   */
  private static boolean waitsForALock(TestDatabase db, Thread thread) {
    if (db.dialect() == Dialect.POSTGRESQL) {
      return db.count("SELECT COUNT(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
          + " AND datname = current_database() AND query LIKE '%outbox_head%'") > 0;
    }
    // H2 runs in the caller's thread and waits for a row's lock holder inside its transaction
    // maps (TransactionMap, Transaction.waitFor); this test has nothing else running there.
    // A lock wait may also park in H2's table code (MVTable) on a loaded machine: any H2 frame of
    // a parked thread counts (it has nothing else to wait for in H2).
    Thread.State state = thread.getState();
    boolean parked = state == Thread.State.WAITING || state == Thread.State.TIMED_WAITING;
    for (StackTraceElement e : thread.getStackTrace()) {
      if (e.getClassName().startsWith("org.h2.mvstore.tx.")
          || parked && e.getClassName().startsWith("org.h2.")) {
        return true;
      }
    }
    // The insert into the head table can also meet T1's uncommitted head row in the unique
    // index: H2 then retries the statement (Command's concurrent-update loop) until the lock
    // timeout, a running thread that no stack sample above recognises. Seen from the database:
    // another session has been executing a statement on the head table for over 200 ms, which a
    // one-row insert that does not wait never takes.
    return db.count("SELECT COUNT(*) FROM INFORMATION_SCHEMA.SESSIONS"
        + " WHERE SESSION_ID <> SESSION_ID() AND EXECUTING_STATEMENT LIKE '%outbox_head%'"
        + " AND EXECUTING_STATEMENT_START < CURRENT_TIMESTAMP - INTERVAL '0.2' SECOND") > 0;
  }

  private OutboxRelay relay(JdbcStorage storage, JdbcOutboxStore outbox,
      RecordingPublisher publisher) {
    return OutboxRelay.builder(outbox, publisher, storage.deadLetterStore())
        .clock(clock).owner("relay").batchSize(10).lease(LEASE)
        .confirmTimeout(Duration.ofSeconds(5)).build();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("T1 appends K first, T2 appends K second and commits first: T2 waits for T1's"
      + " commit, and 'first' is published before 'second'")
  void orderFollowsCommitOrder(TestDatabase db) throws Exception {
    JdbcStorage storage = db.storage(clock);
    JdbcOutboxStore outbox = storage.outboxStore();
    RecordingPublisher publisher = new RecordingPublisher();
    OutboxRelay relay = relay(storage, outbox, publisher);
    CompletableFuture<Long> second = new CompletableFuture<>();
    Thread t2Thread;
    try (Connection t1 = storage.dataSource().getConnection()) {
      t1.setAutoCommit(false);
      outbox.append(t1, "orders", message("K", "first"));
      t2Thread = new Thread(() -> {
        try (Connection t2 = storage.dataSource().getConnection()) {
          t2.setAutoCommit(false);
          long seq = outbox.append(t2, "orders", message("K", "second"));
          t2.commit();
          second.complete(seq);
        } catch (SQLException | RuntimeException e) {
          second.completeExceptionally(e);
        }
      }, "T2");
      t2Thread.start();
      try {
        Await.until(WAIT, "T2's append waits for the lock T1 holds on key K",
            () -> waitsForALock(db, t2Thread));
      } catch (AssertionError e) {
        throw new AssertionError(e.getMessage() + "; T2 is " + t2Thread.getState() + " at "
            + java.util.Arrays.toString(t2Thread.getStackTrace()) + ", done: " + second, e);
      }
      assertThat(second).isNotDone();
      // Nothing of K is visible yet: T1 has not committed, T2 has not written.
      assertThat(relay.runOnce().claimed()).isZero();
      t1.commit();
    }
    second.get(30, TimeUnit.SECONDS);
    while (relay.runOnce().claimed() > 0) {
      // drain
    }
    assertThat(publisher.publishedPayloads()).containsExactly("first", "second");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("appends of different keys do not wait for each other")
  void otherKeysDoNotWait(TestDatabase db) throws Exception {
    JdbcStorage storage = db.storage(clock);
    JdbcOutboxStore outbox = storage.outboxStore();
    try (Connection t1 = storage.dataSource().getConnection()) {
      t1.setAutoCommit(false);
      outbox.append(t1, "orders", message("K", "held"));
      CompletableFuture.runAsync(() -> appendCommitted(storage, outbox, "orders",
          message("L", "free"))).get(30, TimeUnit.SECONDS);
      CompletableFuture.runAsync(() -> appendCommitted(storage, outbox, "orders",
          message(null, "unkeyed"))).get(30, TimeUnit.SECONDS);
      List<OutboxRecord> got = outbox.claim("r", 10, LEASE, clock.instant());
      assertThat(got).extracting(r -> r.message().payloadUtf8())
          .containsExactly("free", "unkeyed");
      t1.rollback();
    }
    assertThat(outbox.claim("r2", 10, LEASE, clock.instant())).isEmpty();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("an append on an auto-commit connection is its own transaction and keeps the lock"
      + " to its commit")
  void autoCommitAppend(TestDatabase db) throws Exception {
    JdbcStorage storage = db.storage(clock);
    JdbcOutboxStore outbox = storage.outboxStore();
    try (Connection c = storage.dataSource().getConnection()) {
      c.setAutoCommit(true);
      outbox.append(c, "orders", message("K", "one"));
      outbox.append(c, "orders", message("K", "two"));
      assertThat(c.getAutoCommit()).isTrue();
    }
    OutboxRecord first = outbox.claim("r", 10, LEASE, clock.instant()).get(0);
    assertThat(first.message().payloadUtf8()).isEqualTo("one");
    assertThat(outbox.markSent("r", List.of(first.sequence()), clock.instant())).isEqualTo(1);
    assertThat(outbox.claim("r", 10, LEASE, clock.instant())).extracting(
        r -> r.message().payloadUtf8()).containsExactly("two");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("scope KEY: a failing audit row of key o-1 parks o-1's order row too")
  void keyScopeSpansDestinations(TestDatabase db) {
    JdbcStorage storage = db.storage(clock);
    JdbcOutboxStore outbox = storage.outboxStore(OutboxOrderScope.KEY);
    appendCommitted(storage, outbox, "audit", message("o-1", "audit-1"));
    appendCommitted(storage, outbox, "orders", message("o-1", "order-1"));
    OutboxRecord audit = only(outbox.claim("r", 10, LEASE, clock.instant()));
    assertThat(audit.message().payloadUtf8()).isEqualTo("audit-1");
    assertThat(outbox.reschedule("r", audit.sequence(), 1, clock.instant(),
        clock.instant().plusSeconds(60), "audit down")).isTrue();
    assertThat(outbox.claim("r", 10, LEASE, clock.instant())).isEmpty();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("scope KEY_PER_DESTINATION: a failing audit row parks only o-1's later audit rows,"
      + " o-1's order rows go out in order")
  void perDestinationScope(TestDatabase db) {
    JdbcStorage storage = db.storage(clock);
    JdbcOutboxStore outbox = storage.outboxStore(OutboxOrderScope.KEY_PER_DESTINATION);
    appendCommitted(storage, outbox, "audit", message("o-1", "audit-1"));
    appendCommitted(storage, outbox, "orders", message("o-1", "order-1"));
    appendCommitted(storage, outbox, "audit", message("o-1", "audit-2"));
    appendCommitted(storage, outbox, "orders", message("o-1", "order-2"));
    List<OutboxRecord> first = outbox.claim("r", 10, LEASE, clock.instant());
    assertThat(first).extracting(r -> r.message().payloadUtf8())
        .containsExactly("audit-1", "order-1");
    assertThat(outbox.reschedule("r", first.get(0).sequence(), 1, clock.instant(),
        clock.instant().plusSeconds(60), "audit down")).isTrue();
    assertThat(outbox.markSent("r", List.of(first.get(1).sequence()), clock.instant()))
        .isEqualTo(1);
    assertThat(outbox.claim("r", 10, LEASE, clock.instant()))
        .extracting(r -> r.message().payloadUtf8()).containsExactly("order-2");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("the key-head table follows markSent, retry and markDead, and idle heads are"
      + " purged")
  void headTable(TestDatabase db) {
    JdbcStorage storage = db.storage(clock);
    JdbcOutboxStore outbox = storage.outboxStore();
    String heads = storage.tablePrefix() + "outbox_head";
    long[] a = new long[3];
    for (int i = 0; i < 3; i++) {
      appendCommitted(storage, outbox, "orders", message("A", "a" + i));
    }
    appendCommitted(storage, outbox, "orders", message("B", "b0"));
    Map<String, Long> h = heads(db, heads);
    List<OutboxRecord> claimed = outbox.claim("r", 10, LEASE, clock.instant());
    assertThat(claimed).extracting(r -> r.message().payloadUtf8()).containsExactly("a0", "b0");
    a[0] = claimed.get(0).sequence();
    long b0 = claimed.get(1).sequence();
    assertThat(h).containsEntry("A", a[0]).containsEntry("B", b0);

    // markSent moves A's head to its next row and leaves B's head empty.
    assertThat(outbox.markSent("r", List.of(a[0], b0), clock.instant())).isEqualTo(2);
    h = heads(db, heads);
    assertThat(h.get("A")).isGreaterThan(a[0]);
    assertThat(h).containsEntry("B", null);
    a[1] = h.get("A");

    // A retry keeps the head where it is and parks the key.
    OutboxRecord a1 = only(outbox.claim("r", 10, LEASE, clock.instant()));
    assertThat(a1.sequence()).isEqualTo(a[1]);
    assertThat(outbox.reschedule("r", a1.sequence(), 1, clock.instant(),
        clock.instant().plusSeconds(10), "down")).isTrue();
    assertThat(heads(db, heads)).containsEntry("A", a[1]);
    assertThat(outbox.claim("r", 10, LEASE, clock.instant())).isEmpty();
    clock.advance(Duration.ofSeconds(10));

    // markDead moves the head on as markSent does.
    OutboxRecord again = only(outbox.claim("r", 10, LEASE, clock.instant()));
    assertThat(again.sequence()).isEqualTo(a[1]);
    assertThat(outbox.markDead("r", again.sequence())).isTrue();
    h = heads(db, heads);
    assertThat(h.get("A")).isGreaterThan(a[1]);
    OutboxRecord a2 = only(outbox.claim("r", 10, LEASE, clock.instant()));
    assertThat(a2.message().payloadUtf8()).isEqualTo("a2");
    assertThat(outbox.markSent("r", List.of(a2.sequence()), clock.instant())).isEqualTo(1);
    assertThat(heads(db, heads)).containsEntry("A", null).containsEntry("B", null);

    // A key that comes back gets its head again; the purge removes only idle heads.
    appendCommitted(storage, outbox, "orders", message("B", "b1"));
    outbox.purgeSentOlderThan(Duration.ofDays(365), 1_000, clock.instant());
    h = heads(db, heads);
    assertThat(h).containsOnlyKeys("B");
    assertThat(only(outbox.claim("r", 10, LEASE, clock.instant())).message().payloadUtf8())
        .isEqualTo("b1");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("a head left behind (an append held it while the relay moved on) still yields the"
      + " key's lowest unsent row")
  void staleHeadIsALowerBound(TestDatabase db) throws SQLException {
    JdbcStorage storage = db.storage(clock);
    JdbcOutboxStore outbox = storage.outboxStore();
    String heads = storage.tablePrefix() + "outbox_head";
    for (int i = 0; i < 3; i++) {
      appendCommitted(storage, outbox, "orders", message("A", "a" + i));
    }
    OutboxRecord a0 = only(outbox.claim("r", 10, LEASE, clock.instant()));
    try (Connection t = storage.dataSource().getConnection()) {
      t.setAutoCommit(false);
      // A business transaction holds A's head while the relay marks a0 sent: the relay skips it.
      try (PreparedStatement ps = t.prepareStatement("SELECT head_seq FROM " + heads
          + " WHERE msg_key = 'A' FOR UPDATE")) {
        ps.executeQuery().close();
      }
      assertThat(outbox.markSent("r", List.of(a0.sequence()), clock.instant())).isEqualTo(1);
      t.rollback();
    }
    assertThat(heads(db, heads)).containsEntry("A", a0.sequence());
    OutboxRecord a1 = only(outbox.claim("r", 10, LEASE, clock.instant()));
    assertThat(a1.message().payloadUtf8()).isEqualTo("a1");
    assertThat(outbox.markSent("r", List.of(a1.sequence()), clock.instant())).isEqualTo(1);
    assertThat(heads(db, heads).get("A")).isGreaterThan(a1.sequence());
  }

  private static OutboxRecord only(List<OutboxRecord> records) {
    assertThat(records).hasSize(1);
    return records.get(0);
  }

  private static Map<String, Long> heads(TestDatabase db, String table) {
    Map<String, Long> out = new LinkedHashMap<>();
    try (Connection c = db.connection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT msg_key, head_seq FROM " + table
            + " ORDER BY msg_key")) {
      while (rs.next()) {
        String key = rs.getString(1);
        long v = rs.getLong(2);
        out.put(key, rs.wasNull() ? null : v);
      }
    } catch (SQLException e) {
      throw new AssertionError(e);
    }
    return out;
  }
}
