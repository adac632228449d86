package io.relaykit.storage.jdbc;

import static io.relaykit.storage.jdbc.JdbcOutboxStore.SENT;
import static io.relaykit.storage.jdbc.JdbcOutboxStore.UNSENT;

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
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.TreeSet;
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
  record Claimed(List<OutboxRecord> records, List<DeadLetter> deadLettered, long headsWalked,
      long rowsWalked) {
    /** A claim that does not count what it walked (PostgreSQL's one statement): -1, -1. */
    Claimed(List<OutboxRecord> records, List<DeadLetter> deadLettered) {
      this(records, deadLettered, -1, -1);
    }
  }

  /** What one claim walked, counted as it goes. */
  static final class Walk {
    long heads;
    long rows;
  }

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

  /** A scope key: a message key and its order scope ('' or the destination). */
  record KeyRef(String key, String orderDest) implements Comparable<KeyRef> {
    @Override
    public int compareTo(KeyRef o) {
      int c = key.compareTo(o.key);
      return c != 0 ? c : orderDest.compareTo(o.orderDest);
    }
  }

  /** How often an append retries taking its key's head row when it raced a delete or insert. */
  private static final int HEAD_LOCK_ATTEMPTS = 20;

  final DatabaseClock clock;
  final String table;
  final String headTable;
  private final String lockHeadSql;
  private final String insertHeadSql;
  private final String setHeadSql;
  private final String tryLockHeadSql;
  private final String advanceHeadSql;
  private final String keyOfSql;
  private final String keysInRangeSql;
  private final String idleHeadsSql;
  private final String deleteIdleHeadSql;
  private final String staleHeadsSql;
  private final String runProbeSql;
  private final String runLockSql;
  private final String runLeaseSql;

  OutboxStatements(String table, String headTable, DatabaseClock clock, String insertHeadSql) {
    this.clock = clock;
    this.table = table;
    this.headTable = headTable;
    String byKey = " WHERE msg_key = ? AND order_dest = ?";
    this.lockHeadSql = "SELECT head_seq FROM " + headTable + byKey + " FOR UPDATE";
    this.insertHeadSql = insertHeadSql;
    // The key had no unsent row: its new lowest row is due now (0 is never later than its due).
    this.setHeadSql = "UPDATE " + headTable + " SET head_seq = ?, head_due = 0" + byKey;
    this.tryLockHeadSql = "SELECT head_seq FROM " + headTable + byKey
        + " FOR UPDATE SKIP LOCKED";
    // Run only while this transaction holds the head's lock, in a statement of its own: it then
    // sees every row an append of this key committed before the lock was taken.
    // head_due follows: the ready_at of the key's lowest unsent row (0 when there is none).
    // Parameters: key, scope, key, scope, key, scope.
    String lowest = "(SELECT MIN(x.seq) FROM " + table + " x WHERE x.msg_key = ? AND"
        + " x.order_dest = ? AND x.state = " + UNSENT + ")";
    this.advanceHeadSql = "UPDATE " + headTable + " SET head_seq = " + lowest
        + ", head_due = COALESCE((SELECT d.ready_at FROM " + table + " d WHERE d.seq = "
        + lowest + "), 0)" + byKey;
    this.keyOfSql = "SELECT msg_key, order_dest FROM " + table
        + " WHERE seq = ? AND msg_key IS NOT NULL";
    this.keysInRangeSql = "SELECT msg_key, order_dest FROM " + table
        + " WHERE seq BETWEEN ? AND ? AND msg_key IS NOT NULL ORDER BY seq";
    // No ORDER BY: H2 would then lock every idle head before FETCH FIRST cuts the sorted result
    // (JdbcPurgeLockScopeTest).
    this.idleHeadsSql = "SELECT msg_key, order_dest FROM " + headTable
        + " WHERE head_seq IS NULL FETCH FIRST ? ROWS ONLY FOR UPDATE SKIP LOCKED";
    this.deleteIdleHeadSql = "DELETE FROM " + headTable + byKey + " AND head_seq IS NULL";
    // Heads, oldest first, whose row is not unsent any more; without locks (see idleHeadsSql).
    // Parameters: max.
    this.staleHeadsSql = "SELECT h.msg_key, h.order_dest FROM " + headTable + " h"
        + " WHERE h.head_seq IS NOT NULL AND NOT EXISTS (SELECT 1 FROM " + table + " o"
        + " WHERE o.seq = h.head_seq AND o.state = " + UNSENT + ")"
        + " ORDER BY h.head_seq FETCH FIRST ? ROWS ONLY";
    // Runs (see leaseRuns). Parameters: key, scope, after, n.
    this.runProbeSql = "SELECT seq, ready_at, lease_until FROM " + table + byKey
        + " AND state = " + UNSENT + " AND seq > ? ORDER BY seq FETCH FIRST ? ROWS ONLY";
    // Parameters: key, scope, from, to, now, now.
    this.runLockSql = "SELECT " + CLAIM_COLUMNS + " FROM " + table + " o WHERE o.msg_key = ?"
        + " AND o.order_dest = ? AND o.state = " + UNSENT + " AND o.seq BETWEEN ? AND ? AND "
        + ready("o", "?") + " ORDER BY o.seq FOR UPDATE SKIP LOCKED";
    // Parameters: owner, until, seq, attempts read, now, now.
    this.runLeaseSql = "UPDATE " + table + " SET lease_owner = ?, lease_until = ? WHERE seq = ?"
        + " AND attempts = ? AND state = " + UNSENT + " AND ready_at <= ?"
        + " AND (lease_until IS NULL OR lease_until <= ?)";
  }

  /**
   * Takes the row lock on {@code ref}'s head in {@code tx}'s transaction (creating the head row
   * if there is none), waiting for another transaction that holds it; returns the head's
   * head_seq, 0 when the key has no unsent row. The lock holds until the caller's transaction
   * ends.
   */
  long lockHead(Connection tx, KeyRef ref) throws SQLException {
    for (int attempt = 1; attempt <= HEAD_LOCK_ATTEMPTS; attempt++) {
      try (PreparedStatement ps = tx.prepareStatement(lockHeadSql)) {
        ps.setString(1, ref.key());
        ps.setString(2, ref.orderDest());
        try (ResultSet rs = ps.executeQuery()) {
          if (rs.next()) {
            long head = rs.getLong(1);
            return rs.wasNull() ? 0 : head;
          }
        }
      }
      // No head row: create it (an INSERT locks the new row until commit). Another append may
      // create it at the same moment; then lock the one it created.
      if (insertHead(tx, ref)) {
        return 0;
      }
    }
    throw new SQLException("could not take the order lock of outbox key '" + ref.key()
        + "' (scope '" + ref.orderDest() + "') in " + headTable + " after "
        + HEAD_LOCK_ATTEMPTS + " attempts: its head row was created and removed concurrently"
        + " each time");
  }

  /** Inserts a head row with no head; false when one exists already (nothing changed). */
  abstract boolean insertHead(Connection tx, KeyRef ref) throws SQLException;

  final boolean runInsertHead(Connection tx, KeyRef ref) throws SQLException {
    try (PreparedStatement ps = tx.prepareStatement(insertHeadSql)) {
      ps.setString(1, ref.key());
      ps.setString(2, ref.orderDest());
      return ps.executeUpdate() == 1;
    }
  }

  /** Sets a head whose key had no unsent row to {@code seq}; the caller holds its lock. */
  void setHead(Connection tx, KeyRef ref, long seq) throws SQLException {
    try (PreparedStatement ps = tx.prepareStatement(setHeadSql)) {
      ps.setLong(1, seq);
      ps.setString(2, ref.key());
      ps.setString(3, ref.orderDest());
      ps.executeUpdate();
    }
  }

  /**
   * Moves the heads of {@code refs} to their keys' lowest unsent row (NULL when none is left),
   * after rows of theirs were sent or removed in {@code c}'s transaction. Never waits: a head an
   * append holds right now is skipped and keeps its old value, a lower bound that claims correct
   * (they probe the key's lowest unsent row; see {@link #claim}); it moves at the key's next
   * markSent.
   */
  void advanceHeads(Connection c, Collection<KeyRef> refs) throws SQLException {
    if (refs.isEmpty()) {
      return;
    }
    List<KeyRef> sorted = new ArrayList<>(new TreeSet<>(refs));
    List<KeyRef> locked = new ArrayList<>(sorted.size());
    try (PreparedStatement ps = c.prepareStatement(tryLockHeadSql)) {
      for (KeyRef ref : sorted) {
        ps.setString(1, ref.key());
        ps.setString(2, ref.orderDest());
        try (ResultSet rs = ps.executeQuery()) {
          if (rs.next()) {
            locked.add(ref);
          }
        }
      }
    }
    if (locked.isEmpty()) {
      return;
    }
    try (PreparedStatement ps = c.prepareStatement(advanceHeadSql)) {
      for (KeyRef ref : locked) {
        for (int i = 0; i < 3; i++) {
          ps.setString(2 * i + 1, ref.key());
          ps.setString(2 * i + 2, ref.orderDest());
        }
        ps.addBatch();
      }
      ps.executeBatch();
    }
  }

  /**
   * The scope keys of the rows {@code seqs} that have a key (read in {@code c}): one
   * primary-key range read per run of consecutive sequences, so a contiguous batch costs one
   * statement, not one per row.
   */
  List<KeyRef> keysOf(Connection c, Long[] seqs) throws SQLException {
    List<KeyRef> refs = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(keysInRangeSql)) {
      for (long[] run : consecutiveRuns(seqs)) {
        ps.setLong(1, run[0]);
        ps.setLong(2, run[1]);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            refs.add(new KeyRef(rs.getString(1), rs.getString(2)));
          }
        }
      }
    }
    return refs;
  }

  /**
   * {@code seqs} (any order, repeats allowed) as maximal runs of consecutive values, ascending,
   * each {first, last}: a range {@code seq BETWEEN first AND last} then holds exactly the
   * sequences of its run, so one range statement does what one statement per row did.
   */
  static List<long[]> consecutiveRuns(Long[] seqs) {
    long[] sorted = new long[seqs.length];
    for (int i = 0; i < seqs.length; i++) {
      sorted[i] = seqs[i];
    }
    java.util.Arrays.sort(sorted);
    List<long[]> runs = new ArrayList<>();
    for (int i = 0; i < sorted.length; ) {
      int j = i;
      while (j + 1 < sorted.length
          && (sorted[j + 1] == sorted[j] || sorted[j + 1] == sorted[j] + 1)) {
        j++;
      }
      runs.add(new long[] {sorted[i], sorted[j]});
      i = j + 1;
    }
    return runs;
  }

  /**
   * Moves up to {@code max} stale heads (oldest first: the ones claims walk first) to their keys'
   * lowest unsent row, or NULL when none is left, skipping heads an append holds. A head goes
   * stale when {@link #advanceHeads} skipped it because an append held it, and that append
   * rolled back: no later markSent of the key moves it then. Cost: an index scan of the heads in
   * head_seq order with one primary-key probe each, until {@code max} stale ones are found.
   * Returns how many it looked at.
   */
  int repairStaleHeads(Connection c, int max) throws SQLException {
    List<KeyRef> stale = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(staleHeadsSql)) {
      ps.setInt(1, max);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          stale.add(new KeyRef(rs.getString(1), rs.getString(2)));
        }
      }
    }
    advanceHeads(c, stale);
    return stale.size();
  }

  /**
   * Deletes up to {@code max} heads of keys with no unsent row left, skipping heads an append
   * holds; returns how many.
   */
  int purgeIdleHeads(Connection c, int max) throws SQLException {
    List<KeyRef> idle = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(idleHeadsSql)) {
      ps.setInt(1, max);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          idle.add(new KeyRef(rs.getString(1), rs.getString(2)));
        }
      }
    }
    if (idle.isEmpty()) {
      return 0;
    }
    try (PreparedStatement ps = c.prepareStatement(deleteIdleHeadSql)) {
      for (KeyRef ref : idle) {
        ps.setString(1, ref.key());
        ps.setString(2, ref.orderDest());
        ps.addBatch();
      }
      return Jdbc.rowsChanged(ps.executeBatch());
    }
  }

  /**
   * Leases up to {@code max} claimable rows to {@code owner} for {@code leaseNanos} from the
   * database clock's now, oldest first, and moves undecodable ones to {@code sink}; {@code what}
   * names the operation in a {@link JdbcStorageException}.
   */
  abstract Claimed claim(DataSource dataSource, String what, String owner, int max, int maxRun,
      long leaseNanos, UndecodableSink sink);

  /**
   * Leases, in {@code c}'s transaction, the runs behind the keyed rows of {@code leased} (rows
   * this claim leased until {@code untilNanos}): per key, up to {@code maxRun - 1} of its next
   * unsent rows in sequence order, sharing {@code room}, while each is ready at {@code nowNanos},
   * under no live lease, not locked by another transaction and decodes; a run stops before the
   * first row that is not. Returns the rows leased (heads not included).
   */
  final List<OutboxRecord> leaseRuns(Connection c, String owner, List<OutboxRecord> leased,
      int room, int maxRun, long nowNanos, long untilNanos) throws SQLException {
    return leaseRuns(c, owner, leased, room, maxRun, nowNanos, untilNanos, new Walk());
  }

  /** As above, counting the rows its probes read in {@code walk}. */
  final List<OutboxRecord> leaseRuns(Connection c, String owner, List<OutboxRecord> leased,
      int room, int maxRun, long nowNanos, long untilNanos, Walk walk) throws SQLException {
    List<OutboxRecord> heads = new ArrayList<>();
    for (OutboxRecord r : leased) {
      if (r.message().key().isPresent()) {
        heads.add(r);
      }
    }
    List<OutboxRecord> out = new ArrayList<>();
    if (heads.isEmpty() || room <= 0 || maxRun <= 1) {
      return out;
    }
    Instant until = Instants.fromNanos(untilNanos);
    try (PreparedStatement keyOf = c.prepareStatement(keyOfSql);
        PreparedStatement probe = c.prepareStatement(runProbeSql);
        PreparedStatement lock = c.prepareStatement(runLockSql);
        PreparedStatement lease = c.prepareStatement(runLeaseSql)) {
      for (int i = 0; i < heads.size() && room > 0; i++) {
        OutboxRecord head = heads.get(i);
        int share = Math.min(maxRun - 1, (room + heads.size() - i - 1) / (heads.size() - i));
        keyOf.setLong(1, head.sequence());
        String key;
        String scope;
        try (ResultSet rs = keyOf.executeQuery()) {
          if (!rs.next()) {
            continue;
          }
          key = rs.getString(1);
          scope = rs.getString(2);
        }
        // The key's next rows, without locks (H2 would lock every row a FOR UPDATE matches,
        // before FETCH FIRST): the run is the prefix that is ready and under no live lease.
        List<Long> run = new ArrayList<>(share);
        probe.setString(1, key);
        probe.setString(2, scope);
        probe.setLong(3, head.sequence());
        probe.setInt(4, share);
        try (ResultSet rs = probe.executeQuery()) {
          while (rs.next()) {
            walk.rows++;
            long readyAt = rs.getLong(2);
            long leaseUntil = rs.getLong(3);
            boolean leasedNow = !rs.wasNull() && leaseUntil > nowNanos;
            if (readyAt > nowNanos || leasedNow) {
              break;
            }
            run.add(rs.getLong(1));
          }
        }
        if (run.isEmpty()) {
          continue;
        }
        lock.setString(1, key);
        lock.setString(2, scope);
        lock.setLong(3, run.get(0));
        lock.setLong(4, run.get(run.size() - 1));
        lock.setLong(5, nowNanos);
        lock.setLong(6, nowNanos);
        Read read = readClaimed(lock, run.size(), owner, until);
        List<OutboxRecord> locked = read.records();
        int taken = 0;
        for (int j = 0; j < run.size() && j < locked.size(); j++) {
          OutboxRecord r = locked.get(j);
          if (r.sequence() != run.get(j)) {
            break; // a row of the run is missing (locked elsewhere, undecodable): stop before it
          }
          lease.setString(1, owner);
          lease.setLong(2, untilNanos);
          lease.setLong(3, r.sequence());
          lease.setInt(4, r.attempts());
          lease.setLong(5, nowNanos);
          lease.setLong(6, nowNanos);
          if (lease.executeUpdate() != 1) {
            break;
          }
          out.add(r);
          taken++;
        }
        room -= taken;
      }
    }
    return out;
  }

  /**
   * The database's plans, with what each step read, of the statements that find a claim's
   * candidates (EXPLAIN ANALYZE in {@code c}'s transaction: on PostgreSQL the claim itself runs,
   * so roll it back). For tests that check how many rows a claim reads; not used in production.
   */
  abstract List<String> explainClaim(Connection c, int max, long leaseNanos) throws SQLException;

  /**
   * Marks the rows {@code seqs} (ascending) that {@code owner} holds sent at the database clock's
   * now; the count changed.
   */
  abstract int markSent(DataSource dataSource, String what, String owner, Long[] seqs);

  /**
   * Ready and not under a live lease, for the outbox table aliased {@code a}, with {@code now} the
   * SQL of the current time (a parameter or a scalar subquery, used twice). Whether a row is the
   * head of its key is decided by where a claim takes its candidates from (see {@link #claim}).
   */
  static String ready(String a, String now) {
    return a + ".ready_at <= " + now + " AND (" + a + ".lease_until IS NULL OR " + a
        + ".lease_until <= " + now + ")";
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
   * transaction and, where the DELETE took it, hands it to {@code sink}; moves the heads of their
   * keys on.
   */
  List<DeadLetter> deadLetterRows(Connection c, String deleteSql, DeleteBinder binder,
      List<Undecodable> rows, UndecodableSink sink) throws SQLException {
    List<DeadLetter> moved = new ArrayList<>(rows.size());
    Long[] seqs = new Long[rows.size()];
    for (int i = 0; i < seqs.length; i++) {
      seqs[i] = rows.get(i).sequence();
    }
    List<KeyRef> refs = keysOf(c, seqs);
    try (PreparedStatement ps = c.prepareStatement(deleteSql)) {
      for (Undecodable row : rows) {
        binder.bind(ps, row);
        if (ps.executeUpdate() == 1) {
          moved.add(sink.deadLetter(c, row));
        }
      }
    }
    advanceHeads(c, refs);
    return moved;
  }

  /**
   * PostgreSQL: a claim is one auto-committed statement; a markSent one auto-committed UPDATE
   * and, for keyed rows, one transaction of two statements that move their heads.
   */
  static final class Postgres extends OutboxStatements {
    private static final Comparator<OutboxRecord> BY_SEQUENCE =
        Comparator.comparingLong(OutboxRecord::sequence);

    private final String claimSql;
    private final String markSentSql;
    private final String deleteUndecodableSql;
    private final String tryLockHeadsSql;
    private final String advanceHeadsSql;

    Postgres(String table, String headTable, DatabaseClock clock) {
      super(table, headTable, clock, "INSERT INTO " + headTable
          + " (msg_key, order_dest, head_seq) VALUES (?, ?, NULL)"
          + " ON CONFLICT (msg_key, order_dest) DO NOTHING");
      // One statement, one round trip. Candidates come from two places, each read in order and
      // cut at max: unkeyed unsent rows (the partial index outbox_unsent_unkeyed), and for keyed
      // rows the heads in head_seq order (outbox_head_seq), each probed for its key's lowest
      // unsent row (outbox_unsent_key, one probe) that must be ready. So the claim reads
      // O(max + rows skipped as leased or parked) index entries, never a key's backlog. Then the
      // outer subquery locks the oldest max of those, skipping rows other relays hold (READ
      // COMMITTED re-checks a locked row's WHERE clause on its newest version), and the UPDATE
      // leases exactly those rows and returns them. ANY(ARRAY(...)) makes each subquery an init
      // plan, run once, and the UPDATE a primary-key lookup. The database's now is read once, in
      // the CTE (clock_timestamp() is volatile); each (SELECT now FROM clock) is an init plan.
      // Unkeyed rows come from two partial indexes (schema version 9): never rescheduled ones
      // (ready_at = 0) in seq order, and rescheduled ones due by now in ready_at order, so rows
      // backed off into the future are never read.
      // Keyed heads come from two partial indexes too (schema version 10): heads whose lowest
      // row was never rescheduled (head_due = 0) in head_seq order, and heads of rescheduled rows
      // due by now in due order, so keys backed off into the future are never read.
      // Parameters: [now], owner, lease, max (fresh), max (due retries), max (fresh heads),
      // max (due heads), max.
      String now = "(SELECT now FROM clock)";
      String headRow = " (SELECT x.seq, x.ready_at, x.lease_until FROM " + table + " x"
          + " WHERE x.msg_key = h.msg_key AND x.order_dest = h.order_dest AND x.state = "
          + UNSENT + " AND x.msg_key IS NOT NULL ORDER BY x.seq LIMIT 1) k";
      this.claimSql = "WITH clock AS (SELECT " + clock.nowNanos(Dialect.POSTGRESQL) + " AS now)"
          + " UPDATE " + table + " SET lease_owner = ?, lease_until = " + now + " + ?"
          + " WHERE seq = ANY(ARRAY(SELECT o.seq FROM " + table + " o WHERE o.seq = ANY(ARRAY("
          + "(SELECT u.seq FROM " + table + " u WHERE u.state = " + UNSENT
          + " AND u.msg_key IS NULL AND u.ready_at = 0 AND " + ready("u", now)
          + " ORDER BY u.seq LIMIT ?)"
          + " UNION ALL (SELECT r.seq FROM " + table + " r WHERE r.state = " + UNSENT
          + " AND r.msg_key IS NULL AND r.ready_at > 0 AND " + ready("r", now)
          + " ORDER BY r.ready_at LIMIT ?)"
          + " UNION ALL (SELECT k.seq FROM " + headTable + " h CROSS JOIN LATERAL" + headRow
          + " WHERE h.head_seq IS NOT NULL AND h.head_due = 0 AND " + ready("k", now)
          + " ORDER BY h.head_seq LIMIT ?)"
          + " UNION ALL (SELECT k.seq FROM " + headTable + " h CROSS JOIN LATERAL" + headRow
          + " WHERE h.head_seq IS NOT NULL AND h.head_due > 0 AND h.head_due <= " + now
          + " AND " + ready("k", now) + " ORDER BY h.head_due LIMIT ?)))"
          + " AND o.state = " + UNSENT + " AND " + ready("o", now)
          + " ORDER BY o.seq LIMIT ? FOR UPDATE OF o SKIP LOCKED))"
          + " RETURNING " + CLAIM_COLUMNS + ", lease_until";
      // The whole batch in one statement (an index scan of the primary key for the array),
      // returning the scope keys whose heads move. Parameters: [now], seqs, owner.
      // "state + 0": the same test, but not an index condition, so the plan stays a primary-key
      // lookup per element. With a plain "state = 0" the planner could also read the unsent
      // entries of outbox_claim (state, seq) for the batch: measured, that made this UPDATE about
      // 3x slower than the same UPDATE without the state test, during a 10 000-row drain.
      this.markSentSql = markSentPrefix(table, clock.nowNanos(Dialect.POSTGRESQL))
          + "seq = ANY(?) AND state + 0 = " + UNSENT + " AND lease_owner = ?"
          + " RETURNING msg_key, order_dest";
      // Locks the heads of those keys that no append holds (never waits); then, in a statement
      // of its own (a new snapshot, taken after the locks, so it sees every append of these keys
      // committed before), moves each to its key's lowest unsent row. Parameters: keys, scopes.
      String pairs = " JOIN unnest(?::varchar[], ?::varchar[]) AS p(msg_key, order_dest)"
          + " ON h.msg_key = p.msg_key AND h.order_dest = p.order_dest";
      this.tryLockHeadsSql = "SELECT h.msg_key, h.order_dest FROM " + headTable + " h" + pairs
          + " FOR UPDATE OF h SKIP LOCKED";
      String lowest = "(SELECT MIN(x.seq) FROM " + table + " x WHERE x.msg_key = h.msg_key"
          + " AND x.order_dest = h.order_dest AND x.state = " + UNSENT
          + " AND x.msg_key IS NOT NULL)";
      this.advanceHeadsSql = "UPDATE " + headTable + " h SET head_seq = " + lowest
          + ", head_due = COALESCE((SELECT d.ready_at FROM " + table + " d WHERE d.seq = "
          + lowest + "), 0)"
          + " FROM unnest(?::varchar[], ?::varchar[]) AS p(msg_key, order_dest)"
          + " WHERE h.msg_key = p.msg_key AND h.order_dest = p.order_dest";
      // The claim has leased the row to us; parameters: seq, owner.
      this.deleteUndecodableSql = "DELETE FROM " + table + " WHERE seq = ? AND state = " + UNSENT
          + " AND lease_owner = ?";
    }

    @Override
    boolean insertHead(Connection tx, KeyRef ref) throws SQLException {
      return runInsertHead(tx, ref);
    }

    @Override
    List<String> explainClaim(Connection c, int max, long leaseNanos) throws SQLException {
      try (PreparedStatement ps = c.prepareStatement("EXPLAIN (ANALYZE, FORMAT JSON) "
          + claimSql)) {
        bindClaim(ps, "explain", leaseNanos, max);
        try (ResultSet rs = ps.executeQuery()) {
          StringBuilder plan = new StringBuilder();
          while (rs.next()) {
            plan.append(rs.getString(1));
          }
          return List.of(plan.toString());
        }
      }
    }

    @Override
    Claimed claim(DataSource dataSource, String what, String owner, int max, int maxRun,
        long leaseNanos, UndecodableSink sink) {
      Claimed heads = claimHeads(dataSource, what, owner, max, leaseNanos, sink);
      List<OutboxRecord> leased = heads.records();
      if (maxRun <= 1 || leased.size() >= max || leased.isEmpty()) {
        return heads;
      }
      long untilNanos = Instants.toNanos("lease end", leased.get(0).leaseExpiresAt());
      long nowNanos = untilNanos - leaseNanos;
      List<OutboxRecord> runs;
      try {
        runs = Jdbc.inTransaction(dataSource, what + ": key runs", c -> leaseRuns(c, owner,
            leased, max - leased.size(), maxRun, nowNanos, untilNanos));
      } catch (JdbcStorageException e) {
        // The heads are leased and go out; the runs are claimed by a later claim.
        LOG.log(System.Logger.Level.DEBUG, "could not lease key runs: " + e);
        return heads;
      }
      if (runs.isEmpty()) {
        return heads;
      }
      List<OutboxRecord> all = new ArrayList<>(leased.size() + runs.size());
      all.addAll(leased);
      all.addAll(runs);
      all.sort(BY_SEQUENCE);
      return new Claimed(all, heads.deadLettered());
    }

    private void bindClaim(PreparedStatement ps, String owner, long leaseNanos, int max)
        throws SQLException {
      int i = clock.bind(ps, 1);
      ps.setString(i, owner);
      ps.setLong(i + 1, leaseNanos);
      ps.setInt(i + 2, max);
      ps.setInt(i + 3, max);
      ps.setInt(i + 4, max);
      ps.setInt(i + 5, max);
      ps.setInt(i + 6, max);
    }

    private Claimed claimHeads(DataSource dataSource, String what, String owner, int max,
        long leaseNanos, UndecodableSink sink) {
      Read read = Jdbc.autoCommit(dataSource, what, c -> {
        try (PreparedStatement ps = c.prepareStatement(claimSql)) {
          bindClaim(ps, owner, leaseNanos, max);
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
            c -> deadLetterRows(c, deleteUndecodableSql, (ps, row) -> {
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

    /**
     * The UPDATE auto-commits on its own (one round trip, one commit: a batch of unkeyed rows
     * costs nothing more); the heads of the keyed rows it marked move in a second transaction.
     * Between the two, and for good if that transaction fails or the process dies, a head points
     * at a row that is sent now: a lower bound of its key's lowest unsent row, which claims
     * handle (they probe that row) and which the next markSent of the key, or the stale-head
     * repair of {@code purgeSentOlderThan}, moves on. Its head_due is that row's ready_at, which
     * was due when it was claimed, so the key is never held back. A failure there is logged and
     * the count returned: the rows are sent, and a markSent called again would find none of them.
     */
    @Override
    int markSent(DataSource dataSource, String what, String owner, Long[] seqs) {
      TreeSet<KeyRef> refs = new TreeSet<>();
      int changed = Jdbc.autoCommit(dataSource, what, c -> {
        int n = 0;
        try (PreparedStatement ps = c.prepareStatement(markSentSql)) {
          int i = clock.bind(ps, 1);
          ps.setArray(i, c.createArrayOf("bigint", seqs));
          ps.setString(i + 1, owner);
          try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
              n++;
              String key = rs.getString(1);
              if (key != null) {
                refs.add(new KeyRef(key, rs.getString(2)));
              }
            }
          }
        }
        return n;
      });
      if (!refs.isEmpty()) {
        try {
          Jdbc.inTransaction(dataSource, what + ": moving key heads", c -> {
            advanceHeadsSet(c, refs);
            return null;
          });
        } catch (JdbcStorageException e) {
          LOG.log(System.Logger.Level.WARNING, "marked " + changed + " outbox rows sent, but"
              + " could not move the heads of their " + refs.size() + " keys (claims still"
              + " find the keys' next rows; the stale-head repair moves them): " + e);
        }
      }
      return changed;
    }

    @Override
    void advanceHeads(Connection c, Collection<KeyRef> refs) throws SQLException {
      if (!refs.isEmpty()) {
        advanceHeadsSet(c, new TreeSet<>(refs));
      }
    }

    /** The set-based {@link #advanceHeads}: two statements whatever the number of keys. */
    private void advanceHeadsSet(Connection c, TreeSet<KeyRef> refs) throws SQLException {
      List<String> keys = new ArrayList<>(refs.size());
      List<String> scopes = new ArrayList<>(refs.size());
      try (PreparedStatement ps = c.prepareStatement(tryLockHeadsSql)) {
        bindPairs(c, ps, refs);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            keys.add(rs.getString(1));
            scopes.add(rs.getString(2));
          }
        }
      }
      if (keys.isEmpty()) {
        return;
      }
      try (PreparedStatement ps = c.prepareStatement(advanceHeadsSql)) {
        ps.setArray(1, c.createArrayOf("varchar", keys.toArray()));
        ps.setArray(2, c.createArrayOf("varchar", scopes.toArray()));
        ps.executeUpdate();
      }
    }

    private static void bindPairs(Connection c, PreparedStatement ps, Collection<KeyRef> refs)
        throws SQLException {
      String[] keys = new String[refs.size()];
      String[] scopes = new String[refs.size()];
      int i = 0;
      for (KeyRef r : refs) {
        keys[i] = r.key();
        scopes[i++] = r.orderDest();
      }
      ps.setArray(1, c.createArrayOf("varchar", keys));
      ps.setArray(2, c.createArrayOf("varchar", scopes));
    }
  }

  /**
   * H2: a claim is one transaction of locking SELECTs (the unkeyed rows, then the keys' heads)
   * and conditional lease updates, one per run of consecutive rows (else one per row); a markSent
   * is one transaction of one range update per run of consecutive rows and the moves of the
   * heads of their keys.
   */
  static final class H2 extends OutboxStatements {
    private final String unkeyedRangeSql;
    private final String unkeyedSql;
    private final String retryRangeSql;
    private final String retrySql;
    private final String headsSql;
    private final String nextDueSql;
    private final String headRowSql;
    private final String leaseSql;
    private final String leaseRangeSql;
    private final String markSentSql;
    private final String deleteUndecodableSql;

    H2(String table, String headTable, DatabaseClock clock) {
      super(table, headTable, clock, "INSERT INTO " + headTable
          + " (msg_key, order_dest, head_seq) VALUES (?, ?, NULL)");
      // H2 claims in steps inside one transaction. A one-statement claim (UPDATE ... FETCH
      // FIRST n ROWS ONLY) handed rows out twice in the concurrency tests: H2 let the statement
      // lease rows as its snapshot showed them, although another relay had leased and marked
      // them sent after that snapshot. So SELECT ... FOR UPDATE SKIP LOCKED takes the locks,
      // and then a conditional UPDATE per locked row, from a snapshot taken after the locks,
      // keeps only rows that still qualify and were not rescheduled meanwhile (attempts
      // unchanged). "now" is the database clock's, read once at the start of the transaction.
      // Unkeyed candidates: outbox_order's range (NULL, '', 0) in seq order. Parameters: now,
      // now, max.
      //
      // H2 2.4 locks EVERY row that matches a SELECT ... FOR UPDATE, before FETCH FIRST cuts the
      // result (measured: FETCH FIRST 100 over a 10 000-row backlog locked all 10 000, and the
      // claim's commit then rewrote every one of them: a claim cost O(unkeyed backlog), 80% of
      // the relay's time). So the unkeyed claim first finds the oldest max candidates without
      // locks, then locks only the claimable rows of that seq range. Parameters: now, now, max.
      //
      // Rows never rescheduled (ready_at = 0) are one range of outbox_ready in seq order; rows
      // rescheduled (ready_at > 0) a range by due time, read only up to now (schema version 9),
      // so rows backed off into the future are never read.
      String unkeyed = " FROM " + table + " o WHERE o.msg_key IS NULL AND o.order_dest = ''"
          + " AND o.state = " + UNSENT + " AND ";
      // Both range statements order by every column of outbox_ready: H2 reads an index in its
      // order, and stops after the batch, only when ORDER BY spells the index's columns from the
      // first (the leading ones are constant here); ORDER BY seq alone made it read and sort
      // every row of the range.
      String indexOrder = " ORDER BY o.msg_key, o.order_dest, o.state, o.ready_at, o.seq";
      this.unkeyedRangeSql = "SELECT o.seq" + unkeyed + "o.ready_at = 0 AND " + ready("o", "?")
          + indexOrder + " FETCH FIRST ? ROWS ONLY";
      // Parameters: from, to, now, now.
      this.unkeyedSql = "SELECT " + CLAIM_COLUMNS + unkeyed + "o.ready_at = 0 AND o.seq BETWEEN"
          + " ? AND ? AND " + ready("o", "?") + " ORDER BY o.seq FOR UPDATE SKIP LOCKED";
      // Due retries, earliest first (seq breaks ties: rows rescheduled at one instant share a
      // ready_at, so a ready_at range would read and lock all of them). Parameters: now, now,
      // max.
      // BETWEEN 1 AND now, not "> 0 AND <= now": H2 kept only one bound of the two, and read
      // every never-rescheduled row (ready_at = 0) too.
      this.retryRangeSql = "SELECT o.seq" + unkeyed + "o.ready_at BETWEEN 1 AND ? AND"
          + " (o.lease_until IS NULL OR o.lease_until <= ?)" + indexOrder
          + " FETCH FIRST ? ROWS ONLY";
      // Locks exactly the rows the range found that are still claimable: primary-key probes.
      // Parameters: seqs (array), now, now.
      this.retrySql = "SELECT " + CLAIM_COLUMNS + unkeyed + "o.seq = ANY(?) AND o.ready_at > 0"
          + " AND " + ready("o", "?") + " ORDER BY o.seq FOR UPDATE SKIP LOCKED";
      // Keyed candidates: heads in head_seq order, a page at a time, below a bound (the newest
      // unkeyed candidate when there are max of them). Parameters: after, below, page.
      // Heads of one due time (0: due now) in head_seq order, through outbox_head_due (schema
      // version 10). Parameters: due, after, below, page.
      this.headsSql = "SELECT msg_key, order_dest, head_seq FROM " + headTable
          + " WHERE head_due = ? AND head_seq > ? AND head_seq < ?"
          + " ORDER BY head_due, head_seq FETCH FIRST ? ROWS ONLY";
      // The next due time of a rescheduled head, up to now: heads backed off into the future are
      // never read, nor heads at or above a bound (the claim's max-th oldest candidate so far).
      // Parameters: after, now, below.
      this.nextDueSql = "SELECT head_due FROM " + headTable + " WHERE head_due > ?"
          + " AND head_due <= ? AND head_seq IS NOT NULL AND head_seq < ?"
          + " ORDER BY head_due, head_seq"
          + " FETCH FIRST 1 ROWS ONLY";
      // A key's lowest unsent row (one probe of outbox_order), if ready. Parameters: key,
      // scope, now, now.
      this.headRowSql = "SELECT " + CLAIM_COLUMNS + " FROM " + table + " o WHERE o.seq ="
          + " (SELECT MIN(x.seq) FROM " + table + " x WHERE x.msg_key = ? AND x.order_dest = ?"
          + " AND x.state = " + UNSENT + ") AND " + ready("o", "?") + " FOR UPDATE SKIP LOCKED";
      String stillClaimable = " WHERE seq = ? AND attempts = ? AND state = " + UNSENT
          + " AND ready_at <= ? AND (lease_until IS NULL OR lease_until <= ?)";
      // Parameters: owner, until, seq, attempts read, now, now.
      this.leaseSql = "UPDATE " + table + " SET lease_owner = ?, lease_until = ?"
          + stillClaimable;
      // The same re-check for an undecodable row; parameters: seq, attempts read, now, now.
      this.deleteUndecodableSql = "DELETE FROM " + table + stillClaimable;
      // A JDBC batch of one range update per run of consecutive sequences (a drained backlog is
      // one run): H2 evaluates seq = ANY(?) by a linear search of the array for every row it
      // updates, quadratic in the batch size. Parameters: now, first, last, owner.
      this.markSentSql = markSentPrefix(table, "?") + "seq BETWEEN ? AND ? AND state = "
          + UNSENT + " AND lease_owner = ?";
      // The lease of a run of consecutive candidates that read the same attempts, in one
      // statement. Parameters: owner, until, first, last, attempts read, now, now.
      this.leaseRangeSql = "UPDATE " + table + " SET lease_owner = ?, lease_until = ?"
          + " WHERE seq BETWEEN ? AND ? AND attempts = ? AND state = " + UNSENT
          + " AND ready_at <= ? AND (lease_until IS NULL OR lease_until <= ?)";
    }

    @Override
    boolean insertHead(Connection tx, KeyRef ref) throws SQLException {
      try {
        return runInsertHead(tx, ref);
      } catch (SQLException e) {
        if (Dialect.UNIQUE_VIOLATION.equals(e.getSQLState())) {
          // Another append created it; H2 keeps the transaction usable after a failed statement.
          return false;
        }
        throw e;
      }
    }

    @Override
    Claimed claim(DataSource dataSource, String what, String owner, int max, int maxRun,
        long leaseNanos, UndecodableSink sink) {
      return Jdbc.inTransaction(dataSource, what, c -> {
        long nowNanos = Instants.toNanos("database now", clock.now(c, Dialect.H2));
        long untilNanos = Math.addExact(nowNanos, leaseNanos);
        Instant until = Instants.fromNanos(untilNanos);
        Walk walk = new Walk();
        List<OutboxRecord> candidates = new ArrayList<>();
        List<Undecodable> undecodable = new ArrayList<>(0);
        long from = -1;
        long to = -1;
        try (PreparedStatement ps = c.prepareStatement(unkeyedRangeSql)) {
          ps.setLong(1, nowNanos);
          ps.setLong(2, nowNanos);
          ps.setInt(3, max);
          try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
              walk.rows++;
              to = rs.getLong(1);
              if (from == -1) {
                from = to;
              }
            }
          }
        }
        if (from != -1) {
          try (PreparedStatement ps = c.prepareStatement(unkeyedSql)) {
            ps.setLong(1, from);
            ps.setLong(2, to);
            ps.setLong(3, nowNanos);
            ps.setLong(4, nowNanos);
            Read read = readClaimed(ps, max, owner, until);
            candidates.addAll(read.records());
            undecodable.addAll(read.undecodable());
          }
        }
        Long[] due = dueRetries(c, nowNanos, max);
        walk.rows += due.length;
        if (due.length > 0) {
          try (PreparedStatement ps = c.prepareStatement(retrySql)) {
            ps.setArray(1, c.createArrayOf("BIGINT", due));
            ps.setLong(2, nowNanos);
            ps.setLong(3, nowNanos);
            Read read = readClaimed(ps, max, owner, until);
            candidates.addAll(read.records());
            undecodable.addAll(read.undecodable());
          }
        }
        int unkeyed = candidates.size() + undecodable.size();
        long below = unkeyed >= max ? maxSeq(candidates, undecodable) : Long.MAX_VALUE;
        readHeads(c, max, owner, until, nowNanos, below, candidates, undecodable, walk);
        candidates.sort(Comparator.comparingLong(OutboxRecord::sequence));
        if (candidates.size() > max) {
          candidates = new ArrayList<>(candidates.subList(0, max));
        }
        List<DeadLetter> moved = undecodable.isEmpty() ? List.of()
            : deadLetterRows(c, deleteUndecodableSql, (ps, row) -> {
              ps.setLong(1, row.sequence());
              ps.setInt(2, row.attempts());
              ps.setLong(3, nowNanos);
              ps.setLong(4, nowNanos);
            }, undecodable, sink);
        if (candidates.isEmpty()) {
          return new Claimed(candidates, moved, walk.heads, walk.rows);
        }
        List<OutboxRecord> leased = leaseRanges(c, owner, candidates, nowNanos, untilNanos);
        List<OutboxRecord> singles = new ArrayList<>(candidates.size() - leased.size());
        if (leased.size() < candidates.size()) {
          java.util.Set<Long> done = new java.util.HashSet<>();
          for (OutboxRecord r : leased) {
            done.add(r.sequence());
          }
          for (OutboxRecord r : candidates) {
            if (!done.contains(r.sequence())) {
              singles.add(r);
            }
          }
        }
        try (PreparedStatement ps = c.prepareStatement(leaseSql)) {
          for (OutboxRecord r : singles) {
            ps.setString(1, owner);
            ps.setLong(2, untilNanos);
            ps.setLong(3, r.sequence());
            ps.setInt(4, r.attempts());
            ps.setLong(5, nowNanos);
            ps.setLong(6, nowNanos);
            ps.addBatch();
          }
          int[] counts = singles.isEmpty() ? new int[0] : ps.executeBatch();
          for (int i = 0; i < counts.length; i++) {
            if (counts[i] == 1 || counts[i] == Statement.SUCCESS_NO_INFO) {
              leased.add(singles.get(i));
            }
          }
          leased.sort(Comparator.comparingLong(OutboxRecord::sequence));
          List<OutboxRecord> runs = leaseRuns(c, owner, leased, max - leased.size(), maxRun,
              nowNanos, untilNanos, walk);
          if (!runs.isEmpty()) {
            leased.addAll(runs);
            leased.sort(Comparator.comparingLong(OutboxRecord::sequence));
          }
          return new Claimed(leased, moved, walk.heads, walk.rows);
        }
      });
    }

    /**
     * Leases the runs of at least {@value #MIN_RANGE} consecutive candidates ({@code
     * candidates} ascending) that read the same attempts, one range UPDATE each, with the
     * conditions of the one-row lease: the range holds exactly the run's rows, so it leases what
     * the one-row updates would. A range that leases fewer than all of its rows (one changed
     * since it was read) is rolled back to a savepoint and left to the one-row updates, which
     * find out which. Returns the rows leased.
     */
    private List<OutboxRecord> leaseRanges(Connection c, String owner,
        List<OutboxRecord> candidates, long nowNanos, long untilNanos) throws SQLException {
      List<OutboxRecord> leased = new ArrayList<>(candidates.size());
      if (candidates.size() < MIN_RANGE) {
        return leased;
      }
      try (PreparedStatement ps = c.prepareStatement(leaseRangeSql)) {
        for (int i = 0; i < candidates.size(); ) {
          OutboxRecord first = candidates.get(i);
          int j = i;
          while (j + 1 < candidates.size()
              && candidates.get(j + 1).sequence() == candidates.get(j).sequence() + 1
              && candidates.get(j + 1).attempts() == first.attempts()) {
            j++;
          }
          int n = j - i + 1;
          if (n >= MIN_RANGE) {
            java.sql.Savepoint before = c.setSavepoint();
            ps.setString(1, owner);
            ps.setLong(2, untilNanos);
            ps.setLong(3, first.sequence());
            ps.setLong(4, candidates.get(j).sequence());
            ps.setInt(5, first.attempts());
            ps.setLong(6, nowNanos);
            ps.setLong(7, nowNanos);
            if (ps.executeUpdate() == n) {
              leased.addAll(candidates.subList(i, j + 1));
              c.releaseSavepoint(before);
            } else {
              c.rollback(before);
            }
          }
          i = j + 1;
        }
      }
      return leased;
    }

    /** Runs shorter than this are leased by the one-row updates. */
    private static final int MIN_RANGE = 4;

    @Override
    List<String> explainClaim(Connection c, int max, long leaseNanos) throws SQLException {
      long nowNanos = Instants.toNanos("database now", clock.now(c, Dialect.H2));
      List<String> plans = new ArrayList<>();
      try (PreparedStatement ps = c.prepareStatement("EXPLAIN ANALYZE " + unkeyedRangeSql)) {
        ps.setLong(1, nowNanos);
        ps.setLong(2, nowNanos);
        ps.setInt(3, max);
        plans.add(plan(ps));
      }
      try (PreparedStatement ps = c.prepareStatement("EXPLAIN ANALYZE " + retryRangeSql)) {
        ps.setLong(1, nowNanos);
        ps.setLong(2, nowNanos);
        ps.setInt(3, max);
        plans.add(plan(ps));
      }
      // The statement that locks the due retries the range found, as the claim runs it.
      Long[] due = dueRetries(c, nowNanos, max);
      if (due.length > 0) {
        try (PreparedStatement ps = c.prepareStatement("EXPLAIN ANALYZE " + retrySql)) {
          ps.setArray(1, c.createArrayOf("BIGINT", due));
          ps.setLong(2, nowNanos);
          ps.setLong(3, nowNanos);
          plans.add(plan(ps));
        }
      }
      try (PreparedStatement ps = c.prepareStatement("EXPLAIN ANALYZE " + headsSql)) {
        ps.setLong(1, 0);
        ps.setLong(2, 0);
        ps.setLong(3, Long.MAX_VALUE);
        ps.setInt(4, Math.min(Math.max(2 * max, 16), 1_024));
        plans.add(plan(ps));
      }
      try (PreparedStatement ps = c.prepareStatement("EXPLAIN ANALYZE " + nextDueSql)) {
        ps.setLong(1, 0);
        ps.setLong(2, nowNanos);
        ps.setLong(3, Long.MAX_VALUE);
        plans.add(plan(ps));
      }
      return plans;
    }

    private static String plan(PreparedStatement ps) throws SQLException {
      try (ResultSet rs = ps.executeQuery()) {
        StringBuilder plan = new StringBuilder();
        while (rs.next()) {
          plan.append(rs.getString(1));
        }
        return plan.toString();
      }
    }

    /** The sequences of up to {@code max} due retries, earliest due first. */
    private Long[] dueRetries(Connection c, long nowNanos, int max) throws SQLException {
      List<Long> seqs = new ArrayList<>();
      try (PreparedStatement ps = c.prepareStatement(retryRangeSql)) {
        ps.setLong(1, nowNanos);
        ps.setLong(2, nowNanos);
        ps.setInt(3, max);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            seqs.add(rs.getLong(1));
          }
        }
      }
      return seqs.toArray(new Long[0]);
    }

    private static long maxSeq(List<OutboxRecord> rows, List<Undecodable> bad) {
      long m = 0;
      for (OutboxRecord r : rows) {
        m = Math.max(m, r.sequence());
      }
      for (Undecodable u : bad) {
        m = Math.max(m, u.sequence());
      }
      return m;
    }

    /**
     * Adds up to {@code max} keyed candidates: the lowest unsent row of each head, oldest heads
     * first, where that row is ready and not locked by another claim. Reads heads a page at a
     * time and stops once it has {@code max}; a head's value is a lower bound of its key's
     * lowest unsent row, so heads at or past {@code below} cannot give an older row.
     */
    private void readHeads(Connection c, int max, String owner, Instant until, long nowNanos,
        long below, List<OutboxRecord> candidates, List<Undecodable> undecodable, Walk walk)
        throws SQLException {
      int[] found = {0};
      int page = Math.min(Math.max(2 * max, 16), 1_024);
      try (PreparedStatement heads = c.prepareStatement(headsSql);
          PreparedStatement next = c.prepareStatement(nextDueSql);
          PreparedStatement row = c.prepareStatement(headRowSql)) {
        // Heads due now (never rescheduled), oldest first, below the unkeyed batch's newest.
        readDueGroup(heads, row, 0, below, page, max, owner, until, nowNanos, candidates,
            undecodable, walk, found);
        // Then the heads of rescheduled rows that are due by now, one due time at a time, up to
        // max of their own: a key due again competes with fresh ones by sequence (the claim keeps
        // the oldest max candidates), instead of waiting until fewer than max fresh heads are
        // left. Heads at or above the max-th oldest candidate so far cannot make the cut.
        long dueBelow = cutoff(candidates, undecodable, max);
        found[0] = 0;
        long due = 0;
        while (found[0] < max) {
          next.setLong(1, due);
          next.setLong(2, nowNanos);
          next.setLong(3, dueBelow);
          try (ResultSet rs = next.executeQuery()) {
            if (!rs.next()) {
              return;
            }
            due = rs.getLong(1);
          }
          if (readDueGroup(heads, row, due, dueBelow, page, max, owner, until, nowNanos,
              candidates, undecodable, walk, found)) {
            return;
          }
        }
      }
    }

    /**
     * The max-th lowest sequence among the candidates found so far (rows at or above it cannot
     * be among the claim's oldest max), or Long.MAX_VALUE while fewer than max were found.
     */
    private static long cutoff(List<OutboxRecord> candidates, List<Undecodable> undecodable,
        int max) {
      if (candidates.size() + undecodable.size() < max) {
        return Long.MAX_VALUE;
      }
      long[] seqs = new long[candidates.size() + undecodable.size()];
      int i = 0;
      for (OutboxRecord r : candidates) {
        seqs[i++] = r.sequence();
      }
      for (Undecodable u : undecodable) {
        seqs[i++] = u.sequence();
      }
      java.util.Arrays.sort(seqs);
      return seqs[max - 1];
    }

    /** Reads the heads of due time {@code due} a page at a time; true once max are found. */
    private boolean readDueGroup(PreparedStatement heads, PreparedStatement row, long due,
        long below, int page, int max, String owner, Instant until, long nowNanos,
        List<OutboxRecord> candidates, List<Undecodable> undecodable, Walk walk, int[] found)
        throws SQLException {
      long after = 0;
      while (true) {
        List<KeyRef> refs = new ArrayList<>(page);
        heads.setLong(1, due);
        heads.setLong(2, after);
        heads.setLong(3, below);
        heads.setInt(4, page);
        try (ResultSet rs = heads.executeQuery()) {
          while (rs.next()) {
            refs.add(new KeyRef(rs.getString(1), rs.getString(2)));
            after = rs.getLong(3);
          }
        }
        for (KeyRef ref : refs) {
          walk.heads++;
          walk.rows++; // the key's lowest unsent row, ready or not
          row.setString(1, ref.key());
          row.setString(2, ref.orderDest());
          row.setLong(3, nowNanos);
          row.setLong(4, nowNanos);
          Read read = readClaimed(row, 1, owner, until);
          candidates.addAll(read.records());
          undecodable.addAll(read.undecodable());
          found[0] += read.records().size() + read.undecodable().size();
          if (found[0] >= max) {
            return true;
          }
        }
        if (refs.size() < page) {
          return false;
        }
      }
    }

    @Override
    int markSent(DataSource dataSource, String what, String owner, Long[] seqs) {
      return Jdbc.inTransaction(dataSource, what, c -> {
        long nowNanos = Instants.toNanos("database now", clock.now(c, Dialect.H2));
        List<KeyRef> refs = keysOf(c, seqs);
        int changed;
        try (PreparedStatement ps = c.prepareStatement(markSentSql)) {
          for (long[] run : consecutiveRuns(seqs)) {
            ps.setLong(1, nowNanos);
            ps.setLong(2, run[0]);
            ps.setLong(3, run[1]);
            ps.setString(4, owner);
            ps.addBatch();
          }
          changed = Jdbc.rowsChanged(ps.executeBatch());
        }
        advanceHeads(c, refs);
        return changed;
      });
    }
  }
}
