package io.relaykit.storage.h2;

import static io.relaykit.storage.h2.JdbcOutboxStore.SENT;
import static io.relaykit.storage.h2.JdbcOutboxStore.UNSENT;

import io.relaykit.message.Message;
import io.relaykit.outbox.OutboxRecord;
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
 */
abstract sealed class OutboxStatements {

  /** The columns a claim returns, in the order {@link #readClaimed} reads them. */
  static final String CLAIM_COLUMNS =
      "seq, destination, msg_key, headers, payload, attempts, first_failure_at";

  /**
   * Leases up to {@code max} claimable rows to {@code owner} until {@code untilNanos}, oldest
   * first; {@code what} names the operation in a {@link JdbcStorageException}.
   */
  abstract List<OutboxRecord> claim(DataSource dataSource, String what, String owner, int max,
      long nowNanos, long untilNanos, Instant until);

  /** Marks the rows {@code seqs} (ascending) that {@code owner} holds sent; the count changed. */
  abstract int markSent(DataSource dataSource, String what, String owner, Long[] seqs,
      long nowNanos);

  /**
   * Claimable: unsent, ready, not under a live lease, and the oldest unsent row of its key, for
   * the outbox table aliased {@code o}. Parameters: now, now.
   */
  static String claimable(String table) {
    return "o.state = " + UNSENT + " AND o.ready_at <= ?"
        + " AND (o.lease_until IS NULL OR o.lease_until <= ?)"
        + " AND (o.msg_key IS NULL OR NOT EXISTS (SELECT 1 FROM " + table + " e"
        + " WHERE e.msg_key = o.msg_key AND e.state = " + UNSENT + " AND e.seq < o.seq))";
  }

  /** The start of a markSent UPDATE, up to its WHERE; parameter: now. */
  static String markSentPrefix(String table) {
    return "UPDATE " + table + " SET state = " + SENT + ", sent_at = ?,"
        + " lease_owner = NULL, lease_until = NULL WHERE ";
  }

