package io.relaykit.tck;

import static org.assertj.core.api.Assertions.assertThat;

import java.text.MessageFormat;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * Captures everything relaykit logs through {@link System.Logger} while it is open, at every level
 * (TRACE included), for tests that assert on what a run logged — above all that a payload never
 * reaches a log line.
 *
 * <p>relaykit logs only through {@link System.Logger}; with no logger finder installed (no
 * slf4j-jdk-platform-logging on the class path) the JDK routes those loggers to
 * {@code java.util.logging}, and this class attaches a handler to the {@code io.relaykit} logger
 * there. {@link #open()} checks that routing with a probe line and fails clearly if the class path
 * routes {@code System.Logger} elsewhere, so a capture can never pass because it saw nothing.
 *
 * <p>Bounded: it keeps the first {@value #MAX_LINES} lines, {@value #MAX_CHARS} characters in
 * all, and counts the rest in {@link #dropped()}; {@link #assertNeverContains} fails if any line was dropped, so a cut never hides a
 * leak. Lines from every thread of the JVM are captured, including other tests running at the same
 * time: assert on markers unique to your test.
 */
public final class LogCapture implements AutoCloseable {
  /** The most lines kept. */
  public static final int MAX_LINES = 20_000;

  /** The most characters kept over all lines (a line with a deep stack trace is long). */
  public static final long MAX_CHARS = 8_000_000;

  private static final String ROOT = "io.relaykit";
  private static final String PROBE = "io.relaykit.tck.LogCapture.probe";

  /** Guards {@link #open}, {@link #levelBefore}: captures may overlap in parallel tests. */
  private static final Object LEVEL_LOCK = new Object();
  private static int openCaptures;
  private static Level levelBefore;

  private final Logger logger;
  private final Handler handler;
  private final List<String> lines = new ArrayList<>();
  private long dropped;
  private long chars;
  private volatile boolean closed;

  private LogCapture() {
    // A strong reference: java.util.logging holds its loggers weakly, and a collected logger
    // would take the level and the handler with it.
    this.logger = Logger.getLogger(ROOT);
    this.handler = new Handler() {
      @Override
      public void publish(LogRecord record) {
        add(render(record));
      }

      @Override
      public void flush() {}

      @Override
      public void close() {}
    };
    handler.setLevel(Level.ALL);
    synchronized (LEVEL_LOCK) {
      if (openCaptures++ == 0) {
        levelBefore = logger.getLevel();
        logger.setLevel(Level.ALL);
      }
    }
    logger.addHandler(handler);
  }

  /**
   * Starts capturing.
   *
   * @return the open capture; close it to detach
   * @throws AssertionError if relaykit's {@link System.Logger} lines do not reach
   *     {@code java.util.logging} on this class path (a logger finder such as
   *     slf4j-jdk-platform-logging is installed): nothing could be captured
   */
  public static LogCapture open() {
    LogCapture capture = new LogCapture();
    String probe = "log capture probe " + System.nanoTime();
    System.getLogger(PROBE).log(System.Logger.Level.TRACE, probe);
    boolean seen;
    synchronized (capture) {
      seen = capture.lines.stream().anyMatch(l -> l.contains(probe));
    }
    if (!seen) {
      capture.close();
      throw new AssertionError("System.Logger does not route to java.util.logging on this class"
          + " path (logger finder: " + System.LoggerFinder.getLoggerFinder().getClass().getName()
          + "); LogCapture cannot see relaykit's log lines");
    }
    return capture;
  }

  private synchronized void add(String line) {
    if (lines.size() < MAX_LINES && chars + line.length() <= MAX_CHARS) {
      lines.add(line);
      chars += line.length();
    } else {
      dropped++;
    }
  }

  /**
   * One line as a log backend would write it: logger, level, the formatted message, and every
   * throwable in the cause and suppressed chain with its message and stack frames.
   */
  private static String render(LogRecord record) {
    StringBuilder b = new StringBuilder();
    b.append(record.getLoggerName()).append(' ').append(record.getLevel()).append(' ');
    String message = record.getMessage();
    Object[] params = record.getParameters();
    if (message != null && params != null && params.length > 0) {
      try {
        message = MessageFormat.format(message, params);
      } catch (IllegalArgumentException e) {
        message = message + " " + List.of(params);
      }
    }
    b.append(message);
    appendThrowable(b, record.getThrown(), Collections.newSetFromMap(new IdentityHashMap<>()));
    return b.toString();
  }

  private static void appendThrowable(StringBuilder b, Throwable t, Set<Throwable> seen) {
    if (t == null || !seen.add(t)) {
      return;
    }
    b.append(" | ").append(t);
    for (StackTraceElement e : t.getStackTrace()) {
      b.append(" at ").append(e);
    }
    for (Throwable s : t.getSuppressed()) {
      appendThrowable(b, s, seen);
    }
    appendThrowable(b, t.getCause(), seen);
  }

  /**
   * The lines captured so far, oldest first, without the probe line of {@link #open()}.
   *
   * @return a copy
   */
  public synchronized List<String> lines() {
    return lines.stream().filter(l -> !l.startsWith(PROBE + " ")).toList();
  }

  /**
   * How many lines were not kept because {@value #MAX_LINES} lines or {@value #MAX_CHARS}
   * characters were.
   *
   * @return the count
   */
  public synchronized long dropped() {
    return dropped;
  }

  /**
   * Fails if any captured line contains {@code marker}, naming the first such line, or if lines
   * were dropped (they could have held it).
   *
   * @param marker text that must appear nowhere, e.g. a distinctive string inside a payload
   * @throws AssertionError if it appears or lines were dropped
   */
  public void assertNeverContains(String marker) {
    assertThat(dropped()).as("log lines dropped by the capture (they could hold the marker)")
        .isZero();
    List<String> all = lines();
    all.stream().filter(l -> l.contains(marker)).findFirst().ifPresent(l -> {
      throw new AssertionError("a log line contains \"" + marker + "\" (one of " + all.size()
          + " lines captured): " + l);
    });
  }

  /**
   * Detaches the handler; the last open capture to close restores the {@code io.relaykit} logger's
   * level. Closing twice has no further effect.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    logger.removeHandler(handler);
    synchronized (LEVEL_LOCK) {
      if (--openCaptures == 0) {
        logger.setLevel(levelBefore);
      }
    }
  }
}
