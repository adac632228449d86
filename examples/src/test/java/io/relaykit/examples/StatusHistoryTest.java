package io.relaykit.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.examples.StatusHistory.Sample;
import io.relaykit.monitor.BacklogMonitor;
import io.relaykit.monitor.BacklogVerdict;
import io.relaykit.outbox.OutboxStats;
import io.relaykit.tck.FakeClock;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;

class StatusHistoryTest {
  private final FakeClock clock = new FakeClock();
  private final AtomicReference<OutboxStats> stats =
      new AtomicReference<>(new OutboxStats(0, Duration.ZERO, 0));
  private final AtomicLong dead = new AtomicLong();
  private final BacklogMonitor monitor = new BacklogMonitor(BacklogMonitor.Config.builder()
      .minSamples(3).maxSamples(3).highDepth(10).build(), clock);

  private StatusHistory history(int capacity) {
    return new StatusHistory(capacity, clock, monitor, now -> stats.get(), dead::get);
  }

  private void tickAfter(StatusHistory h, long depth, long ageMs, Duration step) {
    clock.advance(step);
    stats.set(new OutboxStats(depth, Duration.ofMillis(ageMs), 0));
    assertThat(h.tick()).isTrue();
  }

  @Test
  @DisplayName("samples are stamped by the injected clock with the backlog, age and verdict")
  void samplesFromTheClock() {
    StatusHistory h = history(10);
    tickAfter(h, 5, 40, Duration.ofSeconds(1));
    List<Sample> s = h.samples();
    assertThat(s).containsExactly(new Sample(FakeClock.EPOCH.plusSeconds(1), 5, 40,
        BacklogVerdict.HEALTHY, 0));
    // The monitor was fed the same sample.
    assertThat(monitor.samples()).hasSize(1);
    assertThat(monitor.samples().get(0).depth()).isEqualTo(5);
  }

  @Test
  @DisplayName("the verdict recorded is the monitor's, with the new sample included")
  void verdictFollowsTheMonitor() {
    StatusHistory h = history(10);
    tickAfter(h, 30, 100, Duration.ofSeconds(1));
    tickAfter(h, 20, 100, Duration.ofSeconds(1));
    tickAfter(h, 15, 100, Duration.ofSeconds(1));
    assertThat(h.samples()).extracting(Sample::verdict).containsExactly(BacklogVerdict.HEALTHY,
        BacklogVerdict.HEALTHY, BacklogVerdict.DRAINING_SPIKE);
  }

  @Test
  @DisplayName("the ring keeps its capacity, oldest evicted first, and counts what it evicted")
  void ringIsBounded() {
    StatusHistory h = history(3);
    for (int i = 1; i <= 5; i++) {
      tickAfter(h, i, 0, Duration.ofSeconds(1));
    }
    assertThat(h.samples()).extracting(Sample::backlog).containsExactly(3L, 4L, 5L);
    assertThat(h.evicted()).isEqualTo(2);
    assertThat(h.failedReads()).isZero();
    assertThatThrownBy(() -> history(1)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("capacity must be in 2..100000, was 1");
  }

  @Test
  @DisplayName("a failing read is counted and skipped; tick does not throw, the next one works")
  void failingReadIsSkipped() {
    AtomicReference<Exception> failure = new AtomicReference<>();
    StatusHistory h = new StatusHistory(10, clock, monitor, now -> {
      Exception e = failure.get();
      if (e != null) {
        throw e;
      }
      return stats.get();
    }, dead::get);
    tickAfter(h, 1, 0, Duration.ofSeconds(1));
    failure.set(new SQLException("database is down"));
    clock.advance(Duration.ofSeconds(1));
    assertThat(h.tick()).isFalse();
    failure.set(new IllegalStateException("pool closed"));
    assertThat(h.tick()).isFalse();
    assertThat(h.failedReads()).isEqualTo(2);
    assertThat(h.samples()).hasSize(1);
    failure.set(null);
    tickAfter(h, 2, 0, Duration.ofSeconds(1));
    assertThat(h.samples()).extracting(Sample::backlog).containsExactly(1L, 2L);
  }

  @Test
  @DisplayName("a clock that went back is a failed read, not an exception")
  void clockBack() {
    AtomicReference<Instant> now = new AtomicReference<>(FakeClock.EPOCH.plusSeconds(5));
    BacklogMonitor own = new BacklogMonitor(BacklogMonitor.Config.defaults(), now::get);
    StatusHistory h = new StatusHistory(10, now::get, own, t -> stats.get(), dead::get);
    assertThat(h.tick()).isTrue();
    now.set(FakeClock.EPOCH);
    assertThat(h.tick()).isFalse();
    assertThat(h.failedReads()).isEqualTo(1);
    assertThat(h.samples()).hasSize(1);
  }

  @Test
  @DisplayName("dead letters per minute: the rise of the running total over the minute so far")
  void deadLettersPerMinute() {
    StatusHistory h = history(1_000);
    // 10 s apart: 0, then 2 at 10 s, 1 more at 60 s, none after, then 3 at 130 s.
    long[] totals = {0, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 6};
    for (long total : totals) {
      dead.set(total);
      tickAfter(h, 0, 0, Duration.ofSeconds(10));
    }
    long[] perMinute = StatusHistory.deadLettersPerMinute(h.samples());
    // Sample i is at 10 (i + 1) s. At 80 s (index 7) the minute goes back to the sample at 20 s
    // (total 2): 1. At 130 s it reaches back to 70 s (total 3): 0.
    assertThat(perMinute).containsExactly(0, 2, 2, 2, 2, 2, 3, 1, 1, 1, 1, 1, 0, 3);
    assertThat(StatusHistory.deadLettersPerMinute(List.of())).isEmpty();
  }

  @Test
  @DisplayName("the SVG draws the samples and marks the first verdict and every change")
  void svgMarksVerdicts() throws Exception {
    StatusHistory h = history(10);
    tickAfter(h, 30, 100, Duration.ofSeconds(1));
    tickAfter(h, 20, 200, Duration.ofSeconds(1));
    tickAfter(h, 15, 300, Duration.ofSeconds(1));
    tickAfter(h, 0, 0, Duration.ofSeconds(1));
    Document d = TimeChartTest.parse(h.svg());
    // Marked through each of the three panels.
    assertThat(TimeChartTest.all(d, "line")).hasSize(9).extracting(e -> e.getAttribute(
        "data-verdict")).startsWith("HEALTHY", "DRAINING_SPIKE", "HEALTHY");
    Element backlog = TimeChartTest.polyline(d, "backlog");
    List<double[]> pts = TimeChartTest.points(backlog);
    assertThat(pts).hasSize(4);
    Element panel = (Element) backlog.getParentNode();
    double ymax = Double.parseDouble(panel.getAttribute("data-ymax"));
    double y = Double.parseDouble(panel.getAttribute("data-y"));
    double hgt = Double.parseDouble(panel.getAttribute("data-h"));
    assertThat(pts).extracting(p -> Math.round(ymax * (y + hgt - p[1]) / hgt))
        .containsExactly(30L, 20L, 15L, 0L);
    assertThat(panel.getAttribute("data-t0"))
        .isEqualTo(Long.toString(Instant.parse("2026-01-01T00:00:01Z").toEpochMilli()));
    assertThat(TimeChartTest.polyline(d, "age")).isNotNull();
    assertThat(TimeChartTest.polyline(d, "dead-letters")).isNotNull();
  }
}
