package io.relaykit.queue;

import io.relaykit.internal.Checks;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import javax.crypto.SecretKey;

/**
 * A durable {@link QueueJournal} in a directory of append-only segment files: the embedded default
 * for clients without a database. Each change is one record framed with its length and a CRC32C;
 * an append costs one encode and a buffer copy, O(1) in the journal's size.
 *
 * <h2>Durability</h2>
 * A {@link Priority#CRITICAL} append is fsynced before it returns; concurrent critical appenders
 * share fsyncs (one sync covers everything written before it; when more were waiting at once in
 * the previous round than now, the sync first gives them up to half a recent fsync, at most 1 ms,
 * so that N producers share one fsync instead of alternating in two halves). Other changes are
 * group-committed: at the latest every {@code commitInterval}, sooner once {@code commitRecords}
 * changes are waiting, and at {@link #flush()} and {@link #close()}. A process crash loses at
 * most the changes of one commit interval that no critical append or flush covered, also while a
 * compaction runs.
 *
 * <h2>Threads</h2>
 * The journal owns its I/O. Callers' threads only encode changes into a buffer; the journal's I/O
 * thread does every write, fsync, segment roll and cut of the active segment, and hands callers
 * a completion to wait for; compactions run on the journal's compaction thread, so group commits
 * keep their interval while one runs. A {@code FileChannel} closes itself when a thread doing I/O
 * on it is interrupted, so no caller's interrupt can reach the journal's files, and the journal's
 * own threads ignore {@link Thread#interrupt()} from other threads (code that interrupts every
 * thread it finds cannot close the files or stop the commits; {@link #close()} stops them). Should
 * a channel close all the same while the I/O thread writes or fsyncs it, the journal fails closed
 * as after a failed fsync (see below); an interrupted compaction only fails and is retried. An
 * interrupted
 * caller's wait ends at once with a {@link JournalException}, its interrupt flag left set: from
 * {@link #awaitDurable} (a critical append) or {@link #flush()} with {@link
 * JournalException.Outcome#UNKNOWN}: the change is recorded, the I/O thread makes it durable with
 * its next sync, within one commit interval, and only a process crash before that sync loses it;
 * from a change that waited for a segment roll or a full buffer with {@link
 * JournalException.Outcome#NOT_RECORDED}. The journal goes on working for every other thread.
 *
 * <h2>When the disk fails</h2>
 * What a caller sees, and what remains:
 * <ul>
 *   <li>A change whose call throws before it returns a ticket ({@link #appendDeferringSync},
 *       {@link #remove}, {@link #reschedule}, {@link #deadLetter}, {@link #forget}) was refused
 *       ({@link JournalException.Outcome#NOT_RECORDED}):
 *       it is not in the journal, not in the state {@link #compact} writes, and never comes back
 *       after a restart. That includes a full disk at a segment roll: the full segment is sealed
 *       and fsynced first, a new segment file that cannot be written is deleted again, and the
 *       next change tries again, so rolls and writes work again once space is freed.
 *   <li>{@link #append} or {@link #awaitDurable} of a critical event, and {@link #flush}, that
 *       throw leave the outcome <em>unknown</em> ({@link JournalException.Outcome#UNKNOWN}): the
 *       change was recorded but could not be made durable. It may be there after a restart (with its id, once) or not.
 *   <li>A buffer that cannot be written (no space for it) is kept and written by the next sync.
 *   <li>A failed fsync fails the journal closed: on Linux a write-back error is reported once and
 *       the dirty pages may be dropped, so a later fsync that succeeds would prove nothing. From
 *       then on every change and flush throws a {@link JournalException} saying so; {@link
 *       #close()} releases the files and throws it too. Open a new {@code FileJournal} on the
 *       directory to recover what is on disk. (The journal does not reopen itself: what it lost
 *       must be decided by the caller that recovers, from what {@link #load()} returns.)
 * </ul>
 *
 * <h2>Recovery</h2>
 * Opening replays the newest base and every segment after it. The newest segment may end in
 * preallocated zeros: an all-zero record header is the end of its records. A record torn by a
 * crash at the end of the newest segment (cut short, or with zeros where part of it never reached
 * the disk: only zeros after it, or a whole zero-filled 512-byte sector inside it) is cut off with
 * a warning, with everything after it, keeping every complete record before it: nothing after it
 * was synced, since a sync covers every byte written before it. A torn tail is only what follows
 * the last complete record: a damaged record followed anywhere by a complete one (a frame whose
 * lengths and checksum match) is corruption, whatever zeros it holds, because the later record
 * may have been fsynced; it is reported, and nothing is cut. A complete record (up to 4 KiB)
 * whose checksum matches with one bit flipped is not torn but corrupt, even the newest one: an
 * error naming the file and offset, never cut silently. Anything else that fails its
 * checks is a {@link JournalException} naming the file and, for a record, the byte offset; the
 * journal then deletes nothing.
 *
 * <h2>Integrity: what is detected</h2>
 * Without a key, checksums detect accidents: every segment header and record carries a CRC32C; a
 * header names its own file number and its predecessor, so a renamed, missing or reordered segment
 * is detected; every sealed segment and base ends with a trailer, so one cut short, even at a
 * record boundary, is detected. A checksum is not a signature: someone who can write the directory
 * can forge all of it.
 *
 * <p>With a key ({@link Builder#encryptionKey}), every record body (ids, names, payloads, reasons)
 * is sealed with AES-GCM and a random 96-bit nonce, and authenticated together with the journal's
 * random id, its file and its byte offset; headers and trailers are authenticated too. Then any
 * change to a header or record, a record moved, replayed, dropped or reordered, a segment from
 * another journal, and a sealed segment cut or deleted (in the middle, or the oldest) are detected,
 * as is a wrong key. Not detected, with or without a key: cutting the newest segments back to a
 * record boundary, or deleting the newest segment, which look like a crash that lost what was not
 * yet synced; and replacing the whole directory with an older copy of itself (a rollback). Keep a
 * count outside the directory if those matter. Rotate the key well before 2^32 records.
 *
 * <h2>Compaction</h2>
 * When most of the sealed files are garbage (the files are larger than {@code compactionMinBytes}
 * and a compaction would free more than {@code compactionGarbageRatio} of them), the compaction
 * thread writes the live state as a base file that stands for everything before the current point of the
 * active segment, and deletes the sealed segments and the older base. The active segment is not
 * cut: its garbage goes with the next compaction after it is sealed, so the directory holds at
 * most about the live state over {@code 1 - compactionGarbageRatio}, plus one segment. Writers
 * wait only while the live state's references are copied (O(n), no I/O); the base is written,
 * fsynced and installed, and the old files deleted, while they continue. A compaction that fails
 * is retried after 1 s, then 2 s, 4 s, ..., at most 5 minutes apart, and logged. Because
 * compaction runs only when garbage outweighs live data, its cost is amortized O(1) per change.
 * The live state is kept in memory for this (about the size of the pending payloads), and the
 * live size counted exactly (every record the base will hold, dead reasons and the cipher's 28
 * bytes per record included).
 *
 * <h2>Disk space</h2>
 * The active segment's file is extended with zeros ahead of its records (64 KiB at first,
 * growing to 1 MiB, never past {@code segmentBytes}), so that an fsync writes the new records
 * without also committing a change of the file's size to the file system's journal, and so that
 * a full disk stops the zeros, never half a record. The zeros are cut off when a segment is
 * sealed and at {@link #close()}, and are not counted by {@link #sizeOnDisk()}.
 *
 * <h2>Format</h2>
 * Files carry a format version. This version writes format 2 and reads format 1 (journals written
 * by relaykit before format 2); on opening a format-1 directory it rewrites the state in format 2
 * (a compaction) and deletes the format-1 files. Format 1 has no header checksum, trailers or
 * bound records, so until that rewrite its files are checked as before.
 *
 * <h2>One journal per directory</h2>
 * An open journal holds an operating-system lock on the file {@code .lock} in its directory until
 * it is closed (or its process dies, which releases it). A second {@code FileJournal} on the same
 * directory, in another process or in this one, fails to open with a {@link JournalException}
 * naming the directory, and touches nothing.
 *
 * <h2>Opening on a full disk</h2>
 * Opening writes nothing new when the newest segment is sealed (a roll failed on a full disk
 * before the crash): the journal opens, loads, and its queue drains; the next change creates the
 * next segment, and until there is room for it each change is refused ({@code NOT_RECORDED}),
 * as while running.
 */
