package io.relaykit.queue;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Locale;

/**
 * The file-system calls of {@link FileJournal}, behind one seam so that tests can make any of them
 * fail on demand (a full disk at a segment roll, an fsync error): every channel the journal
 * writes, forces or truncates comes from {@link #open}, and every file it creates, renames or
 * deletes goes through here. {@link #SYSTEM} is the real file system. Implementations are
 * thread-safe.
 */
interface FileIo {

  /** The default file system, through {@link FileChannel} and {@link Files}. */
  FileIo SYSTEM = new FileIo() {
  };

  /** Opens (or with {@link StandardOpenOption#CREATE_NEW}, creates) a file. */
  default FileChannel open(Path path, OpenOption... options) throws IOException {
    return FileChannel.open(path, options);
  }

  /** Deletes a file if it exists. */
  default void delete(Path path) throws IOException {
    Files.deleteIfExists(path);
  }

  /** Renames {@code from} to {@code to} atomically, replacing {@code to}. */
  default void moveAtomically(Path from, Path to) throws IOException {
    try {
      Files.move(from, to, StandardCopyOption.ATOMIC_MOVE);
    } catch (AtomicMoveNotSupportedException e) {
      throw new IOException("the file system cannot rename " + from + " atomically", e);
    }
  }

  /**
   * Makes the directory's entries (files created, renamed, deleted) durable. Some platforms cannot
   * open a directory for syncing; Linux can, and that is where it counts, so only there a failure
   * is an error.
   */
  default void syncDirectory(Path dir) throws IOException {
    try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
      d.force(true);
    } catch (IOException e) {
      if (System.getProperty("os.name", "").toLowerCase(Locale.ROOT).contains("linux")) {
        throw e;
      }
    }
  }
}
