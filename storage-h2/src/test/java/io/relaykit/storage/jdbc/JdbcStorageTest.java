package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.message.Message;
import io.relaykit.tck.FakeClock;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.time.InstantSource;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Schema versions, dialects, configuration and opening storage. */
class JdbcStorageTest {
  private final FakeClock clock = new FakeClock();

  @Nested
  @DisplayName("schema")
  class SchemaVersions {
    private final TestDatabase db = TestDatabase.shared(TestDatabase.Kind.H2_MEMORY);

    @Test
    @DisplayName("opening creates every table at the current version; opening again changes nothing")
    void createsAndReopens() {
      String prefix = TestDatabase.newPrefix();
      db.storage(prefix, Duration.ofDays(1), clock);
      db.storage(prefix, Duration.ofDays(1), clock);
      assertThat(db.count("SELECT COUNT(*) FROM " + prefix + "schema_version"))
          .isEqualTo((long) Schema.versions().size());
      assertThat(db.count("SELECT MAX(version) FROM " + prefix + "schema_version"))
          .isEqualTo(Schema.CURRENT_VERSION);
      for (String table : new String[] {"outbox", "dead_letter", "idempotency", "version_guard",
          "journal"}) {
        assertThat(db.count("SELECT COUNT(*) FROM " + prefix + table)).isZero();
      }
    }

    @Test
    @DisplayName("tables at a newer schema version are refused with a clear error")
    void newerSchemaRefused() throws Exception {
      String prefix = TestDatabase.newPrefix();
      db.storage(prefix, Duration.ofDays(1), clock);
      try (Connection c = db.connection(); Statement s = c.createStatement()) {
        s.execute("INSERT INTO " + prefix + "schema_version VALUES (99, 0)");
      }
      assertThatThrownBy(() -> db.storage(prefix, Duration.ofDays(1), clock))
          .isInstanceOf(SchemaVersionException.class)
          .hasMessageContaining("schema version 99")
          .hasMessageContaining("up to " + Schema.CURRENT_VERSION)
          .hasMessageContaining(prefix);
    }

    @Test
    @DisplayName("opening moves the H2 outbox identity past committed rows it is behind, as a kill -9 can leave it")
    void identityRealigned() throws Exception {
      String prefix = TestDatabase.newPrefix();
      JdbcStorage first = db.storage(prefix, Duration.ofDays(1), clock);
      long seq;
      try (Connection c = db.connection()) {
        seq = first.outboxStore().append(c, "d", Message.builder().type("t").payload("x").build());
      }
      // Committed rows at the generator's next values: what the demo's kill -9 test once found.
      try (Connection c = db.connection(); Statement s = c.createStatement()) {
        for (long i = seq + 1; i <= seq + 100; i++) {
          s.execute("INSERT INTO " + prefix + "outbox (seq, destination, message_id, headers, "
              + "payload, created_at, state, ready_at, attempts) VALUES (" + i + ", 'd', 'm" + i
              + "', '', X'00', 0, 0, 0, 0)");
        }
      }
      JdbcStorage reopened = db.storage(prefix, Duration.ofDays(1), clock);
      try (Connection c = db.connection()) {
        assertThat(reopened.outboxStore().append(c, "d",
            Message.builder().type("t").payload("y").build())).isEqualTo(seq + 101);
      }
      // Opening again when the generator is ahead changes nothing.
      JdbcStorage again = db.storage(prefix, Duration.ofDays(1), clock);
      try (Connection c = db.connection()) {
        assertThat(again.outboxStore().append(c, "d",
            Message.builder().type("t").payload("z").build())).isEqualTo(seq + 102);
      }
    }

    @Test
    @DisplayName("table prefixes keep two storages on one database apart")
    void prefixesIsolate() throws Exception {
      JdbcStorage a = db.storage(clock);
      JdbcStorage b = db.storage(clock);
      try (Connection c = db.connection()) {
        a.outboxStore().append(c, "d", Message.builder().type("t").payload("x").build());
      }
      assertThat(a.outboxStore().stats(clock.instant()).unsent()).isEqualTo(1);
      assertThat(b.outboxStore().stats(clock.instant()).unsent()).isZero();
    }

