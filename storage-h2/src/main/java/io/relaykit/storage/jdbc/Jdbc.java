package io.relaykit.storage.jdbc;

import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;

/** Connection and transaction plumbing shared by the stores. */
final class Jdbc {
  private Jdbc() {}

  /** Work against a connection; may throw {@link SQLException}. */
  @FunctionalInterface
  interface SqlWork<T> {
    T run(Connection c) throws SQLException;
  }

  /**
   * Runs {@code work} in one transaction (READ COMMITTED) on a pooled connection: commits on
   * return, rolls back on any exception. SQL failures become {@link JdbcStorageException}s that
   * say what was being done.
   */
  static <T> T inTransaction(DataSource ds, String what, SqlWork<T> work) {
    try (Connection c = ds.getConnection()) {
      boolean autoCommit = c.getAutoCommit();
      c.setAutoCommit(false);
      try {
        T result = work.run(c);
        c.commit();
        return result;
      } catch (SQLException | RuntimeException | Error e) {
        rollbackQuietly(c, e);
        throw e;
      } finally {
        restoreAutoCommit(c, autoCommit);
      }
    } catch (SQLException e) {
      throw new JdbcStorageException(what + " failed: " + e.getMessage(), e);
    }
  }

  /** Runs {@code work} on a pooled connection in auto-commit mode: one statement, one commit. */
  static <T> T autoCommit(DataSource ds, String what, SqlWork<T> work) {
    try (Connection c = ds.getConnection()) {
      if (!c.getAutoCommit()) {
        c.setAutoCommit(true);
      }
      return work.run(c);
    } catch (SQLException e) {
      throw new JdbcStorageException(what + " failed: " + e.getMessage(), e);
    }
  }

  /**
   * The rows a JDBC batch changed: the sum of its positive update counts ({@code
   * SUCCESS_NO_INFO}, negative, counts as none).
   */
  static int rowsChanged(int[] updateCounts) {
    int changed = 0;
    for (int n : updateCounts) {
      changed += n > 0 ? n : 0;
    }
    return changed;
  }

  private static void rollbackQuietly(Connection c, Throwable cause) {
    try {
      if (!c.isClosed()) {
        c.rollback();
      }
    } catch (SQLException e) {
      cause.addSuppressed(e);
    }
  }

  private static void restoreAutoCommit(Connection c, boolean autoCommit) {
    try {
      if (!c.isClosed()) {
        c.setAutoCommit(autoCommit);
      }
    } catch (SQLException ignored) {
      // The pool validates connections on checkout; a broken one is evicted there.
    }
  }
}
