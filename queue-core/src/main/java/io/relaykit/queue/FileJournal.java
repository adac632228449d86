package io.relaykit.queue;

import io.relaykit.internal.Checks;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.zip.CRC32C;
import javax.crypto.AEADBadTagException;
import javax.crypto.Cipher;
import javax.crypto.SecretKey;
import javax.crypto.spec.GCMParameterSpec;

/**
 * A durable {@link QueueJournal} in a directory of append-only segment files: the embedded default
 * for clients without a database. Each change is one record framed with its length and a CRC32C;
 * an append costs one encode and a buffer copy, O(1) in the journal's size.
 *
 * <h2>Durability</h2>
 * A {@link Priority#CRITICAL} append is fsynced before it returns; concurrent critical appenders
 * share fsyncs (the first waiter syncs everything written so far, the others wait for it). When
 * more critical appenders were waiting at once in the previous round than are waiting now, that
 * first waiter gives the others up to half a recent fsync's duration (at most 1 ms) to append
 * before it syncs, so that N producers share one fsync instead of alternating in two halves. Other
 * changes are group-committed by a background flusher thread: at the latest every {@code
 * commitInterval}, sooner once {@code commitRecords} changes are waiting, and at {@link #flush()}
 * and {@link #close()}. A process crash loses at most the changes of one commit interval that no
 * critical append or flush covered.
 *
 * <h2>Disk space</h2>
 * The active segment's file is extended with zeros ahead of its records (64 KiB at first,
 * growing to 1 MiB, never past {@code segmentBytes}), so that an fsync writes the new records
 * without also committing a change of the file's size to the file system's journal (on ext4, an
 * fdatasync after an append does both; after an overwrite of written blocks, only the data). The
 * zeros cost one larger sync per chunk, are cut off when a segment is sealed and at {@link
 * #close()}, and are not counted by {@link #sizeOnDisk()}.
 *
 * <h2>Recovery</h2>
 * Opening replays every segment. The newest segment may end in preallocated zeros: an all-zero
 * record header is the end of its records (a valid header never is). A record torn by a crash at
 * the end of the newest segment (cut short, or with zeros where part of it never reached the
 * disk: only zeros after it, or a whole zero-filled 512-byte sector inside it) is cut off with a
 * warning, with everything after it, keeping every complete record before it. Nothing after it
 * was synced: a sync covers every byte written before it. Anything else that fails its checks is a
 * {@link JournalException} naming the file and byte offset. (A disk that silently returns a
 * zeroed sector inside the newest segment looks like such a torn write.)
 *
 * <h2>Compaction</h2>
 * When the journal holds mostly garbage (its files are larger than {@code compactionMinBytes}
 * and the live state is under {@code 1 - compactionGarbageRatio} of them), the flusher rewrites the
 * live state into a new base segment: written to a temporary file, fsynced, atomically renamed,
 * then the older segments are deleted. A crash at any point leaves either the old segments or the
 * complete new base, never neither. Writers wait only while the live state's references are
 * copied (O(n), no I/O); the base is written and synced while they continue in a new segment.
 * Because compaction runs only when garbage outweighs live data, its cost is amortized O(1) per
 * change. The live state is kept in memory for this (about the size of the pending payloads).
 *
 * <h2>Encryption</h2>
 * With {@link Builder#encryptionKey}, every record body (ids, names, payloads, reasons) is sealed
 * with AES-GCM and a random 96-bit nonce; a segment header carries a key check, so a wrong key
 * fails at open with a clear {@link JournalException}, never as garbage. Rotate the key well
 * before 2^32 records.
 *
 * <p>One process per directory: the journal takes no file lock.
 */
public final class FileJournal implements QueueJournal {

  /*
   * File layout. Segment "journal-<20-digit seq>.seg": header = magic "RKQJ", version 1, flags
   * (1 = encrypted, 2 = base), 2 zero bytes, and when encrypted a key check (12-byte nonce + 16
   * zero bytes sealed with the key = 44 bytes). Then records: int length, int ~length, int CRC32C
   * of the record bytes, record bytes (the JournalCodec body, or nonce + ciphertext + tag).
   * Storing the length twice lets recovery tell a flipped length (corruption) from a record cut
   * short (torn tail). A base segment (written by compaction) supersedes every older segment.
   *
   * Preallocation: the active segment's file extends past its records with zeros actually written
   * (not a sparse setLength, not fallocate: both leave blocks whose first write changes metadata),
   * in chunks of 64 KiB growing to 1 MiB, never past segmentBytes. A record then overwrites blocks
   * that are already allocated and sized, so fdatasync (force(false)) writes data only instead of
   * also committing a size change to the file system's journal. The zeros' own allocation is synced
   * with the next record, once per chunk. Writes are positional (`writePos`), not O_APPEND. A sealed
   * segment is truncated to its records before the next one is created, and so is the active one at
   * close; only a crash leaves a zero tail, and only on the newest segment. Recovery reads an
   * all-zero record header as the end of the records: a valid header never is (length > 0 and
   * ~length != 0).
   *
   * Positions: `appended` counts every byte handed to the journal; `durable` the bytes known to be
   * fsynced. A critical append returns `appended` as its ticket and waits until `durable` reaches
   * it. One syncing thread at a time (`syncing`); it copies the buffer to the channel under the
   * write lock and calls force outside it, so writers keep going during the fsync.
   */

  private static final System.Logger LOG = System.getLogger(FileJournal.class.getName());

