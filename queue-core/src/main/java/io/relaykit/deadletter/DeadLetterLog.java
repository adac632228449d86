package io.relaykit.deadletter;

import io.relaykit.internal.Texts;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.queue.TimeSource;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;

/**
 * The one WARN line and the one count of every dead-lettering, on every transport: each consumer
 * runtime (in-process, Kafka, Kafka share groups, RabbitMQ) calls {@link #deadLettered} once a
 * dead letter is stored, so a dead letter never goes unnoticed whichever store holds it.
 *
 * <p>The line names the message id, the destination, the group, the attempts and the reason, never
 * the payload or the user's headers: {@code dead-lettered message 42 of orders (group billing)
 * after 3 attempts: <reason>}. The reason is cut to {@value #MAX_REASON_CHARS} characters and its
 * control characters (line breaks included) are replaced, so a reason read from the wire cannot
 * forge log lines.
 *
 * <p>Rate-limited per destination and group, so that a flood of poison messages on one destination
 * never hides the first dead letter of another: at most {@code maxLines} lines per {@code window}
 * for each (measured on the clock's monotonic reading, so wall-clock steps change nothing); the
 * lines over that are suppressed and counted, and the next line logged for that destination and
 * group says how many were suppressed since the last one. At most {@value #MAX_TRACKED} pairs are
 * tracked; when that many are, pairs whose window has ended with nothing suppressed are forgotten,
 * and a new pair that still finds no room shares one rate limit with every other such pair. The
 * count through {@link MetricsListener#deadLettered} is never suppressed.
 *
 * <p>Thread-safe; {@link #deadLettered} takes one short lock and makes one logger call outside it.
 * It never throws: a failing metrics listener is contained by {@link MetricsListener#safely}.
 */
public final class DeadLetterLog {

  /** Lines logged per window by {@link #shared()}. */
  public static final int DEFAULT_MAX_LINES = 20;
  /** The window of {@link #shared()}. */
  public static final Duration DEFAULT_WINDOW = Duration.ofMinutes(1);
  /** The longest reason a line carries, in characters. */
  public static final int MAX_REASON_CHARS = 512;

  /** The most (destination, group) pairs whose rate limits are tracked apart. */
  public static final int MAX_TRACKED = 1024;

  private static final int MAX_NAME_CHARS = 256;
  private static final String OVERFLOW = "";
  private static final System.Logger LOG = System.getLogger(DeadLetterLog.class.getName());
  private static final DeadLetterLog SHARED =
      new DeadLetterLog(TimeSource.system(), DEFAULT_MAX_LINES, DEFAULT_WINDOW);

  private final TimeSource clock;
  private final int maxLines;
  private final long windowNanos;
  private final Map<String, Window> windows = new HashMap<>();

  private static final class Window {
    long start;
    int lines;
    long suppressed;

    Window(long start) {
      this.start = start;
    }
  }

  /**
   * A log with its own rate limit.
   *
   * @param clock whose {@link TimeSource#nanoTime()} measures the window
   * @param maxLines the most lines per window, {@code >= 1}
   * @param window the window, positive
   * @throws NullPointerException if {@code clock} or {@code window} is null
   * @throws IllegalArgumentException if {@code maxLines < 1} or {@code window} is not positive
   */
  public DeadLetterLog(TimeSource clock, int maxLines, Duration window) {
    this.clock = Objects.requireNonNull(clock, "clock");
    Objects.requireNonNull(window, "window");
    if (maxLines < 1) {
      throw new IllegalArgumentException("maxLines must be >= 1: " + maxLines);
    }
    if (window.isNegative() || window.isZero()) {
      throw new IllegalArgumentException("window must be positive: " + window);
    }
    this.maxLines = maxLines;
    this.windowNanos = saturatedNanos(window);
  }

  /**
   * The log every runtime uses unless given another: {@value #DEFAULT_MAX_LINES} lines per minute
   * for the whole JVM, on the system clock.
   *
   * @return the shared log
   */
  public static DeadLetterLog shared() {
    return SHARED;
  }

