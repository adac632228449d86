package io.relaykit.storage.jdbc;

import io.relaykit.queue.JournalException;
import io.relaykit.queue.JournalFullException;
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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import javax.sql.DataSource;

/**
 * A {@link QueueJournal} in a database table: each change becomes one or two single-row
 * statements (insert, update or delete of the event's pending, dead or seen row), never a rewrite
 * of the whole state. Changes are buffered and group-committed every {@code commitInterval} by the
 * journal's own daemon thread (in transactions of at most 10 000 statements), or sooner when
 * 10 000 statements are waiting; a {@link Priority#CRITICAL} append waits until that thread committed everything
 * buffered before it, and concurrent critical appends share that commit.
 *
 * <h2>Threads</h2>
 * Callers' threads never run the journal's SQL: {@link #load()}, every commit and the final commit
 * of {@link #close()} run on the journal's thread, and callers wait for it. An interrupted caller's
 * wait ends at once ({@link JournalException}, its interrupt flag left set): a critical append or
 * flush then has an unknown outcome ({@link JournalException.Outcome#UNKNOWN}), its change stays
 * buffered and is committed by the journal's next transaction (within one commit interval) unless
 * the process stops first; an interrupt never reaches the database's files. That matters on H2: a
 * {@code FileChannel} closes itself when the thread doing I/O on it is interrupted, and H2 then
 * closes the whole database, for every store, until the process restarts. For the other stores
 * on an H2 file database (which run on callers' threads), {@link JdbcStorageConfig} gives file URLs
 * H2's {@code retry:} file system, which reopens the file instead; give your own {@code
 * DataSource} the same ({@code jdbc:h2:retry:/path/db}). The journal's own commit thread ignores
 * {@link Thread#interrupt()} from other threads while the journal runs, and whenever it runs SQL
 * (the final commit of a close included), so code that interrupts every thread it finds cannot
 * close the database through it, whatever the URL; {@link #close()} stops it. {@link #recordAtomically} buffers its list under one lock, so one
 * transaction writes it. Several journals share one table, told apart by name.
 *
 * <h2>Failures</h2>
 * <ul>
 *   <li><b>A lost commit acknowledgement</b> (the database committed, then the connection broke
 *       before the answer) does not wedge later commits. Every transaction also moves the
 *       journal's commit mark (a row of kind 3 with a blank event id, which no event has) to the
 *       number of the last statement it writes; a commit that failed keeps its statements
 *       buffered, and the next transaction first reads the mark under a row lock (so it waits for
 *       a commit still in progress) and skips the statements the database already has. Nothing is
 *       written twice and nothing is lost.
 *   <li><b>At the bound</b> ({@code maxBufferedStatements}, {@code maxBufferedBytes} of payload;
 *       other changes than appends may use a quarter more, so that in-flight events can still be
 *       acked): while the database answers, the bound is backpressure: the caller waits for the
 *       journal's thread to commit (at most 10 s, or 4 commit intervals if longer), and its
 *       change is recorded then. <b>While the database is down</b> (the last transaction
 *       failed), or when that wait ends without room, the change is refused with a {@link
 *       JournalFullException}, nothing recorded (the queue answers {@code JOURNAL_FULL} for a
 *       normal event). A {@code CRITICAL} append fails fast: while the last commit failed, it is
 *       refused at once ({@link JournalException}, nothing recorded) instead of waiting for the
 *       pool's connection timeout; the flusher probes the database every interval and clears that
 *       state with its first successful transaction.
 *   <li>A critical append or flush whose commit fails throws a {@link JournalException} with an
 *       unknown outcome: its changes stay buffered and are committed (once) by a later
 *       transaction.
 * </ul>
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
  /** The row of the commit mark: its seq is the number of the last statement committed. */
  private static final int COMMIT_MARK = 3;
  private static final String MARK_ID = "";
  private static final int FLUSH_EARLY = 10_000;
  /** Default bound of buffered statements. */
  static final int DEFAULT_MAX_BUFFERED_STATEMENTS = 100_000;
  /** Default bound of buffered payload bytes. */
  static final long DEFAULT_MAX_BUFFERED_BYTES = 64L * 1024 * 1024;
  private static final int MAX_ID_LENGTH = 512;

  /** A typed SQL NULL: PostgreSQL refuses a VARCHAR null for a BIGINT column. */
  private record Null(int sqlType) {}

  private static final Null NULL_TEXT = new Null(Types.VARCHAR);
  private static final Null NULL_INT = new Null(Types.INTEGER);
  private static final Null NULL_LONG = new Null(Types.BIGINT);
  private static final Null NULL_BYTES = new Null(Types.VARBINARY);

  /** One buffered statement, its parameters, and the payload bytes it holds. */
  /**
   * One buffered statement, its parameters, and the payload bytes it holds; {@code continues}: the
   * next statement belongs to the same change (or atomic list), so no transaction ends here.
   */
  private record Statement(String sql, Object[] params, long bytes, boolean continues) {}

  private final DataSource dataSource;
  private final String table;
  private final String name;
  private final ScheduledExecutorService flusher;
  private final String insertSql;
  private final String updatePendingSql;
  private final String deleteSql;
  private final String rescheduleSql;
  private final String toDeadSql;
  private final String insertMarkSql;

  private final int maxBufferedStatements;
  private final long maxBufferedBytes;
  private final String markSql;
  private final String moveMarkSql;

  private final Object lock = new Object();
  private final ReentrantLock flushLock = new ReentrantLock();
  /**
   * The statements numbered durable + 1 .. recorded, in order: every one not known to be
   * committed. Guarded by lock.
   */
  private List<Statement> buffer = new ArrayList<>();
  private long bufferedBytes;
  /** The number of the last statement recorded; numbers continue the commit mark's. */
  private long recorded;
  private volatile long durable;
  /** Why the last transaction failed, while it did; null once one succeeded. */
  private volatile String down;
  private final Set<String> pending = new HashSet<>();
  private final Set<String> seen = new HashSet<>();
  private final Set<String> dead = new HashSet<>();
  private long nextSeq = 1;
  private boolean loaded;
  /** Guarded by lock: the read of load() on the journal's thread, and whether load() returned. */
  private Future<JournalState> loading;
  private boolean loadReturned;
  /** Guarded by lock: the commit round the journal's thread runs next, or null. */
  private CompletableFuture<Void> next;
  /** Guarded by lock: the journal's thread is shut down; no round runs any more. */
  private boolean closedForGood;
  private final long backpressureNanos;
  private volatile boolean closed;
  /** Set by {@link #crash()}: nothing is written any more. Guarded by lock. */
  private boolean crashed;
  /**
   * Set just before the commit thread's pool is shut down: from then on the pool may interrupt the
   * thread while it waits for work (so that it ends), never while it uses the database.
   */
  private volatile boolean stopping;

  /**
   * The journal's commit thread (daemon): {@link #interrupt()} from another thread is ignored
   * until the journal stops it. On an H2 file database without the {@code retry:} file system (an
   * application's own {@code DataSource}), a write interrupted on this thread would close the
   * database for every connection; and nobody but the journal has a reason to stop this thread.
   */
  private final class CommitThread extends Thread {
    CommitThread(Runnable body) {
      super(body, "relaykit-journal-" + name);
      setDaemon(true);
    }

    /** Guards {@link #usingDatabase} and the interrupts let through. */
    private final Object gate = new Object();
    /** Whether this thread runs the journal's SQL now. Guarded by gate. */
    private boolean usingDatabase;

    /**
     * Ignored unless called by this thread itself, or once the journal stops while the thread
     * waits for work (the pool's shutdown wakes it so); never let through while the thread uses
     * the database: a close's final commit, or a commit in progress when the journal crashes, runs
     * after the journal began to stop.
     */
    @Override
    public void interrupt() {
      if (Thread.currentThread() == this) {
        super.interrupt();
        return;
      }
      synchronized (gate) {
        if (stopping && !usingDatabase) {
          super.interrupt();
          return;
        }
      }
      if (!interruptLogged) {
        interruptLogged = true;
        LOG.log(System.Logger.Level.WARNING, "thread " + Thread.currentThread().getName()
            + " interrupted the journal's commit thread " + getName() + "; ignored (it stops"
            + " when the journal is closed), and further interrupts are ignored silently");
      }
    }
  }

  private volatile boolean interruptLogged;

  /**
   * Runs {@code work} (the journal's SQL) on the commit thread with outside interrupts shut out, and
   * the interrupt flag cleared first: one let through before (while the journal stopped and the
   * thread waited for work) must not reach the database's files.
   */
  private <T> T usingDatabase(java.util.function.Supplier<T> work) {
    CommitThread own = Thread.currentThread() instanceof CommitThread t ? t : null;
    if (own != null) {
      synchronized (own.gate) {
        own.usingDatabase = true;
        Thread.interrupted();
      }
    }
    try {
      return work.get();
    } finally {
      if (own != null) {
        synchronized (own.gate) {
          own.usingDatabase = false;
        }
      }
    }
  }

  JdbcQueueJournal(DataSource dataSource, Dialect dialect, Tables tables, String name,
      Duration commitInterval) {
    this(dataSource, dialect, tables, name, commitInterval, DEFAULT_MAX_BUFFERED_STATEMENTS,
        DEFAULT_MAX_BUFFERED_BYTES);
  }

  JdbcQueueJournal(DataSource dataSource, Dialect dialect, Tables tables, String name,
      Duration commitInterval, int maxBufferedStatements, long maxBufferedBytes) {
    if (name == null || name.isBlank() || name.length() > 255) {
      throw new IllegalArgumentException("journal name must be 1..255 characters, not blank, was "
          + (name == null ? "null" : "'" + name + "'"));
    }
    if (commitInterval == null || commitInterval.isZero() || commitInterval.isNegative()) {
      throw new IllegalArgumentException("commitInterval must be a positive duration, was "
          + commitInterval);
    }
    if (maxBufferedStatements < 1) {
      throw new IllegalArgumentException("maxBufferedStatements must be >= 1, was "
          + maxBufferedStatements);
    }
    if (maxBufferedBytes < 1) {
      throw new IllegalArgumentException("maxBufferedBytes must be >= 1, was " + maxBufferedBytes);
    }
    this.dataSource = dataSource;
    this.table = tables.journal;
    this.name = name;
    this.maxBufferedStatements = maxBufferedStatements;
    this.maxBufferedBytes = maxBufferedBytes;
    this.backpressureNanos = Math.max(TimeUnit.SECONDS.toNanos(10), 4 * commitInterval.toNanos());
    this.markSql = "SELECT seq FROM " + table + " WHERE journal = ? AND event_id = '"
        + MARK_ID + "' AND kind = " + COMMIT_MARK + " FOR UPDATE";
    this.moveMarkSql = "UPDATE " + table + " SET seq = ? WHERE journal = ? AND event_id = '"
        + MARK_ID + "' AND kind = " + COMMIT_MARK;
    this.insertMarkSql = dialect.insertIgnoringDuplicates(table,
        List.of("journal", "event_id", "kind", "seq"), List.of("journal", "event_id", "kind"));
    this.insertSql = "INSERT INTO " + table + " (journal, event_id, kind, seq, seen_s, seen_ns,"
        + " name, payload, priority, enqueued_s, enqueued_ns, attempts, next_attempt_s,"
        + " next_attempt_ns, expires_s, expires_ns, dead_reason)"
        + " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    this.updatePendingSql = "UPDATE " + table + " SET name = ?, payload = ?, priority = ?,"
        + " enqueued_s = ?, enqueued_ns = ?, attempts = ?, next_attempt_s = ?,"
        + " next_attempt_ns = ?, expires_s = ?, expires_ns = ?"
        + " WHERE journal = ? AND event_id = ? AND kind = " + PENDING;
    this.deleteSql = "DELETE FROM " + table + " WHERE journal = ? AND event_id = ? AND kind = ?";
    this.rescheduleSql = "UPDATE " + table + " SET attempts = ?, next_attempt_s = ?,"
        + " next_attempt_ns = ?"
        + " WHERE journal = ? AND event_id = ? AND kind = " + PENDING;
    this.toDeadSql = "INSERT INTO " + table + " (journal, event_id, kind, seq, name, payload,"
        + " priority, enqueued_s, enqueued_ns, attempts, next_attempt_s, next_attempt_ns,"
        + " expires_s, expires_ns, dead_reason)"
        + " SELECT journal, event_id, " + DEAD + ", ?, name, payload, priority, enqueued_s,"
        + " enqueued_ns, ?, next_attempt_s, next_attempt_ns, expires_s, expires_ns, ? FROM " + table
        + " WHERE journal = ? AND event_id = ? AND kind = " + PENDING;
    this.flusher = Executors.newSingleThreadScheduledExecutor(CommitThread::new);
    long nanos = commitInterval.toNanos();
    flusher.scheduleWithFixedDelay(this::backgroundFlush, nanos, nanos, TimeUnit.NANOSECONDS);
  }

  /**
   * Reads the journal's rows, on the journal's own thread (the caller waits). An interrupt of the
   * caller ends the wait at once with a {@link JournalException} and leaves its interrupt flag set;
   * the read goes on, and the next call of {@code load()} returns its result.
   */
  @Override
  public JournalState load() {
    Future<JournalState> reading;
    synchronized (lock) {
      ensureOpen();
      if (loadReturned) {
        throw new IllegalStateException("journal " + name + " is already loaded");
      }
      if (loading == null) {
        loading = flusher.submit(() -> usingDatabase(this::readState));
      }
      reading = loading;
    }
    try {
      JournalState state = reading.get();
      synchronized (lock) {
        loadReturned = true;
      }
      return state;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new JournalException("interrupted while journal " + name + " was loading; it goes on"
          + " on the journal's thread, call load() again for its result", e,
          JournalException.Outcome.NOT_RECORDED);
    } catch (ExecutionException e) {
      synchronized (lock) {
        loading = null;
      }
      Throwable c = e.getCause();
      if (c instanceof RuntimeException r) {
        throw r;
      }
      throw new JournalException("could not load journal " + name + " from " + table + ": " + c,
          c);
    }
  }

  /** On the journal's thread: reads every row of this journal. */
  private JournalState readState() {
    synchronized (lock) {
      try (Connection c = dataSource.getConnection();
          PreparedStatement mark = c.prepareStatement(insertMarkSql);
          PreparedStatement ps = c.prepareStatement("SELECT * FROM " + table
              + " WHERE journal = ? ORDER BY seq")) {
        mark.setString(1, name);
        mark.setString(2, MARK_ID);
        mark.setInt(3, COMMIT_MARK);
        mark.setLong(4, 0L);
        Dialect.executeIgnoringDuplicate(mark);
        if (!c.getAutoCommit()) {
          c.commit();
        }
        ps.setString(1, name);
        List<QueuedEvent> pendingEvents = new ArrayList<>();
        List<QueuedEvent> deadEvents = new ArrayList<>();
        Map<String, String> reasons = new HashMap<>();
        Map<String, Instant> seenAt = new LinkedHashMap<>();
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            String id = rs.getString("event_id");
            long seq = rs.getLong("seq");
            if (rs.getInt("kind") == COMMIT_MARK) {
              recorded = seq;
              durable = seq;
              continue;
            }
            nextSeq = Math.max(nextSeq, seq + 1);
            switch (rs.getInt("kind")) {
              case SEEN -> {
                seenAt.put(id, instant(rs, "seen"));
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
        Priority.values()[rs.getInt("priority")], instant(rs, "enqueued"),
        rs.getInt("attempts"), instant(rs, "next_attempt"), instant(rs, "expires"));
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
      ensureRoom(true, event.priority() == Priority.CRITICAL, 2, a.payload().length);
      int start = buffer.size();
      recordAppend(a);
      oneTransaction(start);
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
        }
        checked.add(c);
      }
    }
    long payloadBytes = 0;
    boolean appends = false;
    for (Object c : checked) {
      if (c instanceof Appended a) {
        payloadBytes += a.payload().length;
        appends = true;
      }
    }
    synchronized (lock) {
      ensureWritable();
      ensureRoom(appends, critical, 3 * checked.size(), payloadBytes);
      int start = buffer.size();
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
      oneTransaction(start);
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
          seconds(e.enqueuedAt()), nanos(e.enqueuedAt()), e.attempts(),
          seconds(e.nextAttemptAt()), nanos(e.nextAttemptAt()), seconds(e.expiresAt()),
          nanos(e.expiresAt()), name, id);
    } else {
      pending.add(id);
      add(insertSql, name, id, PENDING, nextSeq++, NULL_LONG, NULL_INT, e.name(), payload,
          e.priority().ordinal(), seconds(e.enqueuedAt()), nanos(e.enqueuedAt()), e.attempts(),
          seconds(e.nextAttemptAt()), nanos(e.nextAttemptAt()), seconds(e.expiresAt()),
          nanos(e.expiresAt()), NULL_TEXT);
    }
    if (seen.add(id)) {
      add(insertSql, name, id, SEEN, nextSeq++, seconds(e.enqueuedAt()), nanos(e.enqueuedAt()),
          NULL_TEXT, NULL_BYTES, NULL_INT, NULL_LONG, NULL_INT, NULL_INT, NULL_LONG, NULL_INT,
          NULL_LONG, NULL_INT, NULL_TEXT);
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
      ensureRoom(false, false, 2, 0);
      int start = buffer.size();
      recordRemove(eventId, removal);
      oneTransaction(start);
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
    synchronized (lock) {
      ensureWritable();
      ensureRoom(false, false, 2, 0);
      int start = buffer.size();
      recordReschedule(eventId, attempts, nextAttemptAt);
      oneTransaction(start);
    }
  }

  private void recordReschedule(String eventId, int attempts, Instant nextAttemptAt) {
    if (pending.contains(eventId)) {
      add(rescheduleSql, attempts, seconds(nextAttemptAt), nanos(nextAttemptAt), name, eventId);
    }
  }

  @Override
  public void deadLetter(String eventId, int attempts, String reason) {
    requireId(eventId);
    QueueJournal.requireAttempts(attempts);
    QueueJournal.requireDeadReason(reason);
    synchronized (lock) {
      ensureWritable();
      ensureRoom(false, false, 2, 0);
      int start = buffer.size();
      recordDeadLetter(eventId, attempts, reason);
      oneTransaction(start);
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
      ensureRoom(false, false, 2, 0);
      int start = buffer.size();
      recordForget(eventId);
      oneTransaction(start);
    }
  }

  private void recordForget(String eventId) {
    if (!pending.contains(eventId) && seen.remove(eventId)) {
      add(deleteSql, name, eventId, SEEN);
    }
  }

  /**
   * Waits until the change of {@code ticket} is committed by the journal's own thread: the
   * caller's thread never touches the database for it, so its interrupt cannot close an H2 file
   * database. An interrupt ends the wait at once: this throws a {@link JournalException} with
   * {@link JournalException.Outcome#UNKNOWN} and leaves the interrupt flag set; the change stays
   * buffered and the journal's thread commits it with its next transaction (within one commit
   * interval), unless the process stops first.
   */
  @Override
  public void awaitDurable(long ticket) {
    while (ticket > durable) {
      CompletableFuture<Void> round = nextRound();
      try {
        if (Thread.interrupted()) {
          // Ends at once, even when the round happens to be done already (get() would not look).
          throw new InterruptedException();
        }
        round.get();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new JournalException("interrupted while waiting for journal " + name + " to"
            + " commit: the change stays buffered and the journal's own thread commits it with"
            + " its next transaction, unless the process stops first", e,
            JournalException.Outcome.UNKNOWN);
      } catch (ExecutionException e) {
        Throwable c = e.getCause();
        if (c instanceof JournalException je) {
          throw new JournalException(je.getMessage(), je, je.outcome());
        }
        throw new JournalException("journal " + name + " could not commit: " + c, c,
            JournalException.Outcome.UNKNOWN);
      }
    }
  }

  /**
   * The commit round the journal's thread runs next: every change buffered before this call is
   * in it. Callers waiting at once share it (one transaction).
   */
  private CompletableFuture<Void> nextRound() {
    synchronized (lock) {
      if (crashed || closedForGood) {
        return CompletableFuture.failedFuture(new JournalException("journal " + name
            + " is closed: the change's commit is unknown", null,
            JournalException.Outcome.UNKNOWN));
      }
      if (next == null) {
        next = new CompletableFuture<>();
        try {
          flusher.execute(this::runRound);
        } catch (java.util.concurrent.RejectedExecutionException e) {
          CompletableFuture<Void> refused = next;
          next = null;
          refused.completeExceptionally(new JournalException("journal " + name
              + " is closed: the change's commit is unknown", e,
              JournalException.Outcome.UNKNOWN));
          return refused;
        }
      }
      return next;
    }
  }

  /** On the journal's thread: one transaction, completing the round waiters share. */
  private void runRound() {
    CompletableFuture<Void> round;
    synchronized (lock) {
      round = next;
      next = null;
    }
    try {
      usingDatabase(this::lockedWriteBuffered);
      if (round != null) {
        round.complete(null);
      }
    } catch (RuntimeException e) {
      if (round != null) {
        round.completeExceptionally(e);
      } else {
        LOG.log(System.Logger.Level.WARNING, "journal " + name + " group commit failed;"
            + " retrying: " + e.getMessage());
      }
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
    try {
      // The final commit runs on the journal's thread like every other.
      awaitDurable(upTo);
    } finally {
      synchronized (lock) {
        closedForGood = true;
      }
      // shutdown, not shutdownNow: interrupting a thread inside an H2 file write closes the file
      // channel (ClosedByInterruptException) and with it the whole database.
      stopping = true;
      flusher.shutdown();
    }
  }

  /**
   * Stops without committing what is buffered, and never writes again: what a killed process
   * leaves behind. For crash tests.
   */
  void crash() {
    synchronized (lock) {
      closed = true;
      crashed = true;
      buffer = new ArrayList<>();
      bufferedBytes = 0;
    }
    stopping = true;
    flusher.shutdown();
    flushLock.lock(); // waits for a commit in progress, so nothing is written after this returns
    flushLock.unlock();
  }

  private void backgroundFlush() {
    try {
      usingDatabase(this::lockedWriteBuffered);
    } catch (RuntimeException e) {
      // Kept in the buffer and retried at the next interval, flush or critical append.
      LOG.log(System.Logger.Level.WARNING, "journal " + name + " group commit failed; retrying: "
          + e.getMessage());
    } finally {
      synchronized (lock) {
        // Appenders waiting for room see the new buffer size (or that the database is down).
        lock.notifyAll();
      }
    }
  }

  /** {@link #writeBuffered} under {@link #flushLock}; returns null. */
  private Void lockedWriteBuffered() {
    flushLock.lock();
    try {
      writeBuffered();
    } finally {
      flushLock.unlock();
    }
    return null;
  }

  /**
   * Writes everything buffered in one transaction (while the last one failed, an empty one too:
   * a probe, which also settles the outcome of the failed commit). Call with {@link #flushLock}
   * held.
   */
  private void writeBuffered() {
    long goal;
    synchronized (lock) {
      goal = recorded;
    }
    // Transactions of at most FLUSH_EARLY statements: appenders waiting at the bound get room
    // after each, not after the whole buffer.
    do {
      writeTransaction();
    } while (durable < goal && !crashedNow());
  }

  private boolean crashedNow() {
    synchronized (lock) {
      return crashed;
    }
  }

  /** One transaction of the oldest buffered statements (at most {@link #FLUSH_EARLY}). */
  private void writeTransaction() {
    List<Statement> batch;
    long from;
    long upTo;
    synchronized (lock) {
      if (crashed || (buffer.isEmpty() && down == null)) {
        return;
      }
      int n = Math.min(buffer.size(), FLUSH_EARLY);
      while (n < buffer.size() && buffer.get(n - 1).continues()) {
        n++; // never split a change or an atomic list across transactions
      }
      batch = new ArrayList<>(buffer.subList(0, n));
      from = durable;
      upTo = durable + n;
    }
    long committed;
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      try {
        long mark = readMark(c);
        if (mark < from || mark > upTo) {
          throw new JournalException("journal " + name + " in " + table + " has commit mark "
              + mark + " outside " + from + ".." + upTo + ": another process writes this journal");
        }
        // The statements up to the mark are in the database already: a commit whose answer was
        // lost. Write the rest, and move the mark in the same transaction.
        List<Statement> rest = batch.subList((int) (mark - from), batch.size());
        if (!rest.isEmpty()) {
          write(c, rest);
          moveMark(c, upTo);
        }
        c.commit();
        committed = rest.isEmpty() ? mark : upTo;
      } catch (SQLException | RuntimeException e) {
        rollbackQuietly(c);
        throw e;
      } finally {
        resetAutoCommitQuietly(c);
      }
    } catch (SQLException | RuntimeException e) {
      synchronized (lock) {
        down = e.toString();
        lock.notifyAll();
      }
      if (e instanceof JournalException je) {
        throw je;
      }
      throw new JournalException("journal " + name + " could not commit " + batch.size()
          + " statements to " + table + " (they stay buffered and are committed once by a later"
          + " transaction): " + e.getMessage(), e, JournalException.Outcome.UNKNOWN);
    }
    synchronized (lock) {
      if (crashed) {
        return;
      }
      long done = committed - durable;
      for (int i = 0; i < done; i++) {
        bufferedBytes -= buffer.get(i).bytes();
      }
      buffer = new ArrayList<>(buffer.subList((int) done, buffer.size()));
      durable = committed;
      down = null;
      lock.notifyAll();
    }
  }

  private long readMark(Connection c) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(markSql)) {
      ps.setString(1, name);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          throw new JournalException("journal " + name + " in " + table + " has no commit mark "
              + "row; was it deleted while the journal was open?");
        }
        return rs.getLong(1);
      }
    }
  }

  private void moveMark(Connection c, long to) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(moveMarkSql)) {
      ps.setLong(1, to);
      ps.setString(2, name);
      ps.executeUpdate();
    }
  }

  private static void rollbackQuietly(Connection c) {
    try {
      c.rollback();
    } catch (SQLException ignored) {
      // The connection is broken; the transaction dies with it.
    }
  }

  private static void resetAutoCommitQuietly(Connection c) {
    try {
      c.setAutoCommit(true);
    } catch (SQLException ignored) {
      // A broken connection: the pool discards it.
    }
  }

  /**
   * Makes room for a change, or refuses it. Call with {@link #lock} held, before anything is
   * buffered. While the database answers, a full buffer is backpressure: the caller waits
   * (releasing the lock) for the journal's thread to commit, at most {@code max(10 s, 4 commit
   * intervals)}; while the last transaction failed (the database is down), or when that wait ends
   * without room, the change is refused with a {@link JournalFullException}. A critical append
   * is refused at once while the database is down.
   *
   * @throws JournalException with {@code NOT_RECORDED} when the caller is interrupted while it
   *     waits (its interrupt flag stays set), or the journal closes meanwhile
   */
  private void ensureRoom(boolean appends, boolean critical, int statements, long payloadBytes) {
    long deadline = System.nanoTime() + backpressureNanos;
    while (true) {
      if (critical && down != null) {
        throw new JournalException("journal " + name + " refuses a critical change at once: the "
            + "database is unreachable (the last transaction failed: " + down + "); nothing was "
            + "recorded", null, JournalException.Outcome.NOT_RECORDED);
      }
      long statementBound = appends ? maxBufferedStatements
          : maxBufferedStatements + maxBufferedStatements / 4L;
      long byteBound = appends ? maxBufferedBytes : maxBufferedBytes + maxBufferedBytes / 4;
      boolean full = buffer.size() + (long) statements > statementBound
          || bufferedBytes + payloadBytes > byteBound;
      if (!full) {
        return;
      }
      long left = deadline - System.nanoTime();
      if (down != null || left <= 0 || buffer.isEmpty()) {
        throw new JournalFullException("journal " + name + " holds " + buffer.size()
            + " uncommitted statements (" + bufferedBytes + " payload bytes), its bound is "
            + maxBufferedStatements + " (" + maxBufferedBytes + " bytes)"
            + (down == null ? "; the database did not commit them within "
                + TimeUnit.NANOSECONDS.toMillis(backpressureNanos) + " ms"
                : "; the database is unreachable: " + down)
            + "; nothing was recorded");
      }
      try {
        flusher.execute(this::backgroundFlush);
      } catch (java.util.concurrent.RejectedExecutionException e) {
        throw new JournalException("journal " + name + " is closed; nothing was recorded", e,
            JournalException.Outcome.NOT_RECORDED);
      }
      try {
        TimeUnit.NANOSECONDS.timedWait(lock, Math.min(left, TimeUnit.MILLISECONDS.toNanos(100)));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new JournalException("interrupted while journal " + name + " waited for room in"
            + " its buffer; nothing was recorded", e, JournalException.Outcome.NOT_RECORDED);
      }
      ensureWritable();
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

  /**
   * Marks the statements buffered since {@code start} (one change, or an atomic list) as one unit:
   * a transaction holds all of them or none. Call with {@link #lock} held.
   */
  private void oneTransaction(int start) {
    for (int i = start; i < buffer.size() - 1; i++) {
      Statement st = buffer.get(i);
      if (!st.continues()) {
        buffer.set(i, new Statement(st.sql(), st.params(), st.bytes(), true));
      }
    }
  }

  private void add(String sql, Object... params) {
    long bytes = 0;
    for (Object p : params) {
      if (p instanceof byte[] b) {
        bytes += b.length;
      }
    }
    buffer.add(new Statement(sql, params, bytes, false));
    bufferedBytes += bytes;
    recorded++;
    if (buffer.size() % FLUSH_EARLY == 0) {
      // Backpressure: the writer pays for the commit instead of growing the buffer.
      flusher.execute(this::backgroundFlush);
    }
  }

  /**
   * Instants are epoch seconds (BIGINT) and nanoseconds (INT) since schema version 4, so any
   * {@link Instant} round-trips, {@link Instant#MAX} and {@link Instant#MIN} included.
   */
  private static Object seconds(Instant instant) {
    return instant == null ? NULL_LONG : (Object) instant.getEpochSecond();
  }

  private static Object nanos(Instant instant) {
    return instant == null ? NULL_INT : (Object) instant.getNano();
  }

  private static Instant instant(ResultSet rs, String column) throws SQLException {
    long seconds = rs.getLong(column + "_s");
    if (rs.wasNull()) {
      return null;
    }
    return Instant.ofEpochSecond(seconds, rs.getInt(column + "_ns"));
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
