package io.relaykit.examples;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A skewed wall clock for a child process, from outside it: libfaketime (Debian's {@code faketime}
 * package; {@code ./relaykit test} installs it, see {@code ensure_faketime} in {@code
 * scripts/services.sh}) preloaded into the child, for the chaos runs' {@code clock} fault and for
 * lease and retention tests on an instance whose clock is ahead or behind.
 *
 * <p>What the child sees: {@code System.currentTimeMillis()} and {@code Instant.now()} shifted by
 * the offset; timed waits ({@code LockSupport.parkNanos}, {@code Object.wait}, {@code
 * Thread.sleep}, executors) as long as asked; {@code System.nanoTime()} advancing at the real rate
 * from another origin (its origin is arbitrary in any JVM, so nothing may compare it across
 * processes).
 *
 * <p>Why {@code FAKETIME_DONT_FAKE_MONOTONIC=0}, measured with Debian's libfaketime 0.9.10 and
 * OpenJDK 17: the flag is honoured by {@code clock_gettime} (with {@code =1} a child's {@code
 * nanoTime()} equals the machine's real monotonic clock), but libfaketime's {@code
 * pthread_cond_timedwait} wrapper still shifts the JVM's monotonic deadlines, so every timed park
 * returns at once: a 50 ms {@code parkNanos} returned after 56 µs and a 50 ms park loop spun 6 064
 * times, and the demo, spinning on every poll, took 45 s to serve one order. With the monotonic
 * clock faked as well ({@code =0}, libfaketime's default) the JVM's clock reads and its waits agree
 * and behave as without libfaketime, for positive and negative offsets. The variable is set
 * explicitly so an inherited {@code =1} cannot turn the waits into spins.
 *
 * <p>Costs nothing in this JVM; in the child, an indirection on each clock read.
 */
public final class Faketime {
  /** Overrides where libfaketime is looked for. */
  public static final String LIBRARY_ENV = "RELAYKIT_LIBFAKETIME";
  /** At most this far off: a skew of years is a mistake, not a fault to inject. */
  public static final Duration MAX_OFFSET = Duration.ofDays(366);
  private static final List<String> CANDIDATES = List.of(
      "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
      "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
      "/usr/lib/faketime/libfaketime.so.1");

  private Faketime() {}

  /** libfaketime's {@code libfaketime.so.1}: {@code RELAYKIT_LIBFAKETIME}, else Debian's path. */
  public static Optional<Path> library() {
    String override = System.getenv(LIBRARY_ENV);
    if (override != null && !override.isBlank()) {
      Path p = Path.of(override);
      return Files.isRegularFile(p) ? Optional.of(p) : Optional.empty();
    }
    return CANDIDATES.stream().map(Path::of).filter(Files::isRegularFile).findFirst();
  }

  /**
   * {@link #library()}, or a clear failure.
   *
   * @throws IllegalStateException naming the package to install
   */
  public static Path requireLibrary() {
    return library().orElseThrow(() -> new IllegalStateException("libfaketime.so.1 not found"
        + " (looked in " + CANDIDATES + " and " + LIBRARY_ENV + "): install Debian's faketime"
        + " package (apt-get install faketime; ./relaykit test installs it)"));
  }

  /**
   * libfaketime's relative offset for {@code offset}: {@code "+31s"}, {@code "-5s"}.
   *
   * @throws IllegalArgumentException for a fraction of a second or more than {@link #MAX_OFFSET}
   */
  public static String offset(Duration offset) {
    if (offset == null) {
      throw new IllegalArgumentException("the clock offset must not be null");
    }
    if (offset.getNano() != 0) {
      throw new IllegalArgumentException("the clock offset must be whole seconds, was " + offset);
    }
    if (offset.abs().compareTo(MAX_OFFSET) > 0) {
      throw new IllegalArgumentException("the clock offset must be within " + MAX_OFFSET.toDays()
          + " days, was " + offset);
    }
    long s = offset.getSeconds();
    return (s < 0 ? "-" : "+") + Math.abs(s) + "s";
  }

  /**
   * The environment variables that start a child process with its wall clock {@code offset} off:
   * {@code LD_PRELOAD} (libfaketime first, then whatever {@code currentPreload} held), {@code
   * FAKETIME}, and {@code FAKETIME_DONT_FAKE_MONOTONIC=0} (see the class comment for why).
   *
   * @param currentPreload the child's {@code LD_PRELOAD} otherwise, or null
   * @throws IllegalStateException if libfaketime is not installed
   * @throws IllegalArgumentException for a bad offset (see {@link #offset})
   */
  public static Map<String, String> environment(Duration offset, String currentPreload) {
    String fake = offset(offset);
    String lib = requireLibrary().toString();
    Map<String, String> env = new LinkedHashMap<>();
    env.put("LD_PRELOAD", currentPreload == null || currentPreload.isBlank() ? lib
        : lib + ":" + currentPreload);
    env.put("FAKETIME", fake);
    env.put("FAKETIME_DONT_FAKE_MONOTONIC", "0");
    return env;
  }

  /** {@link #environment(Duration, String)} over this JVM's own {@code LD_PRELOAD}. */
  public static Map<String, String> environment(Duration offset) {
    return environment(offset, System.getenv("LD_PRELOAD"));
  }

  /** Puts {@link #environment(Duration, String)} into {@code builder}'s environment. */
  public static ProcessBuilder apply(ProcessBuilder builder, Duration offset) {
    builder.environment().putAll(environment(offset, builder.environment().get("LD_PRELOAD")));
    return builder;
  }
}
