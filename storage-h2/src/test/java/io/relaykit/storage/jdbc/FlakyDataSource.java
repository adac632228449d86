package io.relaykit.storage.jdbc;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * A real pool with a switch, to take the database away from a running relay: while down, every
 * {@code getConnection} fails as a refused connection would; {@link #closeNextConnections} hands
 * out connections that are already closed, so the failure happens mid-operation instead.
 */
final class FlakyDataSource implements DataSource {
  private final DataSource real;
  private volatile boolean down;
  private final AtomicInteger closedToHandOut = new AtomicInteger();
  final AtomicInteger failures = new AtomicInteger();

  FlakyDataSource(DataSource real) {
    this.real = real;
  }

  void down(boolean down) {
    this.down = down;
  }

  void closeNextConnections(int n) {
    closedToHandOut.set(n);
  }

  @Override
  public Connection getConnection() throws SQLException {
    if (down) {
      failures.incrementAndGet();
      throw new SQLException("connection refused (the test took the database down)", "08001");
    }
    Connection c = real.getConnection();
    if (closedToHandOut.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
      failures.incrementAndGet();
      c.close();
    }
    return c;
  }

  @Override
  public Connection getConnection(String user, String password) throws SQLException {
    return getConnection();
  }

  @Override
  public PrintWriter getLogWriter() throws SQLException {
    return real.getLogWriter();
  }

  @Override
  public void setLogWriter(PrintWriter out) throws SQLException {
    real.setLogWriter(out);
  }

  @Override
  public void setLoginTimeout(int seconds) throws SQLException {
    real.setLoginTimeout(seconds);
  }

  @Override
  public int getLoginTimeout() throws SQLException {
    return real.getLoginTimeout();
  }

  @Override
  public Logger getParentLogger() throws SQLFeatureNotSupportedException {
    return real.getParentLogger();
  }

  @Override
  public <T> T unwrap(Class<T> iface) throws SQLException {
    return real.unwrap(iface);
  }

  @Override
  public boolean isWrapperFor(Class<?> iface) throws SQLException {
    return real.isWrapperFor(iface);
  }
}