public final class FileJournal implements QueueJournal {

  /*
   * Implementation notes. The layout is in SegmentFormat; the classes along its seams:
   * SegmentWriter (the active segment: framing, buffer, preallocation, rolls), GroupCommit
   * (durable positions, shared fsyncs, fail-closed), Recovery (replay, chain and torn-tail rules),
   * Compactor (base files), RecordCipher (AES-GCM with the record's position as associated data).
   * This class owns the locks, the replayed state and its exact live size, the I/O thread (the
   * only thread that writes or forces the active segment) and the compaction thread.
   *
   * Locks: writeLock guards the writer, the state and the counters below. The writer calls into
   * GroupCommit (advance, retire, fail, wake) under writeLock, so the order is writeLock, then
   * GroupCommit's lock; the I/O thread releases GroupCommit's lock before Source.drain takes
   * writeLock. A producer that needs a roll waits on ioDone (writeLock released meanwhile).
   * compactionLock serializes compactions and is held without writeLock for all of a
   * compaction's I/O; the compaction thread waits for the I/O thread (a sync), never the reverse.
   */

  private static final System.Logger LOG = System.getLogger(FileJournal.class.getName());
  private static final long BACKOFF_MIN_NANOS = TimeUnit.SECONDS.toNanos(1);
  private static final long BACKOFF_MAX_NANOS = TimeUnit.MINUTES.toNanos(5);
  private static final SecureRandom RANDOM = new SecureRandom();

  private final Path dir;
  private final Duration commitInterval;
  private final int commitRecords;
  private final long compactionMinBytes;
  private final double compactionGarbageRatio;
  private final SecretKey key;
  private final FileIo io;
  private final TimeSource clock;
  /** The directory's lock file and its lock, held from open to close. */
  private final FileChannel lockChannel;

  // Guarded by writeLock.
  private final ReentrantLock writeLock = new ReentrantLock();
  private final JournalCodec codec = new JournalCodec();
  private final ReplayState state;
  private final SegmentWriter writer;
  private final int overhead;
  private long liveBytes;
  private int unsyncedRecords;
  private boolean loaded;
  /** Set by close() under writeLock before its final sync: no change is accepted any more. */
  private boolean closing;
  private volatile boolean closed;

  private final GroupCommit commit;

  private final Object compactionLock = new Object();
  private final Compactor compactor;
  /** Guarded by compactionLock. */
  private long compactions;
  /** Used by the I/O thread only. */
  private boolean commitFailing;

  /** The I/O thread: the only thread that writes or forces the active segment. */
  private final Thread flusher;
  private final CompactionThread compaction;
  private final Object flusherMonitor = new Object();
  private long flusherRounds;
  /** Guarded by writeLock: the largest record a producer waits to fit (-1: none). */
  private int ioWanted = -1;
  /** Guarded by writeLock: rounds of requested I/O the I/O thread completed. */
  private long ioRounds;
  /** Guarded by writeLock: why the last round of requested I/O failed, or null. */
  private JournalException ioError;
  private final java.util.concurrent.locks.Condition ioDone = writeLock.newCondition();
  private volatile boolean orderlyStop;