    @Test
    @DisplayName("an invalid table prefix is refused by name before anything is created")
    void invalidPrefix() {
      for (String bad : new String[] {"", "1abc", "a-b", "a;drop table x", "x".repeat(31)}) {
        assertThatThrownBy(() -> db.storage(bad, Duration.ofDays(1), clock))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("tablePrefix");
      }
      assertThatThrownBy(() -> db.storage(null, Duration.ofDays(1), clock))
          .hasMessageContaining("tablePrefix");
    }

    @Test
    @DisplayName("a dialect that does not match the database is refused")
    void dialectMismatch() {
      assertThatThrownBy(() -> JdbcStorage.open(db.dataSource(), Dialect.POSTGRESQL,
          TestDatabase.newPrefix(), Duration.ofDays(1), clock))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("POSTGRESQL").hasMessageContaining("H2");
    }
  }

  @Nested
  @DisplayName("configuration")
  class Config {
    @Test
    @DisplayName("defaults are pinned")
    void defaults() {
      JdbcStorageConfig c = JdbcStorageConfig.builder().jdbcUrl("jdbc:h2:mem:x").build();
      assertThat(c.poolSize()).isEqualTo(4);
      assertThat(c.tablePrefix()).isEqualTo("relaykit_");
      assertThat(c.lease()).isEqualTo(Duration.ofSeconds(30));
      assertThat(c.retention()).isEqualTo(Duration.ofDays(7));
      assertThat(c.dialect()).isEqualTo(Dialect.H2);
      assertThat(c.effectiveJdbcUrl()).isEqualTo("jdbc:h2:mem:x;WRITE_DELAY=0;LOCK_TIMEOUT=10000;DB_CLOSE_DELAY=-1");
      assertThat(c.listener()).isEmpty();
    }

    @Test
    @DisplayName("H2 URLs gain WRITE_DELAY=0 and LOCK_TIMEOUT unless they set them, file URLs the retry: file system; PostgreSQL URLs are kept")
    void effectiveUrl() {
      assertThat(JdbcStorageConfig.builder().jdbcUrl("jdbc:h2:file:/tmp/q").build()
          .effectiveJdbcUrl()).isEqualTo("jdbc:h2:retry:/tmp/q;WRITE_DELAY=0;LOCK_TIMEOUT=10000");
      assertThat(JdbcStorageConfig.builder().jdbcUrl("jdbc:h2:file:/tmp/q;write_delay=100;lock_timeout=5").build()
          .effectiveJdbcUrl()).isEqualTo("jdbc:h2:retry:/tmp/q;write_delay=100;lock_timeout=5");
      assertThat(JdbcStorageConfig.builder().jdbcUrl("jdbc:h2:./data/q").build()
          .effectiveJdbcUrl()).startsWith("jdbc:h2:retry:./data/q;");
      assertThat(JdbcStorageConfig.builder().jdbcUrl("jdbc:h2:C:/data/q").build()
          .effectiveJdbcUrl()).startsWith("jdbc:h2:retry:C:/data/q;");
      assertThat(JdbcStorageConfig.builder().jdbcUrl("jdbc:h2:async:/tmp/q").build()
          .effectiveJdbcUrl()).startsWith("jdbc:h2:async:/tmp/q;");
      assertThat(JdbcStorageConfig.builder().jdbcUrl("jdbc:h2:tcp://localhost/q").build()
          .effectiveJdbcUrl()).startsWith("jdbc:h2:tcp://localhost/q;");
      JdbcStorageConfig pg = JdbcStorageConfig.builder()
          .jdbcUrl("jdbc:postgresql://127.0.0.1:5432/postgres").password("secret").build();
      assertThat(pg.dialect()).isEqualTo(Dialect.POSTGRESQL);
      assertThat(pg.effectiveJdbcUrl()).isEqualTo("jdbc:postgresql://127.0.0.1:5432/postgres");
      assertThat(pg.toString()).doesNotContain("secret");
    }

