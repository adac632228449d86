package io.relaykit.spring.boot;

import io.relaykit.config.DurationFormat;
import io.relaykit.config.Settings;
import java.time.Duration;
import java.util.regex.Pattern;

/**
 * The operator console's {@code relaykit.console.*} settings, checked: a bad value fails the
 * start naming the key and the value.
 *
 * @param path where the console is served, starting with {@code /}, without a trailing {@code /}
 * @param showPayloads whether dead letters' payloads are shown
 * @param payloadMaxBytes the most bytes of a payload shown
 * @param readOnly whether every action is refused
 * @param sampleInterval how often the history is sampled
 */
record RelaykitConsoleSettings(String path, boolean showPayloads, int payloadMaxBytes,
    boolean readOnly, Duration sampleInterval) {

  /** How far back the console's history reaches. */
  static final Duration HISTORY = Duration.ofHours(1);
  /** The largest payload cut the console accepts. */
  static final int MAX_PAYLOAD_BYTES = 1_000_000;
  static final Duration MIN_INTERVAL = Duration.ofSeconds(1);
  static final Duration MAX_INTERVAL = Duration.ofMinutes(5);
  /** The longest path accepted, in characters. */
  static final int MAX_PATH = 200;

  private static final Pattern SEGMENT = Pattern.compile("[A-Za-z0-9._~-]+");

  /**
   * The console's settings.
   *
   * @param settings the application's settings
   * @return the checked settings
   * @throws IllegalArgumentException naming the {@code relaykit.console.*} key of a bad value
   */
  static RelaykitConsoleSettings from(Settings settings) {
    String path = path(settings.getString(SpringConfigKeys.CONSOLE_PATH,
        SpringConfigKeys.CONSOLE_DEFAULT_PATH));
    int maxBytes = settings.getInt(SpringConfigKeys.CONSOLE_PAYLOAD_MAX_BYTES, 16_384);
    if (maxBytes < 1 || maxBytes > MAX_PAYLOAD_BYTES) {
      throw new IllegalArgumentException(SpringConfigKeys.CONSOLE_PAYLOAD_MAX_BYTES
          + " must be in 1.." + MAX_PAYLOAD_BYTES + ", was " + maxBytes);
    }
    Duration interval = settings.getDuration(SpringConfigKeys.CONSOLE_SAMPLE_INTERVAL,
        Duration.ofSeconds(10));
    if (interval.compareTo(MIN_INTERVAL) < 0 || interval.compareTo(MAX_INTERVAL) > 0) {
      throw new IllegalArgumentException(SpringConfigKeys.CONSOLE_SAMPLE_INTERVAL
          + " must be between 1s and 5m, was " + (interval.isZero() || interval.isNegative()
              ? interval.toString() : DurationFormat.format(interval)));
    }
    return new RelaykitConsoleSettings(path,
        settings.getBoolean(SpringConfigKeys.CONSOLE_SHOW_PAYLOADS, false), maxBytes,
        settings.getBoolean(SpringConfigKeys.CONSOLE_READ_ONLY, false), interval);
  }

  /** How many samples an hour of history holds at the interval (at least 2). */
  int historySamples() {
    return (int) Math.max(2, HISTORY.toMillis() / sampleInterval.toMillis());
  }

  /**
   * The console's path, normalised: surrounding blanks and trailing slashes removed.
   *
   * @param value the configured value
   * @return the path, starting with {@code /}
   * @throws IllegalArgumentException naming {@code relaykit.console.path} when the value is the
   *     root, does not start with {@code /}, is too long, or holds an empty, {@code .} or {@code
   *     ..} segment or a character outside letters, digits, {@code . _ ~ -}
   */
  static String path(String value) {
    String p = value == null ? "" : value.strip();
    while (p.length() > 1 && p.endsWith("/")) {
      p = p.substring(0, p.length() - 1);
    }
    String why = null;
    if (!p.startsWith("/")) {
      why = "must start with /";
    } else if (p.equals("/")) {
      why = "must not be the root: the console needs a path of its own";
    } else if (p.length() > MAX_PATH) {
      why = "must be at most " + MAX_PATH + " characters";
    } else {
      for (String segment : p.substring(1).split("/", -1)) {
        if (!SEGMENT.matcher(segment).matches() || segment.equals(".") || segment.equals("..")) {
          why = "must be segments of letters, digits, '.', '_', '~' and '-' (no empty, '.' or"
              + " '..' segment, no wildcard)";
          break;
        }
      }
    }
    if (why != null) {
      throw new IllegalArgumentException(SpringConfigKeys.CONSOLE_PATH + " " + why + ", was '"
          + (value == null ? "" : value.length() > MAX_PATH ? value.substring(0, MAX_PATH)
              + "..." : value) + "'");
    }
    return p;
  }
}
