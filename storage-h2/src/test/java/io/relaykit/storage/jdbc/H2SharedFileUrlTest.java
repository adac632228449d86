package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Clock;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An application that opens an H2 file database with its own connections and gives relaykit the
 * same URL, in the same JVM: both must reach the one database. relaykit adds H2's {@code retry:}
 * file system to file URLs, and H2 keeps a database per name, so {@code jdbc:h2:file:/d/db} and
 * {@code jdbc:h2:retry:/d/db} would be two databases on one file: the second fails with
 * "Database may be already in use" (90020).
 */
@DisplayName("an H2 file database the application opened itself with the same URL")
class H2SharedFileUrlTest {

  @TempDir
  Path tempDir;

  @Test
  @DisplayName("the application's connection opened first with the plain file URL: relaykit opens the same database and sees its rows")
  void applicationFirstWithPlainUrl() throws Exception {
    String url = "jdbc:h2:file:" + tempDir.resolve("app").toAbsolutePath() + ";DB_CLOSE_DELAY=-1";
    try (Connection app = DriverManager.getConnection(url, "sa", "")) {
      try (Statement s = app.createStatement()) {
        s.execute("CREATE TABLE app_orders (id INT PRIMARY KEY)");
        s.execute("INSERT INTO app_orders VALUES (7)");
      }
      JdbcStorageConfig config = JdbcStorageConfig.builder().jdbcUrl(url).username("sa")
          .password("").tablePrefix("a5shared_").build();
      try (JdbcStorage storage = JdbcStorage.open(config, Clock.systemUTC());
          Connection c = storage.dataSource().getConnection();
          Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM app_orders")) {
        rs.next();
        assertThat(rs.getInt(1)).isEqualTo(1);
      }
    }
  }
}
