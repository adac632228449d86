package io.relaykit.storage.h2;

import io.relaykit.message.Message;
import io.relaykit.outbox.OutboxRecord;
import io.relaykit.outbox.OutboxStats;
import io.relaykit.outbox.OutboxStore;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import javax.sql.DataSource;

/**
 * The transactional outbox on H2 or PostgreSQL. {@link #append} writes a message row through the
 * caller's own connection, so it commits or rolls back with the business write; relays then
 * {@link #claim} rows with a lease, publish them and {@link #markSent}.
 *
 * <p>A claim leases the oldest ready rows that are the oldest unsent row of their key, skipping
 * rows other relays hold, and returns them; a row is leased to one relay at a time. On PostgreSQL
 * it is one statement, {@code UPDATE ... WHERE seq = ANY(ARRAY(SELECT ... FOR UPDATE SKIP LOCKED))
 * RETURNING ...}, and {@link #markSent} is one {@code UPDATE ... WHERE seq = ANY(?)}. On H2 a
 * claim is one transaction of {@code SELECT ... FOR UPDATE SKIP LOCKED} and a batch of conditional
 * one-row lease updates (H2 row locks do not re-check a row; see the constructor), and markSent
 * one batch of one-row updates. Cost per claim: one index range scan in sequence order that stops
 * after {@code max} rows, one index probe per keyed candidate, one row write per claimed row (plus
 * one lock write per row on H2); see the README for the index plan. Append is one INSERT (one
 * batch for {@link #appendAll}). Thread-safe.
 */
public final class JdbcOutboxStore implements OutboxStore {

  /** The largest payload the outbox stores, in bytes. */
  public static final int MAX_PAYLOAD_BYTES = Schema.MAX_PAYLOAD_BYTES;

  static final int UNSENT = 0;
  static final int SENT = 1;

  private static final int MAX_ID_LENGTH = 255;
  private static final int MAX_KEY_LENGTH = 512;
  private static final int MAX_ERROR_LENGTH = 1000;

  private final DataSource dataSource;
  private final Tables tables;
  private final boolean postgres;
  private final String insertSql;
  private final String claimSql;
  private final String leaseSql;
  private final String markSentSql;

  JdbcOutboxStore(DataSource dataSource, Dialect dialect, Tables tables) {
    this.dataSource = dataSource;
    this.tables = tables;
    this.postgres = dialect == Dialect.POSTGRESQL;
    String t = tables.outbox;
    this.insertSql = "INSERT INTO " + t + " (destination, message_id, msg_key, headers, payload,"
        + " created_at, state, ready_at, attempts) VALUES (?, ?, ?, ?, ?, ?, " + UNSENT
        + ", 0, 0)";
    // Claimable: unsent, ready, not under a live lease, and the oldest unsent row of its key.
    // Parameters: now, now.
    String claimable = "o.state = " + UNSENT + " AND o.ready_at <= ?"
        + " AND (o.lease_until IS NULL OR o.lease_until <= ?)"
        + " AND (o.msg_key IS NULL OR NOT EXISTS (SELECT 1 FROM " + t + " e"
        + " WHERE e.msg_key = o.msg_key AND e.state = " + UNSENT + " AND e.seq < o.seq))";
    String markSent = "UPDATE " + t + " SET state = " + SENT + ", sent_at = ?,"
        + " lease_owner = NULL, lease_until = NULL WHERE ";
    if (postgres) {
      // One statement, one round trip: the subquery locks the oldest claimable rows, skipping
      // rows other relays hold (READ COMMITTED re-checks a locked row's WHERE clause on its newest
      // version), and the UPDATE leases exactly those rows and returns them. ANY(ARRAY(...))
      // makes the subquery an init plan, run once, and the UPDATE a primary-key lookup; with
      // seq IN (...) the planner may pick a hash semi-join over a sequential scan of the table,
      // sent rows included. Parameters: owner, until, now, now, max.
      this.claimSql = "UPDATE " + t + " SET lease_owner = ?, lease_until = ?"
          + " WHERE seq = ANY(ARRAY(SELECT o.seq FROM " + t + " o WHERE " + claimable
          + " ORDER BY o.seq LIMIT ? FOR UPDATE SKIP LOCKED)) RETURNING " + CLAIM_COLUMNS;
      this.leaseSql = null;
      // The whole batch in one statement (an index scan of the primary key for the array).
      this.markSentSql = markSent + "seq = ANY(?) AND state = " + UNSENT + " AND lease_owner = ?";
    } else {
      // H2 claims in two steps inside one transaction. A one-statement claim (UPDATE ... FETCH
      // FIRST n ROWS ONLY) handed rows out twice in the concurrency tests: H2 let the statement
      // lease rows as its snapshot showed them, although another relay had leased and marked
      // them sent after that snapshot. So the
      // SELECT ... FOR UPDATE SKIP LOCKED takes the locks (parameters now, now, max), and then a
      // conditional UPDATE per locked row, from a snapshot taken after the locks, keeps only rows
      // that still qualify and were not rescheduled meanwhile (attempts unchanged).
      // Parameters: owner, until, seq, attempts read, now, now.
      this.claimSql = "SELECT " + CLAIM_COLUMNS + " FROM " + t + " o WHERE " + claimable
          + " ORDER BY o.seq FETCH FIRST ? ROWS ONLY FOR UPDATE SKIP LOCKED";
      this.leaseSql = "UPDATE " + t + " SET lease_owner = ?, lease_until = ? WHERE seq = ?"
          + " AND attempts = ? AND state = " + UNSENT + " AND ready_at <= ?"
          + " AND (lease_until IS NULL OR lease_until <= ?)";
      // A JDBC batch of one-row updates: H2 evaluates seq = ANY(?) by a linear search of the
      // array for every row it updates, quadratic in the batch size.
      this.markSentSql = markSent + "seq = ? AND state = " + UNSENT + " AND lease_owner = ?";
    }
  }

