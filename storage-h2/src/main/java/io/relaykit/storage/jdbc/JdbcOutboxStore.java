package io.relaykit.storage.jdbc;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.internal.Texts;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHeaders;
import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleEvent.Stage;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.outbox.OutboxBound;
import io.relaykit.outbox.OutboxFullException;
import io.relaykit.outbox.OutboxRecord;
import io.relaykit.outbox.OutboxStats;
import io.relaykit.outbox.OutboxStore;
import io.relaykit.outbox.TraceCapture;
import io.relaykit.trace.TracePropagation;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;

/**
 * The transactional outbox on H2 or PostgreSQL. {@link #append} writes a message row through the
 * caller's own connection, so it commits or rolls back with the business write; relays then
 * {@link #claim} rows with a lease, publish them and {@link #markSent}.
 *
 * <p>Per-key order follows commit order: {@link #append} of a keyed message first locks the
 * key's head row ({@code <prefix>outbox_head}, created if missing) in the caller's transaction and
 * holds it until that transaction ends, so a second transaction appending the same scope key (the
 * key, or (destination, key) with {@link OutboxOrderScope#KEY_PER_DESTINATION}) waits at its
 * append until the first one commits or rolls back, and sequence order within a key is commit
 * order. Costs and rules: same-key business transactions take turns; <b>a transaction that
 * appends several keys must append them in one consistent order</b> (e.g. sorted), or two of
 * them can deadlock (the database then aborts one); {@link #appendAll} locks its keys sorted. An
 * append on an auto-commit connection runs in a transaction of its own. Unkeyed appends take no
 * lock.
 *
 * <p>A claim leases, oldest first, unkeyed ready rows and the lowest unsent row of each key head
 * (oldest heads first) that is ready, skipping rows other relays hold; a row is leased to one
 * relay at a time. It reads O(batch + heads skipped as leased or parked) index entries, never a
 * key's backlog or sent rows. On PostgreSQL it is one statement, {@code UPDATE ... WHERE seq =
 * ANY(ARRAY(SELECT ... FOR UPDATE SKIP LOCKED)) RETURNING ...}, and {@link #markSent} one
 * auto-committed {@code UPDATE ... WHERE seq = ANY(?) RETURNING} then, for keyed rows, a second
 * transaction of two statements that move the keys' heads. On H2 a claim is one transaction of
 * locking SELECTs (unkeyed rows, then a bounded walk of the heads) and conditional lease updates,
 * one range update per run of at least four consecutive rows with the same attempts and one-row
 * updates for the rest (H2 row locks do not re-check a row; see {@code OutboxStatements.H2}), and
 * markSent one transaction of one range update per run of consecutive sequences plus the head
 * moves. markSent, markDead and undecodable-row deletes move heads without ever
 * waiting for an append ({@code SKIP LOCKED}): a head an append holds keeps its old value, a lower
 * bound that claims still handle correctly. Append is one INSERT (one batch for {@link
 * #appendAll}) plus, for a keyed row, one locking SELECT (and an INSERT and UPDATE of the head when
 * the key had no unsent row). Thread-safe. See the README for the ordering definition and index
 * plan.
 *
 * <p>Time: whether a row is ready, whether a lease ran out (so another relay may take the row
 * over), when a new lease ends, when a row was sent and whether it outlived the retention are
 * decided on the storage's {@link DatabaseClock}: by default the database server's clock, read in
 * SQL ({@code clock_timestamp()} on PostgreSQL, {@code RELAYKIT_CLOCK_MILLIS()} on H2), so relays
 * whose host clocks disagree never compare them. The {@code now} arguments of the SPI are the
 * caller's view and decide none of this (see {@link OutboxStore}); a claimed record's lease end is
 * on the database's clock. Cost: nothing on PostgreSQL (the claim reads the clock in its own
 * statement), one {@code SELECT} of the clock per claim and per markSent on H2.
 *
 * <p>Malformed rows: a claimed row that does not decode to a message (a corrupt envelope column, a
 * missing header, an empty payload: rows written by something other than {@link #append}) is
 * never handed to a relay. The claim deletes it and stores it in the dead-letter table of the same
 * prefix, with a reason naming the row's sequence and what is wrong, and leases the rest of the
 * batch as usual: on H2 in the claim's own transaction, on PostgreSQL in one more transaction
 * right after it (if that one fails, the row stays leased and is tried again when the lease
 * expires). The dead letter's message is a stand-in, since there is no message to keep: its id is
 * the row's {@code message_id} (or {@code outbox-row-<seq>} when that is blank), type {@value
 * #UNDECODABLE_TYPE}, the row's key and payload, and the raw envelope column (cut at 8 192
 * characters) in the header {@value #RAW_ENVELOPE_HEADER}. Replaying it publishes that stand-in;
 * repair the row's envelope instead where the original matters. Cost: none while rows decode; one
 * DELETE and one upsert per undecodable row.
 *
 * <p>Wakes: an append on an auto-commit connection wakes this JVM's relays of the storage once it
 * committed, {@link #committed()} does after your own commit, and on PostgreSQL an append sends
 * the storage's coalesced {@code pg_notify} inside its transaction for relays of other processes
 * (see {@link JdbcStorage#outboxWakeup()} for costs and limits). A NOTIFY that fails fails the
 * append like any of its statements; a wake that is lost costs at most the relays' poll interval.
 *
 * <p>Lifecycle: the store reports to the {@link LifecycleListener} it was built with ({@link
 * JdbcStorageConfig#listener()}, under Guice the injector's). {@link #append} and {@link #appendAll}
 * report {@link Stage#ENQUEUED} (message id, trace id, the destination as {@code where}) once the
 * INSERT succeeded. That means "written in the caller's transaction", not committed: the caller
 * may still roll back, and then the event stands for a row that never existed (the relay's
 * PUBLISHED shows what really went out). The listener runs on the caller's thread, inside its open
 * transaction: it must be fast and must not block. A claim reports {@link Stage#DEAD_LETTERED} for
 * each undecodable row it moved to dead letters.
 *
 * <p>Metrics: on H2 each claim reports to the {@link MetricsListener} the store was built with
 * ({@link JdbcStorageConfig.Builder#outboxMetrics}) how many key heads it examined and outbox rows
 * it read ({@link MetricsListener#outboxClaimWalked}, under the outbox table's name), once its
 * transaction committed; a claim that fails reports nothing. On PostgreSQL the
 * claim is one statement that does not count what it read, so nothing is reported; {@code EXPLAIN
 * (ANALYZE)} of the claim, or {@code pg_stat_statements}, shows it there.
 */
public final class JdbcOutboxStore implements OutboxStore {

  /** The largest payload the outbox stores, in bytes. */
  public static final int MAX_PAYLOAD_BYTES = Schema.MAX_PAYLOAD_BYTES;

  /** The type of the stand-in message in the dead letter of an undecodable row. */
  public static final String UNDECODABLE_TYPE = "relaykit.undecodable";

  /** The header of that stand-in holding the row's raw envelope column. */
  public static final String RAW_ENVELOPE_HEADER = "outbox-envelope";

  static final int UNSENT = 0;
  static final int SENT = 1;

  private static final System.Logger LOG = System.getLogger(JdbcOutboxStore.class.getName());
  private static final int MAX_RAW_ENVELOPE = 8_192;
  private static final int MAX_REASON_LENGTH = 2_000;

  private static final int MAX_ID_LENGTH = 255;
  private static final int MAX_KEY_LENGTH = 512;
  private static final int MAX_ERROR_LENGTH = 1000;

  private final DataSource dataSource;
  private final Tables tables;
  private final String insertSql;
  private final OutboxStatements statements;
  private final JdbcDeadLetterStore deadLetters;
  private final InstantSource clock;
  private final DatabaseClock databaseClock;
  private final Dialect dialect;
  private final LifecycleListener listener;
  private final OutboxOrderScope scope;
  private final OutboxBound bound;
  private final TraceCapture traceCapture;
  private final MetricsListener metrics;
  private final OutboxWakes wakes;
  private final AtomicLong refusedAppends = new AtomicLong();
  private final AtomicLong overBoundAppends = new AtomicLong();
  /** The unsent-row count appends are checked against, sampled; guarded by itself. */
  private final long[] sample = new long[2]; // [0] unsent at the sample, [1] appended since
  private Instant sampledAt;