  private FileJournal(Builder b) {
    this.dir = b.dir;
    this.commitInterval = b.commitInterval;
    this.commitRecords = b.commitRecords;
    this.compactionMinBytes = b.compactionMinBytes;
    this.compactionGarbageRatio = b.compactionGarbageRatio;
    this.key = b.key;
    this.io = b.io;
    this.clock = b.clock;
    RecordCipher cipher = key == null ? null : new RecordCipher(key, RANDOM);
    this.overhead = SegmentFormat.FRAME_HEADER + (key == null ? 0 : RecordCipher.OVERHEAD);
    Recovery recovery = new Recovery(dir, io, cipher == null ? null : cipher.copy());
    this.commit = new GroupCommit(dir, this::drainForSync);
    this.lockChannel = lockDirectory(dir);
    try {
      recovery.run();
      byte[] journalId = recovery.journalId != null ? recovery.journalId : newJournalId();
      this.state = recovery.state;
      this.writer = new SegmentWriter(dir, io, b.segmentBytes, journalId, cipher, commit);
      writer.resume(recovery.filesBytes, recovery.lastSeq, recovery.activePath,
          recovery.activeChannel, recovery.activeEnd,
          recovery.activeChannel == null ? 0 : recovery.activeChannel.size());
      this.compactor = new Compactor(dir, io, cipher == null ? null : cipher.copy(), journalId);
      this.liveBytes = liveSize(state);
      startSegmentIfRoom();
    } catch (IOException e) {
      closeQuietly(recovery.activeChannel);
      closeQuietly(lockChannel);
      throw new JournalException("cannot open journal in " + dir + ": " + e, e);
    } catch (RuntimeException | Error e) {
      // An Error too (out of memory reading a record): the lock must not outlive a failed open,
      // or the directory could never be opened again in this process.
      closeQuietly(recovery.activeChannel);
      closeQuietly(lockChannel);
      throw e;
    }
    commit.recovered(writer.appended());
    this.compaction = new CompactionThread();
    this.flusher = new OwnThread(this::ioLoop, "relaykit-file-journal-io");
    try {
      flusher.start();
      compaction.thread.start();
    } catch (RuntimeException | Error e) {
      // No thread for the journal's I/O (out of native threads): the open fails, releasing the
      // directory's lock.
      stop(false);
      throw e;
    }
    if (recovery.legacy) {
      try {
        compaction.runAndWait();
      } catch (RuntimeException e) {
        stop(false);
        throw new JournalException("cannot rewrite the format-1 journal in " + dir
            + " in the current format: " + e.getMessage(), e);
      }
    }
  }

  /**
   * A builder for a journal in {@code dir} (created if missing).
   *
   * @param dir the journal's directory; checked (not null) by {@link Builder#build()}
   * @return a builder with the defaults its setters name
   */
  public static Builder builder(Path dir) {
    return new Builder(dir);
  }

  // ---------------------------------------------------------------------------------------------
  // QueueJournal

  @Override
  public void append(QueuedEvent event) {
    long ticket = appendDeferringSync(event);
    awaitDurable(ticket);
  }

  @Override
  public long appendDeferringSync(QueuedEvent event) {
    QueueJournal.requireEvent(event);
    writeLock.lock();
    try {
      record(codec.append(event));
      applyAppend(event);
      return event.priority() == Priority.CRITICAL ? writer.appended() : -1L;
    } finally {
      writeLock.unlock();
    }
  }

  /**
   * Waits until the change of {@code ticket} is fsynced by the journal's I/O thread.
   *
   * <p>An interrupt of the waiting thread ends the wait at once: this throws a {@link
   * JournalException} with {@link JournalException.Outcome#UNKNOWN} and leaves the thread's
   * interrupt flag set. The change stays recorded: the journal's own thread makes it durable with
   * its next sync (within one commit interval), and the journal keeps working for every other
   * thread. Only a process crash before that sync loses it. The caller's thread never touches the
   * journal's files, so its interrupt cannot close them.
   */
  @Override
  public void awaitDurable(long ticket) {
    if (ticket >= 0) {
      commit.awaitDurable(ticket, true);
    }
  }

  @Override
  public void remove(String eventId, Removal removal) {
    QueueJournal.requireEventId(eventId);
    Checks.requireNonNull("removal", removal);
    writeLock.lock();
    try {
      record(codec.remove(eventId, removal));
      applyRemove(eventId, removal);
    } finally {
      writeLock.unlock();
    }
  }

  @Override
  public void reschedule(String eventId, int attempts, Instant nextAttemptAt) {
    QueueJournal.requireEventId(eventId);
    QueueJournal.requireAttempts(attempts);
    Checks.requireNonNull("nextAttemptAt", nextAttemptAt);
    writeLock.lock();
    try {
      record(codec.reschedule(eventId, attempts, nextAttemptAt));
      state.reschedule(eventId, attempts, nextAttemptAt);
    } finally {
      writeLock.unlock();
    }
  }

  @Override
  public void deadLetter(String eventId, int attempts, String reason) {
    QueueJournal.requireEventId(eventId);
    QueueJournal.requireAttempts(attempts);
    QueueJournal.requireDeadReason(reason);
    writeLock.lock();
    try {
      record(codec.dead(eventId, attempts, reason));
      applyDeadLetter(eventId, attempts, reason);
    } finally {
      writeLock.unlock();
    }
  }

  @Override
  public void forget(String eventId) {
    QueueJournal.requireEventId(eventId);
    writeLock.lock();
    try {
      record(codec.forget(eventId));
      applyForget(eventId);
    } finally {
      writeLock.unlock();
    }
  }