  /** The columns a claim returns, in the order {@link #readClaimed} reads them. */
  private static final String CLAIM_COLUMNS =
      "seq, destination, msg_key, headers, payload, attempts, first_failure_at";

  /**
   * Inserts {@code message} for {@code destination} through {@code tx}, the caller's connection,
   * inside whatever transaction it has open: the row commits or rolls back with the caller's
   * business write. Does not commit, close or change {@code tx}.
   *
   * @return the row's sequence number
   * @throws IllegalArgumentException naming the field when the destination is blank or longer than
   *     255, the message is null, its id is longer than 255, its key longer than 512, or its payload
   *     larger than {@link #MAX_PAYLOAD_BYTES}; nothing is written then
   * @throws SQLException from the caller's connection; the caller decides about its transaction
   */
  public long append(Connection tx, String destination, Message message) throws SQLException {
    requireConnection(tx);
    validate(destination, message);
    try (PreparedStatement ps = tx.prepareStatement(insertSql, Statement.RETURN_GENERATED_KEYS)) {
      bind(ps, destination, message);
      ps.executeUpdate();
      try (ResultSet keys = ps.getGeneratedKeys()) {
        if (!keys.next()) {
          throw new SQLException("the database returned no sequence for the outbox row");
        }
        return keys.getLong(1);
      }
    }
  }

  /**
   * Inserts every message for {@code destination} through {@code tx} as one JDBC batch: the way to
   * write many rows (and to fill a backlog for a benchmark). Every message is validated before
   * anything is written.
   *
   * @throws IllegalArgumentException as {@link #append}, for the first invalid message
   */
  public void appendAll(Connection tx, String destination, List<Message> messages)
      throws SQLException {
    requireConnection(tx);
    if (messages == null) {
      throw new IllegalArgumentException("messages must not be null");
    }
    for (Message m : messages) {
      validate(destination, m);
    }
    try (PreparedStatement ps = tx.prepareStatement(insertSql)) {
      int pending = 0;
      for (Message m : messages) {
        bind(ps, destination, m);
        ps.addBatch();
        if (++pending == 1_000) {
          ps.executeBatch();
          pending = 0;
        }
      }
      if (pending > 0) {
        ps.executeBatch();
      }
    }
  }

