package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.idempotency.Claim;
import io.relaykit.message.Message;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.outbox.OutboxRecord;
import io.relaykit.tck.FakeClock;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Housekeeping locks only the rows it deletes. H2 2.4 locks every row a {@code SELECT ... FOR
 * UPDATE} matches when the result must be sorted before {@code FETCH FIRST} cuts it (an {@code
 * ORDER BY} off the scan order: measured, that locked every expired key until the purge
 * committed); without one it stops at the limit. The purges' locking reads have no ORDER BY for
 * that reason, and this test keeps it so: at the moment a purge commits, a second connection
 * must lock a row past the purge's batch at once. On H2 and PostgreSQL.
 */
class JdbcPurgeLockScopeTest {
  private static final Duration RETENTION = Duration.ofHours(1);
  private static final Duration LEASE = Duration.ofSeconds(10);

  private final FakeClock clock = new FakeClock();

  static Stream<TestDatabase> databases() {
    return Stream.of(TestDatabase.shared(TestDatabase.Kind.H2_MEMORY),
        TestDatabase.shared(TestDatabase.Kind.POSTGRESQL));
  }

  private JdbcStorage storage(TestDatabase db, CommitHookDataSource hooked, String prefix) {
    return JdbcStorage.open(hooked, db.dialect(), prefix, RETENTION, clock,
        DatabaseClock.of(clock), LifecycleListener.noop(), true);
  }

  /**
   * Runs {@code select} (one row, FOR UPDATE) on a second connection with a short lock timeout and
   * rolls it back; the outcome is null when the row was locked at once, else the failure.
   */
  private static SQLException tryLock(TestDatabase db, String select, String... params) {
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      try (Statement s = c.createStatement()) {
        s.execute(db.dialect() == Dialect.POSTGRESQL ? "SET LOCAL lock_timeout = '2s'"
            : "SET LOCK_TIMEOUT 2000");
      }
      try (PreparedStatement ps = c.prepareStatement(select)) {
        for (int i = 0; i < params.length; i++) {
          ps.setString(i + 1, params[i]);
        }
        try (ResultSet rs = ps.executeQuery()) {
          assertThat(rs.next()).as("the row exists: " + select).isTrue();
        }
      } finally {
        c.rollback();
      }
      return null;
    } catch (SQLException e) {
      return e;
    }
  }

  private static final String LOCKED_AT_ONCE = "locked at once";

  private static String outcome(AtomicReference<SQLException> seen) {
    return seen.get() == null ? LOCKED_AT_ONCE : seen.get().toString();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("purging one batch of expired idempotency keys leaves the key past the batch unlocked")
  void idempotencyPurgeLocksOneBatch(TestDatabase db) throws SQLException {
    CommitHookDataSource hooked = new CommitHookDataSource(db.dataSource());
    String prefix = TestDatabase.newPrefix();
    JdbcIdempotencyStore store = storage(db, hooked, prefix).idempotencyStore();
    int keys = JdbcIdempotencyStore.PURGE_BATCH + 1;
    for (int i = 0; i < keys; i++) {
      Claim claim = store.claim(String.format("k%05d", i), LEASE);
      assertThat(store.complete(claim)).isTrue();
    }
    clock.advance(RETENTION.plusMinutes(1));

    String last = String.format("k%05d", keys - 1);
    AtomicReference<SQLException> seen = new AtomicReference<>(new SQLException("not looked"));
    hooked.onNextCommit(commit -> {
      seen.set(tryLock(db, "SELECT idem_key FROM " + prefix + "idempotency WHERE idem_key = ?"
          + " FOR UPDATE", last));
      commit.run();
    });
    assertThat(store.purgeExpired()).isEqualTo(keys);

    assertThat(outcome(seen)).as("the key past the first batch is not locked by it")
        .isEqualTo(LOCKED_AT_ONCE);
    assertThat(db.count("SELECT COUNT(*) FROM " + prefix + "idempotency")).isZero();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("purging one idle key head leaves the other idle heads unlocked, so their appends do"
      + " not wait")
  void idleHeadPurgeLocksOnlyItsHeads(TestDatabase db) throws SQLException {
    CommitHookDataSource hooked = new CommitHookDataSource(db.dataSource());
    String prefix = TestDatabase.newPrefix();
    JdbcStorage storage = storage(db, hooked, prefix);
    JdbcOutboxStore outbox = storage.outboxStore();
    for (String key : List.of("a", "b", "c")) {
      try (Connection c = storage.dataSource().getConnection()) {
        c.setAutoCommit(false);
        outbox.append(c, "orders", Message.builder().type("order.placed").key(key)
            .payload(key).createdAt(FakeClock.EPOCH).build());
        c.commit();
      }
    }
    List<OutboxRecord> claimed = outbox.claim("relay", 10, LEASE, clock.instant());
    assertThat(claimed).hasSize(3);
    assertThat(outbox.markSent("relay", claimed.stream().map(OutboxRecord::sequence).toList(),
        clock.instant())).isEqualTo(3);
    String heads = prefix + "outbox_head";
    assertThat(db.count("SELECT COUNT(*) FROM " + heads + " WHERE head_seq IS NULL")).isEqualTo(3);

    AtomicReference<SQLException> seen = new AtomicReference<>(new SQLException("not looked"));
    hooked.onNextCommit(commit -> {
      seen.set(tryLock(db, "SELECT head_seq FROM " + heads + " WHERE msg_key = ? FOR UPDATE",
          "c"));
      commit.run();
    });
    outbox.purgeSentOlderThan(RETENTION, 1, clock.instant());

    assertThat(outcome(seen)).as("the idle head past the purge's one is not locked by it")
        .isEqualTo(LOCKED_AT_ONCE);
    assertThat(db.count("SELECT COUNT(*) FROM " + heads)).as("one head per purge step")
        .isEqualTo(2);
  }
}
