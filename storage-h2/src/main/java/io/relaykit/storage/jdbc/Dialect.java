package io.relaykit.storage.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * The few SQL statements that differ between the databases relaykit's JDBC storage runs on. All
 * other SQL is the same on both: standard DDL, {@code FETCH FIRST n ROWS ONLY}, {@code FOR UPDATE
 * SKIP LOCKED}, {@code = ANY(?)} with an array parameter. The outbox's claim and markSent, which
 * each database does its own fastest safe way, are the {@code OutboxStatements} that {@code
 * outbox(table, clock)} picks. H2 runs in its native mode; {@code MODE=PostgreSQL} is not needed.
 */
public enum Dialect {
  /** H2 2.x, embedded (file or in-memory) or server. */
  H2 {
    @Override
    String binaryType(int maxBytes) {
      return "VARBINARY(" + maxBytes + ")";
    }

    @Override
    String insertIgnoringDuplicates(String table, List<String> columns, List<String> keys) {
      // H2 has no ON CONFLICT outside MODE=PostgreSQL. A duplicate fails only this statement:
      // H2 keeps the surrounding transaction usable, so the caller's work survives it.
      return insert(table, columns);
    }

    @Override
    String upsert(String table, List<String> columns, List<String> keys) {
      return "MERGE INTO " + table + " (" + String.join(", ", columns) + ") KEY ("
          + String.join(", ", keys) + ") VALUES (" + params(columns.size()) + ")";
    }

    @Override
    OutboxStatements outbox(String table, String headTable, DatabaseClock clock) {
      return new OutboxStatements.H2(table, headTable, clock);
    }
  },

  /** PostgreSQL 10 or later. */
  POSTGRESQL {
    @Override
    String binaryType(int maxBytes) {
      return "BYTEA";
    }

    @Override
    String insertIgnoringDuplicates(String table, List<String> columns, List<String> keys) {
      // A unique violation on PostgreSQL aborts the whole transaction; ON CONFLICT does not.
      return insert(table, columns) + " ON CONFLICT (" + String.join(", ", keys)
          + ") DO NOTHING";
    }

    @Override
    String upsert(String table, List<String> columns, List<String> keys) {
      String updates = columns.stream()
          .filter(c -> !keys.contains(c))
          .map(c -> c + " = EXCLUDED." + c)
          .collect(Collectors.joining(", "));
      return insert(table, columns) + " ON CONFLICT (" + String.join(", ", keys)
          + ") DO UPDATE SET " + updates;
    }

    @Override
    OutboxStatements outbox(String table, String headTable, DatabaseClock clock) {
      return new OutboxStatements.Postgres(table, headTable, clock);
    }
  };

  /** SQLSTATE of a unique-key violation, the same on H2 and PostgreSQL. */
  static final String UNIQUE_VIOLATION = "23505";

  /**
   * The dialect for a JDBC URL: {@code jdbc:postgresql:} is PostgreSQL, {@code jdbc:h2:} is H2.
   *
   * @param jdbcUrl the URL, its scheme matched case-insensitively
   * @return the URL's dialect
   * @throws IllegalArgumentException naming the URL when it is neither
   */
  public static Dialect forUrl(String jdbcUrl) {
    if (jdbcUrl == null || jdbcUrl.isBlank()) {
      throw new IllegalArgumentException("jdbcUrl must not be blank");
    }
    String lower = jdbcUrl.toLowerCase(Locale.ROOT);
    if (lower.startsWith("jdbc:postgresql:")) {
      return POSTGRESQL;
    }
    if (lower.startsWith("jdbc:h2:")) {
      return H2;
    }
    throw new IllegalArgumentException("jdbcUrl " + jdbcUrl
        + " is not supported: expected jdbc:h2:... or jdbc:postgresql:...");
  }

  /** Column type for a byte string of at most {@code maxBytes}. */
  abstract String binaryType(int maxBytes);

  /**
   * An INSERT of one row that does nothing (update count 0) on a duplicate of {@code keys}. Run it
   * with {@link #executeIgnoringDuplicate}, which also absorbs H2's duplicate-key error.
   */
  abstract String insertIgnoringDuplicates(String table, List<String> columns, List<String> keys);

  /** An INSERT of one row that replaces the non-key columns of an existing row with the same keys. */
  abstract String upsert(String table, List<String> columns, List<String> keys);

  /**
   * The outbox claim and markSent statements for the outbox table {@code table}, deciding time on
   * {@code clock}.
   */
  abstract OutboxStatements outbox(String table, String headTable, DatabaseClock clock);

  /**
   * Runs an {@link #insertIgnoringDuplicates} statement: 1 if the row was inserted, 0 if a row
   * with the same key was there.
   */
  static int executeIgnoringDuplicate(PreparedStatement insert) throws SQLException {
    try {
      return insert.executeUpdate();
    } catch (SQLException e) {
      if (UNIQUE_VIOLATION.equals(e.getSQLState())) {
        return 0;
      }
      throw e;
    }
  }

  /** The dialect of an open connection, from its driver's product name. */
  static Dialect of(Connection c) throws SQLException {
    String product = c.getMetaData().getDatabaseProductName().toLowerCase(Locale.ROOT);
    if (product.contains("postgres")) {
      return POSTGRESQL;
    }
    if (product.contains("h2")) {
      return H2;
    }
    throw new IllegalArgumentException("database " + product
        + " is not supported: relaykit's JDBC storage runs on H2 and PostgreSQL");
  }

  static String insert(String table, List<String> columns) {
    return "INSERT INTO " + table + " (" + String.join(", ", columns) + ") VALUES ("
        + params(columns.size()) + ")";
  }

  static String params(int n) {
    return String.join(", ", java.util.Collections.nCopies(n, "?"));
  }
}
