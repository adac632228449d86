package io.relaykit.queue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.zip.CRC32C;

/**
 * The active segment of a {@link FileJournal}: frames (and with a key seals) each record into a
 * write buffer, writes the buffer to the segment file, seals a full segment with its trailer and
 * starts the next. Not thread-safe: the journal calls it under its write lock. Only the journal's
 * I/O thread calls the methods that write, force or truncate ({@link #prepare}, {@link #drain},
 * {@link #close}); {@link #append} only fills the buffer.
 *
 * <p>Failure rules. {@link #prepare} runs the roll or buffer write a record needs before {@link
 * #append} frames it; when it throws, the record is refused and nothing changed. A buffer write that fails (a full disk) keeps the buffer for the next try. Creating a
 * segment that fails deletes what it created and leaves the journal without an active segment
 * (the previous one is sealed and fsynced); the next append tries again. A failed fsync or a
 * failed write inside an allocated segment fails the journal closed ({@link GroupCommit#fail}).
 *
 * <p>Preallocation: the active segment's file extends past its records with zeros actually
 * written (not a sparse setLength, not fallocate: both leave blocks whose first write changes
 * metadata), in chunks of 64 KiB growing to 1 MiB, never past {@code segmentBytes}. A record then
 * overwrites blocks that are already allocated and sized, so fdatasync ({@code force(false)})
 * writes data only instead of also committing a size change to the file system's journal, and a
 * record write never needs new space: the zeros are written first, and if there is no room for
 * them nothing of the records is written. A sealed segment is cut to its trailer before the next
 * one is created, and the active one to its records at close; only a crash leaves a zero tail,
 * and only on the newest segment.
 */
final class SegmentWriter {
  private static final System.Logger LOG = System.getLogger(FileJournal.class.getName());
  static final int WRITE_BUFFER = 256 * 1024;
  /** Past this, an append waits for the I/O thread to write the buffer (backpressure). */
  static final int MAX_BUFFER = 4 * WRITE_BUFFER;
  private static final int PREALLOCATE_MIN = 64 * 1024;
  private static final int PREALLOCATE_MAX = 1024 * 1024;
  private static final byte[] ZEROS = new byte[64 * 1024];

  private final Path dir;
  private final FileIo io;
  private final long segmentBytes;
  private final byte[] journalId;
  private final RecordCipher cipher;
  private final GroupCommit commit;
  private final CRC32C crc = new CRC32C();
  private final int headerLength;
  private final int trailerLength;

  private byte[] buffer = new byte[8192];
  private int buffered;
  /** The active segment, or null after a roll whose new segment could not be created. */
  private FileChannel channel;
  private Path path;
  private long seq;
  /** The newest segment's number, active or sealed. */
  private long lastSeq;
  /** The active segment's logical size: its header and records, buffered ones included. */
  private long segmentSize;
  /** Where the next byte drained to the active segment's channel goes. */
  private long writePos;
  /** The active segment file's length: records up to writePos, zeros after. */
  private long allocatedEnd;
  /** A segment file that failed to be created and could not be deleted then. */
  private Path leftover;
  /** Every byte handed to the journal (records and trailers): the tickets of durability. */
  private long appended;
  /** Bytes of journal data in all files, counting what is buffered. */
  private long filesBytes;
  /** Of filesBytes, what is not in the active segment (sealed segments and the base). */
  private long sealedBytes;

  SegmentWriter(Path dir, FileIo io, long segmentBytes, byte[] journalId, RecordCipher cipher,
      GroupCommit commit) {
    this.dir = dir;
    this.io = io;
    this.segmentBytes = segmentBytes;
    this.journalId = journalId;
    this.cipher = cipher;
    this.commit = commit;
    this.headerLength = SegmentFormat.headerLength(cipher != null);
    this.trailerLength = SegmentFormat.trailerLength(cipher != null);
  }

  /**
   * Starts from recovery: {@code files} bytes of journal data, of which the newest segment
   * {@code lastSeq} holds {@code end}; it continues in {@code ch} (null: sealed, or none yet).
   */
  void resume(long files, long lastSeq, Path path, FileChannel ch, long end, long fileSize) {
    this.filesBytes = files;
    this.lastSeq = lastSeq;
    this.appended = files;
    if (ch != null) {
      this.channel = ch;
      this.path = path;
      this.seq = lastSeq;
      this.segmentSize = end;
      this.writePos = end;
      this.allocatedEnd = Math.max(end, fileSize);
      this.sealedBytes = files - end;
    } else {
      this.sealedBytes = files;
    }
  }

  long appended() {
    return appended;
  }

  long filesBytes() {
    return filesBytes;
  }

  long sealedBytes() {
    return sealedBytes;
  }

