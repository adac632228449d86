package io.relaykit.queue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.zip.CRC32C;

/**
 * The on-disk format of a {@link FileJournal}: file names, segment headers (format 1 and 2),
 * record frames and the trailer that seals a segment. Stateless; every method is static.
 *
 * <pre>
 * file names   journal-&lt;20-digit seq&gt;.seg    a log segment, appended to in order
 *              journal-&lt;20-digit seq&gt;.base   a compacted base: the state before offset `link`
 *                                            of segment seq (format 2)
 *              *.tmp                         an unfinished compaction output (deleted at open)
 * header v2    "RKQJ", version 2, flags (1 encrypted, 2 base), 2 zero bytes, seq (8),
 *              link (8: a segment's predecessor, 0 for the first; a base's offset in segment seq),
 *              journal id (16 random bytes, the same in every file of a journal),
 *              [encrypted: nonce + GCM tag over the 40 bytes before, 28 bytes],
 *              CRC32C of everything before (4)                       44 bytes, 72 encrypted
 * header v1    "RKQJ", version 1, flags, 2 zero bytes, [encrypted: a key check of 44 bytes]
 * frame        int length, int ~length, int CRC32C of the record, record bytes; the record is
 *              the JournalCodec body, or with a key nonce + ciphertext + tag, whose associated
 *              data is (journal id, file kind, seq, offset of the frame)
 * trailer      a frame whose body is the single byte TRAILER: the last frame of every sealed
 *              segment and base (format 2)
 * </pre>
 * The length is stored twice so recovery can tell a flipped length (corruption) from a record cut
 * short (a torn tail); an all-zero frame header is the end of the records (a valid one never is).
 */
final class SegmentFormat {
  static final byte[] MAGIC = {'R', 'K', 'Q', 'J'};
  static final byte V1 = 1;
  static final byte V2 = 2;
  static final int FLAG_ENCRYPTED = 1;
  static final int FLAG_BASE = 2;
  static final int FRAME_HEADER = 12;
  static final int MAX_RECORD = Integer.MAX_VALUE - 64;
  /** The body of a trailer frame; no JournalCodec record type uses it. */
  static final byte TRAILER = 0x7f;
  static final int V1_HEADER = 8;
  static final int V1_KEY_CHECK = RecordCipher.OVERHEAD + 16;
  private static final int V2_FIELDS = 40;
  static final int V2_HEADER = V2_FIELDS + 4;
  static final int V2_HEADER_SEALED = V2_FIELDS + RecordCipher.OVERHEAD + 4;
  /** The unit a disk writes whole: a torn write leaves whole sectors unwritten (zero). */
  static final int SECTOR = 512;

  static final String PREFIX = "journal-";
  static final String SEGMENT = ".seg";
  static final String BASE = ".base";
  static final String TMP = ".tmp";

  private SegmentFormat() {
  }

  static Path segmentPath(Path dir, long seq) {
    return dir.resolve(String.format("%s%020d%s", PREFIX, seq, SEGMENT));
  }

  static Path basePath(Path dir, long seq) {
    return dir.resolve(String.format("%s%020d%s", PREFIX, seq, BASE));
  }

  /** The sequence number in a segment or base file name, or -1 when the name is not one. */
  static long seqOf(String name, String suffix) {
    if (!name.startsWith(PREFIX) || !name.endsWith(suffix)) {
      return -1;
    }
    String digits = name.substring(PREFIX.length(), name.length() - suffix.length());
    if (digits.length() != 20 || !digits.chars().allMatch(c -> c >= '0' && c <= '9')) {
      return -1;
    }
    return Long.parseLong(digits);
  }

  /** Header length of a format-2 file. */
  static int headerLength(boolean encrypted) {
    return encrypted ? V2_HEADER_SEALED : V2_HEADER;
  }

  /** Framed length of a trailer. */
  static int trailerLength(boolean encrypted) {
    return FRAME_HEADER + 1 + (encrypted ? RecordCipher.OVERHEAD : 0);
  }

