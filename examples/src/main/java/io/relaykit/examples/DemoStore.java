package io.relaykit.examples;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Locale;
import java.util.Objects;
import java.util.Properties;
import java.util.regex.Pattern;

/**
 * Which database a demo keeps its orders, outbox and dead letters in, and where that choice came
 * from: the one fact the operator CLI needs to read what a running demo writes.
 *
 * <p>The demo records its store at start in {@value #FILE} under its data folder (two lines,
 * {@code storage} and {@code url}; owner-only permissions where the file system has them, because a
 * PostgreSQL URL may carry a password). The CLI reads that file unless {@code --storage} or {@code
 * --url} say otherwise, and names the store in its first line with any password masked.
 *
 * @param storage {@code h2}, {@code postgres} or {@code redis} (the H2 file, fronted by Redis for
 *     idempotency only: the CLI reads the H2 file)
 * @param url the JDBC URL of the database
 * @param origin where this choice came from, in words (for the CLI's first line)
 */
record DemoStore(String storage, String url, String origin) {
  /** The file, under the data folder, in which a demo records its store. */
  static final String FILE = "relaykit-store.properties";
  private static final Pattern PASSWORD = Pattern.compile("(?i)(password=)[^&;]*");
  /**
   * The options of the demo's H2 URL. {@code AUTO_SERVER=TRUE}: the first process to open the
   * file hosts it, and the operator CLI (or a second demo) opens it through that host while it
   * runs. {@code FILE_LOCK=SOCKET}: the host proves it is alive by a listening socket named in
   * {@code relaykit.lock.db}, so a start after a kill -9 sees the old port refuse and takes the
   * lock at once; with H2's default for AUTO_SERVER ({@code FILE}) it sleeps two seconds to make
   * sure no live holder rewrites the lock file. Either way the store file itself carries an OS
   * lock, so two processes never open it embedded at once.
   */
  static final String H2_OPTIONS = ";AUTO_SERVER=TRUE;FILE_LOCK=SOCKET";
  /** H2's system property naming the address its server sockets bind to. */
  static final String H2_BIND_ADDRESS = "h2.bindAddress";

  /**
   * Binds H2's own listening sockets in this JVM to 127.0.0.1: the lock socket of {@code
   * FILE_LOCK=SOCKET} and AUTO_SERVER's TCP server, which H2 otherwise binds to every interface
   * (and advertises by the host's address in the lock file). H2 has no per-database setting for
   * this: it reads the system property {@code h2.bindAddress} once, when its classes load, for the
   * whole JVM. So only the launchers' {@code main} methods call this, before anything opens H2;
   * an explicit {@code -Dh2.bindAddress} wins; code that embeds the demo in another JVM sets
   * nothing. Consequence: the demo's H2 file is shared with processes on this host only.
   */
  static void bindH2ToLoopback() {
    if (System.getProperty(H2_BIND_ADDRESS) == null) {
      System.setProperty(H2_BIND_ADDRESS, "127.0.0.1");
    }
  }
  /** Bound on the recorded file: two short lines; anything larger is not ours. */
  private static final long MAX_FILE_BYTES = 16 * 1024;

  DemoStore {
    Objects.requireNonNull(storage, "storage");
    Objects.requireNonNull(url, "url");
    Objects.requireNonNull(origin, "origin");
    if (!DemoOptions.STORAGES.contains(storage)) {
      throw new IllegalArgumentException("storage must be one of " + DemoOptions.STORAGES
          + ", was '" + storage + "'");
    }
  }

  /** The store a demo started with {@code options} uses (the H2 file under its data folder, or PostgreSQL). */
  static DemoStore of(DemoOptions options) {
    return new DemoStore(options.storage(), defaultUrl(options.storage(), options.dataDir()),
        "--storage " + options.storage());
  }

  /** The JDBC URL {@code storage} means without {@code --url}. */
  static String defaultUrl(String storage, Path dataDir) {
    if (storage.equals("postgres")) {
      return CheckoutApp.postgresUrl();
    }
    return "jdbc:h2:file:" + dataDir.toAbsolutePath().resolve("relaykit") + H2_OPTIONS;
  }

