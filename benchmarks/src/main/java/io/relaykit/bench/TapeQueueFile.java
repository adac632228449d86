package io.relaykit.bench;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * The add path of Square Tape's {@code QueueFile} (tape2, {@code
 * tape/src/main/java/com/squareup/tape2/QueueFile.java} in github.com/square/tape), ported for
 * the concurrent-producer baseline of {@link JournalBenchmark}: the file queue the issue names
 * ("about 2 000 adds/s on this kind of machine"), written here from its description, not copied.
 *
 * <p>What it keeps from the original, because that is what an add costs:
 * <ul>
 *   <li>the file is a {@link RandomAccessFile} opened in mode {@code "rwd"} ({@code O_DSYNC}):
 *       every {@code write} is durable before it returns, so each add makes <b>three synchronous
 *       writes</b>: the 4-byte element length, the element's bytes, then the 32-byte versioned
 *       header at offset 0 (version, file length, element count, first and last element
 *       positions), which commits the add;
 *   <li>a new file starts at 4 096 bytes, created as {@code <name>.tmp}, header written, then
 *       renamed; when an element does not fit, the length doubles ({@code setLength}, then {@code
 *       force(true)}) and the header records the new length.
 * </ul>
 * What it leaves out: reads, removal and the ring's wrap-around. The benchmark only adds, so the
 * first element stays at the header's end, the used region is contiguous, and an expansion never
 * has to move a wrapped tail (the original's {@code transferTo} branch). Like the original, it is
 * not thread-safe on its own: {@link #add} is {@code synchronized}, as a caller sharing one Tape
 * queue between threads must do.
 */
final class TapeQueueFile implements AutoCloseable {

  /** Leading bit set: the versioned header; version 1. */
  private static final int VERSIONED_HEADER = 0x80000001;
  private static final int HEADER_LENGTH = 32;
  private static final int INITIAL_LENGTH = 4096;
  private static final int ELEMENT_HEADER = 4;

  private final RandomAccessFile raf;
  private final byte[] header = new byte[HEADER_LENGTH];
  private final byte[] lengthPrefix = new byte[ELEMENT_HEADER];
  private long fileLength;
  private int elementCount;
  private long firstPosition;
  private long lastPosition;
  private int lastLength;

  TapeQueueFile(Path file) throws IOException {
    if (!Files.exists(file)) {
      Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
      try (RandomAccessFile init = new RandomAccessFile(tmp.toFile(), "rwd")) {
        init.setLength(INITIAL_LENGTH);
        init.seek(0);
        init.writeInt(VERSIONED_HEADER);
        init.writeLong(INITIAL_LENGTH);
      }
      Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE);
    }
    raf = new RandomAccessFile(file.toFile(), "rwd");
    raf.seek(0);
    raf.readFully(header);
    if (readInt(header, 0) != VERSIONED_HEADER) {
      raf.close();
      throw new IOException("not a versioned queue file: " + file);
    }
    fileLength = readLong(header, 4);
    elementCount = readInt(header, 12);
    firstPosition = readLong(header, 16);
    lastPosition = readLong(header, 24);
    if (lastPosition != 0) {
      raf.seek(lastPosition);
      lastLength = raf.readInt();
    }
  }

  /** Appends {@code data}; three synchronous writes, durable on return. */
  synchronized void add(byte[] data) throws IOException {
    expandIfNecessary(data.length);
    boolean wasEmpty = elementCount == 0;
    long position = wasEmpty ? HEADER_LENGTH : lastPosition + ELEMENT_HEADER + lastLength;
    putInt(lengthPrefix, 0, data.length);
    raf.seek(position);
    raf.write(lengthPrefix, 0, ELEMENT_HEADER);
    raf.seek(position + ELEMENT_HEADER);
    raf.write(data, 0, data.length);
    long first = wasEmpty ? position : firstPosition;
    writeHeader(fileLength, elementCount + 1, first, position);
    firstPosition = first;
    lastPosition = position;
    lastLength = data.length;
    elementCount++;
  }

  /** Elements added. */
  synchronized int size() {
    return elementCount;
  }

  private void expandIfNecessary(int dataLength) throws IOException {
    long elementLength = ELEMENT_HEADER + (long) dataLength;
    long used = elementCount == 0 ? HEADER_LENGTH
        : lastPosition + ELEMENT_HEADER + lastLength;
    long remaining = fileLength - used;
    if (remaining >= elementLength) {
      return;
    }
    long newLength = fileLength;
    do {
      remaining += newLength;
      newLength <<= 1;
    } while (remaining < elementLength);
    raf.setLength(newLength);
    raf.getChannel().force(true);
    writeHeader(newLength, elementCount, firstPosition, lastPosition);
    fileLength = newLength;
  }

  /** Commits the queue's new shape: one synchronous 32-byte write at offset 0. */
  private void writeHeader(long length, int count, long first, long last) throws IOException {
    putInt(header, 0, VERSIONED_HEADER);
    putLong(header, 4, length);
    putInt(header, 12, count);
    putLong(header, 16, first);
    putLong(header, 24, last);
    raf.seek(0);
    raf.write(header, 0, HEADER_LENGTH);
  }

  @Override
  public synchronized void close() throws IOException {
    raf.close();
  }

  private static void putInt(byte[] b, int at, int v) {
    b[at] = (byte) (v >>> 24);
    b[at + 1] = (byte) (v >>> 16);
    b[at + 2] = (byte) (v >>> 8);
    b[at + 3] = (byte) v;
  }

  private static void putLong(byte[] b, int at, long v) {
    putInt(b, at, (int) (v >>> 32));
    putInt(b, at + 4, (int) v);
  }

  private static int readInt(byte[] b, int at) {
    return ((b[at] & 0xff) << 24) | ((b[at + 1] & 0xff) << 16) | ((b[at + 2] & 0xff) << 8)
        | (b[at + 3] & 0xff);
  }

  private static long readLong(byte[] b, int at) {
    return ((long) readInt(b, at) << 32) | (readInt(b, at + 4) & 0xffffffffL);
  }
}