  /**
   * Records {@code changes} as one framed record: after a crash, all of them or none. A ticket for
   * {@link #awaitDurable} when one is a CRITICAL append (-1 otherwise). Failures as for a single
   * change: a throw is {@code NOT_RECORDED}; {@code awaitDurable} that throws is {@code UNKNOWN}.
   */
  @Override
  public long recordAtomically(List<Change> changes) {
    QueueJournal.requireChanges(changes);
    writeLock.lock();
    try {
      JournalCodec group = new JournalCodec().group(changes.size());
      boolean critical = false;
      for (Change c : changes) {
        if (c instanceof Change.Append a) {
          group.putBody(codec.append(a.event()));
          critical |= a.event().priority() == Priority.CRITICAL;
        } else if (c instanceof Change.Remove r) {
          group.putBody(codec.remove(r.eventId(), r.removal()));
        } else if (c instanceof Change.Reschedule r) {
          group.putBody(codec.reschedule(r.eventId(), r.attempts(), r.nextAttemptAt()));
        } else if (c instanceof Change.DeadLetter d) {
          group.putBody(codec.dead(d.eventId(), d.attempts(), d.reason()));
        } else if (c instanceof Change.Forget f) {
          group.putBody(codec.forget(f.eventId()));
        }
      }
      record(group);
      for (Change c : changes) {
        if (c instanceof Change.Append a) {
          applyAppend(a.event());
        } else if (c instanceof Change.Remove r) {
          applyRemove(r.eventId(), r.removal());
        } else if (c instanceof Change.Reschedule r) {
          state.reschedule(r.eventId(), r.attempts(), r.nextAttemptAt());
        } else if (c instanceof Change.DeadLetter d) {
          applyDeadLetter(d.eventId(), d.attempts(), d.reason());
        } else if (c instanceof Change.Forget f) {
          applyForget(f.eventId());
        }
      }
      return critical ? writer.appended() : -1L;
    } finally {
      writeLock.unlock();
    }
  }

  /** The state replayed when the journal was opened. */
  @Override
  public JournalState load() {
    writeLock.lock();
    try {
      ensureOpen();
      if (loaded) {
        throw new IllegalStateException("load() is called once, before any change is recorded");
      }
      loaded = true;
      return state.toState();
    } finally {
      writeLock.unlock();
    }
  }

  /**
   * Makes every change recorded so far durable.
   *
   * @throws JournalException when it cannot (the outcome of the changes since the last sync is
   *     then unknown), or the journal failed closed earlier
   */
  @Override
  public void flush() {
    long target;
    writeLock.lock();
    try {
      ensureWritable();
      target = writer.appended();
    } finally {
      writeLock.unlock();
    }
    commit.awaitDurable(target, false);
  }

  /**
   * Flushes, cuts the preallocated zeros off and closes the files. Further calls fail. A change
   * that races the close is either recorded before it (and made durable by its final sync, so a
   * critical appender waiting for it returns normally) or refused with a {@link
   * JournalException} ({@code NOT_RECORDED}): never accepted and then dropped.
   *
   * @throws JournalException when the flush fails or the journal failed closed earlier: the files
   *     are closed all the same, and changes since the last sync may be lost
   */
  @Override
  public void close() {
    long target;
    writeLock.lock();
    try {
      if (closed || closing) {
        return;
      }
      // From here every change is refused (NOT_RECORDED): a change racing this close is either
      // in the buffer now, and made durable by the sync below, or refused; never accepted and
      // then dropped by the close.
      closing = true;
      target = writer.appended();
    } finally {
      writeLock.unlock();
    }
    try {
      commit.checkNotFailed();
      commit.awaitDurable(target, false);
    } finally {
      stop(true);
    }
  }

  /**
   * Rewrites the live state into a new base now and deletes the files it supersedes, whatever the
   * garbage ratio. For operators and tests; the journal compacts on its own when needed. The
   * compaction runs on the journal's compaction thread; this waits for it.
   *
   * @throws JournalException when the base cannot be written or installed (nothing changes), or
   *     the caller was interrupted while it waited (the compaction goes on; the interrupt flag
   *     stays set)
   */
  public void compact() {
    ensureOpen();
    compaction.runAndWait();
  }

  /**
   * Bytes of journal data in the files (headers, records, trailers), counting what is still
   * buffered for them. While the journal is open, the active segment's file is longer by its
   * preallocated zeros (up to 1 MiB), which this does not count; they are cut off at close.
   *
   * @return the bytes, {@code >= 0}
   */
  public long sizeOnDisk() {
    writeLock.lock();
    try {
      return writer.filesBytes();
    } finally {
      writeLock.unlock();
    }
  }

  /**
   * The directory holding the segments.
   *
   * @return the directory given to {@link #builder}
   */
  public Path directory() {
    return dir;
  }

  @Override
  public String toString() {
    return "FileJournal[" + dir + (key != null ? ", encrypted" : "") + "]";
  }

  // ---------------------------------------------------------------------------------------------
  // For tests

  /**
   * Stops the journal's threads and closes the files without writing what is buffered: what a process crash
   * leaves behind. For crash tests.
   */
  void crash() {
    stop(false);
  }

  /**
   * How many fsyncs of the active segment this instance ran to make changes durable (critical
   * appends, group commits, flushes), not counting the fsyncs of segment rolls and compactions:
   * records per fsync show how well concurrent appenders share them. A lock-free read.
   *
   * @return the count since this instance was opened
   */
  public long syncCount() {
    return commit.syncs();
  }

  /** Whether every change recorded so far is durable (fsynced). For tests. */
  boolean allDurable() {
    long appended;
    writeLock.lock();
    try {
      appended = writer.appended();
    } finally {
      writeLock.unlock();
    }
    return commit.durable() >= appended;
  }

  /** How many compactions completed. For tests. */
  long compactions() {
    synchronized (compactionLock) {
      return compactions;
    }
  }

  /** The live state's size as the compaction trigger counts it: a base's exact size. */
  long liveBytes() {
    writeLock.lock();
    try {
      return liveBytes;
    } finally {
      writeLock.unlock();
    }
  }

  /** How many times the compaction thread woke for work (a request or a stop). For tests. */
  long compactionWakeups() {
    synchronized (compaction) {
      return compaction.wakeups;
    }
  }

