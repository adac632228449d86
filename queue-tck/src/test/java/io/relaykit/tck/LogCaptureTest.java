package io.relaykit.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.UUID;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("LogCapture")
class LogCaptureTest {
  private static final System.Logger LOG = System.getLogger("io.relaykit.tck.LogCaptureTest");

  @Test
  @DisplayName("sees relaykit lines at TRACE, with parameters and the throwable chain, and fails"
      + " on a marker in any of them")
  void seesEveryLevelAndFails() {
    String marker = "m-" + UUID.randomUUID();
    try (LogCapture logs = LogCapture.open()) {
      LOG.log(System.Logger.Level.TRACE, "plain line");
      logs.assertNeverContains(marker);
      LOG.log(System.Logger.Level.DEBUG, "formatted {0}", marker);
      assertThatThrownBy(() -> logs.assertNeverContains(marker))
          .isInstanceOf(AssertionError.class).hasMessageContaining("formatted " + marker);
    }
    try (LogCapture logs = LogCapture.open()) {
      LOG.log(System.Logger.Level.WARNING, "outer",
          new IllegalStateException("a", new RuntimeException("cause " + marker)));
      assertThatThrownBy(() -> logs.assertNeverContains(marker))
          .isInstanceOf(AssertionError.class).hasMessageContaining("cause " + marker);
      assertThat(logs.lines()).noneMatch(l -> l.contains("log capture probe"));
    }
  }

  @Test
  @DisplayName("keeps at most MAX_LINES lines; a drop fails the assertion, since it could hide one")
  void bounded() {
    try (LogCapture logs = LogCapture.open()) {
      for (int i = 0; i <= LogCapture.MAX_LINES; i++) {
        LOG.log(System.Logger.Level.TRACE, "line");
      }
      assertThat(logs.dropped()).isPositive();
      assertThat(logs.lines()).hasSizeLessThanOrEqualTo(LogCapture.MAX_LINES);
      assertThatThrownBy(() -> logs.assertNeverContains("absent"))
          .isInstanceOf(AssertionError.class).hasMessageContaining("dropped");
    }
  }

  @Test
  @DisplayName("overlapping captures keep the level until the last one closes, which restores it")
  void levelRestored() {
    // The io.relaykit logger's level is JVM-wide: this assumes no other test opens a capture at
    // the same time (tests of one JVM run one at a time here; JUnit's parallel mode is off).
    Logger root = Logger.getLogger("io.relaykit");
    Level before = root.getLevel();
    LogCapture first = LogCapture.open();
    LogCapture second = LogCapture.open();
    first.close();
    first.close();
    String marker = "m-" + UUID.randomUUID();
    LOG.log(System.Logger.Level.TRACE, marker);
    assertThat(second.lines()).anyMatch(l -> l.contains(marker));
    assertThat(first.lines()).noneMatch(l -> l.contains(marker));
    second.close();
    assertThat(root.getLevel()).isEqualTo(before);
  }
}
