package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.relaykit.ordering.VersionGuard;
import io.relaykit.tck.FaultProxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.InstantSource;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * An independent attack on {@link JdbcVersionGuard#advance(Connection, String, long)}: a lost
 * commit reply, rollbacks after advance on a new entity, two transactions racing on one entity
 * (same and newer versions, new and existing rows), and entity identity as the database sees it.
 */
@DisplayName("JdbcVersionGuard in the caller's transaction, attacked")
class JdbcVersionGuardAttackTest {

  private static final String STATE = "vga_state_" + UUID.randomUUID().toString().substring(0, 8);

  private static JdbcStorage open(TestDatabase.Kind kind) throws SQLException {
    TestDatabase db = TestDatabase.shared(kind);
    JdbcStorage storage = db.storage(TestDatabase.newPrefix(), Duration.ofDays(7),
        InstantSource.system());
    createState(storage);
    return storage;
  }

  private static void createState(JdbcStorage storage) throws SQLException {
    try (Connection c = storage.dataSource().getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE IF NOT EXISTS " + STATE + " (id VARCHAR(64) PRIMARY KEY,"
          + " v BIGINT NOT NULL)");
    }
  }

  private static void apply(Connection c, String entity, long version) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("DELETE FROM " + STATE + " WHERE id = ?")) {
      ps.setString(1, entity);
      ps.executeUpdate();
    }
    try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + STATE
        + " (id, v) VALUES (?, ?)")) {
      ps.setString(1, entity);
      ps.setLong(2, version);
      ps.executeUpdate();
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

  /** advance and apply in one transaction, committed. */
  private static boolean consume(JdbcStorage storage, String entity, long version)
      throws SQLException {
    try (Connection c = storage.dataSource().getConnection()) {
      c.setAutoCommit(false);
      try {
        boolean newer = storage.versionGuard().advance(c, entity, version);
        if (newer) {
          apply(c, entity, version);
        }
        c.commit();
        return newer;
      } catch (SQLException | RuntimeException e) {
        c.rollback();
        throw e;
      }
    }
  }

  @ParameterizedTest
  @EnumSource(value = TestDatabase.Kind.class, names = {"H2_MEMORY", "POSTGRESQL"})
  @DisplayName("rollback after advance of a new entity (the insert path) leaves no row: the"
      + " redelivery of the same version is newer and applies")
  void rollbackAfterInsertPath(TestDatabase.Kind kind) throws SQLException {
    JdbcStorage storage = open(kind);
    String e = "new-" + UUID.randomUUID();
    try (Connection c = storage.dataSource().getConnection()) {
      c.setAutoCommit(false);
      assertThat(storage.versionGuard().advance(c, e, 3)).isTrue();
      apply(c, e, 3);
      c.rollback();
    }
    assertThat(storage.versionGuard().current(e)).isEmpty();
    assertThat(consume(storage, e, 3)).isTrue();
    assertThat(applied(storage, e)).isEqualTo(3);
  }

  @ParameterizedTest
  @EnumSource(value = TestDatabase.Kind.class, names = {"H2_MEMORY", "POSTGRESQL"})
  @DisplayName("two transactions race on one entity, new or existing, with the same version or"
      + " an older one behind a newer: exactly the newest applies, the other answers stale once the"
      + " first commits, and a rolled-back first lets the second apply")
  void twoTransactions(TestDatabase.Kind kind) throws Exception {
    JdbcStorage storage = open(kind);
    for (boolean existing : new boolean[] {false, true}) {
      for (long[] versions : List.of(new long[] {5, 5}, new long[] {6, 5}, new long[] {5, 6})) {
        for (boolean firstCommits : new boolean[] {true, false}) {
          String e = "race-" + UUID.randomUUID();
          if (existing) {
            assertThat(consume(storage, e, 1)).isTrue();
          }
          String what = (existing ? "existing" : "new") + " entity, first " + versions[0]
              + (firstCommits ? " commits" : " rolls back") + ", second " + versions[1];
          try (Connection first = storage.dataSource().getConnection()) {
            first.setAutoCommit(false);
            assertThat(storage.versionGuard().advance(first, e, versions[0])).as(what).isTrue();
            apply(first, e, versions[0]);
            CompletableFuture<Boolean> second = CompletableFuture.supplyAsync(() -> {
              try {
                return consume(storage, e, versions[1]);
              } catch (SQLException x) {
                throw new IllegalStateException(x);
              }
            });
            if (firstCommits) {
              first.commit();
            } else {
              first.rollback();
            }
            boolean secondApplied = second.get(20, TimeUnit.SECONDS);
            boolean expected = !firstCommits || versions[1] > versions[0];
            assertThat(secondApplied).as(what).isEqualTo(expected);
            long newest = firstCommits ? Math.max(versions[0], versions[1]) : versions[1];
            assertThat(storage.versionGuard().current(e)).as(what).hasValue(newest);
            assertThat(applied(storage, e)).as(what).isEqualTo(newest);
          }
        }
      }
    }
  }

  @ParameterizedTest
  @EnumSource(value = TestDatabase.Kind.class, names = {"H2_MEMORY", "POSTGRESQL"})
  @DisplayName("entity ids differing only in case or trailing spaces are distinct entities; the"
      + " longest allowed id works; a longer one is refused before the database")
  void identity(TestDatabase.Kind kind) throws SQLException {
    JdbcStorage storage = open(kind);
    VersionGuard guard = storage.versionGuard();
    String base = "Order-" + UUID.randomUUID();
    List<String> ids = List.of(base, base.toLowerCase(java.util.Locale.ROOT),
        base.toUpperCase(java.util.Locale.ROOT), base + " ", base + "  ", " " + base,
        base + "\u00a0", base.replace("-", "\u2010"));
    for (String id : ids) {
      assertThat(guard.advance(id, 10)).as("'%s' first seen", id).isTrue();
    }
    for (String id : ids) {
      assertThat(guard.advance(id, 5)).as("'%s' stale", id).isFalse();
      assertThat(guard.current(id)).as("'%s'", id).hasValue(10);
    }
    String longest = "k".repeat(500) + UUID.randomUUID().toString().substring(0, 12);
    assertThat(longest).hasSize(512);
    assertThat(guard.advance(longest, 1)).isTrue();
    assertThatThrownBy(() -> guard.advance(longest + "x", 1))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("512");
    String longestAstral = "\uD83D\uDE00".repeat(256);
    assertThat(guard.advance(longestAstral, 1)).isTrue();
    assertThat(guard.current(longestAstral)).hasValue(1);
  }

  @Test
  @DisplayName("H2 with IGNORECASE=TRUE would make 'Order-1' and 'order-1' one entity: relaykit"
      + " refuses to create its tables there, and refuses tables created that way, naming the"
      + " setting; with it off the ids are distinct")
  void h2IgnoreCase() throws SQLException {
    String name = "vga-" + UUID.randomUUID();
    HikariConfig hc = new HikariConfig();
    hc.setJdbcUrl("jdbc:h2:mem:" + name + ";IGNORECASE=TRUE;DB_CLOSE_DELAY=-1");
    hc.setMaximumPoolSize(2);
    try (HikariDataSource ds = new HikariDataSource(hc)) {
      assertThatThrownBy(() -> JdbcStorage.open(ds, Dialect.H2, "rk_", Duration.ofDays(1),
          InstantSource.system())).hasMessageContaining("IGNORECASE");
      // Tables created by hand (or by Flyway) under IGNORECASE are refused too.
      try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
        for (int v : Schema.versions()) {
          for (String sql : Schema.statements(Dialect.H2, v, new Tables("ic_"))) {
            s.execute(sql);
          }
        }
        s.execute("SET IGNORECASE FALSE");
      }
      assertThatThrownBy(() -> JdbcStorage.open(ds, Dialect.H2, "ic_", Duration.ofDays(1),
          InstantSource.system())).hasMessageContaining("IGNORECASE");
      // With the setting off, relaykit creates case-sensitive tables.
      JdbcStorage storage = JdbcStorage.open(ds, Dialect.H2, "rk_", Duration.ofDays(1),
          InstantSource.system());
      assertThat(storage.versionGuard().advance("Order-1", 10)).isTrue();
      assertThat(storage.versionGuard().advance("order-1", 1)).as("another entity").isTrue();
      assertThat(storage.versionGuard().current("ORDER-1")).isEmpty();
    }
  }

  @Test
  @DisplayName("PostgreSQL: the caller's commit reaches the server and its reply is dropped"
      + " (FaultProxy): the update and the version are both there, so the redelivery answers"
      + " stale with the update applied; a dropped reply before the commit leaves neither")
  void postgresLostCommitReply() throws Exception {
    TestDatabase db = TestDatabase.shared(TestDatabase.Kind.POSTGRESQL);
    String prefix = TestDatabase.newPrefix();
    JdbcStorage direct = db.storage(prefix, Duration.ofDays(7), InstantSource.system());
    createState(direct);
    try (FaultProxy proxy = FaultProxy.to("127.0.0.1", 5432);
        HikariDataSource viaProxy = db.poolVia("127.0.0.1:" + proxy.port(), 2)) {
      JdbcStorage lossy = JdbcStorage.open(viaProxy, Dialect.POSTGRESQL, prefix,
          Duration.ofDays(7), InstantSource.system());
      for (boolean atCommit : new boolean[] {true, false}) {
        String e = "lost-" + UUID.randomUUID();
        assertThatThrownBy(() -> {
          try (Connection c = viaProxy.getConnection()) {
            c.setAutoCommit(false);
            if (!atCommit) {
              proxy.dropReplies();
            }
            assertThat(lossy.versionGuard().advance(c, e, 7)).isTrue();
            apply(c, e, 7);
            proxy.dropReplies();
            c.commit();
          }
        }).as(atCommit ? "commit reply lost" : "advance reply lost").isInstanceOf(Exception.class);
        proxy.heal();
        proxy.cutConnections();
        // The redelivery, on another connection.
        CompletableFutureAwait.untilSettled(direct, prefix, e);
        boolean redelivered = consume(direct, e, 7);
        if (atCommit) {
          assertThat(redelivered).as("stale: the first delivery's update committed").isFalse();
          assertThat(applied(direct, e)).isEqualTo(7);
        } else {
          assertThat(redelivered).as("nothing committed: the redelivery applies").isTrue();
          assertThat(applied(direct, e)).isEqualTo(7);
        }
        assertThat(direct.versionGuard().current(e)).hasValue(7);
      }
    }
  }

  /** Waits until no other session holds the entity's row (the server ended the lost session). */
  private static final class CompletableFutureAwait {
    static void untilSettled(JdbcStorage storage, String prefix, String entity) {
      io.relaykit.tck.Await.until(Duration.ofSeconds(20), "the lost session's lock is released",
          () -> {
            try (Connection c = storage.dataSource().getConnection();
                Statement s = c.createStatement()) {
              // SET LOCAL: the pooled connection goes back without a lock timeout.
              c.setAutoCommit(false);
              s.execute("SET LOCAL lock_timeout = '200ms'");
              try (PreparedStatement ps = c.prepareStatement("SELECT 1 FROM "
                  + new Tables(prefix).versionGuard + " WHERE entity_id = ? FOR UPDATE")) {
                ps.setString(1, entity);
                ps.executeQuery().close();
              }
              c.rollback();
              return true;
            } catch (SQLException x) {
              return false;
            }
          });
    }
  }
}