  private static final byte[] MAGIC = {'R', 'K', 'Q', 'J'};
  private static final byte VERSION = 1;
  private static final int FLAG_ENCRYPTED = 1;
  private static final int FLAG_BASE = 2;
  private static final int RECORD_HEADER = 12;
  private static final int NONCE = 12;
  private static final int TAG_BITS = 128;
  private static final int KEY_CHECK = NONCE + 16 + TAG_BITS / 8;
  private static final int MAX_RECORD = Integer.MAX_VALUE - 64;
  private static final int WRITE_BUFFER = 256 * 1024;
  private static final int PREALLOCATE_MIN = 64 * 1024;
  private static final int PREALLOCATE_MAX = 1024 * 1024;
  /** The unit a disk writes whole: a torn write leaves whole sectors unwritten (zero). */
  private static final int SECTOR = 512;
  private static final byte[] ZEROS = new byte[64 * 1024];
  private static final long MAX_GATHER_NANOS = 1_000_000;
  private static final String SUFFIX = ".seg";
  private static final String PREFIX = "journal-";

  private final Path dir;
  private final Duration commitInterval;
  private final int commitRecords;
  private final long segmentBytes;
  private final long compactionMinBytes;
  private final double compactionGarbageRatio;
  private final SecretKey key;
  private final SecureRandom random = new SecureRandom();

  // Guarded by writeLock.
  private final ReentrantLock writeLock = new ReentrantLock();
  private final JournalCodec codec = new JournalCodec();
  private final CRC32C crc = new CRC32C();
  private final ReplayState state = new ReplayState();
  private final Cipher cipher;
  private byte[] buffer = new byte[8192];
  private int buffered;
  private FileChannel channel;
  private Path segment;
  private long segmentSeq;
  private long segmentSize;
  /** Where the next byte drained to the active segment's channel goes. */
  private long writePos;
  /** The active segment file's length: records up to writePos, zeros after. */
  private long allocatedEnd;
  private long filesBytes;
  private long liveBytes;
  private long appended;
  private int unsyncedRecords;
  private boolean loaded;
  private volatile boolean closed;

  // Guarded by syncLock (never taken while holding it: writeLock).
  private final ReentrantLock syncLock = new ReentrantLock();
  /** Signalled when a sync ends (or the journal stops). */
  private final Condition syncDone = syncLock.newCondition();
  /** Signalled when enough critical appenders arrived for the sync that is gathering them. */
  private final Condition arrived = syncLock.newCondition();
  private long durable;
  private boolean syncing;
  /** The leader is waiting for the previous round's critical appenders. */
  private boolean gathering;
  /** Numbers each gathering; the appender that completes one takes the lead and records it. */
  private long gatherings;
  private long takenOver;
  private long syncs;
  /** The targets of the critical appenders in awaitDurable, in waiterCount slots. */
  private long[] waiterTargets = new long[8];
  private int waiterCount;
  /** Critical appenders whose record is not yet durable (target > durable). */
  private int pending;
  /** The most pending at once since the last critical sync started. */
  private int roundPeak;
  /** The previous round's peak: how many the next critical sync waits for, briefly. */
  private int expected;
  /** Recent force(false) durations, an exponential moving average. */
  private long forceNanos;
  private final List<FileChannel> retired = new ArrayList<>();

  private final Object compactionLock = new Object();
  private final Thread flusher;
  private final Object flusherMonitor = new Object();
  private boolean flushSoon;

  private FileJournal(Builder b) {
    this.dir = b.dir;
    this.commitInterval = b.commitInterval;
    this.commitRecords = b.commitRecords;
    this.segmentBytes = b.segmentBytes;
    this.compactionMinBytes = b.compactionMinBytes;
    this.compactionGarbageRatio = b.compactionGarbageRatio;
    this.key = b.key;
    try {
      this.cipher = key == null ? null : Cipher.getInstance("AES/GCM/NoPadding");
      Files.createDirectories(dir);
      recover();
    } catch (IOException | GeneralSecurityException e) {
      closeQuietly(channel);
      throw new JournalException("cannot open journal in " + dir + ": " + e, e);
    } catch (RuntimeException e) {
      closeQuietly(channel);
      throw e;
    }
    this.flusher = new Thread(this::flushLoop, "relaykit-file-journal-flusher");
    flusher.setDaemon(true);
    flusher.start();
  }

