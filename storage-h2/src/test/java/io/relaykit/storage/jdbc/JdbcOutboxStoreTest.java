package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.message.Message;
import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleEvent.Stage;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.monitor.LifecycleLog;
import io.relaykit.outbox.OutboxRecord;
import io.relaykit.outbox.OutboxStats;
import io.relaykit.queue.Priority;
import io.relaykit.tck.Await;
import io.relaykit.tck.FakeClock;
import io.relaykit.trace.TraceContext;
import java.nio.file.Path;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** The JDBC outbox's own guarantees, on H2 (memory and file) and PostgreSQL. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class JdbcOutboxStoreTest {
  private static final Duration LEASE = Duration.ofSeconds(30);

  private final List<TestDatabase> databases = new ArrayList<>();
  private FakeClock clock;

  @BeforeEach
  void newClock() {
    clock = new FakeClock();
  }

  @BeforeAll
  void openDatabases(@TempDir Path tempDir) {
    for (TestDatabase.Kind kind : TestDatabase.Kind.values()) {
      databases.add(TestDatabase.open(kind, tempDir));
    }
  }

  @AfterAll
  void closeDatabases() {
    databases.forEach(TestDatabase::close);
  }

  Stream<TestDatabase> databases() {
    return databases.stream();
  }

  private static Message message(String key, String body) {
    return Message.builder().type("order.placed").key(key).payload(body)
        .createdAt(FakeClock.EPOCH).build();
  }

  private static long append(JdbcStorage storage, String destination, Message m) {
    try (Connection c = storage.dataSource().getConnection()) {
      c.setAutoCommit(false);
      long seq = storage.outboxStore().append(c, destination, m);
      c.commit();
      return seq;
    } catch (SQLException e) {
      throw new AssertionError(e);
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("moveToDeadLetters is one transaction with the dead-letter table: when the upsert"
      + " fails, the row's DELETE rolls back, the row stays held and no dead letter exists")
  void moveToDeadLettersIsAtomic(TestDatabase db) throws SQLException {
    JdbcStorage storage = db.storage(clock);
    String p = storage.tablePrefix();
    JdbcOutboxStore outbox = storage.outboxStore();
    JdbcDeadLetterStore dead = storage.deadLetterStore();
    long seq = append(storage, "orders", message("a", "m"));
    OutboxRecord r = outbox.claim("relay-a", 10, LEASE, clock.instant()).get(0);
    io.relaykit.deadletter.DeadLetter d = io.relaykit.deadletter.DeadLetter.of(r.message(),
        "orders", "gave up", null, 1, clock.instant(), clock.instant());
    try (Connection c = db.connection(); Statement s = c.createStatement()) {
      s.execute("ALTER TABLE " + p + "dead_letter RENAME TO " + p + "dead_letter_gone");
    }
    try {
      assertThatThrownBy(() -> outbox.moveToDeadLetters("relay-a", seq, d, dead))
          .isInstanceOf(JdbcStorageException.class).hasMessageContaining("moveToDeadLetters");
    } finally {
      try (Connection c = db.connection(); Statement s = c.createStatement()) {
        s.execute("ALTER TABLE " + p + "dead_letter_gone RENAME TO " + p + "dead_letter");
      }
    }
    assertThat(dead.count(io.relaykit.deadletter.DeadLetterQuery.all())).isZero();
    assertThat(outbox.stats(clock.instant()).unsent()).isEqualTo(1);
    assertThat(outbox.claim("relay-b", 10, LEASE, clock.instant())).as("still held").isEmpty();
    assertThat(outbox.moveToDeadLetters("relay-a", seq, d, dead)).isTrue();
    assertThat(dead.find(d.id())).isPresent();
    assertThat(outbox.stats(clock.instant()).unsent()).isZero();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("append commits and rolls back with the caller's business transaction")
  void appendFollowsCallerTransaction(TestDatabase db) throws SQLException {
    JdbcStorage storage = db.storage(clock);
    String orders = storage.tablePrefix() + "orders";
    try (Connection c = db.connection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE " + orders + " (id VARCHAR(20) PRIMARY KEY)");
    }
    JdbcOutboxStore outbox = storage.outboxStore();
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      c.createStatement().execute("INSERT INTO " + orders + " VALUES ('o-1')");
      outbox.append(c, "orders", message("o-1", "rolled back"));
      c.rollback();
      c.createStatement().execute("INSERT INTO " + orders + " VALUES ('o-2')");
      outbox.append(c, "orders", message("o-2", "committed"));
      c.commit();
    }
    assertThat(db.count("SELECT COUNT(*) FROM " + orders)).isEqualTo(1);
    assertThat(db.count("SELECT COUNT(*) FROM " + storage.tablePrefix() + "outbox")).isEqualTo(1);
    List<OutboxRecord> claimed = outbox.claim("relay-a", 10, LEASE, clock.instant());
    assertThat(claimed).extracting(r -> r.message().payloadUtf8()).containsExactly("committed");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("a claimed message round-trips every envelope field")
  void envelopeRoundTrips(TestDatabase db) {
    JdbcStorage storage = db.storage(clock);
    Message m = Message.builder().id("m-1").type("order.placed").schemaVersion(3).key("k:1")
        .payload(new byte[] {0, 1, 2, (byte) 255}).header("tenant", "a:b:7:").header("x", "")
        .createdAt(Instant.parse("2026-01-01T00:00:00.123456789Z"))
        .expiresAt(Instant.parse("2026-02-01T00:00:00Z")).priority(Priority.CRITICAL)
        .traceId("0af7651916cd43dd8448eb211c80319c").build();
    long seq = append(storage, "orders", m);
    List<OutboxRecord> claimed = storage.outboxStore().claim("r", 5, LEASE, clock.instant());
    assertThat(claimed).hasSize(1);
    OutboxRecord r = claimed.get(0);
    assertThat(r.message()).isEqualTo(m);
    assertThat(r.sequence()).isEqualTo(seq);
    assertThat(r.destination()).isEqualTo("orders");
    assertThat(r.attempts()).isZero();
    assertThat(r.firstFailureAt()).isNull();
    assertThat(r.leaseOwner()).isEqualTo("r");
    assertThat(r.leaseExpiresAt()).isEqualTo(clock.instant().plus(LEASE));
  }

  /** Writes an outbox row around {@code append}, as a broken writer or a bad migration would. */
  static long insertRaw(TestDatabase db, String prefix, String messageId, String key,
      String headers, byte[] payload) {
    try (Connection c = db.connection(); PreparedStatement ps = c.prepareStatement("INSERT INTO "
        + prefix + "outbox (destination, message_id, msg_key, headers, payload, created_at,"
        + " state, ready_at, attempts) VALUES ('orders', ?, ?, ?, ?, 0, 0, 0, 0)",
        Statement.RETURN_GENERATED_KEYS)) {
      ps.setString(1, messageId);
      ps.setString(2, key);
      ps.setString(3, headers);
      ps.setBytes(4, payload);
      ps.executeUpdate();
      long seq;
      try (ResultSet keys = ps.getGeneratedKeys()) {
        keys.next();
        seq = keys.getLong(1);
      }
      if (key != null) {
        // As append does: a keyed row is claimed through its key's head.
        try (PreparedStatement head = c.prepareStatement("INSERT INTO " + prefix
            + "outbox_head (msg_key, order_dest, head_seq) VALUES (?, '', ?)")) {
          head.setString(1, key);
          head.setLong(2, seq);
          head.executeUpdate();
        }
      }
      return seq;
    } catch (SQLException e) {
      throw new AssertionError(e);
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("a claim hands out the good rows and moves undecodable ones to dead letters with"
      + " the reason")
  void undecodableRowsAreDeadLettered(TestDatabase db) throws SQLException {
    JdbcStorage storage = db.storage(clock);
    String p = storage.tablePrefix();
    JdbcOutboxStore outbox = storage.outboxStore();
    long good1 = append(storage, "orders", message("a", "good-1"));
    byte[] body = "raw body".getBytes(StandardCharsets.UTF_8);
    long corrupt = insertRaw(db, p, "bad-corrupt", "c", "12:relaykit-id", body);
    long missingType = insertRaw(db, p, "bad-missing", null, "11:relaykit-id3:x-1", body);
    long notANumber = insertRaw(db, p, " ", null, "ab:cd", new byte[0]);
    long good2 = append(storage, "orders", message("b", "good-2"));

    List<OutboxRecord> claimed = outbox.claim("r", 10, LEASE, clock.instant());

    assertThat(claimed).extracting(OutboxRecord::sequence).containsExactly(good1, good2);
    assertThat(db.count("SELECT COUNT(*) FROM " + p + "outbox")).isEqualTo(2);
    assertThat(db.count("SELECT COUNT(*) FROM " + p + "outbox WHERE lease_owner = 'r'"))
        .isEqualTo(2);
    assertThat(db.count("SELECT COUNT(*) FROM " + p + "dead_letter")).isEqualTo(3);
    assertThat(reason(db, p, "bad-corrupt")).startsWith("undecodable outbox row seq " + corrupt)
        .contains("corrupt envelope column at offset 0: length 12 runs past the end");
    assertThat(reason(db, p, "bad-missing")).startsWith("undecodable outbox row seq "
        + missingType).contains("missing header relaykit-type");
    assertThat(reason(db, p, "outbox-row-" + notANumber)).startsWith(
        "undecodable outbox row seq " + notANumber).contains("length 'ab' is not a number");

    DeadLetter d = storage.deadLetterStore()
        .list(DeadLetterQuery.all().withMessageId("bad-corrupt"))
        .stream().findFirst().orElseThrow();
    assertThat(d.source()).isEqualTo("orders");
    assertThat(d.attempts()).isZero();
    assertThat(d.lastFailureAt()).isEqualTo(clock.instant());
    assertThat(d.exceptionClass()).isEqualTo("io.relaykit.message.MalformedMessageException");
    assertThat(d.message().type()).isEqualTo(JdbcOutboxStore.UNDECODABLE_TYPE);
    assertThat(d.message().key()).contains("c");
    assertThat(d.message().payload()).isEqualTo(body);
    assertThat(d.message().headers())
        .containsEntry(JdbcOutboxStore.RAW_ENVELOPE_HEADER, "12:relaykit-id");

    // They are gone for good: the next claims see only the next good row.
    long good3 = append(storage, "orders", message(null, "good-3"));
    assertThat(outbox.claim("r", 10, LEASE, clock.instant())).extracting(OutboxRecord::sequence)
        .containsExactly(good3);
    assertThat(db.count("SELECT COUNT(*) FROM " + p + "dead_letter")).isEqualTo(3);
  }

  private static String reason(TestDatabase db, String prefix, String id) throws SQLException {
    try (Connection c = db.connection(); PreparedStatement ps = c.prepareStatement(
        "SELECT reason FROM " + prefix + "dead_letter WHERE message_id = ?")) {
      ps.setString(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        assertThat(rs.next()).as("dead letter %s", id).isTrue();
        return rs.getString(1);
      }
    }
  }

  @ParameterizedTest
  @MethodSource("databases")
  @DisplayName("appendAll captures the caller's trace context for each message without one, keeps"
      + " an explicit one, and a throwing propagation fails nothing")
  void appendAllCapturesTrace(TestDatabase db) throws SQLException {
    TraceContext callers = TraceContext.of("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7",
        true);
    TraceContext explicit = TraceContext.of("0af7651916cd43dd8448eb211c80319c",
        "b7ad6b7169203331", false);
    JdbcStorage storage = JdbcStorage.open(db.dataSource(), db.dialect(), TestDatabase.newPrefix(),
        Duration.ofDays(7), clock, DatabaseClock.of(clock), LifecycleListener.noop(), true);
    JdbcOutboxStore outbox = storage.outboxStore()
        .withTracePropagation(() -> Optional.of(callers));
    JdbcOutboxStore broken = storage.outboxStore().withTracePropagation(() -> {
      throw new IllegalStateException("tracer broken");
    });
    Message plain = message("a", "plain");
    Message traced = message("b", "traced").toBuilder().traceContext(explicit).build();
    Message untraced = message(null, "untraced");
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      outbox.appendAll(c, "orders", List.of(plain, traced));
      broken.appendAll(c, "orders", List.of(untraced));
      c.commit();
    }

    List<OutboxRecord> rows = outbox.claim("r", 10, LEASE, clock.instant());

    assertThat(rows).extracting(r -> r.message().id())
        .containsExactly(plain.id(), traced.id(), untraced.id());
    assertThat(rows.get(0).message().traceContext().context()).contains(callers);
    assertThat(rows.get(0).message().traceId()).isEqualTo(callers.traceId());
    assertThat(rows.get(1).message().traceContext().context()).contains(explicit);
    assertThat(rows.get(2).message().headers()).doesNotContainKey("traceparent");
    assertThat(outbox.traceCapture().captured()).isEqualTo(1);
    assertThat(broken.traceCapture().failures()).isEqualTo(1);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("append reports ENQUEUED with id, trace id and destination once the row is written;"
      + " a claim reports an undecodable row as DEAD_LETTERED")
  void lifecycleEvents(TestDatabase db) throws SQLException {
    LifecycleLog log = new LifecycleLog(100);
    JdbcStorage storage = JdbcStorage.open(db.dataSource(), db.dialect(), TestDatabase.newPrefix(),
        Duration.ofDays(7), clock, DatabaseClock.of(clock), log, true);
    JdbcOutboxStore outbox = storage.outboxStore();
    Message one = message("a", "one");
    Message two = message("b", "two");
    Message three = message(null, "three");
    long seq;
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      seq = outbox.append(c, "orders", one);
      assertThat(log.history(one.id())).as("reported before the commit").hasSize(1);
      outbox.appendAll(c, "invoices", List.of(two, three));
      assertThatThrownBy(() -> outbox.append(c, " ", message("c", "refused")))
          .isInstanceOf(IllegalArgumentException.class);
      c.commit();
    }
    assertThat(log.all()).extracting(LifecycleEvent::stage, LifecycleEvent::messageId,
        LifecycleEvent::traceId, LifecycleEvent::where).containsExactly(
            tuple(Stage.ENQUEUED, one.id(), one.traceId(), "orders"),
            tuple(Stage.ENQUEUED, two.id(), two.traceId(), "invoices"),
            tuple(Stage.ENQUEUED, three.id(), three.traceId(), "invoices"));
    LifecycleEvent first = log.history(one.id()).get(0);
    assertThat(first.at()).isEqualTo(clock.instant());
    assertThat(first.detail()).contains("seq " + seq).contains("caller's transaction");

    long bad = insertRaw(db, storage.tablePrefix(), "bad-1", null, "garbage", new byte[] {1});
    outbox.claim("r", 10, LEASE, clock.instant());
    assertThat(log.history("bad-1")).singleElement().satisfies(e -> {
      assertThat(e.stage()).isEqualTo(Stage.DEAD_LETTERED);
      assertThat(e.where()).isEqualTo("orders");
      assertThat(e.detail()).startsWith("undecodable outbox row seq " + bad);
    });
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("a key's next message is claimable only after the previous one is sent")
  void perKeyHead(TestDatabase db) {
    JdbcStorage storage = db.storage(clock);
    JdbcOutboxStore outbox = storage.outboxStore();
    append(storage, "d", message("a", "a1"));
    append(storage, "d", message("a", "a2"));
    append(storage, "d", message("b", "b1"));
    append(storage, "d", message(null, "n1"));
    append(storage, "d", message(null, "n2"));
    List<OutboxRecord> first = outbox.claim("r1", 10, LEASE, clock.instant());
    assertThat(first).extracting(r -> r.message().payloadUtf8())
        .containsExactly("a1", "b1", "n1", "n2");
    assertThat(outbox.claim("r2", 10, LEASE, clock.instant())).isEmpty();
    assertThat(outbox.markSent("r1", List.of(first.get(0).sequence()), clock.instant()))
        .isEqualTo(1);
    assertThat(outbox.claim("r2", 10, LEASE, clock.instant()))
        .extracting(r -> r.message().payloadUtf8()).containsExactly("a2");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("a rescheduled head parks its key until its time while other keys flow")
  void rescheduleParksKey(TestDatabase db) {
    JdbcStorage storage = db.storage(clock);
    JdbcOutboxStore outbox = storage.outboxStore();
    long a1 = append(storage, "d", message("a", "a1"));
    append(storage, "d", message("a", "a2"));
    append(storage, "d", message("b", "b1"));
    outbox.claim("r", 1, LEASE, clock.instant());
    Instant failedAt = clock.instant();
    assertThat(outbox.reschedule("r", a1, 1, failedAt, failedAt.plusSeconds(10), "boom"))
        .isTrue();
    assertThat(outbox.claim("r", 10, LEASE, clock.instant()))
        .extracting(r -> r.message().payloadUtf8()).containsExactly("b1");
    clock.advance(Duration.ofSeconds(10));
    List<OutboxRecord> retry = outbox.claim("r", 10, LEASE, clock.instant());
    assertThat(retry).extracting(r -> r.message().payloadUtf8()).containsExactly("a1");
    assertThat(retry.get(0).attempts()).isEqualTo(1);
    assertThat(retry.get(0).firstFailureAt()).isEqualTo(failedAt);
    // A later failure keeps the first failure time.
    assertThat(outbox.reschedule("r", a1, 2, clock.instant(), clock.instant(), "again")).isTrue();
    assertThat(outbox.claim("r", 10, LEASE, clock.instant()).get(0).firstFailureAt())
        .isEqualTo(failedAt);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("an expired lease is taken over, and the old owner can no longer mark the row")
  void leaseTakeover(TestDatabase db) {
    JdbcStorage storage = db.storage(clock);
    JdbcOutboxStore outbox = storage.outboxStore();
    long seq = append(storage, "d", message("a", "a1"));
    assertThat(outbox.claim("crashed", 10, LEASE, clock.instant())).hasSize(1);
    clock.advance(LEASE.minusMillis(1));
    assertThat(outbox.claim("r2", 10, LEASE, clock.instant())).isEmpty();
    clock.advance(Duration.ofMillis(1));
    assertThat(outbox.claim("r2", 10, LEASE, clock.instant())).hasSize(1);
    assertThat(outbox.markSent("crashed", List.of(seq), clock.instant())).isZero();
    assertThat(outbox.reschedule("crashed", seq, 1, clock.instant(), clock.instant(), "x"))
        .isFalse();
    assertThat(outbox.markDead("crashed", seq)).isFalse();
    assertThat(outbox.markSent("r2", List.of(seq), clock.instant())).isEqualTo(1);
    assertThat(outbox.stats(clock.instant())).isEqualTo(new OutboxStats(0, Duration.ZERO, 1));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("on the database server's clock, relays whose hosts run 31 s fast or 8 days fast"
      + " neither take a fresh lease nor purge fresh sent rows; lease ends are the database's")
  void decidesOnTheDatabaseServersClock(TestDatabase db) throws SQLException {
    JdbcStorage storage = db.storageOnDatabaseClock(TestDatabase.newPrefix(), Duration.ofDays(7),
        clock);
    JdbcOutboxStore outbox = storage.outboxStore();
    append(storage, "orders", message("k", "one"));
    append(storage, "orders", message(null, "two"));
    Instant fast = Instant.now().plusSeconds(31);
    Instant serverBefore;
    try (Connection c = db.connection()) {
      serverBefore = storage.databaseClock().now(c, db.dialect());
    }

    List<OutboxRecord> mine = outbox.claim("relay-a", 10, LEASE, FakeClock.EPOCH);
    assertThat(mine).hasSize(2);
    assertThat(mine.get(0).leaseExpiresAt()).as("the database's now + lease, not the caller's")
        .isAfterOrEqualTo(serverBefore.plus(LEASE));
    assertThat(outbox.claim("relay-b", 10, LEASE, fast)).isEmpty();

    assertThat(outbox.markSent("relay-a", List.of(mine.get(0).sequence(),
        mine.get(1).sequence()), FakeClock.EPOCH)).isEqualTo(2);
    assertThat(outbox.purgeSentOlderThan(Duration.ofDays(7), 100,
        Instant.now().plus(Duration.ofDays(8)))).as("purged by a host 8 days fast").isZero();
    assertThat(outbox.purgeSentOlderThan(Duration.ofDays(7), 100, FakeClock.EPOCH))
        .as("sent at the database's time, not at the caller's 2026-01-01").isZero();
    assertThat(outbox.stats(Instant.now()).sent()).isEqualTo(2);
    // Retention zero purges rows sent strictly before the database's now: wait until the server's
    // clock has moved past the markSent above (same millisecond on a fast machine).
    Instant sentBy = serverNow(storage, db);
    Await.until(Duration.ofSeconds(10), "the database clock to pass the markSent",
        () -> serverNow(storage, db).isAfter(sentBy));
    assertThat(outbox.purgeSentOlderThan(Duration.ZERO, 100, FakeClock.EPOCH)).isEqualTo(2);
  }

  private static Instant serverNow(JdbcStorage storage, TestDatabase db) {
    try (Connection c = db.connection()) {
      return storage.databaseClock().now(c, db.dialect());
    } catch (SQLException e) {
      throw new IllegalStateException("cannot read the database clock", e);
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("markDead removes the row; purgeSent removes only rows sent before the cutoff")
  void deadAndPurge(TestDatabase db) {
    JdbcStorage storage = db.storage(clock);
    JdbcOutboxStore outbox = storage.outboxStore();
    long dead = append(storage, "d", message("a", "dead"));
    long early = append(storage, "d", message("b", "early"));
    long late = append(storage, "d", message("c", "late"));
    outbox.claim("r", 10, LEASE, clock.instant());
    assertThat(outbox.markDead("r", dead)).isTrue();
    outbox.markSent("r", List.of(early), clock.instant());
    clock.advance(Duration.ofHours(1));
    outbox.markSent("r", List.of(late), clock.instant());
    assertThat(outbox.stats(clock.instant()).sent()).isEqualTo(2);
    assertThat(outbox.purgeSent(clock.instant())).isEqualTo(1);
    assertThat(db.count("SELECT COUNT(*) FROM " + storage.tablePrefix() + "outbox"))
        .isEqualTo(1);
    assertThat(db.count("SELECT seq FROM " + storage.tablePrefix() + "outbox")).isEqualTo(late);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("stats count unsent rows and the age of the oldest message")
  void stats(TestDatabase db) {
    JdbcStorage storage = db.storage(clock);
    append(storage, "d", message("a", "1"));
    append(storage, "d", message("a", "2"));
    clock.advance(Duration.ofMinutes(3));
    assertThat(storage.outboxStore().stats(clock.instant()))
        .isEqualTo(new OutboxStats(2, Duration.ofMinutes(3), 0));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("concurrent claims never hand out the same row twice (SKIP LOCKED)")
  void concurrentClaimsAreDisjoint(TestDatabase db) throws Exception {
    JdbcStorage storage = db.storage(clock);
    JdbcOutboxStore outbox = storage.outboxStore();
    int rows = 300;
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      List<Message> batch = new ArrayList<>();
      for (int i = 0; i < rows; i++) {
        batch.add(message(i % 3 == 0 ? null : "k" + i, "m" + i));
      }
      outbox.appendAll(c, "d", batch);
      c.commit();
    }
    int threads = 4;
    CyclicBarrier start = new CyclicBarrier(threads);
    Set<Long> seen = ConcurrentHashMap.newKeySet();
    List<Long> duplicates = new ArrayList<>();
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<?>> futures = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        String owner = "relay-" + t;
        futures.add(pool.submit(() -> {
          start.await();
          List<OutboxRecord> got;
          while (!(got = outbox.claim(owner, 7, LEASE, clock.instant())).isEmpty()) {
            for (OutboxRecord r : got) {
              if (!seen.add(r.sequence())) {
                synchronized (duplicates) {
                  duplicates.add(r.sequence());
                }
              }
            }
          }
          return null;
        }));
      }
      for (Future<?> f : futures) {
        f.get();
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(duplicates).isEmpty();
    assertThat(seen).hasSize(rows);
    assertThat(db.count("SELECT COUNT(*) FROM " + storage.tablePrefix()
        + "outbox WHERE lease_owner IS NOT NULL")).isEqualTo(rows);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("a payload over the column limit is refused before anything is written")
  void oversizePayload(TestDatabase db) throws SQLException {
    JdbcStorage storage = db.storage(clock);
    Message big = Message.builder().type("t").payload(new byte[JdbcOutboxStore.MAX_PAYLOAD_BYTES + 1])
        .build();
    Message fits = Message.builder().type("t").payload(new byte[JdbcOutboxStore.MAX_PAYLOAD_BYTES])
        .build();
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      storage.outboxStore().append(c, "d", fits);
      assertThatThrownBy(() -> storage.outboxStore().append(c, "d", big))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("payload").hasMessageContaining("1048577")
          .hasMessageContaining("nothing was written");
      assertThatThrownBy(() -> storage.outboxStore().appendAll(c, "d", List.of(fits, big)))
          .isInstanceOf(IllegalArgumentException.class);
      c.commit();
    }
    assertThat(db.count("SELECT COUNT(*) FROM " + storage.tablePrefix() + "outbox")).isEqualTo(1);
    assertThat(storage.outboxStore().claim("r", 5, LEASE, clock.instant()).get(0).message()
        .payloadSize()).isEqualTo(JdbcOutboxStore.MAX_PAYLOAD_BYTES);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("blank destinations, owners and a missing connection are refused by name")
  void badArguments(TestDatabase db) throws SQLException {
    JdbcOutboxStore outbox = db.storage(clock).outboxStore();
    Message m = message("k", "x");
    try (Connection c = db.connection()) {
      assertThatThrownBy(() -> outbox.append(c, " ", m)).hasMessageContaining("destination");
      assertThatThrownBy(() -> outbox.append(c, null, m)).hasMessageContaining("destination");
      assertThatThrownBy(() -> outbox.append(c, "d", null)).hasMessageContaining("message");
      assertThatThrownBy(() -> outbox.append(null, "d", m)).hasMessageContaining("tx");
    }
    assertThatThrownBy(() -> outbox.claim("", 1, LEASE, clock.instant()))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("owner");
    assertThatThrownBy(() -> outbox.claim("r", 0, LEASE, clock.instant()))
        .hasMessageContaining("max");
    assertThatThrownBy(() -> outbox.claim("r", 1, Duration.ZERO, clock.instant()))
        .hasMessageContaining("lease");
  }
}