  /**
   * A parsed header. {@code link}: see the class comment (-1 in format 1); {@code journalId} is
   * null in format 1.
   */
  record Header(int version, boolean encrypted, boolean base, long seq, long link,
      byte[] journalId, int length) {
  }

  /** A format-2 header for file ({@code base}, {@code seq}). */
  static byte[] header(boolean base, long seq, long link, byte[] journalId, RecordCipher cipher) {
    byte[] h = new byte[headerLength(cipher != null)];
    System.arraycopy(MAGIC, 0, h, 0, 4);
    h[4] = V2;
    h[5] = (byte) ((cipher != null ? FLAG_ENCRYPTED : 0) | (base ? FLAG_BASE : 0));
    putLong(h, 8, seq);
    putLong(h, 16, link);
    System.arraycopy(journalId, 0, h, 24, 16);
    int at = V2_FIELDS;
    if (cipher != null) {
      byte[] mac = cipher.mac(h, V2_FIELDS);
      System.arraycopy(mac, 0, h, at, mac.length);
      at += mac.length;
    }
    CRC32C crc = new CRC32C();
    crc.update(h, 0, at);
    putInt(h, at, (int) crc.getValue());
    return h;
  }

  /**
   * Reads and checks the header of file {@code path} ({@code base} or a segment, sequence number
   * {@code seq} from its name). Returns null when the file is too short to hold its header (the
   * caller decides whether that is a torn creation or corruption).
   *
   * @param cipher the configured key's cipher, or null without a key
   * @throws JournalException naming the file for any mismatch
   */
  static Header readHeader(Path path, FileChannel ch, long size, boolean base, long seq,
      RecordCipher cipher) throws IOException {
    if (size < V1_HEADER) {
      return null;
    }
    byte[] h = new byte[V2_HEADER_SEALED];
    readFully(ch, ByteBuffer.wrap(h, 0, V1_HEADER), 0);
    if (!Arrays.equals(Arrays.copyOf(h, 4), MAGIC)) {
      throw corrupt(path, 0, "not a relaykit journal segment (bad magic)");
    }
    int flags = h[5];
    if (h[4] != V1 && h[4] != V2) {
      throw corrupt(path, 4, "unsupported segment format version " + h[4]);
    }
    boolean encrypted = (flags & FLAG_ENCRYPTED) != 0;
    if (h[4] == V1) {
      if ((flags & ~(FLAG_ENCRYPTED | FLAG_BASE)) != 0 || h[6] != 0 || h[7] != 0) {
        throw corrupt(path, 5, "invalid format-1 header flags " + Arrays.toString(
            Arrays.copyOfRange(h, 5, 8)));
      }
      int length = V1_HEADER + (encrypted ? V1_KEY_CHECK : 0);
      if (size < length) {
        return null;
      }
      checkKeyPresence(path, encrypted, cipher);
      if (encrypted) {
        byte[] check = new byte[V1_KEY_CHECK];
        readFully(ch, ByteBuffer.wrap(check), V1_HEADER);
        boolean ok;
        try {
          ok = Arrays.equals(cipher.open(check, check.length, null), new byte[16]);
        } catch (javax.crypto.AEADBadTagException e) {
          ok = false;
        }
        if (!ok) {
          throw new JournalException("journal segment " + path + " cannot be decrypted with the"
              + " configured key: wrong key");
        }
      }
      return new Header(V1, encrypted, (flags & FLAG_BASE) != 0, seq, -1, null, length);
    }
    int length = headerLength(encrypted);
    if (size < length) {
      return null;
    }
    readFully(ch, ByteBuffer.wrap(h, V1_HEADER, length - V1_HEADER), V1_HEADER);
    CRC32C crc = new CRC32C();
    crc.update(h, 0, length - 4);
    if ((int) crc.getValue() != getInt(h, length - 4)) {
      throw corrupt(path, 0, "segment header checksum mismatch");
    }
    if ((flags & ~(FLAG_ENCRYPTED | FLAG_BASE)) != 0 || h[6] != 0 || h[7] != 0) {
      throw corrupt(path, 5, "invalid header flags " + Arrays.toString(
          Arrays.copyOfRange(h, 5, 8)));
    }
    if (((flags & FLAG_BASE) != 0) != base) {
      throw corrupt(path, 5, base ? "a base file whose header is not a base's"
          : "a segment whose header is a base's");
    }
    long headerSeq = getLong(h, 8);
    if (headerSeq != seq) {
      throw corrupt(path, 8, "the header belongs to file number " + headerSeq
          + " (renamed or copied?)");
    }
    checkKeyPresence(path, encrypted, cipher);
    if (encrypted && !cipher.verify(h, V2_FIELDS,
        Arrays.copyOfRange(h, V2_FIELDS, V2_FIELDS + RecordCipher.OVERHEAD))) {
      throw new JournalException("journal segment " + path + " cannot be read with the"
          + " configured key: wrong key, or the header was tampered with");
    }
    return new Header(V2, encrypted, base, seq, getLong(h, 16), Arrays.copyOfRange(h, 24, 40),
        length);
  }

