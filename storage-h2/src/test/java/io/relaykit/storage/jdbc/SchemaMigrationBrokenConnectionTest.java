package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.PrintWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * A PostgreSQL migration whose connection dies mid-transaction: the server ends the session
 * before the first script statement, so the statement fails, and the rollback and the reset of
 * auto-commit then fail on the closed connection too. The error the caller sees names the failed
 * step; the rollback's failure is only suppressed on it.
 */
@DisplayName("PostgreSQL migration on a connection the server ends mid-transaction")
class SchemaMigrationBrokenConnectionTest {

  @Test
  @DisplayName("the failed step is the error thrown; the failing rollback is suppressed on it;"
      + " a later open migrates")
  void originalErrorKept() throws Exception {
    TestDatabase db = TestDatabase.shared(TestDatabase.Kind.POSTGRESQL);
    String prefix = TestDatabase.newPrefix();
    String schema;
    try (Connection c = db.dataSource().getConnection()) {
      schema = c.getSchema();
    }
    String url = TestDatabase.postgresUrl() + "&currentSchema=" + schema;
    AtomicBoolean killed = new AtomicBoolean();
    DataSource killing = new KillingDataSource(url, killed);

    assertThatThrownBy(() -> Schema.migrate(killing, Dialect.POSTGRESQL, new Tables(prefix),
        true))
        .isInstanceOf(JdbcStorageException.class)
        .hasMessageContaining("schema version 1")
        .satisfies(e -> {
          Throwable step = e.getCause();
          assertThat(step).isInstanceOf(SQLException.class)
              .hasMessageContaining("schema version 1");
          assertThat(step.getSuppressed()).as("the rollback's failure, kept aside").isNotEmpty();
        });
    assertThat(killed).isTrue();

    JdbcStorage.open(db.dataSource(), Dialect.POSTGRESQL, prefix, Duration.ofDays(1),
        java.time.InstantSource.system());
    assertThat(db.count("SELECT COUNT(*) FROM " + prefix + "schema_version"))
        .isEqualTo(Schema.versions().size());
  }

  /** Plain connections whose backend the server terminates when the first script runs. */
  private static final class KillingDataSource implements DataSource {
    private final String url;
    private final AtomicBoolean killed;

    KillingDataSource(String url, AtomicBoolean killed) {
      this.url = url;
      this.killed = killed;
    }

    @Override
    public Connection getConnection() throws SQLException {
      Connection real = DriverManager.getConnection(url);
      int pid;
      try (Statement s = real.createStatement();
          ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
        rs.next();
        pid = rs.getInt(1);
      }
      return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(),
          new Class<?>[] {Connection.class}, (proxy, m, args) -> {
            if (m.getName().equals("createStatement") && !real.getAutoCommit()
                && killed.compareAndSet(false, true)) {
              try (Connection other = DriverManager.getConnection(url);
                  Statement s = other.createStatement()) {
                s.execute("SELECT pg_terminate_backend(" + pid + ")");
              }
            }
            try {
              return m.invoke(real, args);
            } catch (InvocationTargetException e) {
              throw e.getCause();
            }
          });
    }

    @Override
    public Connection getConnection(String user, String password) throws SQLException {
      return getConnection();
    }

    @Override
    public PrintWriter getLogWriter() {
      return null;
    }

    @Override
    public void setLogWriter(PrintWriter out) {}

    @Override
    public void setLoginTimeout(int seconds) {}

    @Override
    public int getLoginTimeout() {
      return 0;
    }

    @Override
    public Logger getParentLogger() {
      return Logger.getGlobal();
    }

    @Override
    public <T> T unwrap(Class<T> iface) throws SQLException {
      throw new SQLException("not a wrapper");
    }

    @Override
    public boolean isWrapperFor(Class<?> iface) {
      return false;
    }
  }
}
