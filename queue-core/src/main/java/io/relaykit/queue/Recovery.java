package io.relaykit.queue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.zip.CRC32C;
import javax.crypto.AEADBadTagException;

/**
 * Opening a {@link FileJournal} directory: finds the newest base and the segments that follow it,
 * checks that none is missing and that each sealed one is complete, replays their records into a
 * {@link ReplayState}, and cuts a torn tail off the newest segment. Format-1 segments (written
 * before headers had checksums) are read too; the journal then rewrites them in the current
 * format.
 *
 * <p>What is an error (a {@link JournalException} naming the file, and nothing is deleted): any
 * header or record that fails its checksum or authentication, except a torn tail of the newest
 * segment (a torn write leaves zeros where its bytes did not arrive, and no complete record follows
 * it: a damaged record followed by a complete one is corruption; a complete record of up to
 * 4 KiB whose checksum matches with one bit flipped, even the newest one, is a flipped bit and an
 * error naming the file and offset; a larger one followed only by zeros is taken for torn); a segment missing between a base or segment and the one that names it as its
 * predecessor, or before the oldest one; a sealed segment or base without its trailer, or with
 * anything but zeros after it. What a crash leaves and recovery repairs: a torn tail of the newest
 * segment (cut off with a warning), an unfinished compaction output (deleted), a base whose older
 * files were not yet deleted (deleted now), a newest segment sealed before its successor was
 * created, or created with its header cut short.
 */
final class Recovery {
  private static final System.Logger LOG = System.getLogger(FileJournal.class.getName());

  private final Path dir;
  private final FileIo io;
  private final RecordCipher cipher;
  private final CRC32C crc = new CRC32C();
  final ReplayState state = new ReplayState();
  /** The journal id of the format-2 files, or null while none was read. */
  byte[] journalId;
  /** Bytes of journal data in the files kept (headers, records, trailers). */
  long filesBytes;
  /** The newest segment's number, 0 when there is none. */
  long lastSeq;
  /** The newest segment when appending continues in it (format 2, not sealed), else null. */
  Path activePath;
  FileChannel activeChannel;
  long activeEnd;
  /** Whether a format-1 segment was replayed: the journal rewrites the directory. */
  boolean legacy;

  Recovery(Path dir, FileIo io, RecordCipher cipher) {
    this.dir = dir;
    this.io = io;
    this.cipher = cipher;
  }