  /**
   * The store the CLI reads: {@code --url} (with {@code --storage} if given, which must agree),
   * else {@code --storage}, else what a demo recorded in {@code dataDir}, else the H2 file there.
   *
   * @param storage the {@code --storage} value, or null
   * @param url the {@code --url} value, or null
   * @throws IllegalArgumentException for an unknown storage, a URL that is neither H2 nor
   *     PostgreSQL, a storage that contradicts the URL, or a recorded file that cannot be read
   */
  static DemoStore resolve(Path dataDir, String storage, String url) {
    String wanted = storage == null ? null : storage.toLowerCase(Locale.ROOT);
    if (wanted != null && !DemoOptions.STORAGES.contains(wanted)) {
      throw new IllegalArgumentException("--storage must be one of " + DemoOptions.STORAGES
          + ", was '" + storage + "'");
    }
    if (url != null) {
      String kind = kindOf(url);
      if (kind == null) {
        throw new IllegalArgumentException("--url must be a jdbc:h2: or jdbc:postgresql: URL, was '"
            + mask(url) + "'");
      }
      if (wanted != null && !kind.equals(wanted.equals("redis") ? "h2" : wanted)) {
        throw new IllegalArgumentException("--storage " + wanted + " does not match --url "
            + mask(url));
      }
      return new DemoStore(wanted == null ? kind : wanted, url, "--url");
    }
    if (wanted != null) {
      return new DemoStore(wanted, defaultUrl(wanted, dataDir), "--storage " + wanted);
    }
    Path file = dataDir.resolve(FILE);
    Properties recorded = new Properties();
    try {
      if (Files.size(file) > MAX_FILE_BYTES) {
        throw new IllegalArgumentException(file + " is over " + MAX_FILE_BYTES
            + " bytes: not a store the demo recorded; pass --storage or --url");
      }
      try (InputStream in = Files.newInputStream(file)) {
        recorded.load(in);
      }
    } catch (NoSuchFileException e) {
      return new DemoStore("h2", defaultUrl("h2", dataDir), "default: no demo recorded a store in "
          + dataDir);
    } catch (IOException e) {
      throw new IllegalArgumentException("cannot read " + file + " (" + e.getMessage()
          + "); pass --storage or --url", e);
    }
    String s = recorded.getProperty("storage");
    String u = recorded.getProperty("url");
    if (s == null || u == null || !DemoOptions.STORAGES.contains(s) || kindOf(u) == null) {
      throw new IllegalArgumentException(file + " does not name a storage and a JDBC URL (storage="
          + s + ", url=" + (u == null ? null : mask(u)) + "); pass --storage or --url");
    }
    return new DemoStore(s, u, "recorded by the demo in " + file);
  }

  /**
   * Writes this store to {@value #FILE} under {@code dataDir}, replacing an earlier record in one
   * rename (a reader sees the old file or the new one, never half of one).
   *
   * @throws UncheckedIOException if the folder or the file cannot be written
   */
  void record(Path dataDir) {
    Properties p = new Properties();
    p.setProperty("storage", storage);
    p.setProperty("url", url);
    Path target = dataDir.resolve(FILE);
    try {
      Files.createDirectories(dataDir);
      Path tmp = dataDir.resolve(FILE + ".tmp");
      Files.deleteIfExists(tmp);
      try {
        Files.createFile(tmp, PosixFilePermissions.asFileAttribute(
            PosixFilePermissions.fromString("rw-------")));
      } catch (UnsupportedOperationException e) {
        // Not a POSIX file system: the folder's own permissions protect it.
        Files.createFile(tmp);
      } catch (FileAlreadyExistsException e) {
        throw new IOException("another demo is recording its store in " + dataDir, e);
      }
      try (OutputStream out = Files.newOutputStream(tmp)) {
        p.store(out, "the store a relaykit demo uses; read by ./relaykit stats and dlq");
      }
      Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING,
          StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot record the demo's store in " + target, e);
    }
  }

  /** One line for the CLI: the storage, the URL with its password masked, and the origin. */
  String describe() {
    String what = storage.equals("redis") ? "h2 (the H2 file of --storage redis)" : storage;
    return "store: " + what + " " + mask(url) + " (" + origin + ")";
  }

  /** {@code h2} or {@code postgres} for a JDBC URL of either, else null. */
  static String kindOf(String url) {
    if (url.startsWith("jdbc:h2:")) {
      return "h2";
    }
    if (url.startsWith("jdbc:postgresql:")) {
      return "postgres";
    }
    return null;
  }

  /** {@code url} with the value of any {@code password=} parameter replaced by {@code ***}. */
  static String mask(String url) {
    return PASSWORD.matcher(url).replaceAll("$1***");
  }
}