  private static void checkKeyPresence(Path path, boolean encrypted, RecordCipher cipher) {
    if (encrypted && cipher == null) {
      throw new JournalException("journal segment " + path + " is encrypted: configure the"
          + " journal with its encryption key");
    }
    if (!encrypted && cipher != null) {
      throw new JournalException("journal segment " + path + " is not encrypted but an"
          + " encryption key was configured: open it without a key, or start a new directory");
    }
  }

  /**
   * Writes the frame of {@code record[0, length)} into {@code dst} at {@code at}; returns the
   * framed length.
   */
  static int putFrame(byte[] dst, int at, byte[] record, int length, CRC32C crc) {
    crc.reset();
    crc.update(record, 0, length);
    putInt(dst, at, length);
    putInt(dst, at + 4, ~length);
    putInt(dst, at + 8, (int) crc.getValue());
    System.arraycopy(record, 0, dst, at + FRAME_HEADER, length);
    return FRAME_HEADER + length;
  }

  static JournalException corrupt(Path path, long offset, String what) {
    return new JournalException("corrupt journal segment " + path + " at offset " + offset + ": "
        + what);
  }

  static void readFully(FileChannel ch, ByteBuffer b, long pos) throws IOException {
    long at = pos;
    while (b.hasRemaining()) {
      int n = ch.read(b, at);
      if (n < 0) {
        throw new IOException("unexpected end of file at " + at);
      }
      at += n;
    }
  }

  static void writeFully(FileChannel ch, ByteBuffer b, long pos) throws IOException {
    long at = pos;
    while (b.hasRemaining()) {
      at += ch.write(b, at);
    }
  }

  /** Whether every byte of [from, size) is zero. */
  static boolean allZero(FileChannel ch, long from, long size) throws IOException {
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

  /** Whether a whole aligned {@link #SECTOR} starting in [from, to) and inside the file is zero. */
  static boolean hasZeroSector(FileChannel ch, long from, long to, long size) throws IOException {
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

  static void putInt(byte[] b, int at, int v) {
    b[at] = (byte) (v >>> 24);
    b[at + 1] = (byte) (v >>> 16);
    b[at + 2] = (byte) (v >>> 8);
    b[at + 3] = (byte) v;
  }

  static void putLong(byte[] b, int at, long v) {
    putInt(b, at, (int) (v >>> 32));
    putInt(b, at + 4, (int) v);
  }

  static int getInt(byte[] b, int at) {
    return ((b[at] & 0xff) << 24) | ((b[at + 1] & 0xff) << 16) | ((b[at + 2] & 0xff) << 8)
        | (b[at + 3] & 0xff);
  }

  static long getLong(byte[] b, int at) {
    return ((long) getInt(b, at) << 32) | (getInt(b, at + 4) & 0xffffffffL);
  }
}
