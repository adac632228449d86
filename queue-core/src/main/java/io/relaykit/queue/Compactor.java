package io.relaykit.queue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * Writes a {@link FileJournal}'s live state as a base file and installs it: written to a
 * temporary file, fsynced, renamed atomically over any older base of the same number, the
 * directory fsynced; then the files it supersedes (older bases, segments before the one it
 * continues in) are deleted. A crash at any point leaves either the old files or the complete new
 * base, never neither. Runs without the journal's write lock: the journal hands it a snapshot
 * (references to the immutable events) and the point in the active segment the snapshot stands
 * for, and applies the returned sizes under the lock. One compaction at a time (the journal
 * serializes them).
 */
final class Compactor {
  private static final System.Logger LOG = System.getLogger(FileJournal.class.getName());
  /** The base is fsynced every this many bytes as it is written. */
  private static final long SYNC_EVERY = 1024 * 1024;

  private final Path dir;
  private final FileIo io;
  private final RecordCipher cipher;
  private final byte[] journalId;
  private final CRC32C crc = new CRC32C();

  /** Sizes for the journal's accounting: the new base, and what was deleted. */
  record Installed(long written, long freed) {
  }

  Compactor(Path dir, FileIo io, RecordCipher cipher, byte[] journalId) {
    this.dir = dir;
    this.io = io;
    this.cipher = cipher;
    this.journalId = journalId;
  }

  /**
   * Installs {@code snapshot}, the state produced by every record before {@code offset} of
   * segment {@code seq}, as base {@code seq}. The caller made those records durable first.
   *
   * @throws JournalException when the base cannot be written or installed (nothing changed: the
   *     temporary file is deleted)
   */
  Installed install(ReplayState snapshot, long seq, long offset) {
    Path target = SegmentFormat.basePath(dir, seq);
    Path tmp = target.resolveSibling(target.getFileName() + SegmentFormat.TMP);
    long written;
    try (FileChannel out = io.open(tmp, StandardOpenOption.CREATE,
        StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE)) {
      written = write(out, snapshot, seq, offset);
      out.force(true);
    } catch (IOException | RuntimeException e) {
      deleteQuietly(tmp);
      throw new JournalException("cannot write compacted journal base " + tmp + ": " + e, e);
    }
    long replaced = sizeQuietly(target);
    try {
      io.moveAtomically(tmp, target);
      io.syncDirectory(dir);
    } catch (IOException e) {
      deleteQuietly(tmp);
      throw new JournalException("cannot install compacted journal base " + target + ": " + e,
          e);
    }
    // The base is durable and supersedes every older file: from here a crash recovers it.
    long freed = replaced;
    for (Path p : superseded(seq)) {
      long size = sizeQuietly(p);
      try {
        io.delete(p);
        freed += size;
      } catch (IOException e) {
        LOG.log(System.Logger.Level.WARNING, "cannot delete superseded journal file " + p
            + "; the next open deletes it", e);
      }
    }
    try {
      io.syncDirectory(dir);
    } catch (IOException e) {
      LOG.log(System.Logger.Level.WARNING, "journal " + dir + ": cannot sync the directory after"
          + " deleting superseded files; the next open deletes any that come back", e);
    }
    return new Installed(written, freed);
  }

  /** Bases older than {@code seq} and segments before it. */
  private List<Path> superseded(long seq) {
    List<Path> out = new ArrayList<>();
    try (DirectoryStream<Path> files = Files.newDirectoryStream(dir,
        SegmentFormat.PREFIX + "*")) {
      for (Path p : files) {
        String name = p.getFileName().toString();
        long s = SegmentFormat.seqOf(name, SegmentFormat.SEGMENT);
        long b = SegmentFormat.seqOf(name, SegmentFormat.BASE);
        if ((s >= 0 && s < seq) || (b >= 0 && b < seq)) {
          out.add(p);
        }
      }
    } catch (IOException e) {
      LOG.log(System.Logger.Level.WARNING, "journal " + dir + ": cannot list superseded files;"
          + " they are deleted at the next open", e);
    }
    return out;
  }

  /** Writes the base: header, the snapshot's records, trailer. Returns its length. */
  private long write(FileChannel out, ReplayState snapshot, long seq, long offset)
      throws IOException {
    Writer w = new Writer(out, seq);
    byte[] header = SegmentFormat.header(true, seq, offset, journalId, cipher);
    w.raw(header);
    JournalCodec body = new JournalCodec();
    for (Map.Entry<String, Instant> e : snapshot.seen.entrySet()) {
      w.record(body.seen(e.getKey(), e.getValue()).array(), body.length());
    }
    for (QueuedEvent e : snapshot.pending.values()) {
      w.record(body.append(e).array(), body.length());
    }
    for (QueuedEvent e : snapshot.dead.values()) {
      w.record(body.append(e).array(), body.length());
      w.record(body.dead(e.eventId(), e.attempts(), snapshot.deadReasons.get(e.eventId()))
          .array(), body.length());
    }
    w.record(new byte[] {SegmentFormat.TRAILER}, 1);
    w.flush();
    return w.position;
  }

  /** Frames, seals and writes records in 64 KiB chunks. */
  private final class Writer {
    private final FileChannel out;
    private final long seq;
    private byte[] chunk = new byte[64 * 1024];
    private int used;
    private long written;
    private long synced;
    long position;

    Writer(FileChannel out, long seq) {
      this.out = out;
      this.seq = seq;
    }

    void raw(byte[] bytes) throws IOException {
      ensure(bytes.length);
      System.arraycopy(bytes, 0, chunk, used, bytes.length);
      used += bytes.length;
      position += bytes.length;
    }

    void record(byte[] body, int length) throws IOException {
      byte[] record = body;
      int recordLength = length;
      if (cipher != null) {
        record = cipher.seal(body, length,
            cipher.bind(journalId, RecordCipher.KIND_BASE, seq, position));
        recordLength = record.length;
      }
      ensure(SegmentFormat.FRAME_HEADER + recordLength);
      int framed = SegmentFormat.putFrame(chunk, used, record, recordLength, crc);
      used += framed;
      position += framed;
    }

    private void ensure(int n) throws IOException {
      if (used + n > chunk.length) {
        flush();
        if (n > chunk.length) {
          chunk = new byte[n];
        }
      }
    }

    void flush() throws IOException {
      SegmentFormat.writeFully(out, ByteBuffer.wrap(chunk, 0, used), written);
      written += used;
      used = 0;
      if (written - synced >= SYNC_EVERY) {
        // Keep the base's dirty data small: on ext4 (data=ordered) a producer's fsync that
        // commits metadata waits for every file's dirty data, so one large final fsync here
        // would stall critical appenders for as long as it takes.
        out.force(false);
        synced = written;
      }
    }
  }

  private void deleteQuietly(Path p) {
    try {
      io.delete(p);
    } catch (IOException e) {
      LOG.log(System.Logger.Level.WARNING, "cannot delete " + p + "; the next open deletes it", e);
    }
  }

  private static long sizeQuietly(Path p) {
    try {
      return Files.exists(p) ? Files.size(p) : 0;
    } catch (IOException e) {
      return 0;
    }
  }
}
