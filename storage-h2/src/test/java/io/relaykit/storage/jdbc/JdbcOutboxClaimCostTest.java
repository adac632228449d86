package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.message.Message;
import io.relaykit.outbox.OutboxBound;
import io.relaykit.outbox.OutboxFullException;
import io.relaykit.outbox.OutboxRecord;
import io.relaykit.tck.FakeClock;
import io.relaykit.tck.OutboxStoreContract.OpenTransaction;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * What a claim reads, from the database's own plans (EXPLAIN ANALYZE: rows read, not time), and
 * the REFUSE bound across two store instances; on H2 (memory and file) and PostgreSQL.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class JdbcOutboxClaimCostTest {
  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final int BACKED_OFF = 3_000;
  private static final int READY = 10;
  private static final int BATCH = 100;

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

  private static void appendAll(JdbcStorage storage, JdbcOutboxStore outbox, List<Message> ms) {
    try (Connection c = storage.dataSource().getConnection()) {
      c.setAutoCommit(false);
      outbox.appendAll(c, "orders", ms);
      c.commit();
    } catch (SQLException e) {
      throw new AssertionError(e);
    }
  }

  /**
   * Rows the claim's candidate statements read: on PostgreSQL the rows each plan node returned
   * (times its loops) plus the rows its filter removed; on H2 the scan counts.
   */
  static long rowsRead(Dialect dialect, List<String> plans) {
    long read = 0;
    for (String plan : plans) {
      if (dialect == Dialect.POSTGRESQL) {
        Matcher m = Pattern.compile("\"Actual Rows\": (\\d+),\\s*\"Actual Loops\": (\\d+)")
            .matcher(plan);
        while (m.find()) {
          read += Long.parseLong(m.group(1)) * Long.parseLong(m.group(2));
        }
        Matcher f = Pattern.compile("\"Rows Removed by Filter\": (\\d+)").matcher(plan);
        while (f.find()) {
          read += Long.parseLong(f.group(1));
        }
      } else {
        Matcher m = Pattern.compile("scanCount: (\\d+)").matcher(plan);
        while (m.find()) {
          read += Long.parseLong(m.group(1));
        }
      }
    }
    return read;
  }

  private static List<String> lastPlans = List.of();

  private static long claimRowsRead(TestDatabase db, JdbcStorage storage, JdbcOutboxStore outbox)
      throws SQLException {
    try (Connection c = storage.dataSource().getConnection()) {
      c.setAutoCommit(false);
      try {
        List<String> plans = outbox.statements().explainClaim(c, BATCH, LEASE.toNanos());
        lastPlans = plans;
        return rowsRead(db.dialect(), plans);
      } finally {
        c.rollback();
      }
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("3 000 unkeyed rows rescheduled an hour ahead and 10 ready: a claim reads"
      + " O(batch) rows, not the backed-off backlog, and leases the 10")
  void backedOffRowsAreNotWalked(TestDatabase db) throws SQLException {
    String prefix = TestDatabase.newPrefix();
    JdbcStorage storage = db.storage(prefix, Duration.ofDays(7), clock);
    JdbcOutboxStore outbox = storage.outboxStore();
    List<Message> backlog = new ArrayList<>();
    for (int i = 0; i < BACKED_OFF; i++) {
      backlog.add(message(null, "later-" + i));
    }
    appendAll(storage, outbox, backlog);
    // As reschedule leaves them: an attempt made, due an hour from now.
    try (Connection c = storage.dataSource().getConnection();
        PreparedStatement ps = c.prepareStatement("UPDATE " + prefix + "outbox"
            + " SET attempts = 1, ready_at = ?")) {
      ps.setLong(1, Instants.toNanos("due", clock.instant().plus(Duration.ofHours(1))));
      assertThat(ps.executeUpdate()).isEqualTo(BACKED_OFF);
    }
    List<Message> ready = new ArrayList<>();
    for (int i = 0; i < READY; i++) {
      ready.add(message(null, "now-" + i));
    }
    appendAll(storage, outbox, ready);
    if (db.dialect() == Dialect.POSTGRESQL) {
      // As autovacuum would have: without statistics the planner guesses state = 0 selective and
      // reads the lock step through outbox_sent instead of the primary key.
      try (Connection c = storage.dataSource().getConnection();
          java.sql.Statement st = c.createStatement()) {
        st.execute("ANALYZE " + prefix + "outbox");
      }
    }

    long read = claimRowsRead(db, storage, outbox);
    assertThat(read).as("rows a claim reads beside %d backed-off rows; plans: %s", BACKED_OFF,
            lastPlans)
        .isLessThanOrEqualTo(3L * BATCH);
    List<OutboxRecord> got = outbox.claim("r", BATCH, LEASE, clock.instant());
    assertThat(got).extracting(r -> r.message().payloadUtf8())
        .containsExactlyElementsOf(ready.stream().map(Message::payloadUtf8).toList());
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("3 000 unkeyed retries due at one instant (one reschedule time, as a fixed or coarse"
      + " database clock gives them): a claim reads and locks O(batch) of them, not all")
  void dueRetriesSharingADueTimeAreNotAllRead(TestDatabase db) throws SQLException {
    String prefix = TestDatabase.newPrefix();
    JdbcStorage storage = db.storage(prefix, Duration.ofDays(7), clock);
    JdbcOutboxStore outbox = storage.outboxStore();
    List<Message> backlog = new ArrayList<>();
    for (int i = 0; i < BACKED_OFF; i++) {
      backlog.add(message(null, "retry-" + i));
    }
    appendAll(storage, outbox, backlog);
    try (Connection c = storage.dataSource().getConnection();
        PreparedStatement ps = c.prepareStatement("UPDATE " + prefix + "outbox"
            + " SET attempts = 1, ready_at = ?")) {
      ps.setLong(1, Instants.toNanos("due", clock.instant().minus(Duration.ofSeconds(1))));
      assertThat(ps.executeUpdate()).isEqualTo(BACKED_OFF);
    }
    if (db.dialect() == Dialect.POSTGRESQL) {
      try (Connection c = storage.dataSource().getConnection();
          java.sql.Statement st = c.createStatement()) {
        st.execute("ANALYZE " + prefix + "outbox");
      }
    }

    long read = claimRowsRead(db, storage, outbox);
    assertThat(read).as("rows a claim reads among %d retries due at one instant; plans: %s",
            BACKED_OFF, lastPlans)
        // PostgreSQL's sum counts the batch once per plan node (about nine of them).
        .isLessThanOrEqualTo(10L * BATCH);
    List<OutboxRecord> got = outbox.claim("r", BATCH, LEASE, clock.instant());
    assertThat(got).hasSize(BATCH);
    assertThat(got).extracting(OutboxRecord::sequence).isSorted();
    // The rest are claimable by the next relay: this claim did not keep them.
    assertThat(outbox.claim("r2", BACKED_OFF, LEASE, clock.instant()))
        .hasSize(BACKED_OFF - BATCH);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("3 000 unkeyed rows never rescheduled, all ready: a claim reads O(batch) of them,"
      + " not the whole backlog")
  void freshBacklogIsReadABatchAtATime(TestDatabase db) throws SQLException {
    String prefix = TestDatabase.newPrefix();
    JdbcStorage storage = db.storage(prefix, Duration.ofDays(7), clock);
    JdbcOutboxStore outbox = storage.outboxStore();
    List<Message> backlog = new ArrayList<>();
    for (int i = 0; i < BACKED_OFF; i++) {
      backlog.add(message(null, "now-" + i));
    }
    appendAll(storage, outbox, backlog);
    if (db.dialect() == Dialect.POSTGRESQL) {
      try (Connection c = storage.dataSource().getConnection();
          java.sql.Statement st = c.createStatement()) {
        st.execute("ANALYZE " + prefix + "outbox");
      }
    }

    long read = claimRowsRead(db, storage, outbox);
    assertThat(read).as("rows a claim reads of %d ready rows; plans: %s", BACKED_OFF, lastPlans)
        // PostgreSQL's sum counts the batch once per plan node (about nine of them).
        .isLessThanOrEqualTo(10L * BATCH);
    List<OutboxRecord> got = outbox.claim("r", BATCH, LEASE, clock.instant());
    assertThat(got).extracting(r -> r.message().payloadUtf8())
        .containsExactlyElementsOf(backlog.subList(0, BATCH).stream()
            .map(Message::payloadUtf8).toList());
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("500 keys whose head rows were rescheduled an hour ahead and 10 ready rows: a claim"
      + " reads O(batch) rows and heads, not the keys waiting for a retry, and leases the 10")
  void keyedHeadsBackedOffAreNotWalked(TestDatabase db) throws SQLException {
    int keys = 500;
    String prefix = TestDatabase.newPrefix();
    JdbcStorage storage = db.storage(prefix, Duration.ofDays(7), clock);
    List<long[]> walks = new java.util.concurrent.CopyOnWriteArrayList<>();
    JdbcOutboxStore outbox = storage.outboxStore(OutboxBound.unbounded(), OutboxOrderScope.KEY,
        new io.relaykit.monitor.MetricsListener() {
          @Override
          public void outboxClaimWalked(String store, long heads, long rows) {
            walks.add(new long[] {heads, rows});
          }
        });
    List<Message> backlog = new ArrayList<>();
    for (int i = 0; i < keys; i++) {
      backlog.add(message("k-" + i, "later-" + i));
    }
    appendAll(storage, outbox, backlog);
    // As the relay leaves them after a failed publish: claimed, then rescheduled an hour ahead.
    List<OutboxRecord> first = outbox.claim("r0", keys, LEASE, clock.instant());
    assertThat(first).hasSize(keys);
    for (OutboxRecord r : first) {
      assertThat(outbox.reschedule("r0", r.sequence(), 1, clock.instant(),
          clock.instant().plus(Duration.ofHours(1)), "down")).isTrue();
    }
    List<Message> ready = new ArrayList<>();
    for (int i = 0; i < READY; i++) {
      ready.add(message(null, "now-" + i));
    }
    appendAll(storage, outbox, ready);
    if (db.dialect() == Dialect.POSTGRESQL) {
      try (Connection c = storage.dataSource().getConnection();
          java.sql.Statement st = c.createStatement()) {
        st.execute("ANALYZE " + prefix + "outbox");
        st.execute("ANALYZE " + prefix + "outbox_head");
      }
    }

    long read = claimRowsRead(db, storage, outbox);
    assertThat(read).as("rows and heads a claim reads beside %d backed-off keys; plans: %s",
            keys, lastPlans)
        .isLessThanOrEqualTo(3L * BATCH);
    walks.clear();
    List<OutboxRecord> got = outbox.claim("r", BATCH, LEASE, clock.instant());
    assertThat(got).extracting(r -> r.message().payloadUtf8())
        .containsExactlyElementsOf(ready.stream().map(Message::payloadUtf8).toList());
    if (db.dialect() == Dialect.H2) {
      assertThat(walks).hasSize(1);
      assertThat(walks.get(0)[0]).as("heads walked").isZero();
      assertThat(walks.get(0)[1]).as("rows walked").isLessThanOrEqualTo(2L * READY);
    }
    // An hour later the keys are due again, each in its key's order.
    clock.advance(Duration.ofHours(1).plusSeconds(1));
    List<OutboxRecord> due = outbox.claim("r2", keys, LEASE, clock.instant());
    assertThat(due).extracting(r -> r.message().payloadUtf8()).containsExactlyInAnyOrderElementsOf(
        backlog.stream().map(Message::payloadUtf8).toList());
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("two store instances (two hosts) with a REFUSE bound of 3: each keeps its own"
      + " transactions within the bound; together they overshoot by at most the other's"
      + " uncommitted appends, and once those commit both refuse")
  void twoInstancesOvershootWithinTheMargin(TestDatabase db) {
    String prefix = TestDatabase.newPrefix();
    JdbcStorage storage = db.storage(prefix, Duration.ofDays(7), clock);
    JdbcOutboxStore a = storage.outboxStore(OutboxBound.refuseAbove(3));
    JdbcOutboxStore b = storage.outboxStore(OutboxBound.refuseAbove(3));
    List<OpenTransaction> open = new ArrayList<>();
    try {
      holdAndCommit(db, storage, prefix, a, b, open);
    } finally {
      open.forEach(OpenTransaction::rollback);
    }
  }

  private void holdAndCommit(TestDatabase db, JdbcStorage storage, String prefix,
      JdbcOutboxStore a, JdbcOutboxStore b, List<OpenTransaction> open) {
    int took = 0;
    for (JdbcOutboxStore s : List.of(a, b)) {
      for (int i = 0; i < 4; i++) {
        OpenTransaction tx = JdbcTransactions.open(storage.dataSource(), s);
        open.add(tx);
        try {
          tx.append("orders", message(null, "x"));
          took++;
        } catch (OutboxFullException e) {
          tx.rollback();
        }
      }
    }
    // Each instance held its own 3; the other's 3 were uncommitted, so it could not see them.
    assertThat(took).isEqualTo(6);
    open.forEach(OpenTransaction::commit); // the refused ones were rolled back already
    for (JdbcOutboxStore s : List.of(a, b)) {
      OpenTransaction tx = JdbcTransactions.open(storage.dataSource(), s);
      assertThatThrownBy(() -> tx.append("orders", message(null, "y")))
          .isInstanceOf(OutboxFullException.class);
      tx.rollback();
    }
    assertThat(db.count("SELECT COUNT(*) FROM " + prefix + "outbox")).isEqualTo(6);
  }
}
