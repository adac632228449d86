package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.relaykit.deadletter.DeadLetter;
import io.relaykit.message.Message;
import io.relaykit.tck.FakeClock;
import io.relaykit.tck.FaultProxy;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Schema migration steps whose commit reached the database but whose reply was lost: the next
 * migration (same instance or another) finishes and converges on the schema of a clean migration,
 * with every data step applied once. H2 commits each DDL statement, so a JDBC seam loses the reply
 * of each statement in turn; PostgreSQL runs a migration in one transaction, so {@link FaultProxy}
 * drops the reply of its commit on the wire.
 */
@DisplayName("schema migration steps whose replies are lost")
class SchemaMigrationLostReplyTest {

  private final FakeClock clock = new FakeClock();

  /** A V1 dead letter keyed by message id only: version 2 rewrites its id, which must happen once. */
  private static final Message M = Message.builder().id("m@1#x%").type("order.paid").key("o-1")
      .payload("{}").build();

  private static void atVersion1WithDeadLetter(TestDatabase db, Tables tables)
      throws SQLException {
    try (Connection c = db.connection(); Statement s = c.createStatement()) {
      for (String sql : Schema.statements(db.dialect(), 1, tables)) {
        s.execute(sql);
      }
      try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + tables.deadLetter
          + " (id, source, reason, exception_class, exception_message, attempts,"
          + " first_failure_at, last_failure_at, msg_type, msg_key, headers, payload)"
          + " VALUES (?, ?, 'exhausted', NULL, NULL, 3, 1000, 2000, ?, ?, ?, ?)")) {
        ps.setString(1, M.id());
        ps.setString(2, "orders@eu");
        ps.setString(3, M.type());
        ps.setString(4, "o-1");
        ps.setString(5, Envelopes.encode(M));
        ps.setBytes(6, M.payload());
        ps.executeUpdate();
      }
    }
  }

  private void assertConverged(TestDatabase db, String prefix, List<String> reference)
      throws SQLException {
    JdbcStorage storage = JdbcStorage.open(db.dataSource(), db.dialect(), prefix,
        Duration.ofDays(1), clock);
    assertThat(db.count("SELECT COUNT(*) FROM " + prefix + "schema_version"))
        .as("one row per version").isEqualTo(Schema.versions().size());
    assertThat(db.count("SELECT COUNT(DISTINCT version) FROM " + prefix + "schema_version"))
        .isEqualTo(Schema.versions().size());
    assertThat(shape(db, prefix)).isEqualTo(reference);
    assertThat(db.count("SELECT COUNT(*) FROM " + prefix + "dead_letter")).isEqualTo(1);
    DeadLetter d = storage.deadLetterStore().find(DeadLetter.idOf(M.id(), "orders@eu", null))
        .orElseThrow(() -> new AssertionError("the version-1 dead letter was rewritten twice"
            + " or lost"));
    assertThat(d.message()).isEqualTo(M);
    assertThat(d.messageId()).isEqualTo(M.id());
  }

  private List<String> reference(TestDatabase db) throws SQLException {
    String prefix = TestDatabase.newPrefix();
    atVersion1WithDeadLetter(db, new Tables(prefix));
    JdbcStorage.open(db.dataSource(), db.dialect(), prefix, Duration.ofDays(1), clock);
    return shape(db, prefix);
  }

  @Test
  @DisplayName("H2: the reply of each migration statement whose repeat could matter is lost in"
      + " turn after it committed;"
      + " the same open retries or a later open finishes, and the schema and data converge")
  void h2EachStatement() throws SQLException {
    // A database of its own: metadata reads stay quick whatever other tests created.
    TestDatabase db = TestDatabase.open(TestDatabase.Kind.H2_MEMORY, null);
    try {
      eachStatement(db);
    } finally {
      db.close();
    }
  }

  private void eachStatement(TestDatabase db) throws SQLException {
    List<String> reference = reference(db);
    // The statements whose repeat could change something: data steps, version rows and DDL
    // other than ADD COLUMN / CREATE ... IF NOT EXISTS; plus the first of each version. The
    // others are no-ops when repeated by construction.
    List<Integer> losing = new ArrayList<>();
    int index = 0;
    for (int v : Schema.versions()) {
      if (v == 1) {
        continue;
      }
      boolean first = true;
      for (String sql : Schema.statements(Dialect.H2, v, new Tables("x_"))) {
        index++;
        String u = sql.toUpperCase(Locale.ROOT);
        if (first || !u.contains("IF NOT EXISTS")) {
          losing.add(index);
        }
        first = false;
      }
    }
    assertThat(losing).hasSizeGreaterThan(Schema.versions().size() - 1);
    for (int lost : losing) {
      String prefix = TestDatabase.newPrefix();
      atVersion1WithDeadLetter(db, new Tables(prefix));
      LosingDataSource lossy = new LosingDataSource(db.dataSource(), lost);
      try {
        JdbcStorage.open(lossy.proxy, Dialect.H2, prefix, Duration.ofDays(1), clock);
      } catch (JdbcStorageException e) {
        // Unknown to the caller: the next open must finish it.
      }
      assertThat(lossy.dropped.get()).as("statement " + lost + " lost its reply").isEqualTo(1);
      // The same instance opens again through its (now healthy) data source, then another.
      JdbcStorage.open(lossy.proxy, Dialect.H2, prefix, Duration.ofDays(1), clock);
      assertConverged(db, prefix, reference);
    }
  }

  @Test
  @DisplayName("H2: every open of a migration loses the reply of one statement; a later open"
      + " still finishes (never fails forever)")
  void h2RepeatedLosses() throws SQLException {
    TestDatabase db = TestDatabase.open(TestDatabase.Kind.H2_MEMORY, null);
    try {
      repeatedLosses(db);
    } finally {
      db.close();
    }
  }

  private void repeatedLosses(TestDatabase db) throws SQLException {
    List<String> reference = reference(db);
    String prefix = TestDatabase.newPrefix();
    atVersion1WithDeadLetter(db, new Tables(prefix));
    for (int round = 0; round < 6; round++) {
      LosingDataSource lossy = new LosingDataSource(db.dataSource(), 1 + round);
      try {
        JdbcStorage.open(lossy.proxy, Dialect.H2, prefix, Duration.ofDays(1), clock);
      } catch (JdbcStorageException e) {
        // unknown; the next round opens again
      }
    }
    assertConverged(db, prefix, reference);
  }

  @Test
  @DisplayName("PostgreSQL: the migration's commit reaches the server and its reply is dropped"
      + " (FaultProxy); the open fails, and the next open, same pool or another, finishes with"
      + " every step applied once")
  void postgresLostCommitReply() throws Exception {
    TestDatabase db = TestDatabase.shared(TestDatabase.Kind.POSTGRESQL);
    List<String> reference = reference(db);
    String prefix = TestDatabase.newPrefix();
    atVersion1WithDeadLetter(db, new Tables(prefix));
    try (FaultProxy proxy = FaultProxy.to("127.0.0.1", 5432);
        HikariDataSource viaProxy = db.poolVia("127.0.0.1:" + proxy.port(), 2)) {
      DataSource dropsCommitReply = onCommit(viaProxy, proxy::dropReplies);

      assertThatThrownBy(() -> JdbcStorage.open(dropsCommitReply, Dialect.POSTGRESQL, prefix,
          Duration.ofDays(1), clock)).isInstanceOf(RuntimeException.class);
      assertThat(db.count("SELECT MAX(version) FROM " + prefix + "schema_version"))
          .as("the commit reached the server").isEqualTo(Schema.CURRENT_VERSION);

      proxy.heal();
      proxy.cutConnections();
      JdbcStorage.open(viaProxy, Dialect.POSTGRESQL, prefix, Duration.ofDays(1), clock);
    }
    assertConverged(db, prefix, reference);
  }

  /** A data source whose connections run {@code beforeCommit} just before each commit. */
  private static DataSource onCommit(DataSource real, Runnable beforeCommit) {
    return (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(),
        new Class<?>[] {DataSource.class}, (p, m, a) -> {
          Object r = invoke(real, m, a);
          if (r instanceof Connection c) {
            return Proxy.newProxyInstance(Connection.class.getClassLoader(),
                new Class<?>[] {Connection.class}, (cp, cm, ca) -> {
                  if (cm.getName().equals("commit")) {
                    beforeCommit.run();
                  }
                  return invoke(c, cm, ca);
                });
          }
          return r;
        });
  }

  /**
   * The JDBC seam: the {@code lose}-th {@code Statement.execute(String)} through this data source
   * runs on the database (H2 commits each DDL statement) and then throws as if its reply was lost.
   */
  private static final class LosingDataSource implements InvocationHandler {
    private final DataSource real;
    private final int lose;
    private final AtomicInteger executed = new AtomicInteger();
    final AtomicInteger dropped = new AtomicInteger();
    final DataSource proxy;

    LosingDataSource(DataSource real, int lose) {
      this.real = real;
      this.lose = lose;
      this.proxy = (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(),
          new Class<?>[] {DataSource.class}, this);
    }

    @Override
    public Object invoke(Object p, java.lang.reflect.Method m, Object[] a) throws Throwable {
      Object r = SchemaMigrationLostReplyTest.invoke(real, m, a);
      if (!(r instanceof Connection c)) {
        return r;
      }
      return Proxy.newProxyInstance(Connection.class.getClassLoader(),
          new Class<?>[] {Connection.class}, (cp, cm, ca) -> {
            Object cr = SchemaMigrationLostReplyTest.invoke(c, cm, ca);
            if (!(cr instanceof Statement s) || cr instanceof PreparedStatement) {
              return cr;
            }
            return Proxy.newProxyInstance(Statement.class.getClassLoader(),
                new Class<?>[] {Statement.class}, (sp, sm, sa) -> {
                  Object sr = SchemaMigrationLostReplyTest.invoke(s, sm, sa);
                  if (sm.getName().equals("execute") && sa != null && sa.length == 1
                      && executed.incrementAndGet() == lose) {
                    dropped.incrementAndGet();
                    throw new SQLException("reply lost (the statement ran): " + sa[0], "08006");
                  }
                  return sr;
                });
          });
    }
  }

  private static Object invoke(Object target, java.lang.reflect.Method m, Object[] a)
      throws Throwable {
    try {
      return m.invoke(target, a);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  /** Tables, columns and indexed columns of one prefix, prefix removed. */
  private static List<String> shape(TestDatabase db, String prefix) throws SQLException {
    List<String> out = new ArrayList<>();
    try (Connection c = db.connection()) {
      String schema = c.getSchema();
      var meta = c.getMetaData();
      List<String> tables = new ArrayList<>();
      try (ResultSet rs = meta.getTables(null, schema, null, new String[] {"TABLE"})) {
        while (rs.next()) {
          String t = rs.getString("TABLE_NAME");
          if (t.toLowerCase(Locale.ROOT).startsWith(prefix.toLowerCase(Locale.ROOT))) {
            tables.add(t);
          }
        }
      }
      for (String t : tables) {
        String name = t.substring(prefix.length()).toLowerCase(Locale.ROOT);
        try (ResultSet rs = meta.getColumns(null, schema, t, null)) {
          while (rs.next()) {
            out.add(name + "." + rs.getString("COLUMN_NAME").toLowerCase(Locale.ROOT) + " "
                + rs.getString("TYPE_NAME") + "(" + rs.getInt("COLUMN_SIZE") + ") nullable="
                + rs.getString("IS_NULLABLE"));
          }
        }
        try (ResultSet rs = meta.getIndexInfo(null, schema, t, false, false)) {
          while (rs.next()) {
            if (rs.getString("COLUMN_NAME") != null) {
              out.add(name + " index " + rs.getString("INDEX_NAME").toLowerCase(Locale.ROOT)
                  .replace(prefix.toLowerCase(Locale.ROOT), "") + " on "
                  + rs.getString("COLUMN_NAME").toLowerCase(Locale.ROOT) + " unique="
                  + !rs.getBoolean("NON_UNIQUE"));
            }
          }
        }
      }
    }
    out.replaceAll(l -> l.replaceAll("index primary_key_[0-9a-z]+", "index primary_key"));
    out.sort(null);
    return out;
  }
}
