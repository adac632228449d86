package io.relaykit.queue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;

/**
 * A {@link FileIo} on the real file system that fails on demand: the next call of a kind, the
 * call after {@code n} more, every call while armed, or, like a full disk, every write that would
 * extend a file and every file creation. The failures are {@link IOException}s with the messages
 * the JDK gives for the real errors. Thread-safe.
 */
final class FaultyFileIo implements FileIo {

  /** The kinds of call that can be made to fail. */
  enum Op { CREATE, WRITE, FORCE, TRUNCATE, DELETE, MOVE, SYNC_DIRECTORY }

  /** Bytes read through every channel this opened: the work of a recovery, for tests. */
  final java.util.concurrent.atomic.AtomicLong bytesRead =
      new java.util.concurrent.atomic.AtomicLong();

  private final Map<Op, Integer> countdown = new EnumMap<>(Op.class);
  private final Map<Op, Boolean> always = new EnumMap<>(Op.class);
  private final Map<Op, Integer> calls = new EnumMap<>(Op.class);
  private final Map<Op, Integer> failures = new EnumMap<>(Op.class);
  private boolean full;
  private boolean newFilesFull;
  private final java.util.Set<Path> spaceless = new java.util.HashSet<>();
  private volatile Predicate<Call> blockWhen = c -> false;
  private volatile CountDownLatch release = new CountDownLatch(0);
  private final AtomicInteger blocked = new AtomicInteger();
  private volatile boolean passInterrupts;

  /** One call, for {@link #blockWhen}. */
  record Call(Op op, Path path, Thread thread) {
  }

  /**
   * Every call matching {@code when} blocks until {@link #release()}: a slow disk for one thread
   * or one file. {@link #blockedCalls()} counts the calls that blocked.
   */
  FaultyFileIo blockWhen(Predicate<Call> when) {
    release = new CountDownLatch(1);
    blockWhen = when;
    return this;
  }

  /**
   * While {@code on}, a blocked call whose thread is interrupted keeps waiting for {@link
   * #release()} and then makes the real call with the interrupt flag set, as a thread
   * interrupted during the real call would: the JDK's channel then closes itself and throws
   * {@link java.nio.channels.ClosedByInterruptException}.
   */
  FaultyFileIo passInterrupts(boolean on) {
    passInterrupts = on;
    return this;
  }

  /** Lets every blocked call go on; nothing blocks any more. */
  void release() {
    blockWhen = c -> false;
    release.countDown();
  }

  int blockedCalls() {
    return blocked.get();
  }

  /** The next call of {@code op} fails (once). */
  synchronized FaultyFileIo failNext(Op op) {
    return failAfter(op, 0);
  }

  /** {@code succeed} more calls of {@code op} succeed, then one fails. */
  synchronized FaultyFileIo failAfter(Op op, int succeed) {
    countdown.put(op, succeed);
    return this;
  }

  /** Every call of {@code op} fails while {@code on}. */
  synchronized FaultyFileIo failAlways(Op op, boolean on) {
    always.put(op, on);
    return this;
  }

  /**
   * A full disk while {@code on}: any write past a file's current end fails with "No space left on
   * device"; creating a file (an inode), overwriting written bytes, truncating and deleting work.
   */
  synchronized FaultyFileIo diskFull(boolean on) {
    full = on;
    return this;
  }

  /**
   * While {@code on}, files created now get no space: every write to them fails with "No space
   * left on device" (the file system has inodes but no free blocks; the files that already exist
   * have their blocks). Turning it off frees the space.
   */
  synchronized FaultyFileIo newFilesFull(boolean on) {
    newFilesFull = on;
    if (!on) {
      spaceless.clear();
    }
    return this;
  }

  synchronized int calls(Op op) {
    return calls.getOrDefault(op, 0);
  }

  synchronized int failures(Op op) {
    return failures.getOrDefault(op, 0);
  }

  /** Blocks a call that {@link #blockWhen} matches, then counts it and throws if it is to fail. */
  private void check(Op op, Path path, boolean extending) throws IOException {
    if (blockWhen.test(new Call(op, path, Thread.currentThread()))) {
      blocked.incrementAndGet();
      boolean interrupted = false;
      while (true) {
        try {
          if (!release.await(60, TimeUnit.SECONDS)) {
            throw new IOException("blocked call never released (test bug): " + op + " " + path);
          }
          break;
        } catch (InterruptedException e) {
          if (!passInterrupts) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while blocked", e);
          }
          interrupted = true;
        }
      }
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
    count(op, path, extending);
  }

