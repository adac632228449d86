package io.relaykit.storage.jdbc;

import java.io.PrintWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * A data source whose connections run a test's hook around the next {@code commit()}: the hook
 * gets the real commit to run (or not) and may throw, so a test can lose a commit's
 * acknowledgement at the exact moment it matters. One hook, used once.
 */
final class CommitHookDataSource implements DataSource {

  /** What the next commit does instead of committing; {@code commit} runs the real one. */
  interface Hook {
    void around(SqlAction commit) throws SQLException;
  }

  interface SqlAction {
    void run() throws SQLException;
  }

  private final DataSource real;
  private final AtomicReference<Hook> next = new AtomicReference<>();

  CommitHookDataSource(DataSource real) {
    this.real = real;
  }

  /** Runs {@code hook} around the next commit of any connection. */
  void onNextCommit(Hook hook) {
    next.set(hook);
  }

  @Override
  public Connection getConnection() throws SQLException {
    Connection c = real.getConnection();
    return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(),
        new Class<?>[] {Connection.class}, (proxy, method, args) -> {
          if (method.getName().equals("commit") && method.getParameterCount() == 0) {
            Hook hook = next.getAndSet(null);
            if (hook != null) {
              hook.around(c::commit);
              return null;
            }
          }
          try {
            return method.invoke(c, args);
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