  /** Reads the directory; on return the fields above describe it. */
  void run() throws IOException {
    TreeMap<Long, Path> segments = new TreeMap<>();
    TreeMap<Long, Path> bases = new TreeMap<>();
    try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
      for (Path p : files) {
        String name = p.getFileName().toString();
        if (!name.startsWith(SegmentFormat.PREFIX)) {
          continue;
        }
        if (name.endsWith(SegmentFormat.TMP)) {
          // An unfinished compaction: the files it would have replaced are all still here.
          io.delete(p);
        } else if (SegmentFormat.seqOf(name, SegmentFormat.SEGMENT) >= 0) {
          segments.put(SegmentFormat.seqOf(name, SegmentFormat.SEGMENT), p);
        } else if (SegmentFormat.seqOf(name, SegmentFormat.BASE) >= 0) {
          bases.put(SegmentFormat.seqOf(name, SegmentFormat.BASE), p);
        } else {
          throw new JournalException("unexpected file in journal directory: " + p);
        }
      }
    }
    List<Path> superseded = new ArrayList<>();
    long start = segments.isEmpty() ? 0 : segments.firstKey();
    long resumeAt = -1;
    SegmentFormat.Header base = null;
    if (!bases.isEmpty()) {
      Map.Entry<Long, Path> newest = bases.lastEntry();
      base = header(newest.getValue(), true, newest.getKey(), false);
      start = newest.getKey();
      resumeAt = base.link();
      superseded.addAll(bases.headMap(newest.getKey()).values());
      replay(newest.getValue(), base, base.length(), false, true);
      if (!segments.containsKey(start)) {
        throw new JournalException("journal segment " + SegmentFormat.segmentPath(dir, start)
            + " is missing: the base " + newest.getValue() + " continues in it");
      }
    }
    List<Long> seqs = new ArrayList<>(segments.tailMap(start, true).keySet());
    List<SegmentFormat.Header> headers = new ArrayList<>();
    for (int i = 0; i < seqs.size(); i++) {
      headers.add(header(segments.get(seqs.get(i)), false, seqs.get(i), i == seqs.size() - 1));
    }
    if (base == null) {
      // Format 1: the newest segment flagged as base supersedes every older one.
      for (int i = headers.size() - 1; i > 0; i--) {
        if (headers.get(i) != null && headers.get(i).version() == SegmentFormat.V1
            && headers.get(i).base()) {
          seqs = seqs.subList(i, seqs.size());
          headers = headers.subList(i, headers.size());
          break;
        }
      }
    }
    superseded.addAll(segments.headMap(seqs.isEmpty() ? Long.MAX_VALUE : seqs.get(0)).values());
    long previous = -1;
    boolean sawV2 = false;
    for (int i = 0; i < seqs.size(); i++) {
      long seq = seqs.get(i);
      Path path = segments.get(seq);
      boolean newest = i == seqs.size() - 1;
      SegmentFormat.Header h = headers.get(i);
      if (h == null) {
        // The newest segment's header is cut short: created, then the process died before its
        // header was complete; no record follows. Start it afresh.
        h = restartHeader(path, seq, previous);
      }
      if (h.version() == SegmentFormat.V1) {
        if (sawV2) {
          throw SegmentFormat.corrupt(path, 4, "a format-1 segment after format-2 ones");
        }
        legacy = true;
      } else {
        sawV2 = true;
        checkLink(path, h, base != null && i == 0, previous);
      }
      long from = base != null && i == 0 ? resumeAt : h.length();
      long end = replay(path, h, from, newest, false);
      previous = seq;
      lastSeq = seq;
      if (newest && h.version() == SegmentFormat.V2 && end >= 0) {
        activePath = path;
        activeEnd = end;
      }
    }
    for (Path p : superseded) {
      // Superseded by a complete base; left behind by a crash right after a compaction.
      io.delete(p);
    }
    if (!superseded.isEmpty()) {
      io.syncDirectory(dir);
    }
    if (activePath != null) {
      activeChannel = io.open(activePath, StandardOpenOption.READ, StandardOpenOption.WRITE);
    }
  }

  /** Checks the predecessor a format-2 segment names against the segment before it. */
  private void checkLink(Path path, SegmentFormat.Header h, boolean afterBase, long previous) {
    if (afterBase) {
      return;
    }
    long link = h.link();
    if (previous < 0 && link != 0) {
      throw new JournalException("journal segment " + SegmentFormat.segmentPath(dir, link)
          + " is missing: " + path + " follows it, and no base replaces it");
    }
    if (previous >= 0 && link != previous) {
      throw new JournalException(link > previous
          ? "journal segment " + SegmentFormat.segmentPath(dir, link) + " is missing: " + path
              + " follows it"
          : "journal segment " + path + " names segment " + link + " as its predecessor, but "
              + "follows segment " + previous);
    }
  }

  /** Reads a header, checking its journal id; null for a newest segment cut short in it. */
  private SegmentFormat.Header header(Path path, boolean base, long seq, boolean newest)
      throws IOException {
    try (FileChannel ch = io.open(path, StandardOpenOption.READ)) {
      SegmentFormat.Header h = SegmentFormat.readHeader(path, ch, ch.size(), base, seq, cipher);
      if (h == null) {
        if (newest && !base) {
          return null;
        }
        throw SegmentFormat.corrupt(path, 0, "header cut short (" + ch.size() + " bytes)"
            + (base ? " in a base" : " in a sealed segment"));
      }
      if (h.journalId() != null) {
        if (journalId == null) {
          journalId = h.journalId();
        } else if (!Arrays.equals(journalId, h.journalId())) {
          throw SegmentFormat.corrupt(path, 24, "the file belongs to another journal (its"
              + " journal id differs from the other files')");
        }
      }
      return h;
    }
  }

  /** Rewrites a torn header of the newest segment; returns the new header. */
  private SegmentFormat.Header restartHeader(Path path, long seq, long previous)
      throws IOException {
    if (journalId == null) {
      journalId = FileJournal.newJournalId();
    }
    byte[] header = SegmentFormat.header(false, seq, Math.max(previous, 0), journalId, cipher);
    try (FileChannel ch = io.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
      LOG.log(System.Logger.Level.WARNING, "journal segment {0}: header cut short ({1} bytes),"
          + " starting it afresh", path, ch.size());
      ch.truncate(0);
      SegmentFormat.writeFully(ch, ByteBuffer.wrap(header), 0);
      ch.force(true);
    }
    return new SegmentFormat.Header(SegmentFormat.V2, cipher != null, false, seq,
        Math.max(previous, 0), journalId, header.length);
  }

  /**
   * Replays the records of one file from offset {@code from}. Returns where they end: for the
   * newest segment, where appending continues (zeros may follow), or -1 when it is sealed.
   */
  private long replay(Path path, SegmentFormat.Header h, long from, boolean newest, boolean base)
      throws IOException {
    boolean v2 = h.version() == SegmentFormat.V2;
    byte kind = base ? RecordCipher.KIND_BASE : RecordCipher.KIND_SEGMENT;
    try (FileChannel ch = io.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
      long size = ch.size();
      if (from > size || from < h.length()) {
        throw SegmentFormat.corrupt(path, from, "the base continues at offset " + from
            + ", outside the segment's records (" + size + " bytes)");
      }
      long pos = from;
      ByteBuffer head = ByteBuffer.allocate(SegmentFormat.FRAME_HEADER);
      byte[] record = new byte[4096];
      boolean sealed = false;
      while (pos < size) {
        if (size - pos < SegmentFormat.FRAME_HEADER) {
          pos = endOfRecords(path, ch, pos, size, size, newest, "a record header cut short",
              null);
          break;
        }
        head.clear();
        SegmentFormat.readFully(ch, head, pos);
        int length = head.getInt(0);
        int check = head.getInt(4);
        int expectedCrc = head.getInt(8);
        if (length != ~check || length <= 0 || length > SegmentFormat.MAX_RECORD) {
          boolean zero = length == 0 && check == 0 && expectedCrc == 0;
          pos = endOfRecords(path, ch, pos, pos + SegmentFormat.FRAME_HEADER, size, newest,
              zero ? "zero-filled space" : "an invalid record header",
              "invalid record length (" + length + " / " + ~check + ")");
          break;
        }
        if (pos + SegmentFormat.FRAME_HEADER + length > size) {
          pos = endOfRecords(path, ch, pos, size, size, newest, "a record cut short", null);
          break;
        }
        if (record.length < length) {
          record = new byte[Math.max(length, record.length * 2)];
        }
        SegmentFormat.readFully(ch, ByteBuffer.wrap(record, 0, length),
            pos + SegmentFormat.FRAME_HEADER);
        crc.reset();
        crc.update(record, 0, length);
        if ((int) crc.getValue() != expectedCrc) {
          long extentEnd = pos + SegmentFormat.FRAME_HEADER + length;
          if (newest && oneBitFlipped(record, length, expectedCrc)) {
            // A complete frame whose checksum would match with one bit changed (in the record or
            // in its stored checksum) holds a flipped bit: a torn write leaves zeros where its
            // bytes did not arrive, which matches that way with odds of about 8 * length / 2^32.
            // Even as the newest record it is corruption, never silently cut as a torn tail.
            throw SegmentFormat.corrupt(path, pos, "checksum mismatch in a complete record: one"
                + " flipped bit, not a write torn by a crash; the file is corrupt");
          }
          pos = endOfRecords(path, ch, pos, extentEnd, size, newest,
              "a record with a bad checksum", "checksum mismatch");
          break;
        }
        byte[] body = record;
        int bodyLength = length;
        if (cipher != null) {
          try {
            body = cipher.open(record, length,
                v2 ? cipher.bind(journalId, kind, h.seq(), pos) : null);
          } catch (AEADBadTagException e) {
            throw SegmentFormat.corrupt(path, pos, "record failed decryption: wrong key, or the"
                + " data was tampered with (changed, moved or replayed)");
          }
          bodyLength = body.length;
        }
        pos += SegmentFormat.FRAME_HEADER + length;
        if (v2 && bodyLength == 1 && body[0] == SegmentFormat.TRAILER) {
          if (pos < size && !(newest && SegmentFormat.allZero(ch, pos, size))) {
            throw SegmentFormat.corrupt(path, pos, "data after the trailer that sealed the"
                + " segment");
          }
          sealed = true;
          break;
        }
        try {
          JournalCodec.apply(body, bodyLength, state);
        } catch (JournalCodec.MalformedRecordException e) {
          throw SegmentFormat.corrupt(path, pos - SegmentFormat.FRAME_HEADER - length,
              "malformed record: " + e.getMessage());
        }
      }
      if (v2 && !sealed && (base || !newest)) {
        throw SegmentFormat.corrupt(path, pos, (base ? "a base" : "a sealed segment")
            + " without its trailer: cut short or truncated");
      }
      long end = Math.min(pos, size);
      filesBytes += end;
      if (!v2 && newest && size > end) {
        // A format-1 newest segment keeps no zero tail: format-2 segments follow it.
        ch.truncate(end);
        ch.force(true);
      }
      return sealed ? -1 : end;
    }
  }

  /** The longest record {@link #oneBitFlipped} checks: 8 * n checksums of n bytes each. */
  private static final int MAX_FLIP_SEARCH = 4096;

  /**
   * Whether the {@code length} bytes of {@code record}, whose CRC32C is not {@code expectedCrc},
   * match it with one bit flipped, in the record or in the expected checksum: a flipped bit, not a
   * torn write. Records over {@link #MAX_FLIP_SEARCH} bytes are not searched (false). O(8 n^2)
   * for n bytes, run only for a bad checksum in the newest segment.
   */
  private boolean oneBitFlipped(byte[] record, int length, int expectedCrc) {
    crc.reset();
    crc.update(record, 0, length);
    int actual = (int) crc.getValue();
    if (Integer.bitCount(actual ^ expectedCrc) == 1) {
      return true; // the stored checksum itself has the flipped bit
    }
    if (length > MAX_FLIP_SEARCH) {
      return false;
    }
    for (int i = 0; i < length; i++) {
      for (int bit = 0; bit < 8; bit++) {
        record[i] ^= (byte) (1 << bit);
        crc.reset();
        crc.update(record, 0, length);
        record[i] ^= (byte) (1 << bit);
        if ((int) crc.getValue() == expectedCrc) {
          return true;
        }
      }
    }
    return false;
  }

  /** What {@link #completeRecordAfter} found: a complete record, none, or out of budget. */
  static final long SCAN_GAVE_UP = -2;

  /**
   * How many frame candidates (a length and inverted length that agree) {@link
   * #completeRecordAfter} keeps waiting for their end at once; past it the scan gives up (about
   * 40 bytes each). A torn tail holds them only by chance (odds 2^-32 per offset) or by crafted
   * record contents, each forged header costing the writer 8 bytes.
   */
  static final int MAX_PENDING_CANDIDATES = 1 << 16;

  /** The scan reads each byte after the damage once: at most this many times the file. */
  static final int SCAN_BUDGET_FACTOR = 1;

  /** Slack in the scan's read bound (its one buffer). */
  static final long SCAN_SLACK = 1 << 20;

  /**
   * The offset of the first complete record (a frame whose length, inverted length and CRC32C all
   * match, inside the file) starting at or after {@code from}, -1 when there is none, or {@link
   * #SCAN_GAVE_UP} when more than {@link #MAX_PENDING_CANDIDATES} candidates wait at once. Every
   * byte offset is tried, so a damaged length cannot hide what follows it. One sequential read of
   * the bytes after {@code from} through a 1 MiB buffer, whatever the number or lengths of the
   * candidates: the scan keeps a running CRC32C of the bytes from {@code from}, and a candidate's
   * checksum is derived when the scan reaches its end from the running value at its start and at
   * its end (CRC32C is linear: crc(B) = crc(A B) xor crc(A) shifted by |B| bytes, O(log |B|)), so
   * crafted contents that forge many long headers cost O(1) each, never a re-read. Runs only
   * when the newest segment holds a record that fails its checks.
   */
  private long completeRecordAfter(FileChannel ch, long from, long size) throws IOException {
    if (from >= size - SegmentFormat.FRAME_HEADER) {
      return -1;
    }
    CRC32C running = new CRC32C();
    CRC32C header = new CRC32C();
    // Candidates waiting for the scan to reach their end:
    // {end, start, running CRC at start, CRC of the 12-byte header, expected body CRC}.
    java.util.PriorityQueue<long[]> pending =
        new java.util.PriorityQueue<>((x, y) -> Long.compare(x[0], y[0]));
    long best = -1;
    int earlier = 0; // waiting candidates that start before best
    int window = (int) Math.min(1 << 20, size - from);
    ByteBuffer buf = ByteBuffer.allocate(window + SegmentFormat.FRAME_HEADER);
    byte[] arr = buf.array();
    long crcPos = from; // the running CRC covers [from, crcPos)
    for (long base = from; base < size; base += window) {
      buf.clear();
      buf.limit((int) Math.min(buf.capacity(), size - base));
      SegmentFormat.readFully(ch, buf, base);
      int limit = buf.limit() - SegmentFormat.FRAME_HEADER;
      for (int i = 0; i < window && base + i < size; i++) {
        long at = base + i;
        while (!pending.isEmpty() && pending.peek()[0] == at) {
          running.update(arr, (int) (crcPos - base), (int) (at - crcPos));
          crcPos = at;
          long[] c = pending.poll();
          if (matches(c, (int) running.getValue())) {
            if (best < 0 || c[1] < best) {
              best = c[1];
              earlier = 0;
              for (long[] w : pending) {
                earlier += w[1] < best ? 1 : 0;
              }
            }
          } else if (best >= 0 && c[1] < best) {
            earlier--;
          }
        }
        if (best >= 0) {
          if (earlier == 0) {
            return best; // no waiting candidate starts earlier
          }
          continue; // later candidates cannot start earlier than best
        }
        if (i > limit) {
          continue;
        }
        int length = buf.getInt(i);
        if (length <= 0 || length != ~buf.getInt(i + 4)) {
          continue;
        }
        if (at + SegmentFormat.FRAME_HEADER + length > size) {
          continue;
        }
        if (pending.size() >= MAX_PENDING_CANDIDATES) {
          return SCAN_GAVE_UP;
        }
        running.update(arr, (int) (crcPos - base), (int) (at - crcPos));
        crcPos = at;
        header.reset();
        header.update(arr, i, SegmentFormat.FRAME_HEADER);
        scanWork += SegmentFormat.FRAME_HEADER;
        pending.add(new long[] {at + SegmentFormat.FRAME_HEADER + length, at,
            running.getValue(), header.getValue(), buf.getInt(i + 8)});
      }
      long windowEnd = Math.min(base + window, size);
      running.update(arr, (int) (crcPos - base), (int) (windowEnd - crcPos));
      crcPos = windowEnd;
    }
    // Candidates ending at the end of the file.
    while (!pending.isEmpty()) {
      long[] c = pending.poll();
      if (c[0] == size && matches(c, (int) running.getValue()) && (best < 0 || c[1] < best)) {
        best = c[1];
      }
    }
    return best;
  }

  /**
   * Whether candidate {@code c} ({end, start, running CRC at start, header CRC, expected}) has the
   * body checksum it names, given the running CRC at its end: crc(header body) = crc(..end) xor
   * shift(crc(..start), frame), and crc(body) = crc(header body) xor shift(crc(header), body).
   */
  private static boolean matches(long[] c, int runningAtEnd) {
    long frame = c[0] - c[1];
    int whole = runningAtEnd ^ shift((int) c[2], frame);
    int body = whole ^ shift((int) c[3], frame - SegmentFormat.FRAME_HEADER);
    return body == (int) c[4];
  }

  /** The reflected CRC32C polynomial. */
  private static final int POLY = 0x82F63B78;

  /** {@code a * b} modulo the CRC32C polynomial (reflected bit order, as zlib's multmodp). */
  private static int multModP(int a, int b) {
    int m = 1 << 31;
    int p = 0;
    while (true) {
      if ((a & m) != 0) {
        p ^= b;
        if ((a & (m - 1)) == 0) {
          break;
        }
      }
      m >>>= 1;
      b = (b & 1) != 0 ? (b >>> 1) ^ POLY : b >>> 1;
    }
    return p;
  }

  /** x^(2^k) modulo the polynomial, k = 0..31. */
  private static final int[] X2N = new int[32];

  static {
    int p = 1 << 30; // x^1
    X2N[0] = p;
    for (int k = 1; k < 32; k++) {
      p = multModP(p, p);
      X2N[k] = p;
    }
  }

  /**
   * {@code crc} advanced over {@code bytes} zero bytes in the linear part of CRC32C: for the CRC of
   * A and of A B (both finalized as {@link CRC32C} does), crc(B) = crc(A B) xor shift(crc(A),
   * |B|). O(log bytes).
   */
  static int shift(int crc, long bytes) {
    int p = 1 << 31; // x^0
    long n = bytes;
    int k = 3; // x^(8 n) = x^(2^3 n)
    while (n != 0) {
      if ((n & 1) != 0) {
        p = multModP(X2N[k & 31], p);
      }
      n >>>= 1;
      k++;
    }
    return multModP(p, crc);
  }

  /**
   * Bytes checksummed by {@link #completeRecordAfter} for frame candidates during this recovery:
   * the scan's work beyond reading each byte once, for tests.
   */
  long scanWork;

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
   * one), and no complete record follows anywhere after it (one that does was written after this
   * record and may have been fsynced: this one is damaged, not torn). Then the record and
   * everything after it are cut off with a warning: none of it was synced, since a sync writes all
   * of it. When the search for a later complete record gives up (more than {@link
   * #MAX_PENDING_CANDIDATES} overlapping byte runs that look like record headers wait at once),
   * nothing is cut: it is reported as corruption.
   * Anything else is corruption: a {@link JournalException}
   * naming the file and offset ({@code corruptWhat}, or {@code what} in a sealed segment).
   */
  private long endOfRecords(Path path, FileChannel ch, long pos, long extentEnd, long size,
      boolean newest, String what, String corruptWhat) throws IOException {
    if (!newest) {
      if (corruptWhat != null && !SegmentFormat.allZero(ch, pos, size)) {
        throw SegmentFormat.corrupt(path, pos, corruptWhat);
      }
      throw SegmentFormat.corrupt(path, pos, what + " in a sealed segment");
    }
    if (SegmentFormat.allZero(ch, pos, size)) {
      // The preallocated tail (or nothing was ever written here): the records end at pos.
      return pos;
    }
    long valid = completeRecordAfter(ch, corruptWhat == null || extentEnd > pos
        + SegmentFormat.FRAME_HEADER ? extentEnd : pos + 1, size);
    if (valid == SCAN_GAVE_UP) {
      // Too many forged frame candidates to rule out a complete record after this one: deleting
      // could lose fsynced records, so it is an error, and nothing is deleted.
      throw SegmentFormat.corrupt(path, pos, (corruptWhat != null ? corruptWhat : what)
          + ", followed by more than " + MAX_PENDING_CANDIDATES + " overlapping byte runs that"
          + " look like record headers, too many to tell a write torn by a crash from a damaged"
          + " record; nothing was deleted");
    }
    if (valid >= 0) {
      // A torn tail is only what follows the last record that was ever complete: a complete
      // record after this one was written (and maybe fsynced) after it, so this one is damaged.
      throw SegmentFormat.corrupt(path, pos, (corruptWhat != null ? corruptWhat : what)
          + ", followed by a complete record at offset " + valid + ": the file is damaged, not"
          + " torn by a crash; nothing was deleted");
    }
    if (!SegmentFormat.allZero(ch, Math.min(extentEnd, size), size)
        && !SegmentFormat.hasZeroSector(ch, pos, extentEnd, size)) {
      throw SegmentFormat.corrupt(path, pos, (corruptWhat != null ? corruptWhat : what)
          + "; nothing was deleted");
    }
    LOG.log(System.Logger.Level.WARNING, "journal segment {0}: {1} at offset {2} (a write torn"
        + " by a crash); dropping the {3} bytes from there, keeping every complete record before"
        + " it", path, what, pos, size - pos);
    ch.truncate(pos);
    ch.force(true);
    return pos;
  }
}
