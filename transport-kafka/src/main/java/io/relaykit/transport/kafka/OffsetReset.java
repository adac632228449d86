package io.relaykit.transport.kafka;

import java.time.Duration;
import java.time.format.DateTimeParseException;

/**
 * Where a source partition without a usable committed offset starts: the user's {@code
 * auto.offset.reset} ({@code earliest}, the default; {@code latest}; {@code none}; {@code
 * by_duration:<ISO-8601 duration>}). The runtime runs its consumer with {@code none} and applies
 * this itself, to the source partitions only: retry partitions always start from their earliest
 * copy, whatever the user chose, since a skipped retry copy is a lost message.
 *
 * @param kind which rule
 * @param duration how far back, for {@link Kind#BY_DURATION}; null otherwise
 */
record OffsetReset(Kind kind, Duration duration) {

  /** The rules Kafka knows. */
  enum Kind { EARLIEST, LATEST, NONE, BY_DURATION }

  static final String SETTING = "auto.offset.reset";
  private static final String BY_DURATION = "by_duration:";

  /**
   * Parses an {@code auto.offset.reset} value; null means the transport's default, {@code
   * earliest}.
   *
   * @throws IllegalArgumentException naming the setting and the value if it is none of Kafka's
   */
  static OffsetReset parse(String value) {
    if (value == null) {
      return new OffsetReset(Kind.EARLIEST, null);
    }
    String v = value.trim().toLowerCase(java.util.Locale.ROOT);
    switch (v) {
      case "earliest":
        return new OffsetReset(Kind.EARLIEST, null);
      case "latest":
        return new OffsetReset(Kind.LATEST, null);
      case "none":
        return new OffsetReset(Kind.NONE, null);
      default:
        break;
    }
    if (v.startsWith(BY_DURATION)) {
      try {
        Duration d = Duration.parse(value.trim().substring(BY_DURATION.length()));
        if (!d.isNegative()) {
          return new OffsetReset(Kind.BY_DURATION, d);
        }
      } catch (DateTimeParseException e) {
        // reported below
      }
    }
    throw new IllegalArgumentException("consumerProperty " + SETTING + " must be earliest,"
        + " latest, none or by_duration:<ISO-8601 duration, not negative>, was \"" + value + "\"");
  }

  @Override
  public String toString() {
    return SETTING + "=" + (kind == Kind.BY_DURATION ? BY_DURATION + duration
        : kind.name().toLowerCase(java.util.Locale.ROOT));
  }
}