  /** How old the sampled unsent count may be when an append is checked against the bound. */
  static final Duration BOUND_SAMPLE_INTERVAL = Duration.ofSeconds(1);

  JdbcOutboxStore(DataSource dataSource, Dialect dialect, Tables tables, InstantSource clock,
      DatabaseClock databaseClock, LifecycleListener listener) {
    this(dataSource, dialect, tables, clock, databaseClock, listener, OutboxBound.unbounded(),
        OutboxOrderScope.KEY);
  }

  JdbcOutboxStore(DataSource dataSource, Dialect dialect, Tables tables, InstantSource clock,
      DatabaseClock databaseClock, LifecycleListener listener, OutboxBound bound,
      OutboxOrderScope scope) {
    this(dataSource, dialect, tables, clock, databaseClock, listener, bound, scope,
        MetricsListener.noop());
  }

  JdbcOutboxStore(DataSource dataSource, Dialect dialect, Tables tables, InstantSource clock,
      DatabaseClock databaseClock, LifecycleListener listener, OutboxBound bound,
      OutboxOrderScope scope, MetricsListener metrics) {
    this(dataSource, dialect, tables, clock, databaseClock, listener, bound, scope,
        TraceCapture.discovered(), metrics, new OutboxWakes(dialect, tables.outbox, null));
  }

  JdbcOutboxStore(DataSource dataSource, Dialect dialect, Tables tables, InstantSource clock,
      DatabaseClock databaseClock, LifecycleListener listener, OutboxBound bound,
      OutboxOrderScope scope, MetricsListener metrics, OutboxWakes wakes) {
    this(dataSource, dialect, tables, clock, databaseClock, listener, bound, scope,
        TraceCapture.discovered(), metrics, wakes);
  }

  private JdbcOutboxStore(DataSource dataSource, Dialect dialect, Tables tables,
      InstantSource clock, DatabaseClock databaseClock, LifecycleListener listener,
      OutboxBound bound, OutboxOrderScope scope, TraceCapture traceCapture,
      MetricsListener metrics, OutboxWakes wakes) {
    this.wakes = wakes;
    this.metrics = metrics;
    this.traceCapture = traceCapture;
    this.bound = bound;
    this.scope = scope;
    this.dataSource = dataSource;
    this.tables = tables;
    this.clock = clock;
    this.databaseClock = databaseClock;
    this.dialect = dialect;
    this.listener = listener;
    this.deadLetters = new JdbcDeadLetterStore(dataSource, dialect, tables, databaseClock);
    String t = tables.outbox;
    this.insertSql = "INSERT INTO " + t + " (destination, message_id, msg_key, headers, payload,"
        + " created_at, order_dest, state, ready_at, attempts) VALUES (?, ?, ?, ?, ?, ?, ?, "
        + UNSENT + ", 0, 0)";
    this.statements = dialect.outbox(t, tables.outboxHead, databaseClock);
  }

  /**
   * This store, on the same tables and settings, capturing the caller's trace context at each
   * append from {@code propagation} instead of {@link TracePropagation#discovered()} (see {@link
   * TraceCapture}). Cheap: no connection is opened.
   *
   * @param propagation where appends capture the caller's trace context from
   * @return a new store on the same tables, with a capture of its own
   * @throws IllegalArgumentException if {@code propagation} is null
   */
  public JdbcOutboxStore withTracePropagation(TracePropagation propagation) {
    if (propagation == null) {
      throw new IllegalArgumentException("propagation must not be null");
    }
    return new JdbcOutboxStore(dataSource, dialect, tables, clock, databaseClock, listener, bound,
        scope, TraceCapture.of(propagation), metrics, wakes);
  }

  /**
   * How appends capture the caller's trace context, with its counts.
   *
   * @return this store's capture
   */
  public TraceCapture traceCapture() {
    return traceCapture;
  }

  /**
   * Inserts {@code message} for {@code destination} through {@code tx}, the caller's connection,
   * inside whatever transaction it has open: the row commits or rolls back with the caller's
   * business write. Does not commit, close or change {@code tx}. Reports {@link Stage#ENQUEUED}
   * after the INSERT succeeded: written in the caller's transaction, which may still roll back.
   * A message without a {@code traceparent} is stored with the caller's current trace context
   * ({@link #traceCapture()}); a propagation that fails never fails the append.
   *
   * @param tx the caller's connection; an auto-commit one gets a transaction of its own
   * @param destination where a relay publishes the message
   * @param message the message to send once the transaction commits
   * @return the row's sequence number
   * @throws IllegalArgumentException naming the field when the destination is blank or longer than
   *     255, the message is null, its id is longer than 255, its key longer than 512, or its payload
   *     larger than {@link #MAX_PAYLOAD_BYTES}; nothing is written then
   * @throws OutboxFullException if the store's {@link OutboxBound} (REFUSE) is reached: nothing
   *     is written, the caller's transaction is untouched
   * @throws SQLException from the caller's connection (the caller decides about its
   *     transaction), or under a REFUSE bound from the recount's own connection, or when the thread
   *     is interrupted while another append's recount runs (nothing is written then, and the
   *     thread's interrupt status is kept)
   */
  public long append(Connection tx, String destination, Message message) throws SQLException {
    requireConnection(tx);
    validate(destination, message);
    Message stamped = traceCapture.stamp(message);
    boolean autoCommit = tx.getAutoCommit();
    Reservation reservation = admit(tx, 1);
    OutboxNotifier notifier = claimNotify();
    long seq;
    try {
      if (stamped.key().isEmpty() && notifier == null) {
        seq = insert(tx, destination, stamped);
      } else {
        OutboxStatements.KeyRef ref = stamped.key().isEmpty() ? null
            : scopeKey(destination, stamped);
        seq = inCallersTransaction(tx, () -> {
          long head = ref == null ? -1 : statements.lockHead(tx, ref);
          long s = insert(tx, destination, stamped);
          if (head == 0) {
            statements.setHead(tx, ref, s);
          }
          if (notifier != null) {
            notifier.send(tx);
          }
          return s;
        });
      }
      reserved(tx, reservation, autoCommit, seq);
    } catch (SQLException | RuntimeException e) {
      // In the caller's transaction nothing this append wrote stays (it cannot commit a failed
      // append's row without knowing it); on auto-commit the row may have committed.
      failed(reservation, autoCommit);
      giveBack(notifier);
      throw e;
    }
    enqueued(destination, stamped, "outbox seq " + seq + ", in the caller's transaction");
    if (autoCommit) {
      wakes.wakeup().wake();
    }
    return seq;
  }

