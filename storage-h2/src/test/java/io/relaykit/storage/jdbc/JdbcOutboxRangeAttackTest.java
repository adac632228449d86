package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.message.Message;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.outbox.OutboxBound;
import io.relaykit.outbox.OutboxRecord;
import io.relaykit.tck.FakeClock;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The H2 claim's range lease, forced onto its savepoint fallback: a row of a run changes (its
 * attempts) after the claim read it and before the range UPDATE, so the range leases fewer rows
 * than the run has. The range must roll back to its savepoint only (an earlier range's lease and
 * the claim's row locks stay), and the one-row updates must lease exactly the unchanged rows.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class JdbcOutboxRangeAttackTest {

  private static final Duration LEASE = Duration.ofSeconds(30);

  private final FakeClock clock = new FakeClock();
  private final List<TestDatabase> databases = new ArrayList<>();

  @BeforeAll
  void open(@TempDir Path tempDir) {
    databases.add(TestDatabase.open(TestDatabase.Kind.H2_MEMORY, tempDir));
    databases.add(TestDatabase.open(TestDatabase.Kind.H2_FILE, tempDir));
  }

  @AfterAll
  void close() {
    databases.forEach(TestDatabase::close);
  }

  /** Runs {@code hook} on the claiming connection once, when it prepares the range lease. */
  private static DataSource hooked(DataSource real, String table,
      AtomicReference<String> hookSql) {
    String rangeLease = "UPDATE " + table + " SET lease_owner = ?, lease_until = ?"
        + " WHERE seq BETWEEN";
    return (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(),
        new Class<?>[] {DataSource.class}, (dsProxy, dsMethod, dsArgs) -> {
          Object out;
          try {
            out = dsMethod.invoke(real, dsArgs);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
          if (!dsMethod.getName().equals("getConnection")) {
            return out;
          }
          Connection c = (Connection) out;
          return Proxy.newProxyInstance(Connection.class.getClassLoader(),
              new Class<?>[] {Connection.class}, (proxy, method, args) -> {
                if (method.getName().equals("prepareStatement") && args != null
                    && args[0] instanceof String sql && sql.startsWith(rangeLease)) {
                  String change = hookSql.getAndSet(null);
                  if (change != null) {
                    try (Statement s = c.createStatement()) {
                      s.executeUpdate(change);
                    }
                  }
                }
                try {
                  return method.invoke(c, args);
                } catch (InvocationTargetException e) {
                  throw e.getCause();
                }
              });
        });
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(value = TestDatabase.Kind.class, names = {"H2_MEMORY", "H2_FILE"})
  @DisplayName("a run whose row changed after the read is leased row by row: the other rows are"
      + " leased, the changed one is not, and the earlier run's range lease survives the rollback"
      + " to the savepoint")
  void rangeFallsBackToSingleRows(TestDatabase.Kind kind) throws SQLException {
    TestDatabase db = databases.stream().filter(d -> d.kind == kind).findFirst().orElseThrow();
    String prefix = TestDatabase.newPrefix();
    String table = prefix + "outbox";
    AtomicReference<String> hookSql = new AtomicReference<>();
    JdbcStorage storage = JdbcStorage.open(hooked(db.dataSource(), table, hookSql), Dialect.H2,
        prefix, Duration.ofDays(7), clock, DatabaseClock.of(clock), LifecycleListener.noop(),
        true);
    JdbcOutboxStore outbox = storage.outboxStore(OutboxBound.unbounded(), OutboxOrderScope.KEY);
    List<Long> seqs = new ArrayList<>();
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      for (int i = 0; i < 9; i++) {
        seqs.add(outbox.append(c, "orders",
            Message.builder().type("order.event").payload("p" + i).build()));
      }
      c.commit();
    }
    // Row 5 is another relay's (a gap between two runs of four); row 8 changes in the claim's
    // transaction before its range lease, as if it changed after the claim read it.
    try (Connection c = db.connection(); Statement s = c.createStatement()) {
      s.executeUpdate("UPDATE " + table + " SET lease_owner = 'twin', lease_until = "
          + Long.MAX_VALUE + " WHERE seq = " + seqs.get(4));
    }
    hookSql.set("UPDATE " + table + " SET attempts = attempts + 1 WHERE seq = " + seqs.get(7));
    List<OutboxRecord> got = outbox.claim("r", 20, 1, LEASE, clock.instant());
    assertThat(hookSql.get()).as("the hook ran").isNull();
    List<Long> expected = new ArrayList<>(seqs);
    expected.remove(seqs.get(7));
    expected.remove(seqs.get(4));
    assertThat(got).extracting(OutboxRecord::sequence).containsExactlyElementsOf(expected);
    for (long seq : expected) {
      assertThat(db.count("SELECT COUNT(*) FROM " + table + " WHERE seq = " + seq
          + " AND lease_owner = 'r'")).as("row %d leased to r", seq).isEqualTo(1);
    }
    assertThat(db.count("SELECT COUNT(*) FROM " + table + " WHERE seq = " + seqs.get(7)
        + " AND lease_owner IS NULL")).as("the changed row is not leased").isEqualTo(1);
    assertThat(db.count("SELECT COUNT(*) FROM " + table + " WHERE seq = " + seqs.get(4)
        + " AND lease_owner = 'twin'")).as("the twin keeps its row").isEqualTo(1);
    // The changed row is claimable by the next claim, with its attempts as they are now.
    assertThat(outbox.claim("r2", 20, 1, LEASE, clock.instant()))
        .extracting(OutboxRecord::sequence, OutboxRecord::attempts)
        .containsExactly(org.assertj.core.groups.Tuple.tuple(seqs.get(7), 1));
    // Mark sent across the gap and the other owner's row: one range per run, fenced by owner.
    assertThat(outbox.markSent("r", seqs, clock.instant())).isEqualTo(expected.size());
  }
}
