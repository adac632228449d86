package io.relaykit.spring.boot;

import io.relaykit.idempotency.IdempotentAnswer;
import io.relaykit.idempotency.IdempotentAnswerStore;
import io.relaykit.storage.jdbc.Dialect;
import io.relaykit.storage.jdbc.JdbcStorage;
import io.relaykit.storage.jdbc.JdbcStorageException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;

/**
 * First answers of the Idempotency-Key filter in the application's database, next to relaykit's
 * tables: one row per key in {@code <prefix>http_answers} (created if missing), kept for the
 * storage's retention measured on the database's clock (PostgreSQL's {@code clock_timestamp()},
 * H2's {@code RELAYKIT_CLOCK_MILLIS()} from relaykit-jdbc's schema), so every instance of the
 * application replays the same answer. Each find and save is one autocommitted statement on its
 * own connection (outside the request's transaction, which has committed when the answer is
 * saved); every 256th save also deletes up to 1 000 expired rows. A failing database throws
 * {@link JdbcStorageException} naming the operation.
 */
final class JdbcIdempotentAnswerStore implements IdempotentAnswerStore {

  private static final int PURGE_EVERY = 256;
  private static final int PURGE_BATCH = 1_000;

  private final DataSource dataSource;
  private final Dialect dialect;
  private final String table;
  private final long retentionMillis;
  private final AtomicLong saves = new AtomicLong();

  JdbcIdempotentAnswerStore(JdbcStorage storage) {
    this(storage.dataSource(), storage.dialect(), storage.tablePrefix(), storage.retention());
  }

  JdbcIdempotentAnswerStore(DataSource dataSource, Dialect dialect, String prefix,
      Duration retention) {
    this.dataSource = dataSource;
    this.dialect = dialect;
    this.table = prefix + "http_answers";
    this.retentionMillis = retention.toMillis();
    createTable();
  }

  /** "Now" in epoch milliseconds on the database's clock (as relaykit-jdbc's DatabaseClock). */
  private String nowMillis() {
    return dialect == Dialect.POSTGRESQL
        ? "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)"
        : "RELAYKIT_CLOCK_MILLIS()";
  }

  private void createTable() {
    String binary = dialect == Dialect.POSTGRESQL ? "BYTEA" : "VARBINARY";
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      c.setAutoCommit(true);
      s.execute("CREATE TABLE IF NOT EXISTS " + table + " (answer_key VARCHAR(512) PRIMARY KEY,"
          + " answer " + binary + " NOT NULL, kept_until BIGINT NOT NULL)");
      s.execute("CREATE INDEX IF NOT EXISTS " + table + "_until ON " + table + " (kept_until)");
    } catch (SQLException e) {
      // Two instances creating it at once: fine if it exists now.
      if (!exists()) {
        throw new JdbcStorageException("creating the Idempotency-Key answer table " + table
            + " failed: " + e.getMessage(), e);
      }
    }
  }

  private boolean exists() {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.executeQuery("SELECT COUNT(*) FROM " + table + " WHERE 1 = 0").close();
      return true;
    } catch (SQLException e) {
      return false;
    }
  }

  @Override
  public Optional<IdempotentAnswer> find(String key) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT answer FROM " + table
            + " WHERE answer_key = ? AND kept_until > " + nowMillis())) {
      ps.setString(1, key);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return Optional.empty();
        }
        byte[] stored = rs.getBytes(1);
        try {
          return Optional.of(IdempotentAnswer.decode(stored));
        } catch (IllegalArgumentException e) {
          throw new JdbcStorageException("the answer kept for Idempotency-Key " + key + " in "
              + table + " is unreadable: " + e.getMessage(), e);
        }
      }
    } catch (SQLException e) {
      throw new JdbcStorageException("reading the answer of Idempotency-Key " + key + " from "
          + table + " failed: " + e.getMessage(), e);
    }
  }

  @Override
  public void save(String key, IdempotentAnswer answer) {
    String sql = dialect == Dialect.POSTGRESQL
        ? "INSERT INTO " + table + " (answer_key, answer, kept_until) VALUES (?, ?, "
            + nowMillis() + " + ?) ON CONFLICT (answer_key) DO UPDATE SET answer ="
            + " EXCLUDED.answer, kept_until = EXCLUDED.kept_until"
        : "MERGE INTO " + table + " (answer_key, answer, kept_until) KEY (answer_key) VALUES"
            + " (?, ?, " + nowMillis() + " + ?)";
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(true);
      try (PreparedStatement ps = c.prepareStatement(sql)) {
        ps.setString(1, key);
        ps.setBytes(2, answer.encode());
        ps.setLong(3, retentionMillis);
        ps.executeUpdate();
      }
      if (saves.incrementAndGet() % PURGE_EVERY == 0) {
        purgeExpired(c);
      }
    } catch (SQLException e) {
      throw new JdbcStorageException("saving the answer of Idempotency-Key " + key + " into "
          + table + " failed: " + e.getMessage(), e);
    }
  }

  /** Deletes up to {@value #PURGE_BATCH} expired answers; returns how many. */
  int purgeExpired() {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(true);
      return purgeExpired(c);
    } catch (SQLException e) {
      throw new JdbcStorageException("purging expired answers from " + table + " failed: "
          + e.getMessage(), e);
    }
  }

  private int purgeExpired(Connection c) throws SQLException {
    try (Statement s = c.createStatement()) {
      return s.executeUpdate("DELETE FROM " + table + " WHERE answer_key IN (SELECT answer_key"
          + " FROM " + table + " WHERE kept_until <= " + nowMillis() + " LIMIT " + PURGE_BATCH
          + ")");
    }
  }

  /** The table's name, for tests and messages. */
  String table() {
    return table;
  }
}
