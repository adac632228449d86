package io.relaykit.storage.jdbc;

import io.relaykit.idempotency.Claim;
import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.idempotency.IdempotencyUnavailableException;
import io.relaykit.idempotency.RunOnceResult;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;

/**
 * Idempotency keys in a table whose primary key is the business key: the database's unique index
 * is the final guard against doing work twice. A claim is at most three single-row statements (an
 * insert that ignores duplicates, a conditional takeover of an expired lease or DONE marker, a
 * read); complete, release and renew are one conditional statement each, fenced by the claim's
 * token (see {@link IdempotencyStore}). {@link #tryRunOnce} records the key and runs the work in
 * the caller's transaction, so the dedupe row and the effect commit together. Database failures
 * surface as {@link IdempotencyUnavailableException}. Thread-safe.
 *
 * <p>One clock: every lease, takeover and retention decision is made on the storage's {@link
 * DatabaseClock}, by default the database server's clock, read inside the operation's own
 * connection ({@code clock_timestamp()} on PostgreSQL, not {@code now()}, which is fixed for the
 * whole transaction, and {@code tryRunOnce} runs inside the caller's), so a host whose clock runs
 * 31 s fast cannot take a fresh claim and a host 8 days fast cannot purge live DONE keys. That
 * read costs one short query per operation on the database's clock (none for an injected one).
 * The application's clock only paces the opportunistic purge below.
 *
 * <p>Expiry: keys whose DONE period (the retention) or lease is over are deleted, with no wiring.
 * At most once every {@link #PURGE_INTERVAL} on the application's clock, one {@link #claim} or {@link
 * #tryRunOnce} call also deletes up to {@link #PURGE_BATCH} expired keys, before its own work, in one
 * short transaction on a second pooled connection that skips rows other transactions hold (so it
 * never waits on a caller's open transaction and holds its locks only for that batch). That call
 * pays for it: finding expired keys scans the table (there is no index on the expiry times), so
 * O(keys) once per interval. When a batch comes back full, the next call purges again, so deletion
 * keeps up with expiry at up to {@value #PURGE_BATCH} keys per call. A failed purge is logged and
 * the call goes on; the next try is an interval later. Each store instance keeps its own schedule.
 * A DONE key is deleted once its retention is over; a lapsed claim that nobody took over is kept
 * for the retention after its lease ended (so its holder can still complete it), then deleted.
 * Expired rows read as absent whether or not they were deleted yet.
 */
public final class JdbcIdempotencyStore implements IdempotencyStore {

  /** How often, at most, a {@link #claim} or {@link #tryRunOnce} also deletes expired keys. */
  public static final Duration PURGE_INTERVAL = Duration.ofMinutes(5);

  /** The most expired keys one purge transaction deletes. */
  public static final int PURGE_BATCH = 1_000;

  private static final System.Logger LOG = System.getLogger(JdbcIdempotencyStore.class.getName());

  /** Work done in the caller's transaction, together with recording its key. */
  @FunctionalInterface
  public interface Work {
    /**
     * Does the work through {@code tx}; must not commit, roll back or close it.
     *
     * @param tx the caller's connection, inside its open transaction
     * @throws SQLException to make the caller roll back (the key is recorded in the same
     *     transaction, so it rolls back too)
     */
    void run(Connection tx) throws SQLException;
  }

  private static final int CLAIMED = 0;
  private static final int DONE = 1;

  private final DataSource dataSource;
  private final Tables tables;
  private final Dialect dialect;
  private final InstantSource clock;
  private final DatabaseClock databaseClock;
  private final Duration retention;
  private final String insertSql;
  private final String takeoverSql;
  private final String expiredSql;
  private final String deleteExpiredSql;
  /** Epoch nanos on {@link #clock} from which the next opportunistic purge is due. */
  private final AtomicLong nextPurgeNanos = new AtomicLong(Long.MIN_VALUE);

  JdbcIdempotencyStore(DataSource dataSource, Dialect dialect, Tables tables,
      InstantSource clock, DatabaseClock databaseClock, Duration retention) {
    this.dataSource = dataSource;
    this.dialect = dialect;
    this.tables = tables;
    this.clock = clock;
    this.databaseClock = databaseClock;
    this.retention = retention;
    this.insertSql = dialect.insertIgnoringDuplicates(tables.idempotency,
        List.of("idem_key", "status", "token", "lease_until", "done_until"), List.of("idem_key"));
    this.takeoverSql = "UPDATE " + tables.idempotency
        + " SET status = ?, token = ?, lease_until = ?, done_until = ? WHERE idem_key = ?"
        + " AND ((status = " + CLAIMED + " AND lease_until <= ?) OR (status = " + DONE
        + " AND done_until <= ?))";
    String expired = "((status = " + CLAIMED + " AND lease_until <= ?) OR (status = " + DONE
        + " AND done_until <= ?))";
    // Parameters: now - retention (for lapsed claims), now (for DONE), limit. SKIP LOCKED: rows a caller's transaction holds (a takeover in
    // runOnce) are left for a later purge instead of being waited for.
    // No ORDER BY: H2 would then lock every expired key before FETCH FIRST cuts the sorted
    // result, not one batch (JdbcPurgeLockScopeTest).
    this.expiredSql = "SELECT idem_key FROM " + tables.idempotency + " WHERE " + expired
        + " FETCH FIRST ? ROWS ONLY FOR UPDATE SKIP LOCKED";
    // Re-checks expiry on the locked row. Parameters: key, now - retention, now.
    this.deleteExpiredSql = "DELETE FROM " + tables.idempotency + " WHERE idem_key = ? AND "
        + expired;
  }

