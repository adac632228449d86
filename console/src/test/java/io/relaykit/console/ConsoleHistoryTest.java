package io.relaykit.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.console.ConsoleHistory.Sample;
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

class ConsoleHistoryTest {
  private final FakeClock clock = new FakeClock();
  private final AtomicReference<OutboxStats> stats =
      new AtomicReference<>(new OutboxStats(0, Duration.ZERO, 0));
  private final AtomicLong dead = new AtomicLong();
  private final BacklogMonitor monitor = new BacklogMonitor(BacklogMonitor.Config.builder()
      .minSamples(3).maxSamples(3).highDepth(10).build(), clock);

  private ConsoleHistory history(int capacity) {
    return ConsoleHistory.builder().capacity(capacity).clock(clock)
        .backlog(now -> stats.get(), monitor).deadLetterTotal(dead::get).build();
  }

  private void tickAfter(ConsoleHistory h, long depth, long ageMs, Duration step) {
    clock.advance(step);
    stats.set(new OutboxStats(depth, Duration.ofMillis(ageMs), 0));
    assertThat(h.tick()).isTrue();
  }

  @Test
  @DisplayName("samples are stamped by the injected clock with the backlog, age and verdict")
  void samplesFromTheClock() {
    ConsoleHistory h = history(10);
    tickAfter(h, 5, 40, Duration.ofSeconds(1));
    List<Sample> s = h.samples();
    assertThat(s).containsExactly(new Sample(FakeClock.EPOCH.plusSeconds(1), 5, 40,
        BacklogVerdict.HEALTHY, 0, java.util.Map.of(), List.of(), List.of()));
    // The monitor was fed the same sample.
    assertThat(monitor.samples()).hasSize(1);
    assertThat(monitor.samples().get(0).depth()).isEqualTo(5);
  }

  @Test
  @DisplayName("the verdict recorded is the monitor's, with the new sample included")
  void verdictFollowsTheMonitor() {
    ConsoleHistory h = history(10);
    tickAfter(h, 30, 100, Duration.ofSeconds(1));
    tickAfter(h, 20, 100, Duration.ofSeconds(1));
    tickAfter(h, 15, 100, Duration.ofSeconds(1));
    assertThat(h.samples()).extracting(Sample::verdict).containsExactly(BacklogVerdict.HEALTHY,
        BacklogVerdict.HEALTHY, BacklogVerdict.DRAINING_SPIKE);
  }

