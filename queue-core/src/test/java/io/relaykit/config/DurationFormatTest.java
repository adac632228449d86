package io.relaykit.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.SplittableRandom;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class DurationFormatTest {

  @ParameterizedTest(name = "{0} is {1} ms")
  @CsvSource({"1ms, 1", "500ms, 500", "30s, 30000", "5m, 300000", "1h, 3600000",
      "2d, 172800000", "PT30S, 30000", "PT0.25S, 250", "pt1m, 60000", "P1D, 86400000",
      "' 7s ', 7000", "007s, 7000"})
  @DisplayName("every short form and ISO-8601 is accepted")
  void accepted(String text, long millis) {
    assertThat(DurationFormat.parse("relaykit.relay.lease", text))
        .isEqualTo(Duration.ofMillis(millis));
  }

  @ParameterizedTest(name = "''{0}''")
  @ValueSource(strings = {"", " ", "0s", "0ms", "PT0S", "-PT1S", "-5s", "10", "10 s", "10sec",
      "5M", "1.5s", "s", "ms10", "1w", "PT", "P", "99999999999999999999d",
      "9223372036854775807d", "106751991167301d", "300000000h", "PT9999999999999999999H",
      "P106752D", "1s,2s"})
  @DisplayName("zero, negative, malformed and overflowing durations are rejected naming the key"
      + " and the value")
  void rejected(String text) {
    assertThatThrownBy(() -> DurationFormat.parse("relaykit.x.wait", text))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("relaykit.x.wait")
        .hasMessageContaining("'" + text + "'")
        .hasMessageContaining("500ms, 30s, 5m, 1h, 2d or PT30S");
  }

  @Test
  @DisplayName("a huge bad value is echoed cut to 200 characters, not whole")
  void hugeValueIsCut() {
    String huge = "9".repeat(10_000_000) + "x";
    assertThatThrownBy(() -> DurationFormat.parse("relaykit.x.wait", huge))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("relaykit.x.wait")
        .satisfies(e -> assertThat(e.getMessage().length()).isLessThan(500));
  }

  @Test
  @DisplayName("null is rejected with a message, not a NullPointerException")
  void rejectsNull() {
    assertThatThrownBy(() -> DurationFormat.parse(null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("duration");
  }

  @Test
  @DisplayName("the largest duration is Long.MAX_VALUE nanoseconds; one more is rejected")
  void bound() {
    assertThat(DurationFormat.parse(DurationFormat.MAX.toString())).isEqualTo(DurationFormat.MAX);
    assertThat(DurationFormat.parse("106751d")).isEqualTo(Duration.ofDays(106_751));
    assertThatThrownBy(() -> DurationFormat.parse(DurationFormat.MAX.plusNanos(1).toString()))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @ParameterizedTest(name = "{0} is written {1}")
  @CsvSource({"PT0.001S, 1ms", "PT1.5S, 1500ms", "PT30S, 30s", "PT90M, 90m", "PT2H, 2h",
      "P2D, 2d", "PT0.000001S, PT0.000001S", "PT24H0.5S, 86400500ms"})
  @DisplayName("format writes the shortest exact form")
  void format(String iso, String text) {
    assertThat(DurationFormat.format(Duration.parse(iso))).isEqualTo(text);
  }

  @Test
  @DisplayName("format rejects what parse would reject")
  void formatRejects() {
    assertThatThrownBy(() -> DurationFormat.format(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> DurationFormat.format(Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> DurationFormat.format(DurationFormat.MAX.plusNanos(1)))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  @DisplayName("property: parse(format(d)) == d and parse(d.toString()) == d for 20 000 seeded"
      + " durations of every magnitude")
  void roundTrip() {
    SplittableRandom random = new SplittableRandom(0x5eed_2026L);
    for (int i = 0; i < 20_000; i++) {
      // A magnitude from nanoseconds to centuries, and sometimes a whole unit.
      long nanos = random.nextLong(1, 1L << random.nextInt(1, 63));
      if (random.nextBoolean()) {
        long[] units = {1_000_000L, 1_000_000_000L, 60_000_000_000L, 3_600_000_000_000L,
            86_400_000_000_000L};
        long unit = units[random.nextInt(units.length)];
        nanos = Math.max(unit, nanos / unit * unit);
      }
      Duration d = Duration.ofNanos(nanos);
      String text = DurationFormat.format(d);
      assertThat(DurationFormat.parse(text)).as("%s written %s", d, text).isEqualTo(d);
      assertThat(DurationFormat.parse(d.toString())).isEqualTo(d);
    }
  }
}
