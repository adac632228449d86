package io.relaykit.config;

import io.relaykit.internal.Texts;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Objects;

/**
 * relaykit's one duration syntax, used by every setting and every adapter: a whole number and a
 * unit, {@code 500ms}, {@code 30s}, {@code 5m}, {@code 1h}, {@code 2d}, or ISO-8601 ({@code
 * PT30S}, {@code PT0.25S}, {@code P1D}). Surrounding white space is ignored; short-form units are
 * lower case and follow the number directly ({@code 5M} is rejected rather than guessed: minutes,
 * or months as in ISO {@code P5M}?), while the ISO form is case-insensitive as ISO-8601 allows. A duration must be positive and fit in a {@code long} of
 * nanoseconds (about 292 years), so no caller that converts it to nanoseconds or milliseconds can
 * overflow.
 *
 * <p>Stateless; parsing costs one regular-expression-free scan of the text.
 */
public final class DurationFormat {

  /** The largest duration accepted: {@code Long.MAX_VALUE} nanoseconds, about 292 years. */
  public static final Duration MAX = Duration.ofNanos(Long.MAX_VALUE);

  /** What the error messages say a valid value looks like. */
  static final String EXPECTED =
      "a positive duration such as 500ms, 30s, 5m, 1h, 2d or PT30S (at most 292 years)";

  private DurationFormat() {}

  /**
   * Parses {@code text}.
   *
   * @param name what the value is, for the message: a key such as {@code relaykit.relay.lease}
   * @param text the text to parse
   * @return a positive duration no larger than {@link #MAX}
   * @throws NullPointerException if {@code name} is null
   * @throws IllegalArgumentException naming {@code name} and {@code text} when the text is null,
   *     not in the syntax above, zero, negative, or too large
   */
  public static Duration parse(String name, String text) {
    Objects.requireNonNull(name, "name");
    Duration d = text == null ? null : parseOrNull(text.strip());
    if (d == null) {
      throw new IllegalArgumentException(name + " must be " + EXPECTED + ", was "
          + (text == null ? "null"
              : "'" + Texts.truncateChars(text, Settings.MAX_ECHOED_CHARS) + "'"));
    }
    return d;
  }

  /**
   * Parses {@code text} as {@link #parse(String, String)} does, naming it "duration" in errors.
   *
   * @param text the text to parse
   * @return a positive duration no larger than {@link #MAX}
   * @throws IllegalArgumentException naming {@code text} when it is not a valid duration
   */
  public static Duration parse(String text) {
    return parse("duration", text);
  }

  /**
   * Writes {@code duration} in the shortest form {@link #parse} reads back exactly: {@code 2d},
   * {@code 90m}, {@code 1500ms}, or ISO-8601 for what is not a whole number of milliseconds.
   *
   * @param duration a positive duration no larger than {@link #MAX}
   * @return text that parses back to {@code duration}
   * @throws NullPointerException if {@code duration} is null
   * @throws IllegalArgumentException if {@code duration} is not positive or larger than {@link
   *     #MAX}
   */
  public static String format(Duration duration) {
    Objects.requireNonNull(duration, "duration");
    if (duration.isZero() || duration.isNegative() || duration.compareTo(MAX) > 0) {
      throw new IllegalArgumentException("duration must be positive and at most " + MAX
          + ", was " + duration);
    }
    if (duration.getNano() % 1_000_000 != 0) {
      return duration.toString();
    }
    long ms = duration.toMillis();
    long[] sizes = {86_400_000L, 3_600_000L, 60_000L, 1_000L};
    String[] units = {"d", "h", "m", "s"};
    for (int i = 0; i < sizes.length; i++) {
      if (ms % sizes[i] == 0) {
        return ms / sizes[i] + units[i];
      }
    }
    return ms + "ms";
  }

  /** The duration {@code v} (already stripped) denotes, or null when it is not a valid one. */
  private static Duration parseOrNull(String v) {
    Duration d;
    if (!v.isEmpty() && (v.charAt(0) == 'P' || v.charAt(0) == 'p')) {
      try {
        d = Duration.parse(v);
      } catch (DateTimeParseException e) {
        return null; // Duration.parse reports overflow as a parse failure too
      }
    } else {
      d = shortForm(v);
    }
    if (d == null || d.isZero() || d.isNegative() || d.compareTo(MAX) > 0) {
      return null;
    }
    return d;
  }

  private static Duration shortForm(String v) {
    int digits = 0;
    while (digits < v.length() && v.charAt(digits) >= '0' && v.charAt(digits) <= '9') {
      digits++;
    }
    if (digits == 0 || digits > 18) { // 18 digits always fit in a long
      return null;
    }
    long amount = Long.parseLong(v, 0, digits, 10);
    try {
      return switch (v.substring(digits)) {
        case "ms" -> Duration.ofMillis(amount);
        case "s" -> Duration.ofSeconds(amount);
        case "m" -> Duration.ofMinutes(amount);
        case "h" -> Duration.ofHours(amount);
        case "d" -> Duration.ofDays(amount);
        default -> null;
      };
    } catch (ArithmeticException e) {
      return null; // larger than Duration can hold; MAX rejects far less anyway
    }
  }
}
