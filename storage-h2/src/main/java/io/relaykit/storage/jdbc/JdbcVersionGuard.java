package io.relaykit.storage.jdbc;

import io.relaykit.ordering.VersionGuard;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.OptionalLong;
import javax.sql.DataSource;

/**
 * Entity versions in a table keyed by entity id. {@link #advance} is a conditional {@code UPDATE
 * ... WHERE version < ?} (atomic on its row: the database, not this JVM, serializes concurrent
 * advances), falling back to an insert that ignores duplicates for a new entity and one more
 * conditional update if another caller inserted first. One to three single-row statements; works
 * the same across processes.
 *
 * <p><b>Use {@link #advance(Connection, String, long)} when the update is in this database</b>:
 * the version and the update then commit in one transaction, so a failed update or a lost commit
 * reply leaves neither, and the redelivery applies it. The plain {@link #advance(String, long)}
 * commits the version on its own before the caller applies the update: see {@link VersionGuard}
 * for that window and for {@link VersionGuard#applyIfNewer}. Thread-safe.
 */
public final class JdbcVersionGuard implements VersionGuard {

  private static final int MAX_ENTITY_ID_LENGTH = 512;

  private final DataSource dataSource;
  private final Tables tables;
  private final String updateSql;
  private final String insertSql;

  JdbcVersionGuard(DataSource dataSource, Dialect dialect, Tables tables) {
    this.dataSource = dataSource;
    this.tables = tables;
    this.updateSql = "UPDATE " + tables.versionGuard
        + " SET version = ? WHERE entity_id = ? AND version < ?";
    this.insertSql = dialect.insertIgnoringDuplicates(tables.versionGuard,
        List.of("entity_id", "version"), List.of("entity_id"));
  }

  @Override
  public boolean advance(String entityId, long version) {
    requireEntityId(entityId);
    if (version < 0) {
      throw new IllegalArgumentException("version must be >= 0, was " + version
          + " (entity id " + entityId + ")");
    }
    return Jdbc.autoCommit(dataSource, "version guard advance on " + tables.versionGuard,
        c -> advanceIn(c, entityId, version));
  }

  /**
   * {@link #advance(String, long)} in the caller's transaction on {@code tx}: apply the update
   * through the same connection when this returns true, and the version commits with it (or rolls
   * back with it). Does not commit, close or change {@code tx}. The entity's row stays locked until
   * the transaction ends, so concurrent updates of one entity take turns and a stale one that
   * waited is answered false once the first commits. On PostgreSQL a new entity inserted by two
   * transactions at once is resolved by {@code ON CONFLICT}; on H2 the second insert fails only
   * its statement. An auto-commit {@code tx} records the version at once, as the plain form does.
   *
   * @param tx the caller's connection, in its transaction
   * @param entityId the entity; not blank, at most 512 characters
   * @param version the update's version, {@code >= 0}
   * @return true: apply the update in this transaction; false: it is stale, drop it
   * @throws IllegalArgumentException if {@code tx} is null, {@code entityId} blank or too long, or
   *     {@code version} negative
   * @throws SQLException from the caller's connection; the caller decides about its transaction
   */
  public boolean advance(Connection tx, String entityId, long version) throws SQLException {
    if (tx == null) {
      throw new IllegalArgumentException("tx must not be null");
    }
    requireEntityId(entityId);
    if (version < 0) {
      throw new IllegalArgumentException("version must be >= 0, was " + version
          + " (entity id " + entityId + ")");
    }
    return advanceIn(tx, entityId, version);
  }

  private boolean advanceIn(Connection c, String entityId, long version) throws SQLException {
    if (update(c, entityId, version)) {
      return true;
    }
    try (PreparedStatement ps = c.prepareStatement(insertSql)) {
      ps.setString(1, entityId);
      ps.setLong(2, version);
      if (Dialect.executeIgnoringDuplicate(ps) == 1) {
        return true;
      }
    }
    // Someone inserted the entity between our update and insert: compare against theirs.
    return update(c, entityId, version);
  }

  private boolean update(Connection c, String entityId, long version) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(updateSql)) {
      ps.setLong(1, version);
      ps.setString(2, entityId);
      ps.setLong(3, version);
      return ps.executeUpdate() == 1;
    }
  }

  @Override
  public OptionalLong current(String entityId) {
    requireEntityId(entityId);
    return Jdbc.autoCommit(dataSource, "version guard read on " + tables.versionGuard, c -> {
      try (PreparedStatement ps = c.prepareStatement("SELECT version FROM " + tables.versionGuard
          + " WHERE entity_id = ?")) {
        ps.setString(1, entityId);
        try (ResultSet rs = ps.executeQuery()) {
          return rs.next() ? OptionalLong.of(rs.getLong(1)) : OptionalLong.empty();
        }
      }
    });
  }

  private static void requireEntityId(String entityId) {
    if (entityId == null || entityId.isBlank()) {
      throw new IllegalArgumentException("entityId must not be blank, was "
          + (entityId == null ? "null" : "'" + entityId + "'"));
    }
    if (entityId.length() > MAX_ENTITY_ID_LENGTH) {
      throw new IllegalArgumentException("entityId must be at most " + MAX_ENTITY_ID_LENGTH
          + " characters, was " + entityId.length());
    }
  }
}