  /** The active segment's number, or -1 when there is none. */
  long activeSeq() {
    return channel == null ? -1 : seq;
  }

  /** The active segment's logical size (where the next record goes). */
  long activeSize() {
    return segmentSize;
  }

  FileChannel channel() {
    return channel;
  }

  Path path() {
    return path;
  }

  /** A compaction replaced {@code freed} bytes of sealed files with a base of {@code base}. */
  void compacted(long base, long freed) {
    filesBytes += base - freed;
    sealedBytes += base - freed;
  }

  /** The framed length on disk of a record whose body is {@code length} bytes. */
  int framedLength(int length) {
    return SegmentFormat.FRAME_HEADER + length + (cipher != null ? RecordCipher.OVERHEAD : 0);
  }

  /**
   * Whether a record of {@code framed} bytes needs I/O before {@link #append} can take it: a
   * segment to start, a full one to seal, or a full buffer to write. The journal's I/O thread
   * does that ({@link #prepare}); callers' threads never touch the channel.
   */
  boolean needsIo(int framed) {
    return channel == null || rollDue(framed)
        || (buffered > 0 && buffered + framed > MAX_BUFFER);
  }

  private boolean rollDue(int framed) {
    return segmentSize + framed + trailerLength > segmentBytes && segmentSize > headerLength;
  }

  /** Whether the buffer holds enough for the I/O thread to write it now. */
  boolean drainDue() {
    return buffered >= WRITE_BUFFER;
  }

  /**
   * On the journal's I/O thread: the roll, segment start or buffer write a record of {@code
   * framed} bytes needs before {@link #append} can take it.
   *
   * @throws JournalException when it fails; what {@link #append} would then refuse
   */
  void prepare(int framed) {
    if (channel == null) {
      startNext();
    } else if (rollDue(framed)) {
      roll();
    }
    if (buffered > 0 && buffered + framed > WRITE_BUFFER) {
      drain();
    }
  }

  /**
   * Frames {@code body[0, length)} (sealed with its position when encrypted) into the buffer;
   * returns the framed length. No I/O: the caller made sure {@link #needsIo} is false.
   */
  int append(byte[] body, int length) {
    int framed = framedLength(length);
    if (needsIo(framed)) {
      throw new IllegalStateException("journal segment " + path + " needs I/O before this"
          + " record: prepare it on the journal's I/O thread");
    }
    byte[] record = body;
    int recordLength = length;
    if (cipher != null) {
      record = cipher.seal(body, length,
          cipher.bind(journalId, RecordCipher.KIND_SEGMENT, seq, segmentSize));
      recordLength = record.length;
    }
    if (framed > buffer.length - buffered) {
      buffer = Arrays.copyOf(buffer, Math.max(buffer.length * 2, buffered + framed));
    }
    SegmentFormat.putFrame(buffer, buffered, record, recordLength, crc);
    buffered += framed;
    segmentSize += framed;
    appended += framed;
    filesBytes += framed;
    return framed;
  }

  /**
   * Writes the buffer to the active segment (no fsync), zeros ahead of it first.
   *
   * @throws JournalException when it cannot: the buffer is kept for the next try
   */
  void drain() {
    if (buffered == 0) {
      return;
    }
    long end = writePos + buffered;
    try {
      if (end > allocatedEnd) {
        preallocate(end);
      }
      SegmentFormat.writeFully(channel, ByteBuffer.wrap(buffer, 0, buffered), writePos);
    } catch (ClosedChannelException e) {
      // Not a full disk: the channel is gone (closed by an interrupt of the thread writing it),
      // so buffered records could never be written; fail closed instead of accepting more.
      throw commit.fail(path, e);
    } catch (IOException e) {
      throw new JournalException("cannot write to journal segment " + path + ": " + e, e);
    }
    writePos = end;
    buffered = 0;
    if (buffer.length > MAX_BUFFER * 2) {
      buffer = new byte[8192];
    }
  }

  /**
   * Extends the active segment with zeros past {@code end} (where the records being drained will
   * end): by the segment's size so far, at least 64 KiB and at most 1 MiB, not past segmentBytes.
   * When there is no room for that much, it extends to {@code end} only.
   */
  private void preallocate(long end) throws IOException {
    long chunk = Math.min(PREALLOCATE_MAX, Math.max(PREALLOCATE_MIN, end));
    long target = Math.max(end, Math.min(end + chunk, segmentBytes));
    try {
      zeroFill(target);
    } catch (IOException e) {
      if (allocatedEnd >= end) {
        return;
      }
      zeroFill(end);
    }
  }

