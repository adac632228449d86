package io.relaykit.storage.h2;

import io.relaykit.queue.JournalException;
import io.relaykit.queue.JournalState;
import io.relaykit.queue.Priority;
import io.relaykit.queue.QueueJournal;
import io.relaykit.queue.QueuedEvent;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import javax.sql.DataSource;

/**
 * A {@link QueueJournal} in a database table: each change becomes one or two single-row
 * statements (insert, update or delete of the event's pending, dead or seen row), never a rewrite
 * of the whole state. Changes are buffered and group-committed in one transaction every {@code
 * commitInterval} by a daemon thread, or at once when the buffer reaches 10 000 changes; a {@link
 * Priority#CRITICAL} append commits everything buffered before it returns, and concurrent critical
 * appends share that commit. Several journals share one table, told apart by name.
 *
 * <p>The journal keeps the set of pending, dead and seen ids in memory (not the payloads), so it
 * can write each change unconditionally. One instance writes a journal name at a time: a second
 * process opening the same name while the first still writes gets an undefined state. Durability
 * on H2 is that of the database: see {@link JdbcStorage}.
 */
public final class JdbcQueueJournal implements QueueJournal {
  private static final System.Logger LOG = System.getLogger(JdbcQueueJournal.class.getName());

  private static final int SEEN = 0;
  private static final int PENDING = 1;
  private static final int DEAD = 2;
  private static final int MAX_BUFFERED = 10_000;
  private static final int MAX_ID_LENGTH = 512;

  /** A typed SQL NULL: PostgreSQL refuses a VARCHAR null for a BIGINT column. */
  private record Null(int sqlType) {}

  private static final Null NULL_TEXT = new Null(Types.VARCHAR);
  private static final Null NULL_INT = new Null(Types.INTEGER);
  private static final Null NULL_LONG = new Null(Types.BIGINT);
  private static final Null NULL_BYTES = new Null(Types.VARBINARY);

  /** One buffered statement and its parameters. */
  private record Statement(String sql, Object[] params) {}

  private final DataSource dataSource;
  private final String table;
  private final String name;
  private final ScheduledExecutorService flusher;
  private final String insertSql;
  private final String updatePendingSql;
  private final String deleteSql;
  private final String rescheduleSql;
  private final String toDeadSql;

  private final Object lock = new Object();
  private final ReentrantLock flushLock = new ReentrantLock();
  private List<Statement> buffer = new ArrayList<>();
  private long recorded;
  private volatile long durable;
  private final Set<String> pending = new HashSet<>();
  private final Set<String> seen = new HashSet<>();
  private final Set<String> dead = new HashSet<>();
  private long nextSeq = 1;
  private boolean loaded;
  private volatile boolean closed;