  @Override
  public List<OutboxRecord> claim(String owner, int max, Duration lease, Instant now) {
    requireOwner(owner);
    if (max < 1) {
      throw new IllegalArgumentException("max must be >= 1, was " + max);
    }
    if (lease == null || lease.isZero() || lease.isNegative()) {
      throw new IllegalArgumentException("lease must be a positive duration, was " + lease);
    }
    requireNow(now);
    Instant until = now.plus(lease);
    long nowNanos = Instants.toNanos("now", now);
    long untilNanos = Instants.toNanos("now + lease", until);
    String what = "outbox claim on " + tables.outbox;
    List<OutboxRecord> claimed;
    if (postgres) {
      claimed = Jdbc.autoCommit(dataSource, what, c -> {
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

  private static List<OutboxRecord> readClaimed(PreparedStatement ps, int max, String owner,
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

  private static final Comparator<OutboxRecord> BY_SEQUENCE =
      Comparator.comparingLong(OutboxRecord::sequence);

  @Override
  public int markSent(String owner, Collection<Long> sequences, Instant now) {
    requireOwner(owner);
    if (sequences == null) {
      throw new IllegalArgumentException("sequences must not be null");
    }
    requireNow(now);
    if (sequences.isEmpty()) {
      return 0;
    }
    long nowNanos = Instants.toNanos("now", now);
    Long[] seqs = new Long[sequences.size()];
    int i = 0;
    for (Long seq : sequences) {
      if (seq == null) {
        throw new IllegalArgumentException("sequences must not contain null");
      }
      seqs[i++] = seq;
    }
    // Ascending, so concurrent statements lock rows in one order, as claims do.
    Arrays.sort(seqs);
    String what = "outbox markSent on " + tables.outbox;
    if (postgres) {
      return Jdbc.autoCommit(dataSource, what, c -> {
        try (PreparedStatement ps = c.prepareStatement(markSentSql)) {
          ps.setLong(1, nowNanos);
          ps.setArray(2, c.createArrayOf("bigint", seqs));
          ps.setString(3, owner);
          return ps.executeUpdate();
        }
      });
    }
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

  @Override
  public boolean reschedule(String owner, long sequence, int attempts, Instant failedAt,
      Instant notBefore, String error) {
    requireOwner(owner);
    if (attempts < 1) {
      throw new IllegalArgumentException("attempts must be >= 1, was " + attempts);
    }
    if (failedAt == null || notBefore == null) {
      throw new IllegalArgumentException((failedAt == null ? "failedAt" : "notBefore")
          + " must not be null");
    }
    long failedNanos = Instants.toNanos("failedAt", failedAt);
    long readyNanos = Instants.toNanos("notBefore", notBefore);
    String err = error == null ? null
        : error.length() <= MAX_ERROR_LENGTH ? error : error.substring(0, MAX_ERROR_LENGTH);
    return Jdbc.autoCommit(dataSource, "outbox reschedule on " + tables.outbox, c -> {
      try (PreparedStatement ps = c.prepareStatement("UPDATE " + tables.outbox
          + " SET attempts = ?, first_failure_at = COALESCE(first_failure_at, ?), ready_at = ?,"
          + " last_error = ?, lease_owner = NULL, lease_until = NULL"
          + " WHERE seq = ? AND state = " + UNSENT + " AND lease_owner = ?")) {
        ps.setInt(1, attempts);
        ps.setLong(2, failedNanos);
        ps.setLong(3, readyNanos);
        if (err == null) {
          ps.setNull(4, Types.VARCHAR);
        } else {
          ps.setString(4, err);
        }
        ps.setLong(5, sequence);
        ps.setString(6, owner);
        return ps.executeUpdate() == 1;
      }
    });
  }

  @Override
  public boolean markDead(String owner, long sequence) {
    requireOwner(owner);
    return Jdbc.autoCommit(dataSource, "outbox markDead on " + tables.outbox, c -> {
      try (PreparedStatement ps = c.prepareStatement("DELETE FROM " + tables.outbox
          + " WHERE seq = ? AND state = " + UNSENT + " AND lease_owner = ?")) {
        ps.setLong(1, sequence);
        ps.setString(2, owner);
        return ps.executeUpdate() == 1;
      }
    });
  }

  @Override
  public int purgeSent(Instant sentBefore) {
    if (sentBefore == null) {
      throw new IllegalArgumentException("sentBefore must not be null");
    }
    long before = Instants.toNanos("sentBefore", sentBefore);
    return Jdbc.autoCommit(dataSource, "outbox purgeSent on " + tables.outbox, c -> {
      try (PreparedStatement ps = c.prepareStatement("DELETE FROM " + tables.outbox
          + " WHERE state = " + SENT + " AND sent_at < ?")) {
        ps.setLong(1, before);
        return ps.executeUpdate();
      }
    });
  }

  @Override
  public OutboxStats stats(Instant now) {
    requireNow(now);
    return Jdbc.autoCommit(dataSource, "outbox stats on " + tables.outbox, c -> {
      long unsent;
      Instant oldest;
      long sent;
      try (Statement s = c.createStatement()) {
        try (ResultSet rs = s.executeQuery("SELECT COUNT(*), MIN(created_at) FROM "
            + tables.outbox + " WHERE state = " + UNSENT)) {
          rs.next();
          unsent = rs.getLong(1);
          long min = rs.getLong(2);
          oldest = rs.wasNull() ? null : Instants.fromNanos(min);
        }
        try (ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM " + tables.outbox
            + " WHERE state = " + SENT)) {
          rs.next();
          sent = rs.getLong(1);
        }
      }
      Duration age = oldest == null || oldest.isAfter(now) ? Duration.ZERO
          : Duration.between(oldest, now);
      return new OutboxStats(unsent, age, sent);
    });
  }

  private static void requireConnection(Connection tx) {
    if (tx == null) {
      throw new IllegalArgumentException("tx must not be null: pass the connection of your"
          + " business transaction");
    }
  }

  private static void validate(String destination, Message message) {
    if (destination == null || destination.isBlank()) {
      throw new IllegalArgumentException("destination must not be blank, was "
          + (destination == null ? "null" : "'" + destination + "'"));
    }
    if (destination.length() > MAX_ID_LENGTH) {
      throw new IllegalArgumentException("destination must be at most " + MAX_ID_LENGTH
          + " characters, was " + destination.length());
    }
    if (message == null) {
      throw new IllegalArgumentException("message must not be null");
    }
    if (message.id().length() > MAX_ID_LENGTH) {
      throw new IllegalArgumentException("message id must be at most " + MAX_ID_LENGTH
          + " characters, was " + message.id().length());
    }
    if (message.key().isPresent() && message.key().get().length() > MAX_KEY_LENGTH) {
      throw new IllegalArgumentException("message key must be at most " + MAX_KEY_LENGTH
          + " characters, was " + message.key().get().length());
    }
    if (message.payloadSize() > MAX_PAYLOAD_BYTES) {
      throw new IllegalArgumentException("payload of message " + message.id() + " is "
          + message.payloadSize() + " bytes, over the outbox limit of " + MAX_PAYLOAD_BYTES
          + " bytes; nothing was written");
    }
  }

  private void bind(PreparedStatement ps, String destination, Message m) throws SQLException {
    ps.setString(1, destination);
    ps.setString(2, m.id());
    if (m.key().isPresent()) {
      ps.setString(3, m.key().get());
    } else {
      ps.setNull(3, Types.VARCHAR);
    }
    ps.setString(4, Envelopes.encode(m));
    ps.setBytes(5, m.payload());
    ps.setLong(6, Instants.toNanos("message createdAt", m.createdAt()));
  }

  private static void requireOwner(String owner) {
    if (owner == null || owner.isBlank()) {
      throw new IllegalArgumentException("owner must not be blank, was "
          + (owner == null ? "null" : "'" + owner + "'"));
    }
    if (owner.length() > MAX_ID_LENGTH) {
      throw new IllegalArgumentException("owner must be at most " + MAX_ID_LENGTH
          + " characters, was " + owner.length());
    }
  }

  private static void requireNow(Instant now) {
    if (now == null) {
      throw new IllegalArgumentException("now must not be null");
    }
  }
}