    @Test
    @DisplayName("invalid values are refused, naming the field and the value")
    void validation() {
      assertThatThrownBy(() -> JdbcStorageConfig.builder().build())
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("jdbcUrl");
      assertThatThrownBy(() -> JdbcStorageConfig.builder().jdbcUrl("jdbc:mysql://x/y").build())
          .hasMessageContaining("jdbcUrl").hasMessageContaining("jdbc:mysql://x/y");
      assertThatThrownBy(() -> JdbcStorageConfig.builder().jdbcUrl("jdbc:h2:mem:x").poolSize(0)
          .build()).hasMessageContaining("poolSize").hasMessageContaining("0");
      assertThatThrownBy(() -> JdbcStorageConfig.builder().jdbcUrl("jdbc:h2:mem:x")
          .tablePrefix("bad-prefix").build()).hasMessageContaining("tablePrefix")
          .hasMessageContaining("bad-prefix");
      assertThatThrownBy(() -> JdbcStorageConfig.builder().jdbcUrl("jdbc:h2:mem:x")
          .lease(Duration.ZERO).build()).hasMessageContaining("lease");
      assertThatThrownBy(() -> JdbcStorageConfig.builder().jdbcUrl("jdbc:h2:mem:x")
          .retention(Duration.ofSeconds(-1)).build()).hasMessageContaining("retention");
    }

    @Test
    @DisplayName("a config opens a pooled H2 file database and a PostgreSQL database")
    void opensFromConfig(@TempDir Path dir) throws Exception {
      String prefix = TestDatabase.newPrefix();
      try (JdbcStorage h2 = JdbcStorage.open(JdbcStorageConfig.builder()
          .jdbcUrl("jdbc:h2:file:" + dir.resolve("db").toAbsolutePath()).tablePrefix(prefix)
          .build(), InstantSource.system())) {
        assertThat(h2.dialect()).isEqualTo(Dialect.H2);
        try (Connection c = h2.dataSource().getConnection(); Statement s = c.createStatement();
            var rs = s.executeQuery("SELECT SETTING_VALUE FROM INFORMATION_SCHEMA.SETTINGS"
                + " WHERE SETTING_NAME = 'WRITE_DELAY'")) {
          assertThat(rs.next()).isTrue();
          assertThat(rs.getString(1)).isEqualTo("0");
        }
      }
      TestDatabase pg = TestDatabase.shared(TestDatabase.Kind.POSTGRESQL);
      try (JdbcStorage storage = JdbcStorage.open(JdbcStorageConfig.builder()
          .jdbcUrl(pg.url).tablePrefix(prefix).poolSize(2).build(), InstantSource.system())) {
        assertThat(storage.dialect()).isEqualTo(Dialect.POSTGRESQL);
        assertThat(storage.versionGuard().advance("order-1", 3)).isTrue();
        assertThat(storage.versionGuard().current("order-1")).hasValue(3);
      } finally {
        try (Connection c = java.sql.DriverManager.getConnection(pg.url);
            Statement s = c.createStatement()) {
          for (String t : new String[] {"outbox", "dead_letter", "idempotency", "version_guard",
              "journal", "schema_version"}) {
            s.execute("DROP TABLE IF EXISTS " + prefix + t);
          }
        }
      }
    }

    @Test
    @DisplayName("an unreachable PostgreSQL fails with a message naming PostgreSQL and how to start"
        + " it")
    void postgresDown() {
      assertThatThrownBy(() -> TestDatabase.requirePostgres(
          "jdbc:postgresql://127.0.0.1:1/postgres?user=postgres&connectTimeout=2"))
          .isInstanceOf(AssertionError.class)
          .hasMessageContaining("PostgreSQL is not reachable")
          .hasMessageContaining("pg_ctlcluster --skip-systemctl-redirect")
          .hasMessageContaining("RELAYKIT_POSTGRES_URL");
      assertThatThrownBy(() -> JdbcStorage.open(JdbcStorageConfig.builder()
          .jdbcUrl("jdbc:postgresql://127.0.0.1:1/postgres?user=postgres&connectTimeout=2")
          .build(), InstantSource.system()))
          .isInstanceOf(JdbcStorageException.class).hasMessageContaining("POSTGRESQL");
    }
  }
}