  JdbcQueueJournal(DataSource dataSource, Tables tables, String name, Duration commitInterval) {
    if (name == null || name.isBlank() || name.length() > 255) {
      throw new IllegalArgumentException("journal name must be 1..255 characters, not blank, was "
          + (name == null ? "null" : "'" + name + "'"));
    }
    if (commitInterval == null || commitInterval.isZero() || commitInterval.isNegative()) {
      throw new IllegalArgumentException("commitInterval must be a positive duration, was "
          + commitInterval);
    }
    this.dataSource = dataSource;
    this.table = tables.journal;
    this.name = name;
    this.insertSql = "INSERT INTO " + table + " (journal, event_id, kind, seq, seen_at, name,"
        + " payload, priority, enqueued_at, attempts, next_attempt_at, expires_at, dead_reason)"
        + " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    this.updatePendingSql = "UPDATE " + table + " SET name = ?, payload = ?, priority = ?,"
        + " enqueued_at = ?, attempts = ?, next_attempt_at = ?, expires_at = ?"
        + " WHERE journal = ? AND event_id = ? AND kind = " + PENDING;
    this.deleteSql = "DELETE FROM " + table + " WHERE journal = ? AND event_id = ? AND kind = ?";
    this.rescheduleSql = "UPDATE " + table + " SET attempts = ?, next_attempt_at = ?"
        + " WHERE journal = ? AND event_id = ? AND kind = " + PENDING;
    this.toDeadSql = "INSERT INTO " + table + " (journal, event_id, kind, seq, name, payload,"
        + " priority, enqueued_at, attempts, next_attempt_at, expires_at, dead_reason)"
        + " SELECT journal, event_id, " + DEAD + ", ?, name, payload, priority, enqueued_at, ?,"
        + " next_attempt_at, expires_at, ? FROM " + table
        + " WHERE journal = ? AND event_id = ? AND kind = " + PENDING;
    this.flusher = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "relaykit-journal-" + name);
      t.setDaemon(true);
      return t;
    });
    long nanos = commitInterval.toNanos();
    flusher.scheduleWithFixedDelay(this::backgroundFlush, nanos, nanos, TimeUnit.NANOSECONDS);
  }

  @Override
  public JournalState load() {
    synchronized (lock) {
      ensureOpen();
      if (loaded) {
        throw new IllegalStateException("journal " + name + " is already loaded");
      }
      try (Connection c = dataSource.getConnection();
          PreparedStatement ps = c.prepareStatement("SELECT * FROM " + table
              + " WHERE journal = ? ORDER BY seq")) {
        ps.setString(1, name);
        List<QueuedEvent> pendingEvents = new ArrayList<>();
        List<QueuedEvent> deadEvents = new ArrayList<>();
        Map<String, String> reasons = new HashMap<>();
        Map<String, Instant> seenAt = new LinkedHashMap<>();
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            String id = rs.getString("event_id");
            long seq = rs.getLong("seq");
            nextSeq = Math.max(nextSeq, seq + 1);
            switch (rs.getInt("kind")) {
              case SEEN -> {
                seenAt.put(id, Instants.get(rs, "seen_at"));
                seen.add(id);
              }
              case PENDING -> {
                pendingEvents.add(event(rs, id));
                pending.add(id);
              }
              case DEAD -> {
                deadEvents.add(event(rs, id));
                String reason = rs.getString("dead_reason");
                reasons.put(id, reason == null ? "" : reason);
                dead.add(id);
              }
              default -> throw new JournalException("journal " + name + " in " + table
                  + " has a row of unknown kind " + rs.getInt("kind") + " for event " + id);
            }
          }
        }
        loaded = true;
        return new JournalState(pendingEvents, deadEvents, reasons, seenAt);
      } catch (SQLException | RuntimeException e) {
        if (e instanceof JournalException) {
          throw (JournalException) e;
        }
        throw new JournalException("could not load journal " + name + " from " + table + ": "
            + e.getMessage(), e);
      }
    }
  }

  private static QueuedEvent event(ResultSet rs, String id) throws SQLException {
    return new QueuedEvent(id, rs.getString("name"),
        new String(rs.getBytes("payload"), StandardCharsets.UTF_8),
        Priority.values()[rs.getInt("priority")], Instants.get(rs, "enqueued_at"),
        rs.getInt("attempts"), Instants.get(rs, "next_attempt_at"),
        Instants.get(rs, "expires_at"));
  }

  @Override
  public void append(QueuedEvent event) {
    long ticket = appendDeferringSync(event);
    if (event.priority() == Priority.CRITICAL) {
      awaitDurable(ticket);
    }
  }

  @Override
  public long appendDeferringSync(QueuedEvent event) {
    Appended a = checkAppend(event);
    synchronized (lock) {
      ensureWritable();
      recordAppend(a);
      return event.priority() == Priority.CRITICAL ? recorded : 0L;
    }
  }

  /**
   * Atomic: the changes are checked whole, then buffered under one lock hold, so they are written
   * by the same group commit, in one transaction.
   */
  @Override
  public long recordAtomically(List<Change> changes) {
    QueueJournal.requireChanges(changes);
    List<Object> checked = new ArrayList<>(changes.size());
    boolean critical = false;
    for (Change c : changes) {
      if (c instanceof Change.Append a) {
        checked.add(checkAppend(a.event()));
        critical |= a.event().priority() == Priority.CRITICAL;
      } else {
        requireId(eventIdOf(c));
        if (c instanceof Change.Reschedule r) {
          nanos(r.nextAttemptAt());
        }
        checked.add(c);
      }
    }
    synchronized (lock) {
      ensureWritable();
      for (Object c : checked) {
        if (c instanceof Appended a) {
          recordAppend(a);
        } else if (c instanceof Change.Remove r) {
          recordRemove(r.eventId(), r.removal());
        } else if (c instanceof Change.Reschedule r) {
          recordReschedule(r.eventId(), r.attempts(), r.nextAttemptAt());
        } else if (c instanceof Change.DeadLetter d) {
          recordDeadLetter(d.eventId(), d.attempts(), d.reason());
        } else if (c instanceof Change.Forget f) {
          recordForget(f.eventId());
        }
      }
      return critical ? recorded : 0L;
    }
  }

  private static String eventIdOf(Change c) {
    if (c instanceof Change.Remove r) {
      return r.eventId();
    } else if (c instanceof Change.Reschedule r) {
      return r.eventId();
    } else if (c instanceof Change.DeadLetter d) {
      return d.eventId();
    } else if (c instanceof Change.Forget f) {
      return f.eventId();
    }
    throw new IllegalArgumentException("not a single-id change: " + c);
  }

  /** An event checked for this journal, with its payload encoded. */
  private record Appended(QueuedEvent event, byte[] payload) {}

  private static Appended checkAppend(QueuedEvent e) {
    QueueJournal.requireEvent(e);
    requireId(e.eventId());
    byte[] payload = e.payload().getBytes(StandardCharsets.UTF_8);
    if (payload.length > Schema.MAX_JOURNAL_PAYLOAD_BYTES) {
      throw new IllegalArgumentException("payload of event " + e.eventId() + " is "
          + payload.length + " bytes, over the journal limit of "
          + Schema.MAX_JOURNAL_PAYLOAD_BYTES + "; nothing was recorded");
    }
    return new Appended(e, payload);
  }

  /** Buffers an append. Call with {@link #lock} held. */
  private void recordAppend(Appended a) {
    QueuedEvent e = a.event();
    byte[] payload = a.payload();
    String id = e.eventId();
    if (dead.remove(id)) {
      // A replay: the dead letter goes, the event is pending behind the others.
      add(deleteSql, name, id, DEAD);
    }
    if (pending.contains(id)) {
      add(updatePendingSql, e.name(), payload, e.priority().ordinal(),
          nanos(e.enqueuedAt()), e.attempts(), nanos(e.nextAttemptAt()), nanos(e.expiresAt()),
          name, id);
    } else {
      pending.add(id);
      add(insertSql, name, id, PENDING, nextSeq++, NULL_LONG, e.name(), payload,
          e.priority().ordinal(), nanos(e.enqueuedAt()), e.attempts(),
          nanos(e.nextAttemptAt()), nanos(e.expiresAt()), NULL_TEXT);
    }
    if (seen.add(id)) {
      add(insertSql, name, id, SEEN, nextSeq++, nanos(e.enqueuedAt()), NULL_TEXT, NULL_BYTES,
          NULL_INT, NULL_LONG, NULL_INT, NULL_LONG, NULL_LONG, NULL_TEXT);
    }
  }

  @Override
  public void remove(String eventId, Removal removal) {
    requireId(eventId);
    if (removal == null) {
      throw new IllegalArgumentException("removal must not be null");
    }
    synchronized (lock) {
      ensureWritable();
      recordRemove(eventId, removal);
    }
  }

  private void recordRemove(String eventId, Removal removal) {
    boolean wasPending = pending.remove(eventId);
    if (wasPending) {
      add(deleteSql, name, eventId, PENDING);
    }
    if (removal == Removal.DROPPED) {
      if (wasPending && seen.remove(eventId)) {
        add(deleteSql, name, eventId, SEEN);
      }
    } else if (!wasPending && dead.remove(eventId)) {
      add(deleteSql, name, eventId, DEAD);
    }
  }

  @Override
  public void reschedule(String eventId, int attempts, Instant nextAttemptAt) {
    requireId(eventId);
    QueueJournal.requireAttempts(attempts);
    if (nextAttemptAt == null) {
      throw new IllegalArgumentException("nextAttemptAt must not be null");
    }
    nanos(nextAttemptAt);
    synchronized (lock) {
      ensureWritable();
      recordReschedule(eventId, attempts, nextAttemptAt);
    }
  }

  private void recordReschedule(String eventId, int attempts, Instant nextAttemptAt) {
    if (pending.contains(eventId)) {
      add(rescheduleSql, attempts, nanos(nextAttemptAt), name, eventId);
    }
  }

  @Override
  public void deadLetter(String eventId, int attempts, String reason) {
    requireId(eventId);
    QueueJournal.requireAttempts(attempts);
    QueueJournal.requireDeadReason(reason);
    synchronized (lock) {
      ensureWritable();
      recordDeadLetter(eventId, attempts, reason);
    }
  }

  private void recordDeadLetter(String eventId, int attempts, String reason) {
    if (!pending.remove(eventId)) {
      return;
    }
    // A pending id is never dead too (an append of a dead id replays it), so this is its only
    // dead row.
    long seq = nextSeq++;
    dead.add(eventId);
    add(toDeadSql, seq, attempts, reason, name, eventId);
    add(deleteSql, name, eventId, PENDING);
  }

  @Override
  public void forget(String eventId) {
    requireId(eventId);
    synchronized (lock) {
      ensureWritable();
      recordForget(eventId);
    }
  }

  private void recordForget(String eventId) {
    if (!pending.contains(eventId) && seen.remove(eventId)) {
      add(deleteSql, name, eventId, SEEN);
    }
  }

  @Override
  public void awaitDurable(long ticket) {
    if (ticket <= durable) {
      return;
    }
    flushLock.lock();
    try {
      if (ticket > durable) {
        writeBuffered();
      }
    } finally {
      flushLock.unlock();
    }
  }

  @Override
  public void flush() {
    long upTo;
    synchronized (lock) {
      ensureOpen();
      upTo = recorded;
    }
    awaitDurable(upTo);
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    long upTo;
    synchronized (lock) {
      closed = true;
      upTo = recorded;
    }
    // shutdown, not shutdownNow: interrupting a thread inside an H2 file write closes the file
    // channel (ClosedByInterruptException) and with it the whole database.
    flusher.shutdown();
    try {
      if (!flusher.awaitTermination(30, TimeUnit.SECONDS)) {
        LOG.log(System.Logger.Level.WARNING, "journal " + name
            + " group commit still running after 30 s at close");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    awaitDurable(upTo);
  }

  private void backgroundFlush() {
    try {
      flushLock.lock();
      try {
        writeBuffered();
      } finally {
        flushLock.unlock();
      }
    } catch (RuntimeException e) {
      // Kept in the buffer and retried at the next interval, flush or critical append.
      LOG.log(System.Logger.Level.WARNING, "journal " + name + " group commit failed; retrying: "
          + e.getMessage());
    }
  }

  /** Writes everything buffered in one transaction. Call with {@link #flushLock} held. */
  private void writeBuffered() {
    List<Statement> batch;
    long upTo;
    synchronized (lock) {
      if (buffer.isEmpty()) {
        return;
      }
      batch = buffer;
      buffer = new ArrayList<>();
      upTo = recorded;
    }
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      try {
        write(c, batch);
        c.commit();
      } catch (SQLException | RuntimeException e) {
        c.rollback();
        throw e;
      } finally {
        c.setAutoCommit(true);
      }
      durable = upTo;
    } catch (SQLException | RuntimeException e) {
      synchronized (lock) {
        batch.addAll(buffer);
        buffer = batch;
      }
      throw new JournalException("journal " + name + " could not commit " + batch.size()
          + " changes to " + table + ": " + e.getMessage(), e);
    }
  }

  /** Executes the changes in order, batching runs of the same statement. */
  private static void write(Connection c, List<Statement> changes) throws SQLException {
    PreparedStatement ps = null;
    String current = null;
    try {
      for (Statement ch : changes) {
        if (!ch.sql().equals(current)) {
          if (ps != null) {
            ps.executeBatch();
            ps.close();
          }
          current = ch.sql();
          ps = c.prepareStatement(current);
        }
        bind(ps, ch.params());
        ps.addBatch();
      }
      if (ps != null) {
        ps.executeBatch();
      }
    } finally {
      if (ps != null) {
        ps.close();
      }
    }
  }

  private static void bind(PreparedStatement ps, Object[] params) throws SQLException {
    for (int i = 0; i < params.length; i++) {
      Object p = params[i];
      if (p instanceof Null) {
        ps.setNull(i + 1, ((Null) p).sqlType());
      } else if (p instanceof Long) {
        ps.setLong(i + 1, (Long) p);
      } else if (p instanceof Integer) {
        ps.setInt(i + 1, (Integer) p);
      } else if (p instanceof byte[]) {
        ps.setBytes(i + 1, (byte[]) p);
      } else {
        ps.setString(i + 1, (String) p);
      }
    }
  }

  private void add(String sql, Object... params) {
    buffer.add(new Statement(sql, params));
    recorded++;
    if (buffer.size() % MAX_BUFFERED == 0) {
      // Backpressure: the writer pays for the commit instead of growing the buffer.
      flusher.execute(this::backgroundFlush);
    }
  }

  private static Object nanos(Instant instant) {
    return instant == null ? NULL_LONG : Instants.toNanos("event time", instant);
  }

  private void ensureWritable() {
    ensureOpen();
    if (!loaded) {
      throw new IllegalStateException("journal " + name + " must be loaded before it records");
    }
  }

  private void ensureOpen() {
    if (closed) {
      throw new IllegalStateException("journal " + name + " is closed");
    }
  }

  private static void requireId(String id) {
    QueueJournal.requireEventId(id);
    if (id.length() > MAX_ID_LENGTH) {
      throw new IllegalArgumentException("eventId must be at most " + MAX_ID_LENGTH
          + " characters, was " + id.length());
    }
  }

  @Override
  public String toString() {
    return "JdbcQueueJournal[" + name + " in " + table + "]";
  }
}