  private void zeroFill(long target) throws IOException {
    while (allocatedEnd < target) {
      int n = (int) Math.min(ZEROS.length, target - allocatedEnd);
      allocatedEnd += channel.write(ByteBuffer.wrap(ZEROS, 0, n), allocatedEnd);
    }
  }

  /** Starts a segment when there is none (after a failed one, or at open). */
  void ensureActive() {
    if (channel == null) {
      startNext();
    }
  }

  /** Seals the active segment (trailer, cut, fsync) and starts the next one. */
  void roll() {
    seal();
    startNext();
  }

  /**
   * Writes the trailer after the last record, cuts the zeros off and fsyncs the segment: from then
   * on it is sealed, and everything handed to the journal so far is durable.
   */
  private void seal() {
    drain();
    byte[] body = {SegmentFormat.TRAILER};
    byte[] record = cipher == null ? body : cipher.seal(body, 1,
        cipher.bind(journalId, RecordCipher.KIND_SEGMENT, seq, segmentSize));
    byte[] frame = new byte[trailerLength];
    SegmentFormat.putFrame(frame, 0, record, record.length, crc);
    long end = writePos + frame.length;
    try {
      if (end > allocatedEnd) {
        zeroFill(end);
      }
    } catch (ClosedChannelException e) {
      throw commit.fail(path, e);
    } catch (IOException e) {
      throw new JournalException("cannot seal journal segment " + path + ": " + e, e);
    }
    try {
      SegmentFormat.writeFully(channel, ByteBuffer.wrap(frame), writePos);
      if (allocatedEnd > end) {
        channel.truncate(end);
      }
      channel.force(true);
    } catch (IOException e) {
      throw commit.fail(path, e);
    }
    writePos = end;
    allocatedEnd = end;
    segmentSize = end;
    appended += frame.length;
    filesBytes += frame.length;
    sealedBytes += end;
    commit.advance(appended);
    commit.retire(channel);
    channel = null;
  }

  /** Creates segment lastSeq + 1 with its header, fsynced; on failure leaves no file. */
  private void startNext() {
    long next = lastSeq + 1;
    Path p = SegmentFormat.segmentPath(dir, next);
    FileChannel ch = null;
    boolean created = false;
    byte[] header = SegmentFormat.header(false, next, lastSeq, journalId, cipher);
    try {
      if (p.equals(leftover)) {
        io.delete(p);
        leftover = null;
      }
      ch = io.open(p, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
          StandardOpenOption.WRITE);
      created = true;
      SegmentFormat.writeFully(ch, ByteBuffer.wrap(header), 0);
      ch.force(true);
      io.syncDirectory(dir);
    } catch (IOException e) {
      // An interrupt of the I/O thread (ClosedByInterruptException) refuses only this change:
      // the new file is deleted, and the flag is cleared so that the cleanup and the next
      // change's start work. On a caller's thread (the opener's, at open) the flag is set again
      // after the cleanup: the caller's interrupt is its own, never swallowed.
      boolean interrupted = Thread.interrupted();
      try {
        cleanUpFailedStart(ch, created, p);
      } finally {
        if (interrupted && !(Thread.currentThread() instanceof FileJournal.OwnThread)) {
          Thread.currentThread().interrupt();
        }
      }
      throw new JournalException("cannot create journal segment " + p + ": " + e, e);
    }
    channel = ch;
    path = p;
    seq = next;
    lastSeq = next;
    segmentSize = header.length;
    writePos = header.length;
    allocatedEnd = header.length;
    filesBytes += header.length;
    appended += header.length;
  }

  /** Closes and deletes a segment whose start failed; a file that stays is replaced next time. */
  private void cleanUpFailedStart(FileChannel ch, boolean created, Path p) {
    FileJournal.closeQuietly(ch);
    if (created) {
      try {
        io.delete(p);
        io.syncDirectory(dir);
      } catch (IOException d) {
        leftover = p;
        LOG.log(System.Logger.Level.WARNING, "cannot delete the journal segment " + p
            + " that could not be started; the next attempt replaces it", d);
      }
    }
  }

  /**
   * At close: drops what is buffered (the caller flushed what it wants kept) and, when {@code
   * orderly}, cuts the zeros off the active segment; then closes it.
   */
  void close(boolean orderly) {
    buffered = 0;
    if (channel == null) {
      return;
    }
    if (orderly && channel.isOpen() && allocatedEnd > writePos) {
      try {
        channel.truncate(writePos);
        channel.force(true);
        allocatedEnd = writePos;
      } catch (IOException e) {
        LOG.log(System.Logger.Level.WARNING, "journal segment " + path + ": cannot cut off its"
            + " preallocated zeros at close; the next open reads them as the end", e);
      }
    }
    FileJournal.closeQuietly(channel);
  }
}
