package io.relaykit.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link Faketime} on real child JVMs with Debian's libfaketime: the wall clock moves by the
 * offset, the monotonic clock and timed waits do not, and the demo runs and answers on a clock 31 s
 * ahead.
 */
class FaketimeTest {
  private static final Duration OFFSET = Duration.ofSeconds(31);
  private static final Pattern PROBE =
      Pattern.compile("millis=(\\d+) parks=(\\d+) monotonicMs=(\\d+) wallMs=(-?\\d+)");

  @Test
  @DisplayName("a child JVM sees now + 31 s on its wall clock; its monotonic clock and timed waits"
      + " stay sane")
  void skewedWallClockRealMonotonic() throws Exception {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    ProcessBuilder b = new ProcessBuilder(java, "-Xmx64m", "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"),
        FaketimeProbe.class.getName()).redirectErrorStream(true);
    Faketime.apply(b, OFFSET);
    assertThat(b.environment().get("LD_PRELOAD")).startsWith(Faketime.requireLibrary().toString());

    long wallBefore = System.currentTimeMillis();
    Process p = b.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).as(out).isTrue();
    long wallAfter = System.currentTimeMillis();
    assertThat(p.exitValue()).as(out).isZero();

    Matcher m = PROBE.matcher(out);
    assertThat(m.find()).as(out).isTrue();
    long childMillis = Long.parseLong(m.group(1));
    int parks = Integer.parseInt(m.group(2));
    long monotonicMs = Long.parseLong(m.group(3));
    long wallMs = Long.parseLong(m.group(4));
    assertThat(childMillis).as("the child's wall clock, 31 s ahead")
        .isBetween(wallBefore + OFFSET.toMillis(), wallAfter + OFFSET.toMillis());
    // With FAKETIME_DONT_FAKE_MONOTONIC=1 (libfaketime 0.9.10) the parks return at once: thousands.
    assertThat(parks).as("parks to wait 200 ms: timed waits wait").isLessThanOrEqualTo(20);
    assertThat(monotonicMs).as("the child's monotonic clock over the wait").isBetween(200L,
        30_000L);
    // Both clocks advance at the same rate in the child: the offset is constant, not a drift or a
    // jump (a preempted probe on a loaded machine may read the two clocks apart by a little).
    assertThat(wallMs).as("the child's wall clock over the same wait")
        .isBetween(monotonicMs - 1_000, monotonicMs + 1_000);
  }

  @Test
  @DisplayName("the demo starts and answers on a clock 31 s ahead: its timestamps carry the skew")
  void demoUnderSkew(@TempDir Path data) throws Exception {
    Instant before = Instant.now();
    try (DemoProcess demo = DemoProcess.start(Faketime.environment(OFFSET), "--data",
        data.toString(), "--lease", "2")) {
      String id = demo.http.order(DemoHttp.newKey(), "book-1", 1).json().get("orderId").asText();
      String updatedAt = demo.http.awaitStatus(id, "SUCCESS", Duration.ofSeconds(60))
          .get("updatedAt").asText();
      Instant after = Instant.now();
      assertThat(Instant.parse(updatedAt)).as("the demo's clock, 31 s ahead of ours")
          .isBetween(before.plus(OFFSET), after.plus(OFFSET));
      assertThat(demo.http.get("/metrics").status()).isEqualTo(200);
    }
  }

  @Test
  @DisplayName("offsets: whole seconds within a year, signed; the environment keeps LD_PRELOAD")
  void offsets() {
    assertThat(Faketime.offset(Duration.ofSeconds(31))).isEqualTo("+31s");
    assertThat(Faketime.offset(Duration.ofSeconds(-5))).isEqualTo("-5s");
    assertThat(Faketime.offset(Duration.ZERO)).isEqualTo("+0s");
    assertThatThrownBy(() -> Faketime.offset(Duration.ofMillis(1500)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("whole seconds");
    assertThatThrownBy(() -> Faketime.offset(Duration.ofDays(400)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("366 days");
    Map<String, String> env = Faketime.environment(OFFSET, "/opt/other.so");
    assertThat(env.get("LD_PRELOAD")).isEqualTo(Faketime.requireLibrary() + ":/opt/other.so");
    assertThat(env).containsEntry("FAKETIME", "+31s")
        .containsEntry("FAKETIME_DONT_FAKE_MONOTONIC", "0");
    assertThat(List.copyOf(env.keySet())).containsExactly("LD_PRELOAD", "FAKETIME",
        "FAKETIME_DONT_FAKE_MONOTONIC");
  }
}