  /** How many rounds the I/O thread completed. For tests. */
  long flusherRounds() {
    synchronized (flusherMonitor) {
      return flusherRounds;
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Writing (writeLock held)

  /**
   * Frames a change into the buffer, or throws having recorded nothing: the writer rolls or writes
   * what it must before it adds the record, so any failure here is {@code NOT_RECORDED}.
   */
  private void record(JournalCodec body) {
    if (closing || closed) {
      throw new JournalException("journal " + dir + " is closed (or closing): the change was"
          + " refused, nothing recorded", null, JournalException.Outcome.NOT_RECORDED);
    }
    try {
      ensureWritable();
      int framed = writer.framedLength(body.length());
      if (writer.needsIo(framed)) {
        // Copied: the codec's array is reused by whoever takes writeLock while this one waits.
        byte[] copy = java.util.Arrays.copyOf(body.array(), body.length());
        awaitIoFor(framed);
        writer.append(copy, copy.length);
      } else {
        writer.append(body.array(), body.length());
      }
    } catch (JournalException e) {
      throw new JournalException(e.getMessage(), e.getCause() != null ? e.getCause() : e,
          JournalException.Outcome.NOT_RECORDED);
    }
    if (++unsyncedRecords >= commitRecords || writer.drainDue()) {
      unsyncedRecords = 0;
      commit.wake();
    }
  }

  /**
   * Waits (writeLock held, released while waiting) until the I/O thread did the roll, segment
   * start or buffer write a record of {@code framed} bytes needs. Throws (nothing recorded) when
   * that failed, the journal closes or fails, or this thread is interrupted (flag kept set).
   */
  private void awaitIoFor(int framed) {
    while (writer.needsIo(framed)) {
      long round = ioRounds;
      ioWanted = Math.max(ioWanted, framed);
      commit.wake();
      while (ioRounds == round) {
        if (closing || closed) {
          throw new JournalException("journal " + dir + " is closed (or closing): the change"
              + " was refused, nothing recorded", null, JournalException.Outcome.NOT_RECORDED);
        }
        commit.checkNotFailed();
        try {
          ioDone.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new JournalException("interrupted while waiting for journal " + dir + " to"
              + " start a segment or write its buffer: the change was refused, nothing recorded",
              e, JournalException.Outcome.NOT_RECORDED);
        }
      }
      if (ioError != null) {
        throw ioError;
      }
    }
  }

  /**
   * GroupCommit.Source, on the I/O thread: under writeLock, writes the buffer and names what to
   * force.
   */
  private GroupCommit.Pending drainForSync() {
    writeLock.lock();
    try {
      commit.checkNotFailed();
      writer.drain();
      unsyncedRecords = 0;
      return new GroupCommit.Pending(writer.channel(), writer.path(), writer.appended());
    } finally {
      writeLock.unlock();
    }
  }

  // State changes after their record is in the buffer, with the live size (writeLock held).

  private void applyAppend(QueuedEvent event) {
    long delta = appendDelta(event);
    state.append(event);
    liveBytes += delta;
  }

  private void applyRemove(String eventId, Removal removal) {
    String reason = state.deadReasons.get(eventId);
    ReplayState.Removed removed = state.remove(eventId, removal);
    if (removed != null) {
      liveBytes -= frame(JournalCodec.appendLength(removed.event()));
      if (removed.wasDead()) {
        liveBytes -= frame(JournalCodec.deadLength(eventId, reason));
      }
      if (removed.forgotten()) {
        liveBytes -= frame(JournalCodec.seenLength(eventId));
      }
    }
  }

  private void applyDeadLetter(String eventId, int attempts, String reason) {
    if (state.deadLetter(eventId, attempts, reason) != null) {
      liveBytes += frame(JournalCodec.deadLength(eventId, reason == null ? "" : reason));
    }
  }

  private void applyForget(String eventId) {
    if (state.forget(eventId)) {
      liveBytes -= frame(JournalCodec.seenLength(eventId));
    }
  }

  /**
   * How an append changes the live size: the event's record replaces a pending one of the same id
   * or, for a dead id (a replay), the dead letter and its reason; a new id adds a seen record.
   */
  private long appendDelta(QueuedEvent event) {
    String id = event.eventId();
    QueuedEvent replaced = state.pending.get(id);
    QueuedEvent dead = state.dead.get(id);
    return frame(JournalCodec.appendLength(event))
        - (replaced == null ? 0 : frame(JournalCodec.appendLength(replaced)))
        - (dead == null ? 0 : frame(JournalCodec.appendLength(dead))
            + frame(JournalCodec.deadLength(id, state.deadReasons.get(id))))
        + (state.seen.containsKey(id) ? 0 : frame(JournalCodec.seenLength(id)));
  }

  /** A record's framed length on disk, for a body of {@code bodyLength}. */
  private long frame(long bodyLength) {
    return overhead + bodyLength;
  }

  /** The exact size of a base holding {@code s}: what compaction would write. */
  private long liveSize(ReplayState s) {
    long live = SegmentFormat.headerLength(key != null) + SegmentFormat.trailerLength(key != null);
    for (String id : s.seen.keySet()) {
      live += frame(JournalCodec.seenLength(id));
    }
    for (QueuedEvent e : s.pending.values()) {
      live += frame(JournalCodec.appendLength(e));
    }
    for (QueuedEvent e : s.dead.values()) {
      live += frame(JournalCodec.appendLength(e))
          + frame(JournalCodec.deadLength(e.eventId(), s.deadReasons.get(e.eventId())));
    }
    return live;
  }

  private void ensureOpen() {
    if (closed) {
      throw new IllegalStateException("journal " + dir + " is closed");
    }
  }

  private void ensureWritable() {
    ensureOpen();
    commit.checkNotFailed();
  }

  // ---------------------------------------------------------------------------------------------
  // Flusher and compaction

  /*
   * The I/O thread: the only thread that writes, forces, truncates or rolls the active segment.
   * Each round it does the rolls and buffer writes producers asked for (ioWanted), syncs when a
   * caller waits for durability, a producer woke it (commitRecords waiting, or a full buffer) or
   * the commit interval elapsed, and asks the compaction thread for a compaction when one is due.
   * A compaction never runs on this thread, so group commits keep their interval while one runs.
   */
  private void ioLoop() {
    long intervalNanos = commitInterval.toNanos();
    long nextCommit = System.nanoTime() + intervalNanos;
    while (!closed) {
      boolean wanted = commit.awaitWork(nextCommit - System.nanoTime());
      // An interrupt that reached this thread outside its I/O is dropped here, before it could
      // close a channel at the next write (one during a write or fsync fails the journal closed).
      Thread.interrupted();
      if (closed) {
        break;
      }
      long now = System.nanoTime();
      if (now - nextCommit >= 0) {
        nextCommit = now + intervalNanos;
      }
      try {
        runRequestedIo();
        if (commit.failure() == null) {
          syncRound(wanted);
          maybeRequestCompaction();
        }
      } catch (RuntimeException e) {
        // Never let the thread that every waiter depends on die; the next round tries again.
        LOG.log(System.Logger.Level.ERROR, "journal " + dir + ": I/O round failed", e);
      }
      synchronized (flusherMonitor) {
        flusherRounds++;
      }
    }
    if (orderlyStop && commit.failure() == null) {
      // A close whose own wait ended early (an interrupted closer) still gets its final sync.
      syncRound(false);
    }
    writeLock.lock();
    try {
      // Wakes producers waiting for a roll: the journal is closed.
      ioRounds++;
      ioDone.signalAll();
      writer.close(orderlyStop && commit.failure() == null);
    } finally {
      writeLock.unlock();
    }
  }

  /** The rolls, segment starts and buffer writes producers wait for (I/O thread). */
  private void runRequestedIo() {
    writeLock.lock();
    try {
      if (ioWanted < 0) {
        return;
      }
      ioError = null;
      try {
        if (commit.failure() == null) {
          writer.prepare(ioWanted);
        }
      } catch (JournalException e) {
        ioError = new JournalException(e.getMessage(), e.getCause() != null ? e.getCause() : e,
            JournalException.Outcome.NOT_RECORDED);
      } catch (RuntimeException e) {
        ioError = new JournalException("journal " + dir + ": " + e, e,
            JournalException.Outcome.NOT_RECORDED);
      }
      ioWanted = -1;
      ioRounds++;
      ioDone.signalAll();
    } finally {
      writeLock.unlock();
    }
  }

  /** One sync of everything written so far, logged when it fails and when it works again. */
  private void syncRound(boolean wanted) {
    long target;
    writeLock.lock();
    try {
      target = writer.appended();
    } finally {
      writeLock.unlock();
    }
    try {
      commit.syncUpTo(target, wanted && commit.criticalWaiting());
      if (commitFailing) {
        commitFailing = false;
        LOG.log(System.Logger.Level.INFO, "journal " + dir + ": background commits work again");
      }
    } catch (RuntimeException e) {
      if (!closed && !commitFailing) {
        commitFailing = true;
        LOG.log(System.Logger.Level.ERROR, "journal " + dir + ": background commit failed;"
            + " retrying every commit interval, logged again once it works", e);
      }
    }
  }

  /** Asks the compaction thread for a compaction when garbage outweighs the live state. */
  private void maybeRequestCompaction() {
    boolean due;
    writeLock.lock();
    try {
      long files = writer.filesBytes();
      due = !closed && writer.activeSeq() >= 0 && files > compactionMinBytes
          && writer.sealedBytes() - liveBytes > compactionGarbageRatio * files;
    } finally {
      writeLock.unlock();
    }
    if (due) {
      compaction.requestAuto();
    }
  }

  /**
   * The compaction thread: runs compactions the I/O thread found due (with backoff after a
   * failure) and those {@link #compact()} asks for, while group commits go on.
   */
  private final class CompactionThread {
    private final Thread thread;
    private boolean autoRequested;
    private java.util.concurrent.CompletableFuture<Void> asked;
    /** Guarded by this (with nextCompactionNanos): the wait after a failed compaction, or 0. */
    private long backoffNanos;
    private long nextCompactionNanos;
    /** Guarded by this: wakeups of the loop, for tests. */
    private long wakeups;

    CompactionThread() {
      thread = new OwnThread(this::loop, "relaykit-file-journal-compactor");
    }

    synchronized void requestAuto() {
      if (backoffNanos > 0 && clock.nanoTime() - nextCompactionNanos < 0) {
        // Backing off after a failed compaction: the thread sleeps until a round after the
        // backoff asks again (not woken by every I/O round for nothing).
        return;
      }
      if (!autoRequested) {
        autoRequested = true;
        notifyAll();
      }
    }

    void runAndWait() {
      java.util.concurrent.CompletableFuture<Void> done;
      synchronized (this) {
        if (asked == null) {
          asked = new java.util.concurrent.CompletableFuture<>();
          notifyAll();
        }
        done = asked;
      }
      try {
        done.get();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new JournalException("interrupted while waiting for a compaction of journal " + dir
            + "; it goes on on the journal's compaction thread", e,
            JournalException.Outcome.UNKNOWN);
      } catch (java.util.concurrent.ExecutionException e) {
        Throwable c = e.getCause();
        if (c instanceof RuntimeException r) {
          throw r;
        }
        throw new JournalException("compaction of journal " + dir + " failed: " + c, c);
      }
    }

    private void loop() {
      while (!closed) {
        java.util.concurrent.CompletableFuture<Void> job;
        synchronized (this) {
          while (!closed && asked == null && !autoRequested) {
            try {
              wait();
            } catch (InterruptedException e) {
              // The journal's own thread: an interrupt must not stop compactions; keep going.
              Thread.interrupted();
            }
          }
          wakeups++;
          job = asked;
          asked = null;
          if (job == null) {
            autoRequested = false;
          }
        }
        if (closed) {
          if (job != null) {
            job.completeExceptionally(new IllegalStateException("journal " + dir + " is closed"));
          }
          return;
        }
        // An interrupt of this thread fails at most the compaction it lands in (its channels
        // close): the old files stay, and the next compaction starts with the flag cleared.
        Thread.interrupted();
        if (job != null) {
          try {
            compactNow();
            job.complete(null);
          } catch (RuntimeException e) {
            job.completeExceptionally(e);
          }
          continue;
        }
        long now = clock.nanoTime();
        if (backoffNanos > 0 && now - nextCompactionNanos < 0) {
          continue;
        }
        try {
          compactNow();
          synchronized (this) {
            backoffNanos = 0;
          }
        } catch (RuntimeException e) {
          if (closed) {
            return;
          }
          synchronized (this) {
            backoffNanos = backoffNanos == 0 ? BACKOFF_MIN_NANOS
                : Math.min(BACKOFF_MAX_NANOS, backoffNanos * 2);
            nextCompactionNanos = now + backoffNanos;
          }
          LOG.log(System.Logger.Level.ERROR, "journal " + dir + ": compaction failed; next try"
              + " in " + Duration.ofNanos(backoffNanos), e);
        }
      }
    }

    synchronized void stop() {
      notifyAll();
      if (asked != null) {
        asked.completeExceptionally(new IllegalStateException("journal " + dir + " is closed"));
        asked = null;
      }
    }
  }

  /*
   * Under writeLock: copy the live state (O(n) references, no I/O) and note the point it stands
   * for: the active segment and the offset of its next record. Without the lock: make the records
   * before that point durable (a group sync), write and install the base (Compactor), delete what
   * it supersedes. Under writeLock again: the sizes. Recovery replays the newest base and the
   * active segment from that offset on, or, if the base was never installed, the old files: the
   * same state either way.
   */
  private void compactNow() {
    synchronized (compactionLock) {
      ReplayState snapshot;
      long seq;
      long offset;
      long target;
      writeLock.lock();
      try {
        ensureWritable();
        writer.ensureActive();
        snapshot = state.copy();
        seq = writer.activeSeq();
        offset = writer.activeSize();
        target = writer.appended();
      } finally {
        writeLock.unlock();
      }
      commit.awaitDurable(target, false);
      Compactor.Installed installed = compactor.install(snapshot, seq, offset);
      writeLock.lock();
      try {
        writer.compacted(installed.written(), installed.freed());
      } finally {
        writeLock.unlock();
      }
      compactions++;
    }
  }

  private void stop(boolean orderly) {
    orderlyStop = orderly;
    closed = true;
    try {
      if (compaction != null) {
        compaction.stop();
      }
      commit.wake();
      boolean ioStopped = flusher == null || !flusher.isAlive();
      if (flusher != null && flusher != Thread.currentThread() && !ioStopped) {
        joinUninterruptibly(flusher, orderly ? 10_000 : 1_000);
        ioStopped = !flusher.isAlive();
      }
      if (compaction != null && compaction.thread != Thread.currentThread()) {
        joinUninterruptibly(compaction.thread, orderly ? 10_000 : 1_000);
      }
      if (ioStopped) {
        // The I/O thread never started (the constructor failed): close what it would have.
        writeLock.lock();
        try {
          writer.close(orderly && commit.failure() == null);
        } finally {
          writeLock.unlock();
        }
      }
      commit.stop();
    } finally {
      closeQuietly(lockChannel); // whatever failed above, the directory is free again
    }
  }

  /**
   * At open, starts the active segment when there is none, if it can: after a roll failed on a
   * full disk the newest segment is sealed, and the journal must still open, load and let its
   * queue drain. A segment that cannot be created is left to the next change, which tries again
   * (and is refused, NOT_RECORDED, while there is no room), as while running.
   */
  private void startSegmentIfRoom() {
    try {
      writer.ensureActive();
    } catch (JournalException e) {
      LOG.log(System.Logger.Level.WARNING, "journal " + dir + ": cannot start a new segment at"
          + " open (" + e.getMessage() + "); opening without one: what was recovered loads and"
          + " drains, and the next change tries again", e);
    }
  }

  /**
   * A thread of the journal's own (daemon): {@link #interrupt()} from any other thread is ignored,
   * because a {@code FileChannel} closes itself when the thread doing I/O on it is interrupted,
   * and nobody but the journal stops its threads ({@link #close()} ends them with its own flags).
   * So code that interrupts every thread it finds, or a pool's {@code shutdownNow} that somehow
   * reached it, can neither close the journal's files nor stop its commits. The thread's own
   * interrupts (a library restoring the flag) still set the flag; the journal clears it before
   * every round of I/O.
   */
  static final class OwnThread extends Thread {
    private static final java.util.concurrent.atomic.AtomicBoolean LOGGED =
        new java.util.concurrent.atomic.AtomicBoolean();

    OwnThread(Runnable body, String name) {
      super(body, name);
      setDaemon(true);
    }

    /** Ignored unless called by this thread itself (see the class comment). */
    @Override
    public void interrupt() {
      if (Thread.currentThread() == this) {
        super.interrupt();
        return;
      }
      if (LOGGED.compareAndSet(false, true)) {
        LOG.log(System.Logger.Level.WARNING, "thread " + Thread.currentThread().getName()
            + " interrupted the journal's own thread " + getName() + "; ignored (the journal's"
            + " threads stop when it is closed), and further interrupts are ignored silently");
      }
    }
  }

  /** The name of the lock file every open journal holds locked in its directory. */
  static final String LOCK_FILE = ".lock";

  /**
   * Creates {@code dir} if needed and locks its {@link #LOCK_FILE} for this journal's lifetime
   * (Java cannot lock a directory). The lock is the operating system's: a process that dies
   * releases it, so a crash never leaves the directory locked.
   *
   * @throws JournalException naming the directory when another journal holds it, in this process
   *     or another, or when the lock file cannot be created or locked
   */
  private static FileChannel lockDirectory(Path dir) {
    Path lockPath = dir.resolve(LOCK_FILE);
    FileChannel ch = null;
    try {
      Files.createDirectories(dir);
      ch = FileChannel.open(lockPath, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
      FileLock lock = ch.tryLock();
      if (lock == null) {
        throw new JournalException("journal directory " + dir + " is in use by another process"
            + " (it holds " + lockPath + " locked): one open FileJournal per directory");
      }
      return ch;
    } catch (OverlappingFileLockException e) {
      closeQuietly(ch);
      throw new JournalException("journal directory " + dir + " is already open in this process"
          + ": one open FileJournal per directory; close the other one first", e);
    } catch (IOException e) {
      closeQuietly(ch);
      throw new JournalException("cannot lock journal directory " + dir + " (" + lockPath + "): "
          + e, e);
    } catch (RuntimeException | Error e) {
      closeQuietly(ch);
      throw e;
    }
  }

  /**
   * Waits up to {@code millis} for {@code t} to end, through interrupts (a closer's interrupt must
   * not let it return while the journal's threads still write), keeping the interrupt flag.
   */
  private static void joinUninterruptibly(Thread t, long millis) {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
    boolean interrupted = false;
    while (t.isAlive()) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        break;
      }
      try {
        TimeUnit.NANOSECONDS.timedJoin(t, left);
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  static byte[] newJournalId() {
    byte[] id = new byte[16];
    RANDOM.nextBytes(id);
    return id;
  }

  static void closeQuietly(FileChannel ch) {
    if (ch != null) {
      try {
        ch.close();
      } catch (IOException ignored) {
        // closing after a failure or a simulated crash
      }
    }
  }

  /** Configures a {@link FileJournal}; {@link #build()} validates and opens it. */
  public static final class Builder {
    private final Path dir;
    private Duration commitInterval = Duration.ofMillis(20);
    private int commitRecords = 1000;
    private long segmentBytes = 64L * 1024 * 1024;
    private long compactionMinBytes = 4L * 1024 * 1024;
    private double compactionGarbageRatio = 0.5;
    private SecretKey key;
    private FileIo io = FileIo.SYSTEM;
    private TimeSource clock = TimeSource.system();

    private Builder(Path dir) {
      this.dir = dir;
    }

    /**
     * Non-critical changes are fsynced at least this often. Default 20 ms.
     *
     * @param commitInterval the interval; checked (positive) by {@link #build()}
     * @return this builder
     */
    public Builder commitInterval(Duration commitInterval) {
      this.commitInterval = commitInterval;
      return this;
    }

    /**
     * Non-critical changes are fsynced as soon as this many are waiting. Default 1000.
     *
     * @param commitRecords the count; checked ({@code >= 1}) by {@link #build()}
     * @return this builder
     */
    public Builder commitRecords(int commitRecords) {
      this.commitRecords = commitRecords;
      return this;
    }

    /**
     * A segment is sealed and a new one started past this size. Default 64 MiB.
     *
     * @param segmentBytes the size; checked ({@code >= 1024}) by {@link #build()}
     * @return this builder
     */
    public Builder segmentBytes(long segmentBytes) {
      this.segmentBytes = segmentBytes;
      return this;
    }

    /**
     * No compaction while the files are smaller than this. Default 4 MiB.
     *
     * @param compactionMinBytes the size; checked ({@code >= 0}) by {@link #build()}
     * @return this builder
     */
    public Builder compactionMinBytes(long compactionMinBytes) {
      this.compactionMinBytes = compactionMinBytes;
      return this;
    }

    /**
     * Compact when more than this fraction of the files is garbage, in (0, 1). Default 0.5: most
     * of it.
     *
     * @param compactionGarbageRatio the fraction; checked by {@link #build()}
     * @return this builder
     */
    public Builder compactionGarbageRatio(double compactionGarbageRatio) {
      this.compactionGarbageRatio = compactionGarbageRatio;
      return this;
    }

    /**
     * Seal every record with AES-GCM under {@code key} (AES, 128/192/256 bits). Default none.
     *
     * @param key the key, or null for none; checked (AES, 128, 192 or 256 bits) by {@link #build()}
     * @return this builder
     */
    public Builder encryptionKey(SecretKey key) {
      this.key = key;
      return this;
    }

    /**
     * The time source; the journal measures durations (the backoff of a failing compaction) on
     * its monotonic reading, so a wall-clock step never changes them. Default {@link
     * TimeSource#system()}.
     *
     * @param clock the time source; checked (not null) by {@link #build()}
     * @return this builder
     */
    public Builder clock(TimeSource clock) {
      this.clock = clock;
      return this;
    }

    /** The file system to use; tests pass one that fails on demand. Default the real one. */
    Builder fileIo(FileIo io) {
      this.io = Checks.requireNonNull("fileIo", io);
      return this;
    }

    /**
     * Opens the journal, recovering what {@code dir} holds.
     *
     * @return the open journal, holding what was recovered
     * @throws IllegalArgumentException naming the field and value when a setting is invalid
     * @throws JournalException when the directory cannot be used or holds corrupt data
     */
    public FileJournal build() {
      Checks.requireNonNull("dir", dir);
      Checks.requireNonNull("clock", clock);
      Checks.requirePositive("commitInterval", commitInterval);
      Checks.requirePositive("commitRecords", commitRecords);
      if (segmentBytes < 1024) {
        throw new IllegalArgumentException("segmentBytes must be >= 1024, was " + segmentBytes);
      }
      if (compactionMinBytes < 0) {
        throw new IllegalArgumentException(
            "compactionMinBytes must be >= 0, was " + compactionMinBytes);
      }
      if (!(compactionGarbageRatio > 0 && compactionGarbageRatio < 1)) {
        throw new IllegalArgumentException(
            "compactionGarbageRatio must be in (0, 1), was " + compactionGarbageRatio);
      }
      if (key != null) {
        int bits = key.getEncoded() == null ? -1 : key.getEncoded().length * 8;
        if (!"AES".equalsIgnoreCase(key.getAlgorithm())
            || (bits != 128 && bits != 192 && bits != 256)) {
          throw new IllegalArgumentException("encryptionKey must be an AES key of 128, 192 or"
              + " 256 bits, was " + key.getAlgorithm() + "/" + bits);
        }
      }
      return new FileJournal(this);
    }
  }
}
