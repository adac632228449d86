package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An H2 file database and a caller interrupted in the middle of a write: with the URL that
 * {@link JdbcStorageConfig#effectiveJdbcUrl()} gives, the database stays open for everyone.
 */
@DisplayName("an H2 file database written by an interrupted thread")
class H2InterruptedWriterTest {

  @TempDir
  Path tempDir;

  /** Writes 200 rows, each committed, on a thread that interrupts itself before every one. */
  private static Throwable writeInterrupted(HikariDataSource ds) throws Exception {
    Throwable[] failure = new Throwable[1];
    Thread t = new Thread(() -> {
      for (int i = 0; i < 200; i++) {
        Thread.currentThread().interrupt();
        try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
          s.executeUpdate("INSERT INTO t VALUES (" + i + ", REPEAT('x', 2000))");
        } catch (Exception e) {
          failure[0] = e;
        }
        Thread.interrupted();
      }
    });
    t.start();
    t.join(TimeUnit.SECONDS.toMillis(60));
    return failure[0];
  }

  private static HikariDataSource pool(String url) {
    HikariConfig hc = new HikariConfig();
    hc.setJdbcUrl(url);
    hc.setMaximumPoolSize(2);
    return new HikariDataSource(hc);
  }

  @Test
  @DisplayName("with the URL relaykit uses, an interrupted writer closes nothing: later writes from other threads work")
  void effectiveUrlSurvivesInterrupts() throws Exception {
    JdbcStorageConfig config = JdbcStorageConfig.builder()
        .jdbcUrl("jdbc:h2:file:" + tempDir.resolve("db").toAbsolutePath()).build();
    try (HikariDataSource ds = pool(config.effectiveJdbcUrl())) {
      try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
        s.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(4000))");
      }
      writeInterrupted(ds);
      try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
        s.executeUpdate("INSERT INTO t VALUES (1000, 'after')");
        try (ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM t WHERE id = 1000")) {
          rs.next();
          assertThat(rs.getInt(1)).isEqualTo(1);
        }
      }
    }
  }

  @Test
  @DisplayName("the plain file URL (what the retry: file system prevents): an interrupted writer closes the database")
  void plainUrlIsClosedByInterrupts() throws Exception {
    String url = "jdbc:h2:file:" + tempDir.resolve("plain").toAbsolutePath() + ";WRITE_DELAY=0";
    try (HikariDataSource ds = pool(url)) {
      try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
        s.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(4000))");
      }
      Throwable failure = writeInterrupted(ds);
      assertThat(failure).as("the interrupted writes failed").isNotNull();
    }
  }
}