  /** A builder for a journal in {@code dir} (created if missing). */
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
      write(codec.append(event));
      if (state.append(event)) {
        liveBytes += JournalCodec.seenSize(event.eventId());
      }
      liveBytes += JournalCodec.appendSize(event);
      return event.priority() == Priority.CRITICAL ? appended : -1L;
    } finally {
      writeLock.unlock();
    }
  }

  @Override
  public void awaitDurable(long ticket) {
    if (ticket >= 0) {
      syncUpTo(ticket, true);
    }
  }

  @Override
  public void remove(String eventId, Removal removal) {
    QueueJournal.requireEventId(eventId);
    Checks.requireNonNull("removal", removal);
    writeLock.lock();
    try {
      write(codec.remove(eventId, removal));
      ReplayState.Removed removed = state.remove(eventId, removal);
      if (removed != null) {
        liveBytes -= JournalCodec.appendSize(removed.event());
        if (removed.wasDead()) {
          liveBytes -= JournalCodec.deadSize(eventId, "");
        }
        if (removed.forgotten()) {
          liveBytes -= JournalCodec.seenSize(eventId);
        }
      }
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
      write(codec.reschedule(eventId, attempts, nextAttemptAt));
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
      write(codec.dead(eventId, attempts, reason));
      if (state.deadLetter(eventId, attempts, reason) != null) {
        liveBytes += JournalCodec.deadSize(eventId, "");
      }
    } finally {
      writeLock.unlock();
    }
  }

  @Override
  public void forget(String eventId) {
    QueueJournal.requireEventId(eventId);
    writeLock.lock();
    try {
      write(codec.forget(eventId));
      if (state.forget(eventId)) {
        liveBytes -= JournalCodec.seenSize(eventId);
      }
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

  @Override
  public void flush() {
    long target;
    writeLock.lock();
    try {
      ensureOpen();
      target = appended;
    } finally {
      writeLock.unlock();
    }
    syncUpTo(target, false);
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    try {
      flush();
    } finally {
      stop(true);
    }
  }

  /**
   * Rewrites the live state into a new base segment now and deletes the older segments, whatever
   * the garbage ratio. For operators and tests; the flusher compacts on its own when needed.
   */
  public void compact() {
    ensureOpen();
    compactNow();
  }

  /**
   * Bytes of journal data in the segment files (headers and records), counting what is still
   * buffered for them. While the journal is open, the active segment's file is longer by its
   * preallocated zeros (up to 1 MiB), which this does not count; they are cut off at close.
   */
  public long sizeOnDisk() {
    writeLock.lock();
    try {
      return filesBytes;
    } finally {
      writeLock.unlock();
    }
  }

  /** The directory holding the segments. */
  public Path directory() {
    return dir;
  }

  /**
   * Stops the flusher and closes the files without writing what is buffered: what a process crash
   * leaves behind. For crash tests.
   */
  void crash() {
    stop(false);
  }

  /** How many group syncs ran (segment rolls and compactions not counted). For tests. */
  long syncCount() {
    syncLock.lock();
    try {
      return syncs;
    } finally {
      syncLock.unlock();
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Writing (writeLock held)

  private void write(JournalCodec body) {
    ensureOpen();
    byte[] record;
    int length;
    if (cipher == null) {
      record = body.array();
      length = body.length();
    } else {
      record = seal(cipher, body.array(), body.length());
      length = record.length;
    }
    crc.reset();
    crc.update(record, 0, length);
    int total = RECORD_HEADER + length;
    if (buffered + total > buffer.length) {
      if (buffered > 0 && buffered + total > WRITE_BUFFER) {
        drainBuffer();
      }
      if (total > buffer.length - buffered) {
        buffer = Arrays.copyOf(buffer, Math.max(buffer.length * 2, buffered + total));
      }
    }
    putInt(buffer, buffered, length);
    putInt(buffer, buffered + 4, ~length);
    putInt(buffer, buffered + 8, (int) crc.getValue());
    System.arraycopy(record, 0, buffer, buffered + RECORD_HEADER, length);
    buffered += total;
    appended += total;
    segmentSize += total;
    filesBytes += total;
    if (++unsyncedRecords >= commitRecords) {
      unsyncedRecords = 0;
      wakeFlusher();
    }
    if (segmentSize >= segmentBytes) {
      roll();
    }
  }

  /** Copies the buffer to the channel (no fsync), preallocating ahead of it. */
  private void drainBuffer() {
    if (buffered == 0) {
      return;
    }
    try {
      long end = writePos + buffered;
      if (end > allocatedEnd) {
        preallocate(end);
      }
      ByteBuffer bb = ByteBuffer.wrap(buffer, 0, buffered);
      long at = writePos;
      while (bb.hasRemaining()) {
        at += channel.write(bb, at);
      }
      writePos = end;
      buffered = 0;
      if (buffer.length > WRITE_BUFFER * 4) {
        buffer = new byte[8192];
      }
    } catch (IOException e) {
      throw new JournalException("cannot write to journal segment " + segment + ": " + e, e);
    }
  }

  /**
   * Extends the active segment with zeros past {@code end} (where the records being drained will
   * end): by the segment's size so far, at least 64 KiB and at most 1 MiB, not past segmentBytes.
   */
  private void preallocate(long end) throws IOException {
    long chunk = Math.min(PREALLOCATE_MAX, Math.max(PREALLOCATE_MIN, end));
    long target = Math.min(end + chunk, segmentBytes);
    long from = Math.max(allocatedEnd, end);
    while (from < target) {
      int n = (int) Math.min(ZEROS.length, target - from);
      ByteBuffer zeros = ByteBuffer.wrap(ZEROS, 0, n);
      while (zeros.hasRemaining()) {
        from += channel.write(zeros, from);
      }
    }
    allocatedEnd = Math.max(from, end);
  }

  /** Cuts the active segment's zero tail off, so that the file ends with its last record. */
  private void trimPreallocation() throws IOException {
    if (allocatedEnd > writePos) {
      channel.truncate(writePos);
      allocatedEnd = writePos;
    }
  }

  /** Seals the current segment (fsynced) and starts the next one. */
  private void roll() {
    roll(segmentSeq + 1);
  }

  /** Seals the current segment (fsynced) and starts segment {@code nextSeq}. */
  private void roll(long nextSeq) {
    drainBuffer();
    FileChannel old = channel;
    try {
      // Only the newest segment may end in zeros: trimmed and synced before the next one exists.
      boolean trimmed = allocatedEnd > writePos;
      trimPreallocation();
      old.force(trimmed);
    } catch (IOException e) {
      throw new JournalException("cannot sync journal segment " + segment + ": " + e, e);
    }
    syncLock.lock();
    try {
      advanceDurable(appended);
      retired.add(old);
      syncDone.signalAll();
    } finally {
      syncLock.unlock();
    }
    startSegment(nextSeq, false);
  }

  private void startSegment(long seq, boolean base) {
    Path path = segmentPath(seq);
    try {
      FileChannel ch = FileChannel.open(path, StandardOpenOption.CREATE_NEW,
          StandardOpenOption.WRITE);
      byte[] header = header(base);
      ch.write(ByteBuffer.wrap(header));
      ch.force(true);
      fsyncDirectory();
      channel = ch;
      segment = path;
      segmentSeq = seq;
      segmentSize = header.length;
      writePos = header.length;
      allocatedEnd = header.length;
      filesBytes += header.length;
    } catch (IOException e) {
      throw new JournalException("cannot create journal segment " + path + ": " + e, e);
    }
  }

  private byte[] header(boolean base) {
    return header(base, cipher);
  }

  private byte[] header(boolean base, Cipher sealer) {
    int flags = (key != null ? FLAG_ENCRYPTED : 0) | (base ? FLAG_BASE : 0);
    byte[] check = key != null ? seal(sealer, new byte[16], 16) : new byte[0];
    byte[] header = new byte[8 + check.length];
    System.arraycopy(MAGIC, 0, header, 0, 4);
    header[4] = VERSION;
    header[5] = (byte) flags;
    System.arraycopy(check, 0, header, 8, check.length);
    return header;
  }

  private byte[] seal(Cipher sealer, byte[] plain, int length) {
    byte[] nonce = new byte[NONCE];
    random.nextBytes(nonce);
    try {
      sealer.init(Cipher.ENCRYPT_MODE, key, new GCMParameterSpec(TAG_BITS, nonce));
      byte[] out = new byte[NONCE + sealer.getOutputSize(length)];
      System.arraycopy(nonce, 0, out, 0, NONCE);
      sealer.doFinal(plain, 0, length, out, NONCE);
      return out;
    } catch (GeneralSecurityException e) {
      throw new JournalException("cannot encrypt a journal record: " + e, e);
    }
  }

  private byte[] open(byte[] sealed, int length) throws GeneralSecurityException {
    if (length < NONCE + TAG_BITS / 8) {
      throw new AEADBadTagException("sealed record too short: " + length + " bytes");
    }
    cipher.init(Cipher.DECRYPT_MODE, key, new GCMParameterSpec(TAG_BITS, sealed, 0, NONCE));
    return cipher.doFinal(sealed, NONCE, length - NONCE);
  }

  // ---------------------------------------------------------------------------------------------
  // Syncing

  /**
   * Returns once every byte up to {@code target} is fsynced. One thread at a time syncs (the
   * leader: whoever finds no sync running); the others wait for it, and a leader covers every
   * record written before it drains the buffer.
   *
   * <p>{@code critical} callers (CRITICAL appenders in {@link #awaitDurable}) are counted. A
   * producer waiting for its own record has one record outstanding, so with N of them one sync
   * can cover at most N records, and only if it starts after all N appended. When a sync ends, the
   * producers it released need a few microseconds to append again; a leader that syncs at once
   * covers only those that were already waiting, and the released ones wait a whole sync longer:
   * the producers split into two groups that alternate, about N/2 records per sync. So a critical
   * leader first waits until as many are waiting as were waiting at once in the previous round,
   * or at most half a recent sync's duration (at most 1 ms), then syncs; the appender that
   * completes the group syncs itself, at once, rather than waking the leader to do it. That wait is
   * spent only when more producers were active in the previous round than are waiting now; a lone
   * producer never waits.
   */
  private void syncUpTo(long target, boolean critical) {
    List<FileChannel> toClose = null;
    syncLock.lock();
    try {
      boolean registered = critical && durable < target;
      boolean lead = false;
      if (registered) {
        addWaiter(target);
        pending++;
        roundPeak = Math.max(roundPeak, pending);
        if (gathering && pending >= expected) {
          // This appender completes the group: it syncs now, already running, instead of waking
          // the gathering leader to do it; that one waits for this sync like the others.
          gathering = false;
          takenOver = gatherings;
          lead = true;
          arrived.signal();
        }
      }
      try {
        while (durable < target) {
          if (!lead) {
            if (syncing) {
              awaitSync();
              continue;
            }
            syncing = true;
            if (critical && !gather()) {
              continue;
            }
          }
          lead = false;
          if (critical) {
            expected = roundPeak;
            roundPeak = 0;
          }
          long covered = -1;
          long forced = -1;
          syncLock.unlock();
          try {
            FileChannel ch;
            writeLock.lock();
            try {
              ensureOpen();
              drainBuffer();
              covered = appended;
              unsyncedRecords = 0;
              ch = channel;
            } finally {
              writeLock.unlock();
            }
            long start = System.nanoTime();
            ch.force(false);
            forced = System.nanoTime() - start;
          } catch (IOException e) {
            throw new JournalException("cannot sync journal segment " + segment + ": " + e, e);
          } finally {
            syncLock.lock();
            syncing = false;
            if (forced >= 0) {
              // Only a force that returned makes anything durable; after a failure the next
              // waiter leads and meets the failure itself if it persists.
              syncs++;
              forceNanos += (forced - forceNanos) / 8;
              advanceDurable(covered);
            }
            if (!retired.isEmpty()) {
              toClose = toClose == null ? new ArrayList<>() : toClose;
              toClose.addAll(retired);
              retired.clear();
            }
            syncDone.signalAll();
          }
        }
      } finally {
        if (registered) {
          removeWaiter(target);
        }
      }
    } finally {
      syncLock.unlock();
      if (toClose != null) {
        toClose.forEach(FileJournal::closeQuietly);
      }
    }
  }

  /**
   * The leader waits briefly for the critical appenders of the previous round (syncLock held).
   * Returns whether it still leads: false when the appender that completed the group took over.
   * Never throws: an interrupt ends the wait.
   */
  private boolean gather() {
    if (pending >= expected) {
      return true;
    }
    long left = Math.min(forceNanos / 2, MAX_GATHER_NANOS);
    long mine = ++gatherings;
    gathering = true;
    try {
      while (takenOver != mine && pending < expected && left > 0 && !closed) {
        try {
          left = arrived.awaitNanos(left);
        } catch (InterruptedException e) {
          // Sync now instead (unless taken over); the caller sees its interrupt flag.
          Thread.currentThread().interrupt();
          break;
        }
      }
    } finally {
      if (takenOver != mine) {
        gathering = false;
      }
    }
    return takenOver != mine;
  }

  /**
   * Moves {@code durable} forward (syncLock held); the critical appenders it covers stop counting
   * as pending now, not when they get to run again.
   */
  private void advanceDurable(long to) {
    if (to <= durable) {
      return;
    }
    for (int i = 0; i < waiterCount; i++) {
      if (waiterTargets[i] > durable && waiterTargets[i] <= to) {
        pending--;
      }
    }
    durable = to;
  }

  private void addWaiter(long target) {
    if (waiterCount == waiterTargets.length) {
      waiterTargets = Arrays.copyOf(waiterTargets, waiterCount * 2);
    }
    waiterTargets[waiterCount++] = target;
  }

  /** Removes one waiter for {@code target} (syncLock held). */
  private void removeWaiter(long target) {
    for (int i = 0; i < waiterCount; i++) {
      if (waiterTargets[i] == target) {
        if (target > durable) {
          pending--;
        }
        waiterTargets[i] = waiterTargets[--waiterCount];
        return;
      }
    }
  }

  private void awaitSync() {
    try {
      syncDone.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new JournalException("interrupted while waiting for journal " + dir + " to sync");
    }
  }

  private void wakeFlusher() {
    synchronized (flusherMonitor) {
      flushSoon = true;
      flusherMonitor.notifyAll();
    }
  }

  private void flushLoop() {
    long intervalNanos = commitInterval.toNanos();
    while (!closed) {
      synchronized (flusherMonitor) {
        if (!flushSoon) {
          try {
            flusherMonitor.wait(Math.max(1, intervalNanos / 1_000_000),
                (int) (intervalNanos % 1_000_000));
          } catch (InterruptedException e) {
            return;
          }
        }
        flushSoon = false;
      }
      if (closed) {
        return;
      }
      try {
        long target;
        boolean compactNow;
        writeLock.lock();
        try {
          if (closed) {
            return;
          }
          target = appended;
          compactNow = filesBytes > compactionMinBytes
              && liveBytes < (1.0 - compactionGarbageRatio) * filesBytes;
        } finally {
          writeLock.unlock();
        }
        syncUpTo(target, false);
        if (compactNow) {
          compactNow();
        }
      } catch (RuntimeException e) {
        if (!closed) {
          LOG.log(System.Logger.Level.ERROR, "journal " + dir + ": background commit failed", e);
        }
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Compaction

  /*
   * Under the write lock: copy the live state (O(n) references, no I/O), seal the active segment
   * and continue in segment seq + 2, reserving seq + 1 for the base. Without the lock: write the
   * copy to "<seq + 1>.seg.tmp", fsync, rename atomically, fsync the directory. Then delete the
   * segments older than the base. Recovery replays the newest base and what follows it, or, if
   * the rename never happened, every old segment and what follows: the same state either way.
   */
  private void compactNow() {
    synchronized (compactionLock) {
      long baseSeq;
      ReplayState snapshot;
      writeLock.lock();
      try {
        ensureOpen();
        snapshot = state.copy();
        baseSeq = segmentSeq + 1;
        roll(baseSeq + 1);
      } finally {
        writeLock.unlock();
      }
      Path target = segmentPath(baseSeq);
      Path tmp = target.resolveSibling(target.getFileName() + ".tmp");
      long written;
      try (FileChannel out = FileChannel.open(tmp, StandardOpenOption.CREATE,
          StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE)) {
        written = writeSnapshot(out, snapshot);
        out.force(true);
      } catch (IOException | GeneralSecurityException e) {
        deleteQuietly(tmp);
        throw new JournalException("cannot write compacted journal segment " + tmp + ": " + e, e);
      }
      try {
        try {
          Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE);
        } catch (AtomicMoveNotSupportedException e) {
          throw new IOException("the file system cannot rename atomically", e);
        }
        fsyncDirectory();
      } catch (IOException e) {
        deleteQuietly(tmp);
        throw new JournalException("cannot install compacted journal segment " + target + ": "
            + e, e);
      }
      // The base is durable and supersedes every older segment: from here a crash recovers it.
      writeLock.lock();
      try {
        long freed = 0;
        for (Path p : segmentsBefore(baseSeq)) {
          freed += sizeQuietly(p);
          deleteQuietly(p);
        }
        filesBytes += written - freed;
      } finally {
        writeLock.unlock();
      }
      fsyncDirectoryQuietly();
    }
  }

  /** Writes {@code snapshot} as a base segment with its own codec, checksum and cipher. */
  private long writeSnapshot(FileChannel out, ReplayState snapshot)
      throws IOException, GeneralSecurityException {
    Cipher sealer = key == null ? null : Cipher.getInstance("AES/GCM/NoPadding");
    JournalCodec body = new JournalCodec();
    CRC32C checksum = new CRC32C();
    byte[] header = header(true, sealer);
    out.write(ByteBuffer.wrap(header));
    long written = header.length;
    byte[] chunk = new byte[64 * 1024];
    int[] used = {0};
    SnapshotSink sink = b -> {
      byte[] record = sealer == null ? b.array() : seal(sealer, b.array(), b.length());
      int length = sealer == null ? b.length() : record.length;
      checksum.reset();
      checksum.update(record, 0, length);
      int total = RECORD_HEADER + length;
      byte[] target = chunk;
      if (used[0] + total > chunk.length) {
        writeFully(out, chunk, used[0]);
        used[0] = 0;
        if (total > chunk.length) {
          target = new byte[total];
        }
      }
      putInt(target, used[0], length);
      putInt(target, used[0] + 4, ~length);
      putInt(target, used[0] + 8, (int) checksum.getValue());
      System.arraycopy(record, 0, target, used[0] + RECORD_HEADER, length);
      if (target != chunk) {
        writeFully(out, target, total);
      } else {
        used[0] += total;
      }
      return total;
    };
    for (Map.Entry<String, Instant> e : snapshot.seen.entrySet()) {
      written += sink.accept(body.seen(e.getKey(), e.getValue()));
    }
    for (QueuedEvent e : snapshot.pending.values()) {
      written += sink.accept(body.append(e));
    }
    for (QueuedEvent e : snapshot.dead.values()) {
      written += sink.accept(body.append(e));
      written += sink.accept(body.dead(e.eventId(), e.attempts(),
          snapshot.deadReasons.get(e.eventId())));
    }
    writeFully(out, chunk, used[0]);
    return written;
  }

  @FunctionalInterface
  private interface SnapshotSink {
    int accept(JournalCodec body) throws IOException;
  }

  private static void writeFully(FileChannel out, byte[] bytes, int length) throws IOException {
    ByteBuffer bb = ByteBuffer.wrap(bytes, 0, length);
    while (bb.hasRemaining()) {
      out.write(bb);
    }
  }

  private static long sizeQuietly(Path p) {
    try {
      return Files.size(p);
    } catch (IOException e) {
      return 0;
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Recovery

  private void recover() throws IOException, GeneralSecurityException {
    List<Long> seqs = new ArrayList<>();
    try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
      for (Path p : files) {
        String name = p.getFileName().toString();
        if (name.startsWith(PREFIX) && name.endsWith(SUFFIX + ".tmp")) {
          // An unfinished compaction: the segments it would have replaced are all still here.
          Files.deleteIfExists(p);
        } else if (name.startsWith(PREFIX) && name.endsWith(SUFFIX)) {
          String digits = name.substring(PREFIX.length(), name.length() - SUFFIX.length());
          try {
            seqs.add(Long.parseLong(digits));
          } catch (NumberFormatException e) {
            throw new JournalException("unexpected file in journal directory: " + p);
          }
        }
      }
    }
    seqs.sort(null);
    int baseIndex = 0;
    for (int i = seqs.size() - 1; i >= 0; i--) {
      if ((readFlags(segmentPath(seqs.get(i))) & FLAG_BASE) != 0) {
        baseIndex = i;
        break;
      }
    }
    for (int i = 0; i < baseIndex; i++) {
      // Superseded by a complete base segment; left behind by a crash right after compaction.
      Files.deleteIfExists(segmentPath(seqs.get(i)));
    }
    seqs = new ArrayList<>(seqs.subList(baseIndex, seqs.size()));
    long end = 0;
    for (int i = 0; i < seqs.size(); i++) {
      end = replaySegment(segmentPath(seqs.get(i)), i == seqs.size() - 1);
    }
    if (seqs.isEmpty()) {
      startSegment(1, false);
    } else {
      long last = seqs.get(seqs.size() - 1);
      segmentSeq = last;
      segment = segmentPath(last);
      channel = FileChannel.open(segment, StandardOpenOption.WRITE);
      segmentSize = end;
      writePos = end;
      allocatedEnd = Math.max(end, channel.size());
    }
    liveBytes = estimateLive();
    syncLock.lock();
    try {
      durable = appended;
    } finally {
      syncLock.unlock();
    }
  }

  private int readFlags(Path path) throws IOException {
    try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
      if (ch.size() < 8) {
        return 0;
      }
      ByteBuffer h = ByteBuffer.allocate(8);
      readFully(ch, h, 0);
      return h.get(5);
    }
  }

  /**
   * Replays one segment's records into the state; returns the offset where its records end (for
   * the newest segment, where appending continues; zeros may follow it there).
   */
  private long replaySegment(Path path, boolean newest) throws IOException,
      GeneralSecurityException {
    try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ,
        StandardOpenOption.WRITE)) {
      long size = ch.size();
      int headerLength = checkHeader(path, ch, size, newest);
      if (headerLength < 0) {
        return ch.size();
      }
      long pos = headerLength;
      ByteBuffer head = ByteBuffer.allocate(RECORD_HEADER);
      byte[] record = new byte[4096];
      while (pos < size) {
        if (size - pos < RECORD_HEADER) {
          pos = endOfRecords(path, ch, pos, size, size, newest, "a record header cut short",
              null);
          break;
        }
        head.clear();
        readFully(ch, head, pos);
        int length = head.getInt(0);
        int check = head.getInt(4);
        int expectedCrc = head.getInt(8);
        if (length != ~check || length <= 0 || length > MAX_RECORD) {
          boolean zero = length == 0 && check == 0 && expectedCrc == 0;
          pos = endOfRecords(path, ch, pos, pos + RECORD_HEADER, size, newest,
              zero ? "zero-filled space" : "an invalid record header",
              "invalid record length (" + length + " / " + ~check + ")");
          break;
        }
        if (pos + RECORD_HEADER + length > size) {
          pos = endOfRecords(path, ch, pos, size, size, newest, "a record cut short", null);
          break;
        }
        if (record.length < length) {
          record = new byte[Math.max(length, record.length * 2)];
        }
        readFully(ch, ByteBuffer.wrap(record, 0, length), pos + RECORD_HEADER);
        crc.reset();
        crc.update(record, 0, length);
        if ((int) crc.getValue() != expectedCrc) {
          pos = endOfRecords(path, ch, pos, pos + RECORD_HEADER + length, size, newest,
              "a record with a bad checksum", "checksum mismatch");
          break;
        }
        byte[] body = record;
        int bodyLength = length;
        if (cipher != null) {
          try {
            body = open(record, length);
          } catch (AEADBadTagException e) {
            throw corrupt(path, pos, "record failed decryption: wrong key, or the data was"
                + " tampered with");
          }
          bodyLength = body.length;
        }
        try {
          JournalCodec.apply(body, bodyLength, state);
        } catch (JournalCodec.MalformedRecordException e) {
          throw corrupt(path, pos, "malformed record: " + e.getMessage());
        }
        pos += RECORD_HEADER + length;
        appended += RECORD_HEADER + length;
      }
      long end = Math.min(pos, size);
      filesBytes += end;
      return end;
    }
  }

  /** Validates a segment header; returns its length, or -1 for a newest segment cut short in it. */
  private int checkHeader(Path path, FileChannel ch, long size, boolean newest)
      throws IOException, GeneralSecurityException {
    int fullHeader = 8;
    if (size >= 6) {
      ByteBuffer flags = ByteBuffer.allocate(1);
      readFully(ch, flags, 5);
      fullHeader += (flags.get(0) & FLAG_ENCRYPTED) != 0 ? KEY_CHECK : 0;
    }
    if (size < fullHeader) {
      if (newest) {
        // Created, then the process died before its header was complete; no record follows.
        LOG.log(System.Logger.Level.WARNING, "journal segment {0}: header cut short ({1} bytes),"
            + " starting it afresh", path, size);
        ch.truncate(0);
        ch.write(ByteBuffer.wrap(header(false)), 0);
        ch.force(true);
        filesBytes += ch.size();
        return -1;
      }
      throw corrupt(path, 0, "segment header cut short (" + size + " bytes)");
    }
    ByteBuffer h = ByteBuffer.allocate(8);
    readFully(ch, h, 0);
    byte[] magic = Arrays.copyOf(h.array(), 4);
    if (!Arrays.equals(magic, MAGIC)) {
      throw corrupt(path, 0, "not a relaykit journal segment (bad magic)");
    }
    if (h.get(4) != VERSION) {
      throw corrupt(path, 4, "unsupported segment version " + h.get(4));
    }
    boolean encrypted = (h.get(5) & FLAG_ENCRYPTED) != 0;
    if (encrypted && key == null) {
      throw new JournalException("journal segment " + path + " is encrypted: configure the"
          + " journal with its encryption key");
    }
    if (!encrypted && key != null) {
      throw new JournalException("journal segment " + path + " is not encrypted but an"
          + " encryption key was configured: open it without a key, or start a new directory");
    }
    if (!encrypted) {
      return 8;
    }
    if (size < 8 + KEY_CHECK) {
      throw corrupt(path, 8, "key check cut short");
    }
    ByteBuffer check = ByteBuffer.allocate(KEY_CHECK);
    readFully(ch, check, 8);
    try {
      byte[] plain = open(check.array(), KEY_CHECK);
      if (!Arrays.equals(plain, new byte[16])) {
        throw new AEADBadTagException("unexpected key check");
      }
    } catch (AEADBadTagException e) {
      throw new JournalException("journal segment " + path + " cannot be decrypted with the"
          + " configured key: wrong key");
    }
    return 8 + KEY_CHECK;
  }

  /**
   * The record at {@code pos}, spanning at most to {@code extentEnd}, fails its checks: decides
   * whether that is the end of the records or corruption, and returns where the records end.
   *
   * <p>Only the newest segment may end early. There, zeros from {@code pos} to the end of the
   * file are the preallocated tail: the normal end, kept for the next appends. A torn write (the
   * process or the machine stopped before the record was complete) is recognised by zeros too:
   * either everything after the record's extent is zero (a write cut short, followed by the
   * preallocated tail, or by the end of the file), or the extent holds a whole zero-filled sector
   * (the machine stopped after a later part of an unsynced write reached the disk but not this
   * one). Then the record and everything after it are cut off with a warning: none of it was
   * synced, since a sync writes all of it. Anything else is corruption: a {@link JournalException}
   * naming the file and offset ({@code corruptWhat}, or {@code what} in a sealed segment).
   */
  private long endOfRecords(Path path, FileChannel ch, long pos, long extentEnd, long size,
      boolean newest, String what, String corruptWhat) throws IOException {
    if (!newest) {
      if (corruptWhat != null && !allZero(ch, pos, size)) {
        throw corrupt(path, pos, corruptWhat);
      }
      throw corrupt(path, pos, what + " in a sealed segment");
    }
    if (allZero(ch, pos, size)) {
      // The preallocated tail (or nothing was ever written here): the records end at pos.
      return pos;
    }
    if (!allZero(ch, Math.min(extentEnd, size), size) && !hasZeroSector(ch, pos, extentEnd, size)) {
      throw corrupt(path, pos, corruptWhat != null ? corruptWhat : what);
    }
    LOG.log(System.Logger.Level.WARNING, "journal segment {0}: {1} at offset {2} (a write torn"
        + " by a crash); dropping the {3} bytes from there, keeping every complete record before"
        + " it", path, what, pos, size - pos);
    ch.truncate(pos);
    ch.force(true);
    return pos;
  }

  /** Whether a whole aligned {@link #SECTOR} starting in [from, to) and inside the file is zero. */
  private static boolean hasZeroSector(FileChannel ch, long from, long to, long size)
      throws IOException {
    long sector = (from + SECTOR - 1) / SECTOR * SECTOR;
    ByteBuffer b = ByteBuffer.allocate(SECTOR);
    for (; sector < to && sector + SECTOR <= size; sector += SECTOR) {
      b.clear();
      readFully(ch, b, sector);
      boolean zero = true;
      for (int i = 0; i < SECTOR && zero; i++) {
        zero = b.get(i) == 0;
      }
      if (zero) {
        return true;
      }
    }
    return false;
  }

  private static JournalException corrupt(Path path, long offset, String what) {
    return new JournalException("corrupt journal segment " + path + " at offset " + offset + ": "
        + what);
  }

  private static boolean allZero(FileChannel ch, long from, long size) throws IOException {
    ByteBuffer b = ByteBuffer.allocate(8192);
    long pos = from;
    while (pos < size) {
      b.clear();
      int n = ch.read(b, pos);
      if (n <= 0) {
        break;
      }
      for (int i = 0; i < n; i++) {
        if (b.get(i) != 0) {
          return false;
        }
      }
      pos += n;
    }
    return true;
  }

  private static void readFully(FileChannel ch, ByteBuffer b, long pos) throws IOException {
    long at = pos;
    while (b.hasRemaining()) {
      int n = ch.read(b, at);
      if (n < 0) {
        throw new IOException("unexpected end of file at " + at);
      }
      at += n;
    }
  }

  private long estimateLive() {
    long live = 0;
    for (String id : state.seen.keySet()) {
      live += JournalCodec.seenSize(id);
    }
    for (QueuedEvent e : state.pending.values()) {
      live += JournalCodec.appendSize(e);
    }
    for (QueuedEvent e : state.dead.values()) {
      live += JournalCodec.appendSize(e) + JournalCodec.deadSize(e.eventId(), "");
    }
    return live;
  }

  // ---------------------------------------------------------------------------------------------

  private void stop(boolean orderly) {
    closed = true;
    wakeFlusher();
    if (flusher != Thread.currentThread()) {
      try {
        flusher.join(orderly ? 10_000 : 1_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    writeLock.lock();
    try {
      buffered = 0;
      if (orderly && channel.isOpen() && allocatedEnd > writePos) {
        try {
          trimPreallocation();
          channel.force(true);
        } catch (IOException e) {
          LOG.log(System.Logger.Level.WARNING, "journal segment " + segment + ": cannot cut"
              + " off its preallocated zeros at close; the next open reads them as the end", e);
        }
      }
      closeQuietly(channel);
    } finally {
      writeLock.unlock();
    }
    List<FileChannel> toClose;
    syncLock.lock();
    try {
      toClose = new ArrayList<>(retired);
      retired.clear();
      syncDone.signalAll();
      arrived.signalAll();
    } finally {
      syncLock.unlock();
    }
    toClose.forEach(FileJournal::closeQuietly);
  }

  private void ensureOpen() {
    if (closed) {
      throw new IllegalStateException("journal " + dir + " is closed");
    }
  }

  private Path segmentPath(long seq) {
    return dir.resolve(String.format("%s%020d%s", PREFIX, seq, SUFFIX));
  }

  private List<Path> segmentsBefore(long seq) {
    List<Path> out = new ArrayList<>();
    try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, PREFIX + "*" + SUFFIX)) {
      for (Path p : files) {
        String name = p.getFileName().toString();
        try {
          long s = Long.parseLong(name.substring(PREFIX.length(),
              name.length() - SUFFIX.length()));
          if (s < seq) {
            out.add(p);
          }
        } catch (NumberFormatException ignored) {
          // not ours
        }
      }
    } catch (IOException e) {
      LOG.log(System.Logger.Level.WARNING, "journal " + dir + ": cannot list superseded "
          + "segments; they are deleted at the next open", e);
    }
    return out;
  }

  private void fsyncDirectory() throws IOException {
    try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
      d.force(true);
    } catch (IOException e) {
      // Some platforms cannot open a directory for syncing; Linux can, and that is where it counts.
      if (System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).contains("linux")) {
        throw e;
      }
    }
  }

  private void fsyncDirectoryQuietly() {
    try {
      fsyncDirectory();
    } catch (IOException e) {
      LOG.log(System.Logger.Level.WARNING, "journal " + dir + ": cannot sync directory", e);
    }
  }

  private static void putInt(byte[] b, int at, int v) {
    b[at] = (byte) (v >>> 24);
    b[at + 1] = (byte) (v >>> 16);
    b[at + 2] = (byte) (v >>> 8);
    b[at + 3] = (byte) v;
  }

  private static void closeQuietly(FileChannel ch) {
    if (ch != null) {
      try {
        ch.close();
      } catch (IOException ignored) {
        // closing after a failure or a simulated crash
      }
    }
  }

  private static void deleteQuietly(Path p) {
    try {
      Files.deleteIfExists(p);
    } catch (IOException e) {
      LOG.log(System.Logger.Level.WARNING, "cannot delete " + p, e);
    }
  }

  @Override
  public String toString() {
    return "FileJournal[" + dir + (key != null ? ", encrypted" : "") + "]";
  }

  /**
   * Configuration for a {@link FileJournal}; {@link #build()} validates it (naming the field and
   * value) and opens the journal, replaying what the directory holds.
   */
  public static final class Builder {
    private final Path dir;
    private Duration commitInterval = Duration.ofMillis(20);
    private int commitRecords = 1000;
    private long segmentBytes = 64L * 1024 * 1024;
    private long compactionMinBytes = 4L * 1024 * 1024;
    private double compactionGarbageRatio = 0.5;
    private SecretKey key;

    private Builder(Path dir) {
      this.dir = dir;
    }

    /** Non-critical changes are fsynced at least this often. Default 20 ms. */
    public Builder commitInterval(Duration commitInterval) {
      this.commitInterval = commitInterval;
      return this;
    }

    /** Non-critical changes are fsynced as soon as this many are waiting. Default 1000. */
    public Builder commitRecords(int commitRecords) {
      this.commitRecords = commitRecords;
      return this;
    }

    /** A segment is sealed and a new one started past this size. Default 64 MiB. */
    public Builder segmentBytes(long segmentBytes) {
      this.segmentBytes = segmentBytes;
      return this;
    }

    /** No compaction while the files are smaller than this. Default 4 MiB. */
    public Builder compactionMinBytes(long compactionMinBytes) {
      this.compactionMinBytes = compactionMinBytes;
      return this;
    }

    /**
     * Compact when more than this fraction of the files is garbage, in (0, 1). Default 0.5: most
     * of it.
     */
    public Builder compactionGarbageRatio(double compactionGarbageRatio) {
      this.compactionGarbageRatio = compactionGarbageRatio;
      return this;
    }

    /** Seal every record with AES-GCM under {@code key} (AES, 128/192/256 bits). Default none. */
    public Builder encryptionKey(SecretKey key) {
      this.key = key;
      return this;
    }

    /**
     * Opens the journal, recovering what {@code dir} holds.
     *
     * @throws IllegalArgumentException naming the field and value when a setting is invalid
     * @throws JournalException when the directory cannot be used or holds corrupt data
     */
    public FileJournal build() {
      Checks.requireNonNull("dir", dir);
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
