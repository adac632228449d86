package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.idempotency.Claim;
import io.relaykit.idempotency.RunOnceResult;
import io.relaykit.tck.FakeClock;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Expired idempotency keys leave the table with no wiring: claim and runOnce purge as they go, at
 * most once per interval of the injected clock, in bounded batches. On H2 and PostgreSQL.
 */
class JdbcIdempotencyExpiryTest {
  private static final Duration RETENTION = Duration.ofHours(1);
  private static final Duration LEASE = Duration.ofSeconds(10);

  private final FakeClock clock = new FakeClock();

  static Stream<TestDatabase> databases() {
    return Stream.of(TestDatabase.shared(TestDatabase.Kind.H2_MEMORY),
        TestDatabase.shared(TestDatabase.Kind.POSTGRESQL));
  }

  private JdbcStorage storage(TestDatabase db) {
    return db.storage(TestDatabase.newPrefix(), RETENTION, clock);
  }

  private static void done(JdbcIdempotencyStore store, String key) {
    Claim claim = store.claim(key, LEASE);
    assertThat(claim.isClaimed()).isTrue();
    assertThat(store.complete(claim)).isTrue();
  }

  private static List<String> keys(TestDatabase db, JdbcStorage storage) throws SQLException {
    List<String> keys = new ArrayList<>();
    try (Connection c = db.connection(); PreparedStatement ps = c.prepareStatement(
        "SELECT idem_key FROM " + storage.tablePrefix() + "idempotency ORDER BY idem_key");
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        keys.add(rs.getString(1));
      }
    }
    return keys;
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("a later claim deletes expired DONE keys, and lapsed leases once the retention after"
      + " them passed; live keys stay")
  void claimPurgesExpiredKeys(TestDatabase db) throws SQLException {
    JdbcStorage storage = storage(db);
    JdbcIdempotencyStore store = storage.idempotencyStore();
    done(store, "old-1");
    done(store, "old-2");
    clock.advance(Duration.ofMinutes(30));
    done(store, "live");
    assertThat(store.claim("crashed-worker", LEASE).isClaimed()).isTrue();
    assertThat(keys(db, storage)).containsExactly("crashed-worker", "live", "old-1", "old-2");

    clock.advance(Duration.ofMinutes(31));
    assertThat(store.claim("trigger", LEASE).isClaimed()).isTrue();

    assertThat(keys(db, storage))
        .as("the lapsed claim is kept for the retention after its lease, so it can complete")
        .containsExactly("crashed-worker", "live", "trigger");
    assertThat(store.status("live")).contains(Claim.Status.DONE);

    clock.advance(Duration.ofMinutes(60));
    assertThat(store.claim("trigger-2", LEASE).isClaimed()).isTrue();

    assertThat(keys(db, storage)).containsExactly("trigger", "trigger-2");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("keys expiring within the purge interval wait for the next purge: at most one per"
      + " interval")
  void atMostOnePurgePerInterval(TestDatabase db) throws SQLException {
    JdbcStorage storage = storage(db);
    JdbcIdempotencyStore store = storage.idempotencyStore();
    done(store, "a");   // the first claim purges (nothing yet); the next is due in 5 minutes
    clock.advance(RETENTION.plusSeconds(1));
    done(store, "b");   // purges "a"
    assertThat(keys(db, storage)).containsExactly("b");
    clock.advance(RETENTION.minus(JdbcIdempotencyStore.PURGE_INTERVAL).plusSeconds(1));
    done(store, "c");   // due: purges, "b" still live
    clock.advance(JdbcIdempotencyStore.PURGE_INTERVAL.minusSeconds(1));
    done(store, "d");   // "b" expired now, but the interval since the last purge has not passed
    assertThat(keys(db, storage)).containsExactly("b", "c", "d");
    clock.advance(Duration.ofSeconds(1));
    done(store, "e");   // due again
    assertThat(keys(db, storage)).containsExactly("c", "d", "e");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("runOnce alone purges too: an application that only uses runOnce stays bounded")
  void runOncePurges(TestDatabase db) throws SQLException {
    JdbcStorage storage = storage(db);
    JdbcIdempotencyStore store = storage.idempotencyStore();
    runOnce(db, store, "order-1:sms");
    clock.advance(RETENTION);
    runOnce(db, store, "order-2:sms");
    assertThat(keys(db, storage)).containsExactly("order-2:sms");
  }

  private static void runOnce(TestDatabase db, JdbcIdempotencyStore store, String key)
      throws SQLException {
    try (Connection tx = db.connection()) {
      tx.setAutoCommit(false);
      assertThat(store.tryRunOnce(tx, key, c -> { })).isEqualTo(RunOnceResult.RAN);
      tx.commit();
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("one purge deletes at most a batch; a full batch makes the next call purge again")
  void purgeIsBounded(TestDatabase db) throws SQLException {
    JdbcStorage storage = storage(db);
    JdbcIdempotencyStore store = storage.idempotencyStore();
    int expired = JdbcIdempotencyStore.PURGE_BATCH + 500;
    try (Connection c = db.connection(); PreparedStatement ps = c.prepareStatement(
        "INSERT INTO " + storage.tablePrefix() + "idempotency (idem_key, status, done_until)"
            + " VALUES (?, 1, ?)")) {
      c.setAutoCommit(false);
      for (int i = 0; i < expired; i++) {
        ps.setString(1, "expired-" + i);
        ps.setLong(2, Instants.toNanos("t", clock.instant()));
        ps.addBatch();
      }
      ps.executeBatch();
      c.commit();
    }
    String table = storage.tablePrefix() + "idempotency";
    store.claim("first", LEASE);
    assertThat(db.count("SELECT COUNT(*) FROM " + table + " WHERE idem_key LIKE 'expired-%'"))
        .isEqualTo(500);
    store.claim("second", LEASE);
    assertThat(db.count("SELECT COUNT(*) FROM " + table + " WHERE idem_key LIKE 'expired-%'"))
        .isZero();
    assertThat(keys(db, storage)).containsExactly("first", "second");
  }
}
