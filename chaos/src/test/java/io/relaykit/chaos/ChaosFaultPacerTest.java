package io.relaykit.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.chaos.History.FaultWindow;
import io.relaykit.chaos.History.Sample;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongUnaryOperator;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The fault scheduler's rule on a simulated clock: the next fault starts only once the previous
 * one recovered (backlog back at its level before and deliveries flowing) or its bound passed;
 * an unrecovered fault is flagged and fails the verdict. No broker, no waiting.
 */
class ChaosFaultPacerTest {

  /** A clock that jumps to the moment asked for, producing a sample each whole second. */
  static final class SimClock implements FaultPacer.Clock {
    long now;
    final List<Sample> samples = new ArrayList<>();
    final LongUnaryOperator backlogAt;
    long completed;
    long nextSample;

    SimClock(LongUnaryOperator backlogAt) {
      this.backlogAt = backlogAt;
    }

    @Override
    public long nowMs() {
      return now;
    }

    @Override
    public void sleepUntilMs(long atMs) {
      advance(Math.max(now, atMs));
    }

    void advance(long to) {
      while (nextSample <= to) {
        long b = backlogAt.applyAsLong(nextSample);
        if (b >= 0) {
          completed += 10; // deliveries flow whenever an instance answers
        }
        samples.add(new Sample(nextSample, 0, b < 0 ? -1 : completed, b, 0));
        nextSample += 1_000;
      }
      now = to;
    }
  }

  private static FaultSchedule.Event event(long atMs, String fault) {
    return new FaultSchedule.Event(atMs, fault, "rabbitmq", "cut", 0, 0);
  }

  @Test
  @DisplayName("the next fault waits until the previous one's backlog is back at its level")
  void nextFaultWaitsForRecovery() {
    // Backlog 10 at rest; each fault raises it to 200 for 7 s after its start.
    List<Long> starts = new ArrayList<>();
    SimClock clock = new SimClock(t -> {
      for (long s : starts) {
        if (t >= s && t < s + 7_000) {
          return 200;
        }
      }
      return 10;
    });
    FaultPacer pacer = new FaultPacer(60_000, 2_000, 250, clock, () -> clock.samples, l -> { });
    List<FaultWindow> windows = new ArrayList<>();
    // Planned 1 s apart: back-to-back, they would overlap.
    FaultPacer.Outcome out = pacer.run(List.of(event(10_000, "kill"), event(11_000, "partition"),
        event(12_000, "kill")), e -> {
          starts.add(clock.now);
          clock.advance(clock.now + 500); // the fault lasts 0.5 s
          return e.fault();
        }, windows::add);
    assertThat(out.fatal()).isNull();
    assertThat(out.recoveries()).hasSize(3).allSatisfy(r -> {
      assertThat(r.unrecovered()).isFalse();
      assertThat(r.baselineBacklog()).isEqualTo(10);
      assertThat(r.recoveryMs()).isBetween(7_000L, 8_000L);
    });
    for (int i = 1; i < windows.size(); i++) {
      Checker.Recovery previous = out.recoveries().get(i - 1);
      assertThat(windows.get(i).startMs())
          .isGreaterThanOrEqualTo(previous.recoveredAtMs() + 2_000);
    }
    // The checker, run afterwards over the same history, finds the same recoveries.
    assertThat(Checker.recoveries(clock.samples, windows, 60_000))
        .isEqualTo(out.recoveries());
  }

  @Test
  @DisplayName("a fault not recovered within the bound is flagged at the bound, the schedule goes"
      + " on after it and the verdict fails")
  void unrecoveredFaultIsFlagged() {
    SimClock clock = new SimClock(t -> t >= 5_000 && t < 40_000 ? 500 : 10);
    FaultPacer pacer = new FaultPacer(20_000, 2_000, 250, clock, () -> clock.samples, l -> { });
    List<FaultWindow> windows = new ArrayList<>();
    FaultPacer.Outcome out = pacer.run(List.of(event(5_000, "kill"), event(6_000, "kill")),
        e -> e.fault(), windows::add);
    assertThat(out.recoveries().get(0).unrecovered()).isTrue();
    assertThat(out.recoveries().get(0).recoveryMs()).isEqualTo(20_000);
    assertThat(out.recoveries().get(0).recoveredAtMs()).isNull();
    // The second started 2 s after the first's bound, still inside the high backlog: it is
    // measured against the level seen since then (500), so it recovers at once.
    assertThat(windows.get(1).startMs()).isGreaterThanOrEqualTo(27_000);
    assertThat(out.recoveries().get(1).unrecovered()).isFalse();

    ChaosCheckerTest.Builder b = new ChaosCheckerTest.Builder(1);
    b.samples.addAll(clock.samples);
    b.faults.addAll(windows);
    Checker.Verdict v = b.check(20_000);
    assertThat(v.unrecoveredFaults()).isEqualTo(1);
    assertThat(v.passed()).isFalse();
  }

