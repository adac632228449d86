package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.message.Message;
import io.relaykit.tck.FakeClock;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The versioned migration path: scripts per dialect, the version read before any DDL, verify-only
 * opening, concurrent first opens, DML-only credentials, and Flyway running the same scripts.
 */
class SchemaMigrationTest {
  private final FakeClock clock = new FakeClock();

  @ParameterizedTest
  @EnumSource(Dialect.class)
  @DisplayName("the class path holds exactly the scripts the build knows, one per version, for each"
      + " dialect")
  void scriptsShipped(Dialect dialect) throws IOException, URISyntaxException {
    Path dir = Path.of(Schema.class.getClassLoader().getResource(Schema.scriptDirectory(dialect))
        .toURI());
    List<String> names = new ArrayList<>();
    try (Stream<Path> files = Files.list(dir)) {
      files.forEach(f -> names.add(f.getFileName().toString()));
    }
    assertThat(new TreeSet<>(names)).containsExactlyElementsOf(new TreeSet<>(Schema.SCRIPTS));
    for (int v : Schema.versions()) {
      assertThat(Schema.scriptName(v)).startsWith("V" + v + "__");
      String script = Schema.script(dialect, Schema.scriptName(v));
      assertThat(script).as("script %d records its own version", v)
          .containsPattern("(?s)schema_version.*VALUES \\(" + v + ",");
    }
  }

  @Test
  @DisplayName("statements split at semicolons outside quotes, without comments")
  void split() {
    assertThat(Schema.split("-- a comment; with a semicolon\nCREATE TABLE a (x INT);\n"
        + "INSERT INTO a VALUES (';''--'); -- trailing\n\n"))
        .containsExactly("CREATE TABLE a (x INT)", "INSERT INTO a VALUES (';''--')");
  }

  @ParameterizedTest
  @EnumSource(TestDatabase.Kind.class)
  @DisplayName("migrate(false) on an empty database names the missing scripts; once migrated it"
      + " opens")
  void verifyOnly(TestDatabase.Kind kind) {
    TestDatabase db = TestDatabase.shared(kind);
    String prefix = TestDatabase.newPrefix();
    assertThatThrownBy(() -> open(db, prefix, false))
        .isInstanceOf(SchemaVersionException.class)
        .hasMessageContaining("schema version 0")
        .hasMessageContaining(Schema.SCRIPTS.get(0))
        .hasMessageContaining(Schema.scriptDirectory(db.dialect()))
        .hasMessageContaining(prefix);
    assertThat(db.count("SELECT COUNT(*) FROM INFORMATION_SCHEMA.TABLES WHERE LOWER(TABLE_NAME)"
        + " LIKE '" + prefix + "%'")).as("verify-only created nothing").isZero();

    JdbcStorage.migrate(db.dataSource(), db.dialect(), prefix);
    open(db, prefix, false).outboxStore().stats(clock.instant());
    assertThat(db.count("SELECT MAX(version) FROM " + prefix + "schema_version"))
        .isEqualTo(Schema.CURRENT_VERSION);
  }

