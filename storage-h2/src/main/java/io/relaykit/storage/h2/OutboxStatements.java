package io.relaykit.storage.h2;

import static io.relaykit.storage.h2.JdbcOutboxStore.SENT;
import static io.relaykit.storage.h2.JdbcOutboxStore.UNSENT;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.message.Message;
import io.relaykit.outbox.OutboxRecord;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import javax.sql.DataSource;

/**
 * The part of {@link JdbcOutboxStore} that each database does its own fastest safe way: the claim
 * and markSent statements for one outbox table, built once, and the round trips that run them.
 * {@link Dialect#outbox} picks the implementation; the store validates arguments and converts
 * times before it calls here.
 *
 * <p>Time comes from the store's {@link DatabaseClock}: readiness, lease expiry and the new lease's
 * end are computed from its now, read once per claim (on H2 before the locking SELECT, on
 * PostgreSQL in the claim statement itself), never from the caller's clock.
 *
 * <p>A claimed row whose columns do not decode to a message (a corrupt envelope, a missing header,
 * an empty payload: rows written around {@code append}) is not handed out: it is deleted and given
 * to the claim's {@link UndecodableSink}, which stores it as a dead letter, so one bad row never
 * fails a claim or comes back every cycle. On H2 that happens inside the claim's transaction; on
 * PostgreSQL in a second transaction right after the claim (the bad row is leased by then, so no
 * other relay sees it), and if that transaction fails the row stays leased and is tried again when
 * its lease expires.
 */
abstract sealed class OutboxStatements {
  private static final System.Logger LOG = System.getLogger(OutboxStatements.class.getName());

  /** The columns a claim returns, in the order {@link #readClaimed} reads them. */
  static final String CLAIM_COLUMNS =
      "seq, destination, msg_key, headers, payload, attempts, first_failure_at, message_id";

  /**
   * A claimed row whose columns do not make a message, as the database holds them.
   *
   * @param error why decoding failed
   */
  record Undecodable(long sequence, String destination, String messageId, String key,
      String headers, byte[] payload, int attempts, Instant firstFailureAt,
      RuntimeException error) {}

  /** What a claim's rows decoded to. */
  record Read(List<OutboxRecord> records, List<Undecodable> undecodable) {}

  /**
   * What a claim did: the rows leased to the caller, oldest first, and the dead letters of the
   * undecodable rows it took out of the outbox.
   */
  record Claimed(List<OutboxRecord> records, List<DeadLetter> deadLettered) {}

  /** Stores an undecodable row, already deleted in {@code c}'s transaction, as a dead letter. */
  @FunctionalInterface
  interface UndecodableSink {
    DeadLetter deadLetter(Connection c, Undecodable row) throws SQLException;
  }

  /** Binds an undecodable row's conditional DELETE. */
  @FunctionalInterface
  private interface DeleteBinder {
    void bind(PreparedStatement ps, Undecodable row) throws SQLException;
  }

  final DatabaseClock clock;

  OutboxStatements(DatabaseClock clock) {
    this.clock = clock;
  }

  /**
   * Leases up to {@code max} claimable rows to {@code owner} for {@code leaseNanos} from the
   * database clock's now, oldest first, and moves undecodable ones to {@code sink}; {@code what}
   * names the operation in a {@link JdbcStorageException}.
   */
  abstract Claimed claim(DataSource dataSource, String what, String owner, int max,
      long leaseNanos, UndecodableSink sink);

  /**
   * Marks the rows {@code seqs} (ascending) that {@code owner} holds sent at the database clock's
   * now; the count changed.
   */
  abstract int markSent(DataSource dataSource, String what, String owner, Long[] seqs);