  /**
   * {@link #append(Connection, String, Message)}, made safe to retry by a unique id the caller
   * chooses ({@code requestId}): an append whose outcome the caller did not learn (an auto-commit
   * append whose commit reply was lost, a timeout) is repeated with the same id, and the repeat
   * returns the original row's sequence and writes nothing. The same id with another message
   * (another destination, type, key or payload; the message id, headers and creation time are not
   * compared, so a message rebuilt for the retry is recognised) is refused with an {@link
   * IllegalStateException} naming the id; nothing is written then.
   *
   * <p><b>Dedupe window</b>: an id is remembered for as long as its row exists: while it is unsent,
   * and once sent until retention purges it ({@link JdbcStorageConfig#retention()}), or until it
   * leaves for dead letters. A retry after that writes a new row. Ids are unique across the whole
   * outbox table (every destination): include the destination or business in the id if two
   * producers may choose the same one.
   *
   * <p>Concurrent appends with one id (two retries at once) write one row: the second waits on the
   * unique index for the first's transaction; when it commits the second returns its sequence, when
   * it rolls back the second writes the row. A first append whose transaction stays open through
   * two of the database's lock waits (H2's {@code LOCK_TIMEOUT}, PostgreSQL's {@code lock_timeout}
   * if set) gets the second an {@link IllegalStateException} naming the id, saying nothing was
   * written and to repeat with the same id. Under a REFUSE bound, a repeat that the bound would
   * refuse while its first try is still open waits for that try in the same way (one INSERT under
   * a savepoint, always rolled back) and returns its sequence if it committed; without such a twin
   * the refusal stands. Cost: one indexed SELECT before the usual append.
   *
   * @param tx the caller's connection; an auto-commit one gets a transaction of its own
   * @param destination where a relay publishes the message
   * @param message the message to send once the transaction commits
   * @param requestId the caller's unique id for this append; not blank, at most 255 characters
   * @return the row's sequence number: the new row's, or the existing row's for a repeat
   * @throws IllegalArgumentException as {@link #append(Connection, String, Message)}, or a blank or
   *     too long {@code requestId}; nothing is written then
   * @throws IllegalStateException if a row with {@code requestId} holds another message, or a
   *     concurrent append with that id stayed uncommitted through two lock waits; nothing is
   *     written then
   * @throws OutboxFullException as {@link #append(Connection, String, Message)}
   * @throws SQLException from the caller's connection (the caller decides about its
   *     transaction), or under a REFUSE bound from the recount's own connection, or when the thread
   *     is interrupted while another append's recount runs (nothing is written then, and the
   *     thread's interrupt status is kept)
   */
  public long append(Connection tx, String destination, Message message, String requestId)
      throws SQLException {
    requireConnection(tx);
    validate(destination, message);
    if (requestId == null || requestId.isBlank() || requestId.length() > MAX_ID_LENGTH) {
      throw new IllegalArgumentException("requestId must be non-blank and at most "
          + MAX_ID_LENGTH + " characters, was " + (requestId == null ? "null"
          : requestId.length() + " characters ('" + Texts.truncateChars(requestId, 32) + "')"));
    }
    String digest = requestDigest(destination, message);
    Message stamped = traceCapture.stamp(message);
    OutboxStatements.KeyRef ref = stamped.key().isEmpty() ? null : scopeKey(destination, stamped);
    long seq = 0;
    boolean ownTransaction = tx.getAutoCommit();
    OutboxNotifier notifier = claimNotify();
    for (int round = 1; ; round++) {
      OptionalLong existing = existingRequest(tx, requestId, digest);
      if (existing.isPresent()) {
        return existing.getAsLong();
      }
      Reservation reservation;
      try {
        reservation = admit(tx, 1);
      } catch (OutboxFullException full) {
        // A twin still open (the first try of this retry) holds the id: its row needs no room
        // of ours. Wait for it as the insert would, and answer its row if it commits.
        OptionalLong twin = twinOfRefused(tx, destination, stamped, requestId, digest, full);
        if (twin.isPresent()) {
          refusedAppends.decrementAndGet();
          return twin.getAsLong();
        }
        throw full;
      }
      try {
        seq = inCallersTransaction(tx, () -> {
          long head = ref == null ? -1 : statements.lockHead(tx, ref);
          OptionalLong inserted = insertRequest(tx, destination, stamped, requestId, digest);
          if (inserted.isEmpty()) {
            // A concurrent append with this id committed first: return its row.
            OptionalLong theirs = existingRequest(tx, requestId, digest);
            if (theirs.isPresent()) {
              return theirs.getAsLong();
            }
            throw new RequestIdUndecided();
          }
          if (head == 0) {
            statements.setHead(tx, ref, inserted.getAsLong());
          }
          if (notifier != null) {
            notifier.send(tx);
          }
          long s = inserted.getAsLong();
          if (reservation != null && !ownTransaction) {
            reserved(tx, reservation, false, s);
          }
          return -1 - s;
        });
        if (seq >= 0) {
          unreserve(reservation); // a twin's row, already counted or reserved by its append
        } else if (ownTransaction) {
          reserved(tx, reservation, true, -1 - seq);
        }
        break;
      } catch (SQLException | RuntimeException e) {
        failed(reservation, ownTransaction);
        giveBack(notifier);
        // H2 answers an insert that met a twin's row, committed or rolled back while it waited,
        // with "concurrent update" until its lock timeout; the twin's outcome is decided by then,
        // so the next round finds its row or writes ours. PostgreSQL waits in ON CONFLICT.
        boolean decidedNow = e instanceof RequestIdUndecided
            || (dialect == Dialect.H2 && isH2ConcurrentUpdate(e))
            || (ownTransaction && e instanceof SQLException sql
                && "55P03".equals(sql.getSQLState()));
        if (!decidedNow) {
          throw e;
        }
        if (round >= REQUEST_ID_ROUNDS) {
          throw new IllegalStateException("outbox request id '" + requestId + "': another"
              + " append with this id holds it, still uncommitted after " + REQUEST_ID_ROUNDS
              + " lock waits; this call wrote nothing: repeat it with the same id once that"
              + " append's transaction ends", e);
        }
      }
    }
    if (seq >= 0) {
      giveBack(notifier); // a twin's row: nothing new was written, nor notified
      return seq;
    }
    long s = -1 - seq;
    enqueued(destination, stamped, "outbox seq " + s + ", in the caller's transaction");
    if (ownTransaction) {
      wakes.wakeup().wake();
    }
    return s;
  }

  /**
   * After the bound refused a request-id append: inserts its row under a savepoint (on an
   * auto-commit connection in a transaction of its own), which waits, as any insert of the id
   * does, for a twin append of the same id still open, and always rolls it back. Returns the
   * twin's sequence if the twin committed meanwhile; empty when there is no twin (the refusal
   * stands) or the probe failed (its error is added to {@code full}). Cost: one INSERT and its
   * rollback, only when an append with a request id is refused.
   */
  private OptionalLong twinOfRefused(Connection tx, String destination, Message message,
      String requestId, String digest, OutboxFullException full) throws SQLException {
    boolean own = tx.getAutoCommit();
    java.sql.Savepoint sp = null;
    try {
      if (own) {
        tx.setAutoCommit(false);
      } else {
        sp = tx.setSavepoint();
      }
      if (insertRequest(tx, destination, message, requestId, digest).isPresent()) {
        return OptionalLong.empty();
      }
      return existingRequest(tx, requestId, digest);
    } catch (SQLException | RuntimeException e) {
      full.addSuppressed(e);
      return OptionalLong.empty();
    } finally {
      if (own) {
        try {
          tx.rollback();
        } finally {
          tx.setAutoCommit(true);
        }
      } else if (sp != null) {
        tx.rollback(sp);
        tx.releaseSavepoint(sp);
      }
    }
  }

  /** Rounds of a request-id append that meets a twin still deciding (one lock wait each). */
  private static final int REQUEST_ID_ROUNDS = 2;

  /** A request-id append found neither its twin's row nor room for its own: the twin is open. */
  private static final class RequestIdUndecided extends RuntimeException {
    private static final long serialVersionUID = 1L;

    RequestIdUndecided() {
      super("a concurrent append with the same request id has not committed yet", null, false,
          false);
    }
  }

