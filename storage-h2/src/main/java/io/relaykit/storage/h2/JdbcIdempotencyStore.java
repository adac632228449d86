package io.relaykit.storage.h2;

import io.relaykit.idempotency.Claim;
import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.idempotency.IdempotencyUnavailableException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * Idempotency keys in a table whose primary key is the business key: the database's unique index
 * is the final guard against doing work twice. A claim is at most three single-row statements (an
 * insert that ignores duplicates, a conditional takeover of an expired lease or DONE marker, a
 * read); complete and release are one conditional statement each. Leases and retention are
 * measured on the injected clock. {@link #runOnce} records the key and runs the work in the
 * caller's transaction, so the dedupe row and the effect commit together. Database failures
 * surface as {@link IdempotencyUnavailableException}. Thread-safe.
 */
public final class JdbcIdempotencyStore implements IdempotencyStore {

  /** Work done in the caller's transaction, together with recording its key. */
  @FunctionalInterface
  public interface Work {
    void run(Connection tx) throws SQLException;
  }

  private static final int CLAIMED = 0;
  private static final int DONE = 1;

  private final DataSource dataSource;
  private final Tables tables;
  private final InstantSource clock;
  private final Duration retention;
  private final String insertSql;
  private final String takeoverSql;

  JdbcIdempotencyStore(DataSource dataSource, Dialect dialect, Tables tables,
      InstantSource clock, Duration retention) {
    this.dataSource = dataSource;
    this.tables = tables;
    this.clock = clock;
    this.retention = retention;
    this.insertSql = dialect.insertIgnoringDuplicates(tables.idempotency,
        List.of("idem_key", "status", "token", "lease_until", "done_until"), List.of("idem_key"));
    this.takeoverSql = "UPDATE " + tables.idempotency
        + " SET status = ?, token = ?, lease_until = ?, done_until = ? WHERE idem_key = ?"
        + " AND ((status = " + CLAIMED + " AND lease_until <= ?) OR (status = " + DONE
        + " AND done_until <= ?))";
  }

  @Override
  public Claim claim(String key, Duration lease) {
    requireKey(key);
    if (lease == null || lease.isZero() || lease.isNegative()) {
      throw new IllegalArgumentException("lease must be a positive duration, was " + lease);
    }
    Instant now = clock.instant();
    Instant until = now.plus(lease);
    String token = UUID.randomUUID().toString();
    return call("claim", c -> {
      // A row can vanish between the statements (released, purged): then try again.
      for (int round = 0; ; round++) {
        if (insertOrTakeOver(c, key, CLAIMED, token, until, null, now)) {
          return Claim.claimed(key, token, until);
        }
        try (PreparedStatement ps = c.prepareStatement("SELECT status, lease_until FROM "
            + tables.idempotency + " WHERE idem_key = ?")) {
          ps.setString(1, key);
          try (ResultSet rs = ps.executeQuery()) {
            if (rs.next()) {
              return rs.getInt(1) == DONE ? Claim.done(key)
                  : Claim.inProgress(key, Instants.get(rs, "lease_until"));
            }
          }
        }
        if (round == 10) {
          throw new SQLException("key " + key + " changed under 10 claim attempts in a row");
        }
      }
    });
  }

  @Override
  public boolean complete(Claim claim) {
    requireClaimed(claim);
    Instant now = clock.instant();
    return call("complete", c -> {
      try (PreparedStatement ps = c.prepareStatement("UPDATE " + tables.idempotency
          + " SET status = " + DONE + ", token = NULL, lease_until = NULL, done_until = ?"
          + " WHERE idem_key = ? AND status = " + CLAIMED + " AND token = ? AND lease_until > ?")) {
        ps.setLong(1, Instants.toNanos("now + retention", now.plus(retention)));
        ps.setString(2, claim.key());
        ps.setString(3, claim.token());
        ps.setLong(4, Instants.toNanos("now", now));
        return ps.executeUpdate() == 1;
      }
    });
  }

  @Override
  public boolean release(Claim claim) {
    requireClaimed(claim);
    Instant now = clock.instant();
    return call("release", c -> {
      try (PreparedStatement ps = c.prepareStatement("DELETE FROM " + tables.idempotency
          + " WHERE idem_key = ? AND status = " + CLAIMED + " AND token = ? AND lease_until > ?")) {
        ps.setString(1, claim.key());
        ps.setString(2, claim.token());
        ps.setLong(3, Instants.toNanos("now", now));
        return ps.executeUpdate() == 1;
      }
    });
  }

  @Override
  public Optional<Claim.Status> status(String key) {
    requireKey(key);
    long now = Instants.toNanos("now", clock.instant());
    return call("status", c -> {
      try (PreparedStatement ps = c.prepareStatement("SELECT status, lease_until, done_until FROM "
          + tables.idempotency + " WHERE idem_key = ?")) {
        ps.setString(1, key);
        try (ResultSet rs = ps.executeQuery()) {
          if (!rs.next()) {
            return Optional.empty();
          }
          if (rs.getInt(1) == DONE) {
            return rs.getLong(3) > now ? Optional.of(Claim.Status.DONE) : Optional.empty();
          }
          return rs.getLong(2) > now ? Optional.of(Claim.Status.CLAIMED) : Optional.empty();
        }
      }
    });
  }

  /**
   * Runs {@code work} at most once per {@code key}, in {@code tx}, the caller's open transaction:
   * records the key as DONE and runs the work through the same connection, so both commit or
   * neither does. If the key is already DONE (or another caller holds a live claim on it) the work
   * is skipped and {@code tx} stays usable: on PostgreSQL the duplicate is absorbed by {@code ON
   * CONFLICT DO NOTHING}, which, unlike a unique violation, does not abort the transaction. A
   * concurrent {@code runOnce} of the same key waits for this transaction and then skips.
   * Does not commit, roll back or close {@code tx}.
   *
   * @return true if the work ran (commit to make it count), false if the key was already done
   * @throws SQLException from the connection or the work; roll back then
   */
  public boolean runOnce(Connection tx, String key, Work work) throws SQLException {
    if (tx == null) {
      throw new IllegalArgumentException("tx must not be null");
    }
    requireKey(key);
    if (work == null) {
      throw new IllegalArgumentException("work must not be null");
    }
    Instant now = clock.instant();
    if (!insertOrTakeOver(tx, key, DONE, null, null, now.plus(retention), now)) {
      return false;
    }
    work.run(tx);
    return true;
  }

  /**
   * Deletes keys whose lease or DONE period is over. Optional housekeeping: expired rows are
   * already treated as absent. A full scan of the table.
   *
   * @return how many rows were deleted
   */
  public int purgeExpired() {
    long now = Instants.toNanos("now", clock.instant());
    return call("purgeExpired", c -> {
      try (PreparedStatement ps = c.prepareStatement("DELETE FROM " + tables.idempotency
          + " WHERE (status = " + CLAIMED + " AND lease_until <= ?) OR (status = " + DONE
          + " AND done_until <= ?)")) {
        ps.setLong(1, now);
        ps.setLong(2, now);
        return ps.executeUpdate();
      }
    });
  }

  private boolean insertOrTakeOver(Connection c, String key, int status, String token,
      Instant leaseUntil, Instant doneUntil, Instant now) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(insertSql)) {
      ps.setString(1, key);
      ps.setInt(2, status);
      setNullable(ps, 3, token);
      setNullable(ps, 4, leaseUntil);
      setNullable(ps, 5, doneUntil);
      if (Dialect.executeIgnoringDuplicate(ps) == 1) {
        return true;
      }
    }
    try (PreparedStatement ps = c.prepareStatement(takeoverSql)) {
      long nowNanos = Instants.toNanos("now", now);
      ps.setInt(1, status);
      setNullable(ps, 2, token);
      setNullable(ps, 3, leaseUntil);
      setNullable(ps, 4, doneUntil);
      ps.setString(5, key);
      ps.setLong(6, nowNanos);
      ps.setLong(7, nowNanos);
      return ps.executeUpdate() == 1;
    }
  }

  private static void setNullable(PreparedStatement ps, int i, String v) throws SQLException {
    if (v == null) {
      ps.setNull(i, Types.VARCHAR);
    } else {
      ps.setString(i, v);
    }
  }

  private static void setNullable(PreparedStatement ps, int i, Instant v) throws SQLException {
    if (v == null) {
      ps.setNull(i, Types.BIGINT);
    } else {
      ps.setLong(i, Instants.toNanos("time", v));
    }
  }

  private <T> T call(String what, Jdbc.SqlWork<T> work) {
    try {
      return Jdbc.autoCommit(dataSource, "idempotency " + what + " on " + tables.idempotency,
          work);
    } catch (JdbcStorageException e) {
      throw new IdempotencyUnavailableException(e.getMessage(), e.getCause());
    }
  }

  private static void requireKey(String key) {
    if (key == null || key.isBlank()) {
      throw new IllegalArgumentException("key must not be blank, was "
          + (key == null ? "null" : "'" + key + "'"));
    }
    if (key.length() > MAX_KEY_LENGTH) {
      throw new IllegalArgumentException("key must be at most " + MAX_KEY_LENGTH
          + " characters, was " + key.length());
    }
  }

  private static void requireClaimed(Claim claim) {
    if (claim == null) {
      throw new IllegalArgumentException("claim must not be null");
    }
    if (!claim.isClaimed()) {
      throw new IllegalArgumentException(
          "claim must be CLAIMED to complete or release it, was " + claim.status());
    }
  }
}
