package io.relaykit.storage.jdbc;

import io.relaykit.message.Message;
import io.relaykit.tck.OutboxStoreContract.OpenTransaction;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;

/** Business transactions and key-head counts for the JDBC subclasses of the outbox kits. */
final class JdbcTransactions {
  private JdbcTransactions() {}

  /** A transaction on a new connection of {@code dataSource}, appending through {@code store}. */
  static OpenTransaction open(DataSource dataSource, JdbcOutboxStore store) {
    Connection c;
    try {
      c = dataSource.getConnection();
      c.setAutoCommit(false);
    } catch (SQLException e) {
      throw new AssertionError(e);
    }
    return new OpenTransaction() {
      @Override
      public void append(String destination, Message message) {
        try {
          store.append(c, destination, message);
        } catch (SQLException e) {
          throw new AssertionError(e);
        }
      }

      @Override
      public void commit() {
        end(true);
      }

      @Override
      public void rollback() {
        end(false);
      }

      private void end(boolean commit) {
        try {
          if (c.isClosed()) {
            return; // ended already
          }
        } catch (SQLException e) {
          throw new AssertionError(e);
        }
        try (c) {
          if (commit) {
            c.commit();
          } else {
            c.rollback();
          }
        } catch (SQLException e) {
          throw new AssertionError(e);
        }
      }
    };
  }

  /** Key heads a claim walks: head rows whose head_seq points at a row. */
  static long walkableHeads(DataSource dataSource, String prefix) {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM " + prefix
            + "outbox_head WHERE head_seq IS NOT NULL")) {
      rs.next();
      return rs.getLong(1);
    } catch (SQLException e) {
      throw new AssertionError(e);
    }
  }
}