  /** H2's lock timeout or "concurrent update" (a row another transaction changed meanwhile). */
  private static boolean isH2ConcurrentUpdate(Exception e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SQLException sql
          && (sql.getErrorCode() == 50200 || sql.getErrorCode() == 90131)) {
        return true;
      }
      if (t.getMessage() != null && t.getMessage().contains("[90131-")) {
        return true;
      }
    }
    return false;
  }

  /** The sequence of the row {@code requestId} names, after checking it holds the same message. */
  private OptionalLong existingRequest(Connection tx, String requestId, String digest)
      throws SQLException {
    try (PreparedStatement ps = tx.prepareStatement("SELECT seq, request_digest FROM "
        + tables.outbox + " WHERE request_id = ?")) {
      ps.setString(1, requestId);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return OptionalLong.empty();
        }
        long seq = rs.getLong(1);
        if (!digest.equals(rs.getString(2))) {
          throw new IllegalStateException("outbox request id '" + requestId + "' was already"
              + " used for another message (row " + seq + "): a request id names one message;"
              + " nothing was written");
        }
        return OptionalLong.of(seq);
      }
    }
  }

  /** Inserts the row with its request id; empty if a row with that id is there. */
  private OptionalLong insertRequest(Connection tx, String destination, Message message,
      String requestId, String digest) throws SQLException {
    String sql = "INSERT INTO " + tables.outbox + " (destination, message_id, msg_key, headers,"
        + " payload, created_at, order_dest, state, ready_at, attempts, request_id,"
        + " request_digest) VALUES (?, ?, ?, ?, ?, ?, ?, " + UNSENT + ", 0, 0, ?, ?)"
        + (dialect == Dialect.POSTGRESQL
            ? " ON CONFLICT (request_id) WHERE request_id IS NOT NULL DO NOTHING" : "");
    try (PreparedStatement ps = tx.prepareStatement(sql, Statement.RETURN_GENERATED_KEYS)) {
      bind(ps, destination, message);
      ps.setString(8, requestId);
      ps.setString(9, digest);
      if (Dialect.executeIgnoringDuplicate(ps) == 0) {
        return OptionalLong.empty();
      }
      try (ResultSet keys = ps.getGeneratedKeys()) {
        if (!keys.next()) {
          throw new SQLException("the database returned no sequence for the outbox row");
        }
        return OptionalLong.of(keys.getLong(1));
      }
    }
  }

  /** SHA-256, hex, of what makes two appends the same message: destination, type, key, payload. */
  static String requestDigest(String destination, Message m) {
    try {
      java.security.MessageDigest md = java.security.MessageDigest.getInstance("SHA-256");
      for (String part : new String[] {destination, m.type(), m.key().orElse("")}) {
        byte[] b = part.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        md.update(java.nio.ByteBuffer.allocate(4).putInt(b.length).array());
        md.update(b);
      }
      md.update(m.key().isPresent() ? (byte) 1 : (byte) 0);
      md.update(m.payload());
      return java.util.HexFormat.of().formatHex(md.digest());
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JDK", e);
    }
  }

  /** The order scope key of a keyed message appended for {@code destination}. */
  private OutboxStatements.KeyRef scopeKey(String destination, Message message) {
    return new OutboxStatements.KeyRef(message.key().orElseThrow(),
        scope == OutboxOrderScope.KEY_PER_DESTINATION ? destination : "");
  }

  private long insert(Connection tx, String destination, Message message) throws SQLException {
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

  /** Work that must hold the key locks until it commits. */
  @FunctionalInterface
  private interface TxWork<T> {
    T run() throws SQLException;
  }

  /**
   * Runs {@code work} in {@code tx}'s open transaction; on an auto-commit connection in a
   * transaction of its own (committed, or rolled back when it fails), so a key's lock is held
   * from the head's lock to the row's commit either way, and auto-commit is restored.
   */
  private static <T> T inCallersTransaction(Connection tx, TxWork<T> work) throws SQLException {
    if (!tx.getAutoCommit()) {
      return work.run();
    }
    tx.setAutoCommit(false);
    T result;
    try {
      result = work.run();
      tx.commit();
    } catch (SQLException | RuntimeException | Error e) {
      // A broken connection fails the rollback and the reset too: the first error is the one
      // that says what happened (a commit whose outcome is unknown, say), so it is thrown.
      try {
        tx.rollback();
      } catch (SQLException | RuntimeException r) {
        e.addSuppressed(r);
      }
      try {
        tx.setAutoCommit(true);
      } catch (SQLException | RuntimeException r) {
        e.addSuppressed(r);
      }
      throw e;
    }
    tx.setAutoCommit(true);
    return result;
  }

  /**
   * Checks {@code rows} more rows against the bound and, for REFUSE, reserves room for them.
   *
   * <p>ACCEPT: the unsent count is sampled through {@code tx} (one {@code COUNT} over the unsent
   * rows, an index range scan) at most once per {@link #BOUND_SAMPLE_INTERVAL} on the storage's
   * clock, plus what this store appended since.
   *
   * <p>REFUSE: an append runs in the caller's transaction, whose commit or rollback this store
   * never sees, and a count through one connection cannot see other transactions' uncommitted
   * rows. So every admitted append holds a {@link Reservation} of its rows, and the bound is
   * checked against the committed unsent rows at the last recount plus every reservation not
   * known to be in that count: transactions on one store instance never exceed the bound
   * together. A recount (one {@code COUNT} through a connection of its own, so it sees committed
   * rows only, one recount at a time) runs when the sample is older than {@link
   * #BOUND_SAMPLE_INTERVAL}, when the append would come within the last tenth of the bound, and
   * before any refusal; it first asks the database how each reserved append's transaction ended
   * (PostgreSQL: {@code txid_status} of the transaction id the append read; H2: whether its row
   * is committed, or still visible to a READ UNCOMMITTED read) and drops the reservations of
   * committed (now counted) and rolled-back ones. Until that recount a rolled-back append's
   * reservation still holds its room; a refusal always recounts first, so it never refuses for
   * a rollback alone. An append on an auto-commit connection that fails (a statement or its
   * commit) may still have committed (the reply to its commit was lost, or the connection broke
   * after the commit): it keeps its room, and the next append recounts first, which counts the row
   * if it committed and gives the room back if not. The one window left: a commit the database is
   * still running when that recount counts (a client that timed out before the server finished) is
   * missed by it, so the backlog can exceed the bound by such commits until the next recount.
   * Across store instances (other hosts), an instance sees the others' rows
   * once they are committed and it recounts: the backlog can exceed the bound by the other
   * instances' appends not yet committed at that moment, plus what they commit within one
   * sample interval while this one is outside the last tenth. Costs: nothing per append while far
   * from the bound; a recount borrows a second connection from the data source while the
   * caller's is open (size the pool for it); on PostgreSQL one {@code SELECT txid_current()} per
   * append through the caller's connection.
   *
   * @return the reservation to complete with {@link #reserved} after the insert, or null
   */
  private Reservation admit(Connection tx, int rows) throws SQLException {
    if (!bound.isBounded()) {
      return null;
    }
    Instant now = clock.instant();
    if (bound.overBound() == OutboxBound.OverBound.REFUSE) {
      return reserve(now, rows);
    }
    boolean fresh = false;
    long estimate;
    synchronized (sample) {
      boolean stale = sampledAt == null || !now.isBefore(sampledAt.plus(BOUND_SAMPLE_INTERVAL))
          || now.isBefore(sampledAt);
      estimate = stale ? -1 : sample[0] + sample[1];
    }
    if (estimate < 0) {
      estimate = countUnsent(tx);
      fresh = true;
    }
    synchronized (sample) {
      if (fresh) {
        sample[0] = estimate;
        sample[1] = 0;
        sampledAt = now;
      }
      if (bound.admit(estimate + rows - 1, "outbox " + tables.outbox)) {
        overBoundAppends.addAndGet(rows);
      }
      sample[1] += rows;
    }
    return null;
  }

  /** An admitted append under a REFUSE bound whose transaction's end is not known yet. */
  private static final class Reservation {
    final int rows;
    /** The append's transaction id (PostgreSQL) or first row's sequence (H2); 0 until known. */
    volatile long marker;
    /** Set when the append committed on an auto-commit connection. */
    volatile boolean committed;

    Reservation(int rows) {
      this.rows = rows;
    }
  }

  /** Reservations not known to be in {@code sample[0]}; guarded by {@link #sample}. */
  private final Set<Reservation> reservations = new HashSet<>();
  /** Rows of {@link #reservations}; guarded by {@link #sample}. */
  private long reservedRows;
  /**
   * One recount at a time, so an older count never replaces a newer one; waited for
   * interruptibly, so an append stuck behind another's recount answers an interrupt.
   */
  private final java.util.concurrent.locks.ReentrantLock recount =
      new java.util.concurrent.locks.ReentrantLock();

  private Reservation reserve(Instant now, int rows) throws SQLException {
    long max = bound.maxUnsent();
    Reservation r = new Reservation(rows);
    synchronized (sample) {
      boolean stale = sampledAt == null || !now.isBefore(sampledAt.plus(BOUND_SAMPLE_INTERVAL))
          || now.isBefore(sampledAt);
      if (!stale && sample[0] + reservedRows + rows <= max - max / 10) {
        reservations.add(r);
        reservedRows += rows;
        return r;
      }
    }
    recount(now);
    synchronized (sample) {
      long unsent = sample[0] + reservedRows;
      try {
        bound.admit(unsent + rows - 1, "outbox " + tables.outbox);
      } catch (OutboxFullException e) {
        refusedAppends.addAndGet(rows);
        throw e;
      }
      reservations.add(r);
      reservedRows += rows;
      return r;
    }
  }

  /** Records how the reservation's transaction is found again; on failure use {@link #unreserve}. */
  private void reserved(Connection tx, Reservation r, boolean autoCommit, long firstSeq)
      throws SQLException {
    if (r == null) {
      return;
    }
    if (autoCommit) {
      r.committed = true;
    } else if (dialect == Dialect.POSTGRESQL) {
      try (Statement st = tx.createStatement();
          ResultSet rs = st.executeQuery("SELECT txid_current()")) {
        rs.next();
        r.marker = rs.getLong(1);
      }
    } else {
      r.marker = firstSeq;
    }
  }

  /**
   * After a failed append: in the caller's transaction nothing it wrote can commit, so its room
   * is given back; on an auto-commit connection the commit may have happened with its reply lost,
   * so the room stays taken until a recount, which the next append runs first (the recount counts
   * the row if it committed and drops the reservation either way).
   */
  private void failed(Reservation r, boolean autoCommit) {
    if (r == null) {
      return;
    }
    if (!autoCommit) {
      unreserve(r);
      return;
    }
    r.committed = true;
    synchronized (sample) {
      sampledAt = null;
    }
  }

  /** Gives back the room of an append that wrote nothing. */
  private void unreserve(Reservation r) {
    if (r == null) {
      return;
    }
    synchronized (sample) {
      if (reservations.remove(r)) {
        reservedRows -= r.rows;
      }
    }
  }

  /**
   * Counts the committed unsent rows through a connection of its own, after finding which
   * reserved appends ended (committed: now in the count; rolled back: gone), and drops those
   * reservations.
   */
  private void recount(Instant now) throws SQLException {
    try {
      recount.lockInterruptibly();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new SQLException("interrupted while waiting for another append's recount of the"
          + " bound of " + tables.outbox + "; nothing was written", "57014", e);
    }
    try {
      List<Reservation> marked = new java.util.ArrayList<>();
      synchronized (sample) {
        for (Reservation r : reservations) {
          if (r.committed || r.marker != 0) {
            marked.add(r);
          }
        }
      }
      long unsent;
      List<Reservation> ended;
      try (Connection c = dataSource.getConnection()) {
        c.setAutoCommit(true);
        ended = ended(c, marked);
        unsent = countUnsent(c);
      }
      synchronized (sample) {
        for (Reservation r : ended) {
          if (reservations.remove(r)) {
            reservedRows -= r.rows;
          }
        }
        sample[0] = unsent;
        sample[1] = 0;
        sampledAt = now;
      }
    } finally {
      recount.unlock();
    }
  }

  /** The reservations among {@code marked} whose transactions ended (committed or rolled back). */
  private List<Reservation> ended(Connection c, List<Reservation> marked) throws SQLException {
    List<Reservation> ended = new java.util.ArrayList<>();
    List<Reservation> open = new java.util.ArrayList<>();
    for (Reservation r : marked) {
      (r.committed ? ended : open).add(r);
    }
    if (open.isEmpty()) {
      return ended;
    }
    if (dialect == Dialect.POSTGRESQL) {
      Long[] xids = new Long[open.size()];
      for (int i = 0; i < xids.length; i++) {
        xids[i] = open.get(i).marker;
      }
      Set<Long> running = new HashSet<>();
      try (PreparedStatement ps = c.prepareStatement("SELECT x FROM unnest(?::bigint[]) x"
          + " WHERE txid_status(x) = 'in progress'")) {
        ps.setArray(1, c.createArrayOf("bigint", xids));
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            running.add(rs.getLong(1));
          }
        }
      }
      for (Reservation r : open) {
        if (!running.contains(r.marker)) {
          ended.add(r);
        }
      }
      return ended;
    }
    // H2: committed rows are visible here; rows of a transaction still open only to a dirty read.
    String exists = "SELECT 1 FROM " + tables.outbox + " WHERE seq = ?";
    List<Reservation> unseen = new java.util.ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(exists)) {
      for (Reservation r : open) {
        ps.setLong(1, r.marker);
        try (ResultSet rs = ps.executeQuery()) {
          (rs.next() ? ended : unseen).add(r);
        }
      }
    }
    if (unseen.isEmpty()) {
      return ended;
    }
    int isolation = c.getTransactionIsolation();
    c.setTransactionIsolation(Connection.TRANSACTION_READ_UNCOMMITTED);
    try (PreparedStatement ps = c.prepareStatement(exists)) {
      for (Reservation r : unseen) {
        ps.setLong(1, r.marker);
        try (ResultSet rs = ps.executeQuery()) {
          if (!rs.next()) {
            ended.add(r); // rolled back (or sent and purged since)
          }
        }
      }
    } finally {
      c.setTransactionIsolation(isolation);
    }
    return ended;
  }

  private long countUnsent(Connection tx) throws SQLException {
    try (Statement s = tx.createStatement();
        ResultSet rs = s.executeQuery(unsentSql("COUNT(*)", "SUM(n)"))) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /** This interval's NOTIFY for the caller to send, or null (H2, off, or already sent). */
  private OutboxNotifier claimNotify() {
    OutboxNotifier n = wakes.notifier();
    return n != null && n.claim() ? n : null;
  }

  private static void giveBack(OutboxNotifier n) {
    if (n != null) {
      n.giveBack();
    }
  }

  /**
   * The wake this store's relays subscribe to: its {@link JdbcStorage}'s {@link
   * JdbcStorage#outboxWakeup()}, shared by every store of that storage (see there for the
   * cross-process wake on PostgreSQL, its costs and limits). Fired after an append on an
   * auto-commit connection, and by {@link #committed()}.
   */
  @Override
  public java.util.Optional<io.relaykit.outbox.OutboxWakeup> wakeup() {
    return java.util.Optional.of(wakes.wakeup());
  }

  /**
   * Call after your own transaction that appended through this store committed (not needed for
   * auto-commit appends, which wake by themselves, nor under the Spring starter): wakes this
   * JVM's relays of the storage at once. No database access; never blocks or throws. Without the
   * call the rows are still published: on PostgreSQL the transaction's NOTIFY (if it sent the
   * interval's) wakes the listeners, and otherwise the relays' poll finds them.
   */
  @Override
  public void committed() {
    wakes.wakeup().wake();
  }

  /** The wake signals of this store's storage, for tests. */
  OutboxWakes wakes() {
    return wakes;
  }

  /** The dialect's statements, for tests that read their plans. */
  OutboxStatements statements() {
    return statements;
  }

  @Override
  public OutboxBound bound() {
    return bound;
  }
  /**
   * What per-key order spans for rows appended through this store.
   *
   * @return the scope this store was created with
   */
  public OutboxOrderScope orderScope() {
    return scope;
  }


  /** Appends refused because the backlog was at the bound (REFUSE), counted in rows. */
  @Override
  public long refusedAppends() {
    return refusedAppends.get();
  }

  /** Rows appended over the bound (ACCEPT). */
  @Override
  public long overBoundAppends() {
    return overBoundAppends.get();
  }

  private void enqueued(String destination, Message message, String detail) {
    LifecycleListener.safely(listener, new LifecycleEvent(Stage.ENQUEUED, message.id(),
        message.traceId(), destination, clock.instant(), detail));
  }

  /**
   * Inserts every message for {@code destination} through {@code tx} as one JDBC batch: the way to
   * write many rows (and to fill a backlog for a benchmark). Every message is validated before
   * anything is written. Reports {@link Stage#ENQUEUED} for every message once the whole batch
   * was written (in the caller's transaction, which may still roll back). Keyed messages lock
   * their key heads in sorted order, so two concurrent calls never deadlock on each other.
   *
   * @param tx the caller's connection; an auto-commit one gets a transaction of its own
   * @param destination where a relay publishes the messages
   * @param messages the messages, appended in list order; an empty list writes nothing
   * @throws IllegalArgumentException as {@link #append}, for the first invalid message, or if
   *     {@code tx} or {@code messages} is null; nothing is written then
   * @throws OutboxFullException if the bound (REFUSE) cannot take all the messages: none is
   *     written
   * @throws SQLException from the caller's connection (the caller decides about its
   *     transaction), or under a REFUSE bound from the recount's own connection, or when the thread
   *     is interrupted while another append's recount runs (nothing is written then, and the
   *     thread's interrupt status is kept)
   */
  public void appendAll(Connection tx, String destination, List<Message> messages)
      throws SQLException {
    requireConnection(tx);
    if (messages == null) {
      throw new IllegalArgumentException("messages must not be null");
    }
    java.util.TreeSet<OutboxStatements.KeyRef> refs = new java.util.TreeSet<>();
    for (Message m : messages) {
      validate(destination, m);
      if (m.key().isPresent()) {
        refs.add(scopeKey(destination, m));
      }
    }
    List<Message> stamped = new java.util.ArrayList<>(messages.size());
    for (Message m : messages) {
      stamped.add(traceCapture.stamp(m));
    }
    if (messages.isEmpty()) {
      return;
    }
    boolean autoCommit = tx.getAutoCommit();
    Reservation reservation = admit(tx, messages.size());
    OutboxNotifier notifier = claimNotify();
    try {
      long first = inCallersTransaction(tx, () -> {
        // Keys in one order (sorted), so two appendAll calls never wait for each other in a
        // cycle.
        List<OutboxStatements.KeyRef> idle = new java.util.ArrayList<>();
        for (OutboxStatements.KeyRef ref : refs) {
          if (statements.lockHead(tx, ref) == 0) {
            idle.add(ref);
          }
        }
        // Under a REFUSE bound on H2 the first row's sequence finds the transaction again.
        int from = reservation != null && dialect != Dialect.POSTGRESQL ? 1 : 0;
        long firstSeq = from == 1 ? insert(tx, destination, stamped.get(0)) : 0;
        try (PreparedStatement ps = tx.prepareStatement(insertSql)) {
          int pending = 0;
          for (Message m : stamped.subList(from, stamped.size())) {
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
        // Their heads were empty and are locked: the key's lowest unsent row is one of these.
        statements.advanceHeads(tx, idle);
        if (notifier != null) {
          notifier.send(tx);
        }
        if (reservation != null && !autoCommit) {
          reserved(tx, reservation, false, firstSeq);
        }
        return firstSeq;
      });
      if (reservation != null && autoCommit) {
        reserved(tx, reservation, true, first);
      }
    } catch (SQLException | RuntimeException e) {
      failed(reservation, autoCommit);
      giveBack(notifier);
      throw e;
    }
    for (Message m : stamped) {
      enqueued(destination, m, "outbox batch, in the caller's transaction");
    }
    if (autoCommit) {
      wakes.wakeup().wake();
    }
  }

  @Override
  public List<OutboxRecord> claim(String owner, int max, Duration lease, Instant now) {
    return claim(owner, max, 1, lease, now);
  }

  /**
   * Runs: after the claim has leased keys' oldest unsent rows, their next rows (up to {@code
   * maxRun} per key, sharing what is left of {@code max}) are leased with the same lease end, in
   * sequence order while each is ready and under no other live lease: on H2 in the claim's
   * transaction, on PostgreSQL in one more transaction (the heads are ours by then, so no other
   * relay can claim a row of these keys meanwhile). Costs three statements per key that brings a
   * run, and one update per row.
   */
  @Override
  public List<OutboxRecord> claim(String owner, int max, int maxRun, Duration lease,
      Instant now) {
    if (maxRun < 1) {
      throw new IllegalArgumentException("maxRun must be >= 1, was " + maxRun);
    }
    requireOwner(owner);
    if (max < 1) {
      throw new IllegalArgumentException("max must be >= 1, was " + max);
    }
    if (lease == null || lease.isZero() || lease.isNegative()) {
      throw new IllegalArgumentException("lease must be a positive duration, was " + lease);
    }
    requireNow(now);
    long leaseNanos = nanos("lease", lease);
    OutboxStatements.Claimed claimed = statements.claim(dataSource,
        "outbox claim on " + tables.outbox, owner, max, maxRun, leaseNanos,
        (c, row) -> {
          DeadLetter d = undecodable(row, now);
          deadLetters.add(c, d);
          return d;
        });
    if (claimed.headsWalked() >= 0) {
      MetricsListener.safely(metrics, m -> m.outboxClaimWalked(tables.outbox,
          claimed.headsWalked(), claimed.rowsWalked()));
    }
    for (DeadLetter d : claimed.deadLettered()) {
      LOG.log(System.Logger.Level.WARNING, "moved to dead letters: " + d.reason());
      LifecycleListener.safely(listener, new LifecycleEvent(Stage.DEAD_LETTERED, d.messageId(),
          d.message().traceId(), d.source(), now, d.reason()));
    }
    return claimed.records();
  }

  /** The dead letter of a row that does not decode: a stand-in message and the reason. */
  private DeadLetter undecodable(OutboxStatements.Undecodable row, Instant now) {
    String id = row.messageId() == null || row.messageId().isBlank()
        ? "outbox-row-" + row.sequence() : row.messageId();
    String destination = row.destination() == null || row.destination().isBlank()
        ? "outbox" : row.destination();
    String reason = Texts.truncateChars("undecodable outbox row seq " + row.sequence() + " in "
        + tables.outbox + " (message id " + row.messageId() + ", destination "
        + row.destination() + "): " + row.error().getMessage(), MAX_REASON_LENGTH);
    String raw = row.headers() == null ? "(NULL)"
        : Texts.truncateChars(row.headers(), MAX_RAW_ENVELOPE);
    byte[] payload = row.payload() == null || row.payload().length == 0
        ? "(empty)".getBytes(StandardCharsets.UTF_8) : row.payload();
    String key = row.key() == null || row.key().isBlank() ? null : row.key();
    Message standIn = Message.builder()
        .id(id)
        .type(UNDECODABLE_TYPE)
        .key(key)
        .payload(payload)
        .headers(Map.of(RAW_ENVELOPE_HEADER, raw))
        .traceId(traceId(row, id))
        .createdAt(now)
        .build();
    Instant first = row.firstFailureAt() == null || row.firstFailureAt().isAfter(now) ? now
        : row.firstFailureAt();
    String exceptionMessage = row.error().getMessage() == null ? null
        : Texts.truncateChars(row.error().getMessage(), MAX_REASON_LENGTH);
    return new DeadLetter(standIn, destination, reason, row.error().getClass().getName(),
        exceptionMessage, row.attempts(), first, now);
  }

  /** The row's own trace id where its envelope still yields one, else one derived from its id. */
  private static String traceId(OutboxStatements.Undecodable row, String id) {
    try {
      String trace = Envelopes.decodeMap(row.headers()).get(MessageHeaders.TRACE_ID);
      if (trace != null && !trace.isBlank() && trace.length() <= 64) {
        return trace;
      }
    } catch (RuntimeException e) {
      // The envelope is what is corrupt; derive one.
    }
    return UUID.nameUUIDFromBytes(id.getBytes(StandardCharsets.UTF_8)).toString().replace("-", "");
  }

  /**
   * {@inheritDoc}
   *
   * <p>Fenced by owner: a row another relay leased since, or one already sent, is not counted. On
   * PostgreSQL the UPDATE commits on its own and the heads of keyed rows move afterwards in a
   * second transaction. If the UPDATE throws, nothing is marked (the rows stay held and go out
   * again after the lease); if its reply is lost, the rows are sent and a repeat counts 0. If the
   * head move fails, or the process dies before it, the count is still returned (the failure is
   * logged): the rows are sent and their heads stay on them, lower bounds with which the claims
   * still find each key's next row, and never a later one; the key's next markSent or the purge's
   * stale-head repair moves them on. On H2 the marks and head moves are one transaction.
   */
  @Override
  public int markSent(String owner, Collection<Long> sequences, Instant now) {
    requireOwner(owner);
    Long[] seqs = sortedSequences(sequences);
    requireNow(now);
    if (seqs.length == 0) {
      return 0;
    }
    return statements.markSent(dataSource, "outbox markSent on " + tables.outbox, owner, seqs);
  }

  @Override
  public int release(String owner, Collection<Long> sequences) {
    requireOwner(owner);
    Long[] seqs = sortedSequences(sequences);
    if (seqs.length == 0) {
      return 0;
    }
    String sql = "UPDATE " + tables.outbox + " SET lease_owner = NULL, lease_until = NULL"
        + " WHERE seq = ? AND state = " + UNSENT + " AND lease_owner = ?";
    return Jdbc.inTransaction(dataSource, "outbox release on " + tables.outbox, c -> {
      try (PreparedStatement ps = c.prepareStatement(sql)) {
        for (Long seq : seqs) {
          ps.setLong(1, seq);
          ps.setString(2, owner);
          ps.addBatch();
        }
        return Jdbc.rowsChanged(ps.executeBatch());
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
    // The retry delay, started on the database's clock: the caller's clock only says how long.
    long delayNanos = Math.max(0, Instants.toNanos("notBefore", notBefore) - failedNanos);
    String err = error == null ? null : Texts.prefixChars(error, MAX_ERROR_LENGTH);
    return Jdbc.inTransaction(dataSource, "outbox reschedule on " + tables.outbox, c -> {
      List<OutboxStatements.KeyRef> refs = statements.keysOf(c, new Long[] {sequence});
      boolean changed;
      try (PreparedStatement ps = c.prepareStatement("UPDATE " + tables.outbox
          + " SET attempts = ?, first_failure_at = COALESCE(first_failure_at, ?), ready_at = "
          + databaseClock.nowNanos(dialect) + " + ?,"
          + " last_error = ?, lease_owner = NULL, lease_until = NULL"
          + " WHERE seq = ? AND state = " + UNSENT + " AND lease_owner = ?")) {
        ps.setInt(1, attempts);
        ps.setLong(2, failedNanos);
        int i = databaseClock.bind(ps, 3);
        ps.setLong(i, delayNanos);
        if (err == null) {
          ps.setNull(i + 1, Types.VARCHAR);
        } else {
          ps.setString(i + 1, err);
        }
        ps.setLong(i + 2, sequence);
        ps.setString(i + 3, owner);
        changed = ps.executeUpdate() == 1;
      }
      if (changed) {
        // The key's head takes the row's new due time if the row is its lowest unsent one, so
        // claims pass the key over until then (skipped, never waited for, while an append holds
        // the head: it then keeps an earlier due time and claims walk it as before).
        statements.advanceHeads(c, refs);
      }
      return changed;
    });
  }

  @Override
  public boolean markDead(String owner, long sequence) {
    requireOwner(owner);
    return Jdbc.inTransaction(dataSource, "outbox markDead on " + tables.outbox, c -> {
      List<OutboxStatements.KeyRef> refs = statements.keysOf(c, new Long[] {sequence});
      boolean removed;
      try (PreparedStatement ps = c.prepareStatement("DELETE FROM " + tables.outbox
          + " WHERE seq = ? AND state = " + UNSENT + " AND lease_owner = ?")) {
        ps.setLong(1, sequence);
        ps.setString(2, owner);
        removed = ps.executeUpdate() == 1;
      }
      if (removed) {
        statements.advanceHeads(c, refs);
      }
      return removed;
    });
  }

  /**
   * Deletes the held row and stores its dead letter in one transaction: the DELETE (fenced by
   * owner) first, and only if it took the row, the dead letter. When {@code deadLetters} is a
   * {@link JdbcDeadLetterStore} of this storage's database, the upsert is in the same transaction:
   * both or neither. Any other store (Redis, a broker) is written while the DELETE holds the row's
   * lock and before the commit, so no other relay can claim, send or take the row over
   * meanwhile; if that store throws, the transaction rolls back and the row stays held; if the
   * commit fails after it stored the dead letter, the row stays beside its dead letter and is
   * tried again (a replay may then publish it twice). The row's key head moves on to the key's
   * next unsent row (or none) in the same transaction, as after {@link #markDead}. Cost: one
   * DELETE, one upsert and, for a keyed row, the head's move, in one transaction.
   */
  @Override
  public boolean moveToDeadLetters(String owner, long sequence, DeadLetter deadLetter,
      DeadLetterStore deadLetters) {
    requireOwner(owner);
    if (deadLetter == null || deadLetters == null) {
      throw new IllegalArgumentException((deadLetter == null ? "deadLetter" : "deadLetters")
          + " must not be null");
    }
    JdbcDeadLetterStore local = deadLetters instanceof JdbcDeadLetterStore j
        && j.usesDataSource(dataSource) ? j : null;
    if (local != null) {
      JdbcDeadLetterStore.validate(deadLetter);
    }
    return Jdbc.inTransaction(dataSource, "outbox moveToDeadLetters on " + tables.outbox, c -> {
      List<OutboxStatements.KeyRef> refs = statements.keysOf(c, new Long[] {sequence});
      try (PreparedStatement ps = c.prepareStatement("DELETE FROM " + tables.outbox
          + " WHERE seq = ? AND state = " + UNSENT + " AND lease_owner = ?")) {
        ps.setLong(1, sequence);
        ps.setString(2, owner);
        if (ps.executeUpdate() != 1) {
          return false;
        }
      }
      if (local != null) {
        local.add(c, deadLetter);
      } else {
        deadLetters.add(deadLetter);
      }
      // The key's head moves on as after markDead, or claims walk it until the key's next row.
      statements.advanceHeads(c, refs);
      return true;
    });
  }

  /**
   * Sets {@code lease_until} of the rows {@code owner} holds among {@code sequences} to the
   * database clock's now plus {@code lease}; rows another relay took over, or that were sent,
   * rescheduled or dead-lettered, are not touched. PostgreSQL: one {@code UPDATE ... WHERE seq =
   * ANY(?) ... RETURNING seq}; H2: one transaction of a batch of one-row updates, the clock read
   * once.
   */
  @Override
  public Set<Long> renewLease(String owner, Collection<Long> sequences, Duration lease,
      Instant now) {
    requireOwner(owner);
    Long[] seqs = sortedSequences(sequences);
    if (lease == null || lease.isZero() || lease.isNegative()) {
      throw new IllegalArgumentException("lease must be a positive duration, was " + lease);
    }
    requireNow(now);
    long leaseNanos = nanos("lease", lease);
    if (seqs.length == 0) {
      return Set.of();
    }
    String t = tables.outbox;
    if (dialect == Dialect.POSTGRESQL) {
      // One statement; parameters: [now], lease, seqs, owner.
      String sql = "UPDATE " + t + " SET lease_until = " + databaseClock.nowNanos(dialect)
          + " + ? WHERE seq = ANY(?) AND state = " + UNSENT + " AND lease_owner = ? RETURNING seq";
      return Jdbc.autoCommit(dataSource, "outbox renewLease on " + t, c -> {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
          int i = databaseClock.bind(ps, 1);
          ps.setLong(i, leaseNanos);
          ps.setArray(i + 1, c.createArrayOf("bigint", seqs));
          ps.setString(i + 2, owner);
          Set<Long> kept = new HashSet<>();
          try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
              kept.add(rs.getLong(1));
            }
          }
          return kept;
        }
      });
    }
    // H2: one transaction, the clock read once, a batch of one-row updates (see markSent).
    return Jdbc.inTransaction(dataSource, "outbox renewLease on " + t, c -> {
      long until = Math.addExact(Instants.toNanos("database now",
          databaseClock.now(c, dialect)), leaseNanos);
      try (PreparedStatement ps = c.prepareStatement("UPDATE " + t
          + " SET lease_until = ? WHERE seq = ? AND state = " + UNSENT + " AND lease_owner = ?")) {
        for (Long seq : seqs) {
          ps.setLong(1, until);
          ps.setLong(2, seq);
          ps.setString(3, owner);
          ps.addBatch();
        }
        int[] counts = ps.executeBatch();
        Set<Long> kept = new HashSet<>();
        for (int i = 0; i < counts.length; i++) {
          if (counts[i] == 1) {
            kept.add(seqs[i]);
          }
        }
        return kept;
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

  /**
   * Deletes at most {@code max} rows sent more than {@code retention} ago on the database's clock,
   * oldest first, in one statement (an index range scan of {@code outbox_sent}).
   */
  @Override
  public int purgeSentOlderThan(Duration retention, int max, Instant now) {
    if (retention == null || retention.isNegative()) {
      throw new IllegalArgumentException("retention must be a duration >= 0, was " + retention);
    }
    if (max < 1) {
      throw new IllegalArgumentException("max must be >= 1, was " + max);
    }
    requireNow(now);
    long retentionNanos;
    try {
      retentionNanos = retention.toNanos();
    } catch (ArithmeticException e) {
      return 0; // longer than any stored instant can be old
    }
    String t = tables.outbox;
    String cutoff = databaseClock.nowNanos(dialect) + " - ?";
    String sql = dialect == Dialect.POSTGRESQL
        // Skips rows a concurrent purge holds, and never reaches unsent rows (state, sent_at).
        ? "DELETE FROM " + t + " WHERE seq = ANY(ARRAY(SELECT seq FROM " + t + " WHERE state = "
            + SENT + " AND sent_at < " + cutoff + " ORDER BY sent_at LIMIT ?"
            + " FOR UPDATE SKIP LOCKED))"
        : "DELETE FROM " + t + " WHERE state = " + SENT + " AND sent_at < " + cutoff
            + " FETCH FIRST ? ROWS ONLY";
    int purged = Jdbc.autoCommit(dataSource, "outbox purgeSentOlderThan on " + t, c -> {
      try (PreparedStatement ps = c.prepareStatement(sql)) {
        int i = databaseClock.bind(ps, 1);
        ps.setLong(i, retentionNanos);
        ps.setInt(i + 1, max);
        return ps.executeUpdate();
      }
    });
    // Heads left pointing at rows that are no longer unsent (a head an append held while
    // markSent ran, and the append rolled back) move on; then heads of keys with nothing left to
    // send go, in the same bounded steps.
    Jdbc.inTransaction(dataSource, "outbox repair of stale key heads on " + tables.outboxHead,
        c -> statements.repairStaleHeads(c, max));
    Jdbc.inTransaction(dataSource, "outbox purge of idle key heads on " + tables.outboxHead,
        c -> statements.purgeIdleHeads(c, max));
    return purged;
  }

  @Override
  public OutboxStats stats(Instant now) {
    requireNow(now);
    return Jdbc.autoCommit(dataSource, "outbox stats on " + tables.outbox, c -> {
      long unsent;
      Instant oldest;
      long sent;
      try (Statement s = c.createStatement()) {
        try (ResultSet rs = s.executeQuery(unsentSql("COUNT(*), MIN(created_at)",
            "SUM(n), MIN(m)"))) {
          rs.next();
          unsent = rs.getLong(1);
          long min = rs.getLong(2);
          oldest = rs.wasNull() ? null : Instants.fromNanos(min);
        }
        sent = countSent(s, unsent);
      }
      Duration age = oldest == null || oldest.isAfter(now) ? Duration.ZERO
          : Duration.between(oldest, now);
      return new OutboxStats(unsent, age, sent);
    });
  }

  /** Up to this many sent rows PostgreSQL's stats count exactly; above, an estimate. */
  static final int EXACT_SENT_COUNT = 100_000;

  /**
   * Aggregates {@code select} over the unsent rows. On PostgreSQL as two queries whose WHERE
   * clauses match the partial indexes on unsent rows (a plain {@code state = 0} matches neither
   * and would scan the table), combined by {@code combine} over columns {@code n, m}.
   */
  private String unsentSql(String select, String combine) {
    String t = tables.outbox;
    if (dialect != Dialect.POSTGRESQL) {
      return "SELECT " + select + " FROM " + t + " WHERE state = " + UNSENT;
    }
    String[] cols = select.split(", ");
    String named = cols.length == 1 ? cols[0] + " AS n" : cols[0] + " AS n, " + cols[1] + " AS m";
    return "SELECT " + combine + " FROM (SELECT " + named + " FROM " + t + " WHERE state = "
        + UNSENT + " AND msg_key IS NULL UNION ALL SELECT " + named + " FROM " + t
        + " WHERE state = " + UNSENT + " AND msg_key IS NOT NULL) x";
  }

  /**
   * Sent rows not yet purged: on H2 counted; on PostgreSQL counted exactly up to {@value
   * #EXACT_SENT_COUNT} (an index-only scan of at most that many entries of outbox_sent), above
   * that the planner's row estimate of the table minus the unsent rows, so stats every few
   * seconds never count a million sent rows.
   */
  private long countSent(Statement s, long unsent) throws SQLException {
    if (dialect != Dialect.POSTGRESQL) {
      try (ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM " + tables.outbox
          + " WHERE state = " + SENT)) {
        rs.next();
        return rs.getLong(1);
      }
    }
    long counted;
    try (ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM (SELECT 1 FROM " + tables.outbox
        + " WHERE state = " + SENT + " LIMIT " + (EXACT_SENT_COUNT + 1) + ") x")) {
      rs.next();
      counted = rs.getLong(1);
    }
    if (counted <= EXACT_SENT_COUNT) {
      return counted;
    }
    try (ResultSet rs = s.executeQuery("SELECT reltuples::bigint FROM pg_class"
        + " WHERE oid = to_regclass('" + tables.outbox + "')")) {
      long estimate = rs.next() ? rs.getLong(1) - unsent : counted;
      return Math.max(counted, estimate);
    }
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
    if (message.type().length() > JdbcDeadLetterStore.MAX_NAME_LENGTH) {
      // The outbox keeps the type in its envelope, but a dead letter needs it in a column: a row
      // whose dead letter cannot be stored would fail every time it gave up.
      throw new IllegalArgumentException("message type must be at most "
          + JdbcDeadLetterStore.MAX_NAME_LENGTH + " characters (dead_letter.msg_type), was "
          + message.type().length() + "; nothing was written");
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
    ps.setString(7, m.key().isPresent() && scope == OutboxOrderScope.KEY_PER_DESTINATION
        ? destination : "");
  }

  /**
   * The sequences as an ascending array, so concurrent statements lock rows in one order, as
   * claims do; refuses a null collection or a null element.
   */
  private static Long[] sortedSequences(Collection<Long> sequences) {
    if (sequences == null) {
      throw new IllegalArgumentException("sequences must not be null");
    }
    Long[] seqs = new Long[sequences.size()];
    int n = 0;
    for (Long seq : sequences) {
      if (seq == null) {
        throw new IllegalArgumentException("sequences must not contain null");
      }
      seqs[n++] = seq;
    }
    Arrays.sort(seqs);
    return seqs;
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

  private static long nanos(String field, Duration d) {
    try {
      return d.toNanos();
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException(field + " must be at most 292 years, was " + d, e);
    }
  }

  private static void requireNow(Instant now) {
    if (now == null) {
      throw new IllegalArgumentException("now must not be null");
    }
  }
}