  @Override
  public Claim claim(String key, Duration lease) {
    requireKey(key);
    requireLease(lease);
    purgeIfDue();
    String token = UUID.randomUUID().toString();
    return call("claim", c -> {
      Instant now = databaseClock.now(c, dialect);
      Instant until = now.plus(lease);
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
    return call("complete", c -> {
      Instant now = databaseClock.now(c, dialect);
      // Fenced by the token alone: a lapsed claim nobody took over still completes.
      try (PreparedStatement ps = c.prepareStatement("UPDATE " + tables.idempotency
          + " SET status = " + DONE + ", token = NULL, lease_until = NULL, done_until = ?"
          + " WHERE idem_key = ? AND status = " + CLAIMED + " AND token = ?")) {
        ps.setLong(1, Instants.toNanos("now + retention", now.plus(retention)));
        ps.setString(2, claim.key());
        ps.setString(3, claim.token());
        return ps.executeUpdate() == 1;
      }
    });
  }

  @Override
  public boolean release(Claim claim) {
    requireClaimed(claim);
    return call("release", c -> {
      try (PreparedStatement ps = c.prepareStatement("DELETE FROM " + tables.idempotency
          + " WHERE idem_key = ? AND status = " + CLAIMED + " AND token = ?")) {
        ps.setString(1, claim.key());
        ps.setString(2, claim.token());
        return ps.executeUpdate() == 1;
      }
    });
  }

  @Override
  public boolean renew(Claim claim, Duration lease) {
    requireClaimed(claim);
    requireLease(lease);
    return call("renew", c -> {
      Instant now = databaseClock.now(c, dialect);
      try (PreparedStatement ps = c.prepareStatement("UPDATE " + tables.idempotency
          + " SET lease_until = ? WHERE idem_key = ? AND status = " + CLAIMED + " AND token = ?")) {
        ps.setLong(1, Instants.toNanos("now + lease", now.plus(lease)));
        ps.setString(2, claim.key());
        ps.setString(3, claim.token());
        return ps.executeUpdate() == 1;
      }
    });
  }

  @Override
  public Optional<Claim.Status> status(String key) {
    requireKey(key);
    return call("status", c -> {
      long now = Instants.toNanos("now", databaseClock.now(c, dialect));
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
   * neither does. If the key is already DONE, or another caller holds a live claim on it (taken
   * with {@link #claim}), the work is skipped, the answer says which, and {@code tx} stays usable:
   * on PostgreSQL the duplicate is absorbed by {@code ON CONFLICT DO NOTHING}, which, unlike a
   * unique violation, does not abort the transaction. A concurrent {@code tryRunOnce} of the same
   * key waits for this transaction and then answers ALREADY_DONE (or runs, if this one rolled
   * back). Does not commit, roll back or close {@code tx}.
   *
   * <p>This is the only form that fences the effect itself: the key row and the effect commit in
   * one transaction, so two callers can never both commit the work, whatever their leases did.
   *
   * @param tx the caller's connection, with its transaction open
   * @param key the idempotency key
   * @param work what to do once per key, through {@code tx}
   * @return {@link RunOnceResult#RAN} if the work ran (commit to make it count), {@link
   *     RunOnceResult#ALREADY_DONE} if the key is done, {@link RunOnceResult#IN_PROGRESS} if a
   *     live claim holds it (the work may still fail and be released: retry later, do not treat
   *     it as done)
   * @throws SQLException from the connection or the work; roll back then
   * @throws IllegalArgumentException if {@code tx} or {@code work} is null, or the key is blank
   *     or too long
   */
  public RunOnceResult tryRunOnce(Connection tx, String key, Work work) throws SQLException {
    if (tx == null) {
      throw new IllegalArgumentException("tx must not be null");
    }
    requireKey(key);
    if (work == null) {
      throw new IllegalArgumentException("work must not be null");
    }
    purgeIfDue();
    Instant now = databaseClock.now(tx, dialect);
    // A row can vanish between the statements (released, purged): then try again.
    for (int round = 0; ; round++) {
      if (insertOrTakeOver(tx, key, DONE, null, null, now.plus(retention), now)) {
        work.run(tx);
        return RunOnceResult.RAN;
      }
      try (PreparedStatement ps = tx.prepareStatement("SELECT status FROM "
          + tables.idempotency + " WHERE idem_key = ?")) {
        ps.setString(1, key);
        try (ResultSet rs = ps.executeQuery()) {
          if (rs.next()) {
            return rs.getInt(1) == DONE ? RunOnceResult.ALREADY_DONE : RunOnceResult.IN_PROGRESS;
          }
        }
      }
      if (round == 10) {
        throw new SQLException("key " + key + " changed under 10 runOnce attempts in a row");
      }
    }
  }

  /**
   * {@link #tryRunOnce} answering only whether the work ran.
   *
   * @param tx the caller's connection, with its transaction open
   * @param key the idempotency key
   * @param work what to do once per key, through {@code tx}
   * @return true if the work ran, false if it was skipped: DONE, or held by a live claim
   * @throws SQLException from the connection or the work; roll back then
   * @throws IllegalArgumentException as {@link #tryRunOnce}
   * @deprecated false conflates "done" with "someone else holds it now, and may still release
   *     it": a caller that acknowledges on false can lose the work. Use {@link #tryRunOnce}.
   */
  @Deprecated
  public boolean runOnce(Connection tx, String key, Work work) throws SQLException {
    return tryRunOnce(tx, key, work).ran();
  }

  /**
   * Deletes every key whose lease or DONE period is over, now, in transactions of up to {@link
   * #PURGE_BATCH} keys each (skipping keys other transactions hold). Not needed for correctness
   * (expired rows already read as absent) nor for housekeeping ({@link #claim} and {@link
   * #tryRunOnce} purge as they go; see the class comment): for an operator who wants the table small
   * now. Each batch scans the table for expired keys.
   *
   * @return how many rows were deleted
   * @throws IdempotencyUnavailableException if the database fails
   */
  public int purgeExpired() {
    int total = 0;
    Purged batch;
    do {
      batch = purgeBatch();
      total += batch.deleted();
    } while (batch.full() && batch.deleted() > 0);
    return total;
  }

  /**
   * Purges one batch if the interval since the last purge has passed, containing any failure: a
   * caller's claim must not fail because housekeeping did.
   */
  private void purgeIfDue() {
    long nowNanos = Instants.toNanos("now", clock.instant());
    long due = nextPurgeNanos.get();
    long interval = PURGE_INTERVAL.toNanos();
    long next = nowNanos > Long.MAX_VALUE - interval ? Long.MAX_VALUE : nowNanos + interval;
    if (nowNanos < due || !nextPurgeNanos.compareAndSet(due, next)) {
      return;
    }
    try {
      if (purgeBatch().full()) {
        // More are waiting: the next call purges again.
        nextPurgeNanos.compareAndSet(next, nowNanos);
      }
    } catch (IdempotencyUnavailableException e) {
      LOG.log(System.Logger.Level.WARNING, "could not delete expired idempotency keys from "
          + tables.idempotency + "; trying again in " + PURGE_INTERVAL, e);
    }
  }

  /**
   * One purge transaction's outcome: {@code full} when it found a whole batch of expired keys (more
   * may be waiting), {@code deleted} how many rows it deleted.
   */
  private record Purged(boolean full, int deleted) {}

  /** Deletes up to {@link #PURGE_BATCH} keys expired on the database clock, in one transaction. */
  private Purged purgeBatch() {
    try {
      return Jdbc.inTransaction(dataSource, "idempotency purge of expired keys in "
          + tables.idempotency, c -> {
            Instant nowInstant = databaseClock.now(c, dialect);
            long now = Instants.toNanos("now", nowInstant);
            long lapsedBefore = Instants.toNanos("now - retention", nowInstant.minus(retention));
            List<String> keys = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement(expiredSql)) {
              ps.setLong(1, lapsedBefore);
              ps.setLong(2, now);
              ps.setInt(3, PURGE_BATCH);
              try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                  keys.add(rs.getString(1));
                }
              }
            }
            if (keys.isEmpty()) {
              return new Purged(false, 0);
            }
            try (PreparedStatement ps = c.prepareStatement(deleteExpiredSql)) {
              for (String key : keys) {
                ps.setString(1, key);
                ps.setLong(2, lapsedBefore);
                ps.setLong(3, now);
                ps.addBatch();
              }
              return new Purged(keys.size() == PURGE_BATCH, Jdbc.rowsChanged(ps.executeBatch()));
            }
          });
    } catch (JdbcStorageException e) {
      throw new IdempotencyUnavailableException(e.getMessage(), e.getCause());
    }
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

  private static void requireLease(Duration lease) {
    if (lease == null || lease.isZero() || lease.isNegative()) {
      throw new IllegalArgumentException("lease must be a positive duration, was " + lease);
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