  private synchronized void count(Op op, Path path, boolean extending) throws IOException {
    calls.merge(op, 1, Integer::sum);
    boolean fail = always.getOrDefault(op, false);
    Integer left = countdown.get(op);
    if (left != null) {
      if (left == 0) {
        countdown.remove(op);
        fail = true;
      } else {
        countdown.put(op, left - 1);
      }
    }
    if ((full && extending) || (op == Op.WRITE && spaceless.contains(path))) {
      failures.merge(op, 1, Integer::sum);
      throw new IOException("No space left on device (injected, " + op + " of " + path + ")");
    }
    if (fail) {
      failures.merge(op, 1, Integer::sum);
      throw new IOException(switch (op) {
        case FORCE, SYNC_DIRECTORY -> "Input/output error";
        case WRITE, CREATE -> "No space left on device";
        default -> "Operation not permitted";
      } + " (injected, " + op + " of " + path + ")");
    }
  }

  @Override
  public FileChannel open(Path path, OpenOption... options) throws IOException {
    boolean creates = Arrays.asList(options).contains(StandardOpenOption.CREATE_NEW)
        || (Arrays.asList(options).contains(StandardOpenOption.CREATE)
            && !path.toFile().exists());
    if (creates) {
      check(Op.CREATE, path, false);
      synchronized (this) {
        if (newFilesFull) {
          spaceless.add(path);
        }
      }
    }
    return new Channel(path, FileIo.SYSTEM.open(path, options));
  }

  @Override
  public void delete(Path path) throws IOException {
    check(Op.DELETE, path, false);
    FileIo.SYSTEM.delete(path);
  }

  @Override
  public void moveAtomically(Path from, Path to) throws IOException {
    check(Op.MOVE, from, false);
    FileIo.SYSTEM.moveAtomically(from, to);
  }

  @Override
  public void syncDirectory(Path dir) throws IOException {
    check(Op.SYNC_DIRECTORY, dir, false);
    FileIo.SYSTEM.syncDirectory(dir);
  }

  /** A channel that asks {@link #check} before each write, force and truncate. */
  private final class Channel extends FileChannel {
    private final Path path;
    private final FileChannel ch;

    Channel(Path path, FileChannel ch) {
      this.path = path;
      this.ch = ch;
    }

    @Override
    public int read(ByteBuffer dst) throws IOException {
      return counted(ch.read(dst));
    }

    private int counted(int n) {
      if (n > 0) {
        bytesRead.addAndGet(n);
      }
      return n;
    }

    @Override
    public long read(ByteBuffer[] dsts, int offset, int length) throws IOException {
      long n = ch.read(dsts, offset, length);
      if (n > 0) {
        bytesRead.addAndGet(n);
      }
      return n;
    }

    @Override
    public int write(ByteBuffer src) throws IOException {
      check(Op.WRITE, path, ch.position() + src.remaining() > ch.size());
      return ch.write(src);
    }

    @Override
    public long write(ByteBuffer[] srcs, int offset, int length) throws IOException {
      long total = 0;
      for (int i = offset; i < offset + length; i++) {
        total += srcs[i].remaining();
      }
      check(Op.WRITE, path, ch.position() + total > ch.size());
      return ch.write(srcs, offset, length);
    }

    @Override
    public long position() throws IOException {
      return ch.position();
    }

    @Override
    public FileChannel position(long newPosition) throws IOException {
      ch.position(newPosition);
      return this;
    }

    @Override
    public long size() throws IOException {
      return ch.size();
    }

    @Override
    public FileChannel truncate(long size) throws IOException {
      check(Op.TRUNCATE, path, false);
      ch.truncate(size);
      return this;
    }

    @Override
    public void force(boolean metaData) throws IOException {
      check(Op.FORCE, path, false);
      ch.force(metaData);
    }

    @Override
    public long transferTo(long position, long count, WritableByteChannel target)
        throws IOException {
      return ch.transferTo(position, count, target);
    }

    @Override
    public long transferFrom(ReadableByteChannel src, long position, long count)
        throws IOException {
      check(Op.WRITE, path, position + count > ch.size());
      return ch.transferFrom(src, position, count);
    }

    @Override
    public int read(ByteBuffer dst, long position) throws IOException {
      return counted(ch.read(dst, position));
    }

    @Override
    public int write(ByteBuffer src, long position) throws IOException {
      check(Op.WRITE, path, position + src.remaining() > ch.size());
      return ch.write(src, position);
    }

    @Override
    public MappedByteBuffer map(MapMode mode, long position, long size) throws IOException {
      throw new UnsupportedOperationException("the journal does not map files");
    }

    @Override
    public FileLock lock(long position, long size, boolean shared) throws IOException {
      return ch.lock(position, size, shared);
    }

    @Override
    public FileLock tryLock(long position, long size, boolean shared) throws IOException {
      return ch.tryLock(position, size, shared);
    }

    @Override
    protected void implCloseChannel() throws IOException {
      ch.close();
    }
  }
}