  @ParameterizedTest
  @EnumSource(TestDatabase.Kind.class)
  @DisplayName("version 2 gives the dead letters of version 1 (keyed by message id) their identity"
      + " (message id, source), and they read back whole")
  void deadLetterIdentityUpgrade(TestDatabase.Kind kind) throws SQLException {
    TestDatabase db = TestDatabase.shared(kind);
    String prefix = TestDatabase.newPrefix();
    Tables tables = new Tables(prefix);
    Message m = Message.builder().id("m@1#x%").type("order.paid").key("o-1").payload("{}")
        .header("tenant", "acme").build();
    try (Connection c = db.connection(); Statement s = c.createStatement()) {
      for (String sql : Schema.statements(db.dialect(), 1, tables)) {
        s.execute(sql);
      }
      try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + tables.deadLetter
          + " (id, source, reason, exception_class, exception_message, attempts,"
          + " first_failure_at, last_failure_at, msg_type, msg_key, headers, payload)"
          + " VALUES (?, ?, ?, NULL, NULL, 3, 1000, 2000, ?, ?, ?, ?)")) {
        ps.setString(1, m.id());
        ps.setString(2, "orders@eu");
        ps.setString(3, "attempts exhausted (3 of 3)");
        ps.setString(4, m.type());
        ps.setString(5, "o-1");
        ps.setString(6, Envelopes.encode(m));
        ps.setBytes(7, m.payload());
        ps.executeUpdate();
      }
    }
    assertThat(db.count("SELECT MAX(version) FROM " + prefix + "schema_version")).isEqualTo(1);

    JdbcStorage storage = open(db, prefix, true);

    String id = DeadLetter.idOf(m.id(), "orders@eu", null);
    assertThat(id).isEqualTo("m%401%23x%25@orders%40eu");
    DeadLetter d = storage.deadLetterStore().find(id).orElseThrow();
    assertThat(d.message()).isEqualTo(m);
    assertThat(d.source()).isEqualTo("orders@eu");
    assertThat(d.group()).isNull();
    assertThat(d.attempts()).isEqualTo(3);
    assertThat(storage.deadLetterStore().list(DeadLetterQuery.all().withMessageId(m.id())))
        .containsExactly(d);
  }

  @ParameterizedTest
  @EnumSource(TestDatabase.Kind.class)
  @DisplayName("version 4 moves journal rows of version 3 (nanosecond instants, before and after"
      + " 1970) to seconds and nanos, and they read back exactly")
  void journalInstantsUpgrade(TestDatabase.Kind kind) throws SQLException {
    TestDatabase db = TestDatabase.shared(kind);
    String prefix = TestDatabase.newPrefix();
    Tables tables = new Tables(prefix);
    java.time.Instant before1970 = java.time.Instant.parse("1969-12-31T23:59:58.250000001Z");
    java.time.Instant after = java.time.Instant.parse("2026-01-01T00:00:00.123456789Z");
    try (Connection c = db.connection(); Statement s = c.createStatement()) {
      for (int version = 1; version <= 3; version++) {
        for (String sql : Schema.statements(db.dialect(), version, tables)) {
          s.execute(sql);
        }
      }
      try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + tables.journal
          + " (journal, event_id, kind, seq, seen_at, name, payload, priority, enqueued_at,"
          + " attempts, next_attempt_at, expires_at, dead_reason) VALUES"
          + " ('j', 'e', 1, 1, NULL, 'n', ?, 1, ?, 2, ?, ?, NULL),"
          + " ('j', 'e', 0, 2, ?, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)")) {
        ps.setBytes(1, "p".getBytes(java.nio.charset.StandardCharsets.UTF_8));
        ps.setLong(2, Instants.toNanos("t", before1970));
        ps.setLong(3, Instants.toNanos("t", after));
        ps.setLong(4, Instants.toNanos("t", after.plusSeconds(60)));
        ps.setLong(5, Instants.toNanos("t", before1970));
        ps.executeUpdate();
      }
    }
    JdbcStorage storage = open(db, prefix, true);
    assertThat(db.count("SELECT MAX(version) FROM " + prefix + "schema_version"))
        .isEqualTo(Schema.CURRENT_VERSION);
    io.relaykit.queue.JournalState state = storage.queueJournal("j").load();
    assertThat(state.pending()).containsExactly(new io.relaykit.queue.QueuedEvent("e", "n", "p",
        io.relaykit.queue.Priority.NORMAL, before1970, 2, after, after.plusSeconds(60)));
    assertThat(state.seen()).containsExactly(java.util.Map.entry("e", before1970));
  }

  @ParameterizedTest
  @EnumSource(TestDatabase.Kind.class)
  @DisplayName("version 10 gives the heads of version 9 whose row is backed off their due time:"
      + " claims pass those keys over, claim the ready key, and the backed-off key once due")
  void headDueUpgrade(TestDatabase.Kind kind) throws SQLException {
    TestDatabase db = TestDatabase.shared(kind);
    String prefix = TestDatabase.newPrefix();
    Tables tables = new Tables(prefix);
    Message later = Message.builder().type("order.event").key("later").payload("l").build();
    Message now = Message.builder().type("order.event").key("now").payload("n").build();
    long hourAhead = Instants.toNanos("due", java.time.Instant.now().plus(Duration.ofHours(1)));
    try (Connection c = db.connection(); Statement s = c.createStatement()) {
      for (int version : Schema.versions()) {
        if (version < 10) {
          for (String sql : Schema.statements(db.dialect(), version, tables)) {
            s.execute(sql);
          }
        }
      }
      try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + tables.outbox
          + " (destination, message_id, msg_key, headers, payload, created_at, order_dest, state,"
          + " ready_at, attempts) VALUES ('orders', ?, ?, ?, ?, 0, '', 0, ?, ?)")) {
        for (Message m : List.of(later, now)) {
          boolean backedOff = m == later;
          ps.setString(1, m.id());
          ps.setString(2, m.key().orElseThrow());
          ps.setString(3, Envelopes.encode(m));
          ps.setBytes(4, m.payload());
          ps.setLong(5, backedOff ? hourAhead : 0);
          ps.setInt(6, backedOff ? 1 : 0);
          ps.executeUpdate();
        }
      }
      s.execute("INSERT INTO " + tables.outboxHead + " (msg_key, order_dest, head_seq)"
          + " SELECT msg_key, order_dest, MIN(seq) FROM " + tables.outbox
          + " GROUP BY msg_key, order_dest");
    }

    JdbcStorage storage = open(db, prefix, true);
    assertThat(db.count("SELECT COUNT(*) FROM " + tables.outboxHead + " WHERE head_due = "
        + hourAhead + " AND msg_key = 'later'")).isEqualTo(1);
    assertThat(db.count("SELECT COUNT(*) FROM " + tables.outboxHead + " WHERE head_due = 0"
        + " AND msg_key = 'now'")).isEqualTo(1);
    JdbcOutboxStore outbox = storage.outboxStore();
    assertThat(outbox.claim("r", 10, Duration.ofSeconds(30), java.time.Instant.now()))
        .extracting(r -> r.message().id()).containsExactly(now.id());
    // Once due (the database's clock is real here: move the row's due time back instead).
    try (Connection c = db.connection(); Statement s = c.createStatement()) {
      s.execute("UPDATE " + tables.outbox + " SET ready_at = 1 WHERE msg_key = 'later'");
      s.execute("UPDATE " + tables.outboxHead + " SET head_due = 1 WHERE msg_key = 'later'");
    }
    assertThat(outbox.claim("r", 10, Duration.ofSeconds(30), java.time.Instant.now()))
        .extracting(r -> r.message().id()).containsExactly(later.id());
  }

  @ParameterizedTest
  @EnumSource(TestDatabase.Kind.class)
  @DisplayName("four instances opening one fresh schema at once all succeed, five times over")
  void concurrentFirstOpen(TestDatabase.Kind kind) throws Exception {
    TestDatabase db = TestDatabase.shared(kind);
    // Four threads of our own: the barrier needs all four at once, which the common pool does not
    // promise (parallelism 1 on a 2-core machine, and JDK 25 queues async tasks there).
    ExecutorService threads = Executors.newFixedThreadPool(4);
    try {
      openConcurrently(db, threads);
    } finally {
      threads.shutdownNow();
    }
  }

  @ParameterizedTest
  @EnumSource(TestDatabase.Kind.class)
  @DisplayName("four instances opening one fresh schema at once, two of them spelling the prefix"
      + " in upper case (the same tables: unquoted names fold), all succeed: the migration lock"
      + " is taken on the folded prefix")
  void concurrentFirstOpenPrefixCase(TestDatabase.Kind kind) throws Exception {
    TestDatabase db = TestDatabase.shared(kind);
    ExecutorService threads = Executors.newFixedThreadPool(4);
    try {
      openConcurrently(db, threads, true);
    } finally {
      threads.shutdownNow();
    }
  }

  private void openConcurrently(TestDatabase db, ExecutorService threads) throws Exception {
    openConcurrently(db, threads, false);
  }

  private void openConcurrently(TestDatabase db, ExecutorService threads, boolean mixedCase)
      throws Exception {
    for (int round = 0; round < 5; round++) {
      String prefix = TestDatabase.newPrefix();
      CyclicBarrier start = new CyclicBarrier(4);
      List<CompletableFuture<JdbcStorage>> opens = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        String spelled = mixedCase && i % 2 == 1
            ? prefix.toUpperCase(java.util.Locale.ROOT) : prefix;
        opens.add(CompletableFuture.supplyAsync(() -> {
          try {
            start.await(10, TimeUnit.SECONDS);
          } catch (Exception e) {
            throw new IllegalStateException(e);
          }
          return open(db, spelled, true);
        }, threads));
      }
      for (CompletableFuture<JdbcStorage> f : opens) {
        f.get(60, TimeUnit.SECONDS);
      }
      assertThat(db.count("SELECT COUNT(*) FROM " + prefix + "schema_version"))
          .isEqualTo((long) Schema.versions().size());
    }
  }

  @Test
  @DisplayName("PostgreSQL: a current schema opens with DML-only credentials (no DDL is run)")
  void dmlOnlyCredentials() throws SQLException {
    TestDatabase db = TestDatabase.shared(TestDatabase.Kind.POSTGRESQL);
    String prefix = TestDatabase.newPrefix();
    JdbcStorage.migrate(db.dataSource(), db.dialect(), prefix);
    String role = "rk_dml_" + UUID.randomUUID().toString().replace("-", "").substring(0, 10);
    String schema;
    try (Connection c = db.connection(); Statement s = c.createStatement()) {
      try (ResultSet rs = s.executeQuery("SELECT current_schema()")) {
        rs.next();
        schema = rs.getString(1);
      }
      s.execute("CREATE ROLE " + role + " LOGIN");
      s.execute("GRANT USAGE ON SCHEMA " + schema + " TO " + role);
      s.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA " + schema + " TO "
          + role);
      s.execute("GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA " + schema + " TO " + role);
    }
    String url = TestDatabase.postgresUrl().replaceAll("user=[^&]*", "user=" + role)
        + "&currentSchema=" + schema;
    try (com.zaxxer.hikari.HikariDataSource pool = pool(url)) {
      // The role cannot create tables: proves that opening ran no DDL.
      try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
        assertThatThrownBy(() -> s.execute("CREATE TABLE " + prefix + "probe (x INT)"))
            .isInstanceOf(SQLException.class);
      }
      JdbcStorage storage = JdbcStorage.open(pool, Dialect.POSTGRESQL, prefix, Duration.ofDays(1),
          clock);
      assertThat(storage.outboxStore().stats(clock.instant()).unsent()).isZero();
    } finally {
      try (Connection c = db.connection(); Statement s = c.createStatement()) {
        s.execute("DROP OWNED BY " + role);
        s.execute("DROP ROLE " + role);
      }
    }
  }

  @ParameterizedTest
  @EnumSource(TestDatabase.Kind.class)
  @DisplayName("Flyway runs the shipped scripts with the prefix placeholder; relaykit then opens"
      + " with migrate(false), and the schema equals one relaykit migrated itself")
  void flywayRunsTheScripts(TestDatabase.Kind kind) throws SQLException {
    TestDatabase db = TestDatabase.shared(kind);
    String byFlyway = TestDatabase.newPrefix();
    String byRelaykit = TestDatabase.newPrefix();
    Flyway.configure()
        .dataSource(db.dataSource())
        .locations("classpath:" + Schema.scriptDirectory(db.dialect()))
        .placeholders(Map.of("prefix", byFlyway))
        .table(byFlyway + "flyway_history")
        .baselineOnMigrate(true)
        .baselineVersion("0")
        .load()
        .migrate();
    open(db, byFlyway, false);
    open(db, byRelaykit, true);
    assertThat(shape(db, byFlyway)).isEqualTo(shape(db, byRelaykit)).isNotEmpty();
  }

  /** Tables, columns (type, size, nullability) and indexed columns of one prefix, prefix removed. */
  private static List<String> shape(TestDatabase db, String prefix) throws SQLException {
    List<String> out = new ArrayList<>();
    try (Connection c = db.connection()) {
      String schema = c.getSchema();
      var meta = c.getMetaData();
      List<String> tables = new ArrayList<>();
      try (ResultSet rs = meta.getTables(null, schema, null, new String[] {"TABLE"})) {
        while (rs.next()) {
          String t = rs.getString("TABLE_NAME");
          if (t.toLowerCase(Locale.ROOT).startsWith(prefix.toLowerCase(Locale.ROOT))
              && !t.toLowerCase(Locale.ROOT).endsWith("flyway_history")) {
            tables.add(t);
          }
        }
      }
      tables.sort(null);
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
    // H2 names primary key indexes after the table's object id; only the column set matters.
    out.replaceAll(l -> l.replaceAll("index primary_key_[0-9a-z]+", "index primary_key"));
    out.sort(null);
    return out;
  }

  private JdbcStorage open(TestDatabase db, String prefix, boolean migrate) {
    if (migrate) {
      return JdbcStorage.open(db.dataSource(), db.dialect(), prefix, Duration.ofDays(1), clock);
    }
    return JdbcStorage.openVerified(db.dataSource(), db.dialect(), prefix, Duration.ofDays(1),
        clock);
  }

  private static com.zaxxer.hikari.HikariDataSource pool(String url) {
    com.zaxxer.hikari.HikariConfig hc = new com.zaxxer.hikari.HikariConfig();
    hc.setJdbcUrl(url);
    hc.setMaximumPoolSize(2);
    return new com.zaxxer.hikari.HikariDataSource(hc);
  }
}
