package io.relaykit.deadletter;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.monitor.MetricsListener;
import io.relaykit.tck.FakeClock;
import io.relaykit.tck.LogCapture;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** The dead-letter WARN line, its rate limit and its count. */
class DeadLetterLogTest {

  private final FakeClock clock = new FakeClock();
  private final Map<String, Long> counted = new ConcurrentHashMap<>();
  private final MetricsListener metrics = new MetricsListener() {
    @Override
    public void deadLettered(String destination, String group) {
      counted.merge(destination + "/" + group, 1L, Long::sum);
    }
  };

  private static List<String> linesOf(LogCapture logs, String marker) {
    return logs.lines().stream().filter(l -> l.contains(marker)).toList();
  }

  @Test
  @DisplayName("one WARN line names id, destination, group, attempts and reason, and counts once")
  void oneLine() {
    String dest = "orders-" + UUID.randomUUID();
    DeadLetterLog log = new DeadLetterLog(clock, 5, Duration.ofMinutes(1));
    try (LogCapture logs = LogCapture.open()) {
      log.deadLettered(metrics, "m-1", dest, "billing", 3, "attempts exhausted: smtp down");

      assertThat(linesOf(logs, dest)).containsExactly(DeadLetterLog.class.getName()
          + " WARNING dead-lettered message m-1 of " + dest
          + " (group billing) after 3 attempts: attempts exhausted: smtp down");
    }
    assertThat(counted).containsExactly(Map.entry(dest + "/billing", 1L));
  }

  @Test
  @DisplayName("over the limit lines are suppressed but counted; the next window's first line says"
      + " how many; wall-clock steps do not open a window")
  void rateLimited() {
    String dest = "orders-" + UUID.randomUUID();
    DeadLetterLog log = new DeadLetterLog(clock, 2, Duration.ofMinutes(1));
    try (LogCapture logs = LogCapture.open()) {
      for (int i = 0; i < 5; i++) {
        log.deadLettered(metrics, "m-" + i, dest, "g", 1, "permanent: bad");
      }
      clock.stepWall(Duration.ofHours(1));
      log.deadLettered(metrics, "m-5", dest, "g", 1, "permanent: bad");
      assertThat(linesOf(logs, dest)).hasSize(2);
      assertThat(log.suppressed(dest, "g")).isEqualTo(4);

      clock.advanceMonotonic(Duration.ofMinutes(1));
      log.deadLettered(metrics, "m-6", dest, "g", 1, "permanent: bad");

      List<String> lines = linesOf(logs, dest);
      assertThat(lines).hasSize(3);
      assertThat(lines.get(2)).contains("message m-6")
          .endsWith("[4 more dead-letter lines suppressed since the last one]");
      assertThat(log.suppressed(dest, "g")).isZero();
    }
    assertThat(counted).containsExactly(Map.entry(dest + "/g", 7L));
  }

  @Test
  @DisplayName("a flood on one destination does not suppress another destination's or group's line")
  void limitPerDestinationAndGroup() {
    String dest = "orders-" + UUID.randomUUID();
    String other = "refunds-" + UUID.randomUUID();
    DeadLetterLog log = new DeadLetterLog(clock, 1, Duration.ofMinutes(1));
    try (LogCapture logs = LogCapture.open()) {
      for (int i = 0; i < 10; i++) {
        log.deadLettered(metrics, "m-" + i, dest, "g", 1, "permanent");
      }
      log.deadLettered(metrics, "x-1", dest, "h", 1, "permanent");
      log.deadLettered(metrics, "y-1", other, null, 1, "permanent");

      assertThat(linesOf(logs, dest)).hasSize(2);
      assertThat(linesOf(logs, other)).singleElement().asString()
          .contains("message y-1 of " + other + " after 1 attempt: permanent")
          .doesNotContain("group");
    }
  }

  @Test
  @DisplayName("a reason with line breaks cannot forge lines, long texts are cut, a failing"
      + " metrics listener changes nothing")
  void adversarialInput() {
    String dest = "orders-" + UUID.randomUUID();
    DeadLetterLog log = new DeadLetterLog(clock, 5, Duration.ofMinutes(1));
    MetricsListener failing = new MetricsListener() {
      @Override
      public void deadLettered(String destination, String group) {
        throw new IllegalStateException("meter registry down");
      }
    };
    try (LogCapture logs = LogCapture.open()) {
      log.deadLettered(failing, null, dest, "g", 0,
          "undecodable\nio.relaykit FORGED line\r" + "x".repeat(10_000));

      String line = linesOf(logs, dest).get(0);
      assertThat(line).doesNotContain("\n").doesNotContain("\r")
          .contains("message ? of").contains("undecodable io.relaykit FORGED line")
          .hasSizeLessThan(DeadLetterLog.MAX_REASON_CHARS + 400);
    }
  }

  @Test
  @DisplayName("at most MAX_TRACKED pairs are tracked; more share one limit")
  void boundedTracking() {
    DeadLetterLog log = new DeadLetterLog(clock, 1, Duration.ofMinutes(1));
    String prefix = "d-" + UUID.randomUUID() + "-";
    try (LogCapture logs = LogCapture.open()) {
      for (int i = 0; i < DeadLetterLog.MAX_TRACKED + 10; i++) {
        log.deadLettered(metrics, "m", prefix + i, "g", 1, "permanent");
      }
      assertThat(linesOf(logs, prefix)).hasSize(DeadLetterLog.MAX_TRACKED + 1);
      assertThat(log.suppressed(prefix + (DeadLetterLog.MAX_TRACKED + 5), "g")).isZero();
    }
  }

  @Test
  @DisplayName("bad configuration names the field")
  void badConfiguration() {
    assertThatThrownBy(() -> new DeadLetterLog(clock, 0, Duration.ofMinutes(1)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxLines");
    assertThatThrownBy(() -> new DeadLetterLog(clock, 1, Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("window");
  }
}