  @Test
  @DisplayName("the ring keeps its capacity, oldest evicted first, and counts what it evicted")
  void ringIsBounded() {
    ConsoleHistory h = history(3);
    for (int i = 1; i <= 5; i++) {
      tickAfter(h, i, 0, Duration.ofSeconds(1));
    }
    assertThat(h.samples()).extracting(Sample::backlog).containsExactly(3L, 4L, 5L);
    assertThat(h.evicted()).isEqualTo(2);
    assertThat(h.failedReads()).isZero();
    assertThatThrownBy(() -> ConsoleHistory.builder().capacity(1)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("capacity must be in 2..100000, was 1");
  }

  @Test
  @DisplayName("a failing read is counted and skipped; tick does not throw, the next one works")
  void failingReadIsSkipped() {
    AtomicReference<Exception> failure = new AtomicReference<>();
    ConsoleHistory h = ConsoleHistory.builder().capacity(10).clock(clock).backlog(now -> {
      Exception e = failure.get();
      if (e != null) {
        throw e;
      }
      return stats.get();
    }, monitor).deadLetterTotal(dead::get).build();
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
    ConsoleHistory h = ConsoleHistory.builder().capacity(10).clock(now::get)
        .backlog(t -> stats.get(), own).deadLetterTotal(dead::get).build();
    assertThat(h.tick()).isTrue();
    now.set(FakeClock.EPOCH);
    assertThat(h.tick()).isFalse();
    assertThat(h.failedReads()).isEqualTo(1);
    assertThat(h.samples()).hasSize(1);
  }

  @Test
  @DisplayName("dead letters per minute: the rise of the running total over the minute so far")
  void deadLettersPerMinute() {
    ConsoleHistory h = history(1_000);
    // 10 s apart: 0, then 2 at 10 s, 1 more at 60 s, none after, then 3 at 130 s.
    long[] totals = {0, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 6};
    for (long total : totals) {
      dead.set(total);
      tickAfter(h, 0, 0, Duration.ofSeconds(10));
    }
    long[] perMinute = ConsoleHistory.deadLettersPerMinute(h.samples());
    // Sample i is at 10 (i + 1) s. At 80 s (index 7) the minute goes back to the sample at 20 s
    // (total 2): 1. At 130 s it reaches back to 70 s (total 3): 0.
    assertThat(perMinute).containsExactly(0, 2, 2, 2, 2, 2, 3, 1, 1, 1, 1, 1, 0, 3);
    assertThat(ConsoleHistory.deadLettersPerMinute(List.of())).isEmpty();
  }

  @Test
  @DisplayName("the SVG draws the samples and marks the first verdict and every change")
  void svgMarksVerdicts() throws Exception {
    ConsoleHistory h = history(10);
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

  @Test
  @DisplayName("dead letters are counted per store, destination and group; a failing store leaves"
      + " its part out and is counted")
  void deadLettersPerGroup() {
    io.relaykit.deadletter.InMemoryDeadLetterStore store =
        new io.relaykit.deadletter.InMemoryDeadLetterStore(clock);
    FlakyDeadLetterStore broken = new FlakyDeadLetterStore(
        new io.relaykit.deadletter.InMemoryDeadLetterStore(clock));
    for (String group : new String[] {"billing", "billing", "shipping"}) {
      io.relaykit.message.Message m = io.relaykit.message.Message.builder().type("t")
          .payload("x").build();
      store.add(new io.relaykit.deadletter.DeadLetter(m, "orders", group, "failed", null, null,
          1, clock.instant(), clock.instant()));
    }
    ConsoleHistory h = ConsoleHistory.builder().clock(clock).deadLetters("db", store)
        .deadLetters("other", broken)
        .subscriptions(() -> List.of(new io.relaykit.monitor.SubscriptionStatus("in-process",
            "orders", "billing", 4, 1, clock.instant())))
        .build();
    assertThat(h.since()).isEqualTo(clock.instant());
    assertThat(h.tick()).isTrue();
    Sample s = h.latest();
    assertThat(s.backlog()).isEqualTo(-1);
    assertThat(s.verdict()).isNull();
    assertThat(s.deadLetters()).isEqualTo(3);
    assertThat(s.deadLettersByGroup()).containsEntry(
        new ConsoleHistory.GroupKey("db", "orders", "billing"), 2L).containsEntry(
        new ConsoleHistory.GroupKey("db", "orders", "shipping"), 1L);
    assertThat(s.subscriptions()).hasSize(1);
    broken.failure.set(new IllegalStateException("down"));
    clock.advance(Duration.ofSeconds(3));
    assertThat(h.tick()).isTrue();
    assertThat(h.latest().failedParts()).containsExactly("dead letters of other");
    assertThat(h.latest().deadLetters()).as("unknown while a store failed").isEqualTo(-1);
    assertThat(h.failedReads()).isEqualTo(1);
    assertThat(TimeChartTest.polyline(parse(h.svg()), "lag")).isNotNull();
  }

  @Test
  @DisplayName("the default ring holds an hour at the default period")
  void defaultsHoldAnHour() {
    assertThat(ConsoleHistory.DEFAULT_PERIOD.multipliedBy(ConsoleHistory.DEFAULT_CAPACITY))
        .isEqualTo(Duration.ofHours(1));
    assertThat(ConsoleHistory.builder().build().capacity())
        .isEqualTo(ConsoleHistory.DEFAULT_CAPACITY);
  }

  private static Document parse(String svg) {
    try {
      return TimeChartTest.parse(svg);
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }
}