  static List<OutboxRecord> readClaimed(PreparedStatement ps, int max, String owner,
      Instant until) throws SQLException {
    List<OutboxRecord> rows = new ArrayList<>(Math.min(max, 1_024));
    try (ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        long firstFailure = rs.getLong(7);
        Instant firstFailureAt = rs.wasNull() ? null : Instants.fromNanos(firstFailure);
        Message m = Envelopes.decode(rs.getString(4), rs.getString(3), rs.getBytes(5));
        rows.add(new OutboxRecord(rs.getLong(1), rs.getString(2), m, rs.getInt(6),
            firstFailureAt, owner, until));
      }
    }
    return rows;
  }

  /** PostgreSQL: a claim and a markSent are one auto-committed statement each. */
  static final class Postgres extends OutboxStatements {
    private static final Comparator<OutboxRecord> BY_SEQUENCE =
        Comparator.comparingLong(OutboxRecord::sequence);

    private final String claimSql;
    private final String markSentSql;

    Postgres(String table) {
      // One statement, one round trip: the subquery locks the oldest claimable rows, skipping
      // rows other relays hold (READ COMMITTED re-checks a locked row's WHERE clause on its newest
      // version), and the UPDATE leases exactly those rows and returns them. ANY(ARRAY(...))
      // makes the subquery an init plan, run once, and the UPDATE a primary-key lookup; with
      // seq IN (...) the planner may pick a hash semi-join over a sequential scan of the table,
      // sent rows included. Parameters: owner, until, now, now, max.
      this.claimSql = "UPDATE " + table + " SET lease_owner = ?, lease_until = ?"
          + " WHERE seq = ANY(ARRAY(SELECT o.seq FROM " + table + " o WHERE "
          + claimable(table) + " ORDER BY o.seq LIMIT ? FOR UPDATE SKIP LOCKED)) RETURNING "
          + CLAIM_COLUMNS;
      // The whole batch in one statement (an index scan of the primary key for the array).
      this.markSentSql = markSentPrefix(table) + "seq = ANY(?) AND state = " + UNSENT
          + " AND lease_owner = ?";
    }

    @Override
    List<OutboxRecord> claim(DataSource dataSource, String what, String owner, int max,
        long nowNanos, long untilNanos, Instant until) {
      List<OutboxRecord> claimed = Jdbc.autoCommit(dataSource, what, c -> {
        try (PreparedStatement ps = c.prepareStatement(claimSql)) {
          ps.setString(1, owner);
          ps.setLong(2, untilNanos);
          ps.setLong(3, nowNanos);
          ps.setLong(4, nowNanos);
          ps.setInt(5, max);
          return readClaimed(ps, max, owner, until);
        }
      });
      // UPDATE ... RETURNING promises no order: oldest first, as specified.
      claimed.sort(BY_SEQUENCE);
      return claimed;
    }

    @Override
    int markSent(DataSource dataSource, String what, String owner, Long[] seqs, long nowNanos) {
      return Jdbc.autoCommit(dataSource, what, c -> {
        try (PreparedStatement ps = c.prepareStatement(markSentSql)) {
          ps.setLong(1, nowNanos);
          ps.setArray(2, c.createArrayOf("bigint", seqs));
          ps.setString(3, owner);
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

    H2(String table) {
      // H2 claims in two steps inside one transaction. A one-statement claim (UPDATE ... FETCH
      // FIRST n ROWS ONLY) handed rows out twice in the concurrency tests: H2 let the statement
      // lease rows as its snapshot showed them, although another relay had leased and marked
      // them sent after that snapshot. So the
      // SELECT ... FOR UPDATE SKIP LOCKED takes the locks (parameters now, now, max), and then a
      // conditional UPDATE per locked row, from a snapshot taken after the locks, keeps only rows
      // that still qualify and were not rescheduled meanwhile (attempts unchanged).
      // Parameters: owner, until, seq, attempts read, now, now.
      this.claimSql = "SELECT " + CLAIM_COLUMNS + " FROM " + table + " o WHERE "
          + claimable(table) + " ORDER BY o.seq FETCH FIRST ? ROWS ONLY FOR UPDATE SKIP LOCKED";
      this.leaseSql = "UPDATE " + table + " SET lease_owner = ?, lease_until = ? WHERE seq = ?"
          + " AND attempts = ? AND state = " + UNSENT + " AND ready_at <= ?"
          + " AND (lease_until IS NULL OR lease_until <= ?)";
      // A JDBC batch of one-row updates: H2 evaluates seq = ANY(?) by a linear search of the
      // array for every row it updates, quadratic in the batch size.
      this.markSentSql = markSentPrefix(table) + "seq = ? AND state = " + UNSENT
          + " AND lease_owner = ?";
    }

    @Override
    List<OutboxRecord> claim(DataSource dataSource, String what, String owner, int max,
        long nowNanos, long untilNanos, Instant until) {
      return Jdbc.inTransaction(dataSource, what, c -> {
        List<OutboxRecord> candidates;
        try (PreparedStatement ps = c.prepareStatement(claimSql)) {
          ps.setLong(1, nowNanos);
          ps.setLong(2, nowNanos);
          ps.setInt(3, max);
          candidates = readClaimed(ps, max, owner, until);
        }
        if (candidates.isEmpty()) {
          return candidates;
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
          return leased;
        }
      });
    }

    @Override
    int markSent(DataSource dataSource, String what, String owner, Long[] seqs, long nowNanos) {
      return Jdbc.inTransaction(dataSource, what, c -> {
        try (PreparedStatement ps = c.prepareStatement(markSentSql)) {
          for (Long seq : seqs) {
            ps.setLong(1, nowNanos);
            ps.setLong(2, seq);
            ps.setString(3, owner);
            ps.addBatch();
          }
          int changed = 0;
          for (int n : ps.executeBatch()) {
            changed += n > 0 ? n : 0;
          }
          return changed;
        }
      });
    }
  }
}