  /**
   * Claimable: unsent, ready, not under a live lease, and the oldest unsent row of its key, for
   * the outbox table aliased {@code o}, with {@code now} the SQL of the current time (a parameter
   * or a scalar subquery, used twice).
   */
  static String claimable(String table, String now) {
    return "o.state = " + UNSENT + " AND o.ready_at <= " + now
        + " AND (o.lease_until IS NULL OR o.lease_until <= " + now + ")"
        + " AND (o.msg_key IS NULL OR NOT EXISTS (SELECT 1 FROM " + table + " e"
        + " WHERE e.msg_key = o.msg_key AND e.state = " + UNSENT + " AND e.seq < o.seq))";
  }

  /** The start of a markSent UPDATE, up to its WHERE, with {@code now} the SQL of the time. */
  static String markSentPrefix(String table, String now) {
    return "UPDATE " + table + " SET state = " + SENT + ", sent_at = " + now + ","
        + " lease_owner = NULL, lease_until = NULL WHERE ";
  }

  /**
   * Reads a claim's rows; {@code until} is the lease's end, or null to read it from the column
   * after {@link #CLAIM_COLUMNS}.
   */
  static Read readClaimed(PreparedStatement ps, int max, String owner, Instant until)
      throws SQLException {
    List<OutboxRecord> rows = new ArrayList<>(Math.min(max, 1_024));
    List<Undecodable> undecodable = new ArrayList<>(0);
    try (ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        long seq = rs.getLong(1);
        String destination = rs.getString(2);
        String key = rs.getString(3);
        String headers = rs.getString(4);
        byte[] payload = rs.getBytes(5);
        int attempts = rs.getInt(6);
        long firstFailure = rs.getLong(7);
        Instant firstFailureAt = rs.wasNull() ? null : Instants.fromNanos(firstFailure);
        Instant leaseEnd = until != null ? until : Instants.fromNanos(rs.getLong(9));
        try {
          Message m = Envelopes.decode(headers, key, payload);
          rows.add(new OutboxRecord(seq, destination, m, attempts, firstFailureAt, owner,
              leaseEnd));
        } catch (RuntimeException e) {
          // Decoding is pure computation on the row's values: whatever it throws is the row's
          // fault (MalformedMessageException, or the record refusing a blank destination).
          undecodable.add(new Undecodable(seq, destination, rs.getString(8), key, headers,
              payload, attempts, firstFailureAt, e));
        }
      }
    }
    return new Read(rows, undecodable);
  }

  /**
   * Deletes each undecodable row with {@code deleteSql} (bound by {@code binder}) in {@code c}'s
   * transaction and, where the DELETE took it, hands it to {@code sink}.
   */
  private static List<DeadLetter> deadLetter(Connection c, String deleteSql, DeleteBinder binder,
      List<Undecodable> rows, UndecodableSink sink) throws SQLException {
    List<DeadLetter> moved = new ArrayList<>(rows.size());
    try (PreparedStatement ps = c.prepareStatement(deleteSql)) {
      for (Undecodable row : rows) {
        binder.bind(ps, row);
        if (ps.executeUpdate() == 1) {
          moved.add(sink.deadLetter(c, row));
        }
      }
    }
    return moved;
  }

  /** PostgreSQL: a claim and a markSent are one auto-committed statement each. */
  static final class Postgres extends OutboxStatements {
    private static final Comparator<OutboxRecord> BY_SEQUENCE =
        Comparator.comparingLong(OutboxRecord::sequence);

    private final String claimSql;
    private final String markSentSql;
    private final String deleteUndecodableSql;

    Postgres(String table, DatabaseClock clock) {
      super(clock);
      // One statement, one round trip: the subquery locks the oldest claimable rows, skipping
      // rows other relays hold (READ COMMITTED re-checks a locked row's WHERE clause on its newest
      // version), and the UPDATE leases exactly those rows and returns them. ANY(ARRAY(...))
      // makes the subquery an init plan, run once, and the UPDATE a primary-key lookup; with
      // seq IN (...) the planner may pick a hash semi-join over a sequential scan of the table,
      // sent rows included. The database's now is read once, in the CTE (clock_timestamp() is
      // volatile: inline it would be read per row and could not bound an index scan); each
      // (SELECT now FROM clock) is an init plan, a constant for the rest of the statement.
      // Parameters: [now], owner, lease, max.
      String now = "(SELECT now FROM clock)";
      this.claimSql = "WITH clock AS (SELECT " + clock.nowNanos(Dialect.POSTGRESQL) + " AS now)"
          + " UPDATE " + table + " SET lease_owner = ?, lease_until = " + now + " + ?"
          + " WHERE seq = ANY(ARRAY(SELECT o.seq FROM " + table + " o WHERE "
          + claimable(table, now) + " ORDER BY o.seq LIMIT ? FOR UPDATE OF o SKIP LOCKED))"
          + " RETURNING " + CLAIM_COLUMNS + ", lease_until";
      // The whole batch in one statement (an index scan of the primary key for the array).
      // Parameters: [now], seqs, owner.
      this.markSentSql = markSentPrefix(table, clock.nowNanos(Dialect.POSTGRESQL))
          + "seq = ANY(?) AND state = " + UNSENT + " AND lease_owner = ?";
      // The claim has leased the row to us; parameters: seq, owner.
      this.deleteUndecodableSql = "DELETE FROM " + table + " WHERE seq = ? AND state = " + UNSENT
          + " AND lease_owner = ?";
    }

    @Override
    Claimed claim(DataSource dataSource, String what, String owner, int max, long leaseNanos,
        UndecodableSink sink) {
      Read read = Jdbc.autoCommit(dataSource, what, c -> {
        try (PreparedStatement ps = c.prepareStatement(claimSql)) {
          int i = clock.bind(ps, 1);
          ps.setString(i, owner);
          ps.setLong(i + 1, leaseNanos);
          ps.setInt(i + 2, max);
          return readClaimed(ps, max, owner, null);
        }
      });
      // UPDATE ... RETURNING promises no order: oldest first, as specified.
      List<OutboxRecord> claimed = read.records();
      claimed.sort(BY_SEQUENCE);
      if (read.undecodable().isEmpty()) {
        return new Claimed(claimed, List.of());
      }
      List<DeadLetter> moved;
      try {
        moved = Jdbc.inTransaction(dataSource, what + ": dead-lettering undecodable rows",
            c -> deadLetter(c, deleteUndecodableSql, (ps, row) -> {
              ps.setLong(1, row.sequence());
              ps.setString(2, owner);
            }, read.undecodable(), sink));
      } catch (JdbcStorageException e) {
        // The decodable rows are leased and go out; the bad ones keep their lease and are tried
        // again when it expires.
        LOG.log(System.Logger.Level.WARNING, "could not dead-letter " + read.undecodable().size()
            + " undecodable outbox rows; they are tried again when their lease expires", e);
        moved = List.of();
      }
      return new Claimed(claimed, moved);
    }

    @Override
    int markSent(DataSource dataSource, String what, String owner, Long[] seqs) {
      return Jdbc.autoCommit(dataSource, what, c -> {
        try (PreparedStatement ps = c.prepareStatement(markSentSql)) {
          int i = clock.bind(ps, 1);
          ps.setArray(i, c.createArrayOf("bigint", seqs));
          ps.setString(i + 1, owner);
          return ps.executeUpdate();
        }
      });
    }
  }

  /**
   * H2: a claim is one transaction of a locking SELECT and a batch of conditional one-row lease
   * updates; a markSent is one transaction of a batch of one-row updates.
   */
  static final class H2 extends OutboxStatements {
    private final String claimSql;
    private final String leaseSql;
    private final String markSentSql;
    private final String deleteUndecodableSql;

    H2(String table, DatabaseClock clock) {
      super(clock);
      // H2 claims in two steps inside one transaction. A one-statement claim (UPDATE ... FETCH
      // FIRST n ROWS ONLY) handed rows out twice in the concurrency tests: H2 let the statement
      // lease rows as its snapshot showed them, although another relay had leased and marked
      // them sent after that snapshot. So the
      // SELECT ... FOR UPDATE SKIP LOCKED takes the locks (parameters now, now, max), and then a
      // conditional UPDATE per locked row, from a snapshot taken after the locks, keeps only rows
      // that still qualify and were not rescheduled meanwhile (attempts unchanged).
      // Parameters: owner, until, seq, attempts read, now, now.
      // "now" is the database clock's, read once at the start of the claim's transaction.
      this.claimSql = "SELECT " + CLAIM_COLUMNS + " FROM " + table + " o WHERE "
          + claimable(table, "?") + " ORDER BY o.seq FETCH FIRST ? ROWS ONLY"
          + " FOR UPDATE SKIP LOCKED";
      String stillClaimable = " WHERE seq = ? AND attempts = ? AND state = " + UNSENT
          + " AND ready_at <= ? AND (lease_until IS NULL OR lease_until <= ?)";
      this.leaseSql = "UPDATE " + table + " SET lease_owner = ?, lease_until = ?"
          + stillClaimable;
      // The same re-check for an undecodable row; parameters: seq, attempts read, now, now.
      this.deleteUndecodableSql = "DELETE FROM " + table + stillClaimable;
      // A JDBC batch of one-row updates: H2 evaluates seq = ANY(?) by a linear search of the
      // array for every row it updates, quadratic in the batch size.
      this.markSentSql = markSentPrefix(table, "?") + "seq = ? AND state = " + UNSENT
          + " AND lease_owner = ?";
    }

    @Override
    Claimed claim(DataSource dataSource, String what, String owner, int max, long leaseNanos,
        UndecodableSink sink) {
      return Jdbc.inTransaction(dataSource, what, c -> {
        long nowNanos = Instants.toNanos("database now", clock.now(c, Dialect.H2));
        long untilNanos = Math.addExact(nowNanos, leaseNanos);
        Instant until = Instants.fromNanos(untilNanos);
        Read read;
        try (PreparedStatement ps = c.prepareStatement(claimSql)) {
          ps.setLong(1, nowNanos);
          ps.setLong(2, nowNanos);
          ps.setInt(3, max);
          read = readClaimed(ps, max, owner, until);
        }
        List<DeadLetter> moved = read.undecodable().isEmpty() ? List.of()
            : deadLetter(c, deleteUndecodableSql, (ps, row) -> {
              ps.setLong(1, row.sequence());
              ps.setInt(2, row.attempts());
              ps.setLong(3, nowNanos);
              ps.setLong(4, nowNanos);
            }, read.undecodable(), sink);
        List<OutboxRecord> candidates = read.records();
        if (candidates.isEmpty()) {
          return new Claimed(candidates, moved);
        }
        try (PreparedStatement ps = c.prepareStatement(leaseSql)) {
          for (OutboxRecord r : candidates) {
            ps.setString(1, owner);
            ps.setLong(2, untilNanos);
            ps.setLong(3, r.sequence());
            ps.setInt(4, r.attempts());
            ps.setLong(5, nowNanos);
            ps.setLong(6, nowNanos);
            ps.addBatch();
          }
          int[] counts = ps.executeBatch();
          List<OutboxRecord> leased = new ArrayList<>(candidates.size());
          for (int i = 0; i < counts.length; i++) {
            if (counts[i] == 1 || counts[i] == Statement.SUCCESS_NO_INFO) {
              leased.add(candidates.get(i));
            }
          }
          return new Claimed(leased, moved);
        }
      });
    }

    @Override
    int markSent(DataSource dataSource, String what, String owner, Long[] seqs) {
      return Jdbc.inTransaction(dataSource, what, c -> {
        long nowNanos = Instants.toNanos("database now", clock.now(c, Dialect.H2));
        try (PreparedStatement ps = c.prepareStatement(markSentSql)) {
          for (Long seq : seqs) {
            ps.setLong(1, nowNanos);
            ps.setLong(2, seq);
            ps.setString(3, owner);
            ps.addBatch();
          }
          return Jdbc.rowsChanged(ps.executeBatch());
        }
      });
    }
  }
}
