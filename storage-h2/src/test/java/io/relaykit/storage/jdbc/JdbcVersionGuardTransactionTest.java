package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.tck.Race;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.InstantSource;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.DisplayName;

/**
 * The version guard in the caller's transaction, on H2 and PostgreSQL: the version and the update
 * commit together or not at all, so neither a failed update nor a lost commit reply leaves a
 * version that says an update was applied when it was not.
 */
@DisplayName("JdbcVersionGuard.advance(Connection, ...): the version commits with the update")
class JdbcVersionGuardTransactionTest {

  private static final String STATE = "vg_state_" + UUID.randomUUID().toString().substring(0, 8);

  private JdbcStorage open(TestDatabase.Kind kind) throws SQLException {
    TestDatabase db = TestDatabase.shared(kind);
    JdbcStorage storage = db.storage(TestDatabase.newPrefix(), Duration.ofDays(7),
        InstantSource.system());
    try (Connection c = storage.dataSource().getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE IF NOT EXISTS " + STATE + " (id VARCHAR(64) PRIMARY KEY,"
          + " v BIGINT NOT NULL)");
    }
    return storage;
  }

  /** One consumer's update: advance in the transaction, apply it, then commit (or fail). */
  private static boolean update(JdbcStorage storage, String entity, long version,
      boolean failAfterAdvance) throws SQLException {
    try (Connection c = storage.dataSource().getConnection()) {
      c.setAutoCommit(false);
      try {
        if (!storage.versionGuard().advance(c, entity, version)) {
          c.rollback();
          return false;
        }
        try (PreparedStatement ps = c.prepareStatement("DELETE FROM " + STATE
            + " WHERE id = ?")) {
          ps.setString(1, entity);
          ps.executeUpdate();
        }
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + STATE
            + " (id, v) VALUES (?, ?)")) {
          ps.setString(1, entity);
          ps.setLong(2, version);
          ps.executeUpdate();
        }
        if (failAfterAdvance) {
          throw new SQLException("the update failed after the version was recorded");
        }
        c.commit();
        return true;
      } catch (SQLException | RuntimeException e) {
        c.rollback();
        throw e;
      }
    }
  }

  private static Long applied(JdbcStorage storage, String entity) throws SQLException {
    try (Connection c = storage.dataSource().getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT v FROM " + STATE + " WHERE id = ?")) {
      ps.setString(1, entity);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getLong(1) : null;
      }
    }
  }

  @ParameterizedTest
  @EnumSource(value = TestDatabase.Kind.class, names = {"H2_MEMORY", "POSTGRESQL"})
  @DisplayName("an update that fails after advance rolls the version back: the redelivery is"
      + " applied, not answered stale (the plain advance answered stale)")
  void failedUpdateRollsBackVersion(TestDatabase.Kind kind) throws Exception {
    JdbcStorage storage = open(kind);
    String e = "e-" + UUID.randomUUID();

    assertThatThrownBy(() -> update(storage, e, 5, true)).isInstanceOf(SQLException.class);
    assertThat(storage.versionGuard().current(e)).isEmpty();

    assertThat(update(storage, e, 5, false)).isTrue();
    assertThat(applied(storage, e)).isEqualTo(5L);
    assertThat(storage.versionGuard().current(e)).hasValue(5);
    assertThat(update(storage, e, 5, false)).as("the redelivery after success").isFalse();
  }

  @ParameterizedTest
  @EnumSource(value = TestDatabase.Kind.class, names = {"H2_MEMORY", "POSTGRESQL"})
  @DisplayName("the plain advance (own auto-commit) shows the window: a failure after true leaves"
      + " the version stored and the redelivery answered stale")
  void plainAdvanceWindow(TestDatabase.Kind kind) throws Exception {
    JdbcStorage storage = open(kind);
    String e = "e-" + UUID.randomUUID();

    assertThat(storage.versionGuard().advance(e, 5)).isTrue();
    // the update fails here; the redelivery:
    assertThat(storage.versionGuard().advance(e, 5)).isFalse();
    assertThat(applied(storage, e)).isNull();
  }

  @ParameterizedTest
  @EnumSource(value = TestDatabase.Kind.class, names = {"H2_MEMORY", "POSTGRESQL"})
  @DisplayName("8 transactions updating one entity with versions 1..8 at once: the state ends at"
      + " 8, the version at 8, and no older update overwrote a newer one")
  void concurrentInTransaction(TestDatabase.Kind kind) throws Exception {
    JdbcStorage storage = open(kind);
    String e = "e-" + UUID.randomUUID();

    List<Boolean> results = Race.run(8, Duration.ofSeconds(60), i -> {
      try {
        return update(storage, e, i + 1, false);
      } catch (SQLException ex) {
        return false; // a transaction the database aborted as a deadlock victim changed nothing
      }
    });

    assertThat(results).contains(true);
    assertThat(storage.versionGuard().current(e)).hasValue(8);
    assertThat(applied(storage, e)).isEqualTo(8L);
  }

  @ParameterizedTest
  @EnumSource(value = TestDatabase.Kind.class, names = {"H2_MEMORY"})
  @DisplayName("bad arguments name themselves")
  void badInput(TestDatabase.Kind kind) throws Exception {
    JdbcStorage storage = open(kind);
    try (Connection c = storage.dataSource().getConnection()) {
      assertThatThrownBy(() -> storage.versionGuard().advance(null, "e", 1))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("tx");
      assertThatThrownBy(() -> storage.versionGuard().advance(c, " ", 1))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("entityId");
      assertThatThrownBy(() -> storage.versionGuard().advance(c, "e", -1))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("version");
    }
  }
}