  @Test
  @DisplayName("a backlog under its level while nothing is delivered is not a recovery")
  void stalledDeliveriesAreNotRecovered() {
    List<Sample> samples = new ArrayList<>();
    // Backlog 5 before, 3 after, but completed stops rising from 3 s to 8 s.
    long[] completed = {10, 20, 30, 40, 40, 40, 40, 40, 40, 50, 60};
    for (int i = 0; i < completed.length; i++) {
      samples.add(new Sample(i * 1_000L, 0, completed[i], i < 3 ? 5 : 3, 0));
    }
    Checker.Recovery r = Checker.recovery(samples,
        new FaultWindow("partition", "rabbitmq", "blackhole", "blackhole", 3_500, 4_000),
        Long.MIN_VALUE, 60_000);
    assertThat(r.baselineBacklog()).isEqualTo(5);
    assertThat(r.recoveredAtMs()).isEqualTo(9_000);
  }

  /** Four readings before a fault at 3.5 s: completed 1..4, backlog 5, each read at once. */
  private static List<Sample> beforeFault() {
    List<Sample> samples = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      samples.add(new Sample(i * 1_000L, 0, i + 1, 5, 0));
    }
    return samples;
  }

  @Test
  @DisplayName("a stale reading, asked before the fault ended and answered after, fakes no"
      + " recovery")
  void staleReadingFakesNoRecovery() {
    List<Sample> samples = beforeFault();
    // Asked at 3.6 s, during the fault, answered at 8.5 s: a low backlog and a count above the
    // one before, both read before deliveries stalled.
    samples.add(new Sample(8_500, 0, 6, 1, 0, 3_600));
    for (long t = 9_000; t <= 20_000; t += 1_000) {
      samples.add(new Sample(t, 0, 6, 1, 0, t - 300)); // stalled: nothing completes
    }
    samples.add(new Sample(21_000, 0, 9, 1, 0, 20_700));
    Checker.Recovery r = Checker.recovery(samples,
        new FaultWindow("partition", "rabbitmq", "blackhole", "blackhole", 3_500, 8_000),
        Long.MIN_VALUE, 60_000);
    assertThat(r.baselineBacklog()).isEqualTo(5);
    assertThat(r.recoveredAtMs()).isEqualTo(21_000);
  }

  /**
   * After a fault at 3.5..4 s, readings from two instances whose answers cross: each low-backlog
   * reading was taken before the high-backlog one answered just before it, so its count is
   * lower than that one's.
   */
  private static List<Sample> crossedAnswers() {
    List<Sample> samples = beforeFault();
    for (int i = 0; i < 6; i++) {
      long t = 5_000 + i * 2_000L;
      samples.add(new Sample(t, 0, 14 + 2 * i, 9, 0, t - 200)); // fresh, backlog above 5
      samples.add(new Sample(t + 1_000, 0, 11 + 2 * i, 3, 0, t - 500)); // asked before it
    }
    return samples;
  }

  @Test
  @DisplayName("readings answered out of order (a count of 14, then 11) hide no recovery")
  void crossedAnswersHideNoRecovery() {
    Checker.Recovery r = Checker.recovery(crossedAnswers(),
        new FaultWindow("kill", "0", "", "kill", 3_500, 4_000), Long.MIN_VALUE, 60_000);
    assertThat(r.unrecovered()).isFalse();
    // 6 s: backlog 3 <= 5, and 11 completed is above 4, the most seen before it was asked.
    assertThat(r.recoveredAtMs()).isEqualTo(6_000);
  }

  @Test
  @DisplayName("the pacer, seeing answers as they arrive, judges the recovery the checker finds"
      + " afterwards")
  void pacerAgreesWithCheckerOnCrossedAnswers() {
    List<Sample> all = crossedAnswers();
    SimClock clock = new SimClock(t -> 0);
    FaultPacer pacer = new FaultPacer(20_000, 2_000, 250, clock,
        () -> all.stream().filter(s -> s.atMs() <= clock.now).toList(), l -> { });
    List<FaultWindow> windows = new ArrayList<>();
    FaultPacer.Outcome out = pacer.run(List.of(event(3_500, "kill")), e -> {
      clock.now += 500;
      return e.fault();
    }, windows::add);
    assertThat(out.recoveries()).hasSize(1);
    assertThat(out.recoveries().get(0).recoveredAtMs()).isEqualTo(6_000);
    assertThat(Checker.recoveries(all, windows, 20_000)).isEqualTo(out.recoveries());
  }

  @Test
  @DisplayName("each partition mode asked for is drawn at least once when the count allows")
  void everyModeDrawn() {
    for (long seed = 1; seed <= 30; seed++) {
      ChaosOptions o = ChaosOptions.parse("--transport", "rabbitmq", "--faults",
          "kill,partition", "--kills", "5", "--partitions", "6", "--partition-modes",
          "cut,refuse,blackhole", "--seed", Long.toString(seed));
      List<String> modes = FaultSchedule.plan(o, 62_500).stream()
          .filter(e -> e.fault().equals("partition")).map(FaultSchedule.Event::mode).toList();
      assertThat(modes).hasSize(6).contains("cut", "refuse", "blackhole");
      assertThat(FaultSchedule.plan(o, 62_500)).isEqualTo(FaultSchedule.plan(o, 62_500));
    }
    ChaosOptions two = ChaosOptions.parse("--transport", "rabbitmq", "--faults", "partition",
        "--partitions", "2", "--partition-modes", "cut,refuse,blackhole", "--seed", "2");
    assertThat(FaultSchedule.plan(two, 60_000).stream().map(FaultSchedule.Event::mode).distinct())
        .hasSize(2);
  }
}