  /**
   * Reports one stored dead letter: counts it through {@code metrics} and logs its WARN line unless
   * the rate limit suppresses it.
   *
   * @param metrics where the count goes; {@link MetricsListener#deadLettered} is called once
   * @param messageId the message's id (null or blank is logged as {@code ?})
   * @param destination the destination consumed (null or blank is logged as {@code ?})
   * @param group the consumer group; null for none
   * @param attempts the attempts made, {@code 0} for a message that could not be decoded
   * @param reason why it was given up; null is logged as {@code ?}
   */
  public void deadLettered(MetricsListener metrics, String messageId, String destination,
      String group, int attempts, String reason) {
    String dest = clean(destination, MAX_NAME_CHARS);
    String grp = group == null ? null : clean(group, MAX_NAME_CHARS);
    if (metrics != null) {
      MetricsListener.safely(metrics, m -> m.deadLettered(dest, grp));
    }
    long suppressedBefore;
    synchronized (this) {
      long now = clock.nanoTime();
      Window w = window(dest + '\u0000' + (grp == null ? "" : grp), now);
      if (now - w.start >= windowNanos) {
        w.start = now;
        w.lines = 0;
      }
      if (w.lines >= maxLines) {
        w.suppressed++;
        return;
      }
      w.lines++;
      suppressedBefore = w.suppressed;
      w.suppressed = 0;
    }
    if (!LOG.isLoggable(System.Logger.Level.WARNING)) {
      return;
    }
    StringBuilder line = new StringBuilder(128)
        .append("dead-lettered message ").append(clean(messageId, MAX_NAME_CHARS))
        .append(" of ").append(dest);
    if (grp != null) {
      line.append(" (group ").append(grp).append(')');
    }
    line.append(" after ").append(attempts).append(attempts == 1 ? " attempt: " : " attempts: ")
        .append(clean(reason, MAX_REASON_CHARS));
    if (suppressedBefore > 0) {
      line.append(" [").append(suppressedBefore)
          .append(" more dead-letter lines suppressed since the last one]");
    }
    LOG.log(System.Logger.Level.WARNING, line.toString());
  }

  /**
   * Reports one stored dead letter: {@link #deadLettered(MetricsListener, String, String, String,
   * int, String)} with its message id, source, group, attempts and reason.
   *
   * @param metrics where the count goes
   * @param deadLetter the dead letter stored
   * @throws NullPointerException if {@code deadLetter} is null
   */
  public void deadLettered(MetricsListener metrics, DeadLetter deadLetter) {
    Objects.requireNonNull(deadLetter, "deadLetter");
    deadLettered(metrics, deadLetter.message().id(), deadLetter.source(), deadLetter.group(),
        deadLetter.attempts(), deadLetter.reason());
  }

  /**
   * Dead-letter lines of {@code destination} and {@code group} suppressed since the last line
   * logged for them (those of pairs that shared the overflow limit are not counted here).
   *
   * @param destination the destination
   * @param group the consumer group; null for none
   * @return the count, {@code >= 0}
   */
  public synchronized long suppressed(String destination, String group) {
    Window w = windows.get(clean(destination, MAX_NAME_CHARS) + '\u0000'
        + (group == null ? "" : clean(group, MAX_NAME_CHARS)));
    return w == null ? 0 : w.suppressed;
  }

  private Window window(String key, long now) {
    Window w = windows.get(key);
    if (w != null) {
      return w;
    }
    if (windows.size() >= MAX_TRACKED) {
      windows.values().removeIf(x -> x.suppressed == 0 && now - x.start >= windowNanos);
    }
    if (windows.size() >= MAX_TRACKED) {
      return windows.computeIfAbsent(OVERFLOW, k -> new Window(now));
    }
    w = new Window(now);
    windows.put(key, w);
    return w;
  }

  private static String clean(String s, int maxChars) {
    if (s == null || s.isBlank()) {
      return "?";
    }
    String cut = Texts.truncateChars(s, maxChars);
    StringBuilder b = null;
    for (int i = 0; i < cut.length(); i++) {
      char c = cut.charAt(i);
      if (Character.isISOControl(c)) {
        if (b == null) {
          b = new StringBuilder(cut);
        }
        b.setCharAt(i, ' ');
      }
    }
    return b == null ? cut : b.toString();
  }

  private static long saturatedNanos(Duration d) {
    try {
      return d.toNanos();
    } catch (ArithmeticException e) {
      return Long.MAX_VALUE;
    }
  }
}
