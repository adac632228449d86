package io.relaykit.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.chaos.History.FaultWindow;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * A schedule that waits for recoveries can outlast the time the run gives it (every fault
 * unrecovered: faults x (bound + gap)); the run then stops it, and what was left out must show.
 */
class ChaosFaultPacerStopAttackTest {

  private static FaultSchedule.Event event(long atMs) {
    return new FaultSchedule.Event(atMs, "kill", "rabbitmq", "cut", 0, 0);
  }

  @Test
  @DisplayName("a pacer stopped while it waits for a recovery reports how many faults it left"
      + " out, never a clean outcome")
  void stoppedScheduleIsReported() {
    ChaosFaultPacerTest.SimClock sim = new ChaosFaultPacerTest.SimClock(t -> t >= 5_000 ? 1_000 : 10);
    FaultPacer.Clock stopping = new FaultPacer.Clock() {
      @Override
      public long nowMs() {
        return sim.nowMs();
      }

      @Override
      public void sleepUntilMs(long atMs) throws InterruptedException {
        if (atMs > 28_000) {
          throw new InterruptedException("the run stopped the schedule");
        }
        sim.sleepUntilMs(atMs);
      }
    };
    FaultPacer pacer = new FaultPacer(20_000, 2_000, 250, stopping, () -> sim.samples, l -> { });
    List<FaultWindow> windows = new ArrayList<>();
    FaultPacer.Outcome out = pacer.run(List.of(event(5_000), event(6_000), event(7_000)),
        e -> e.fault(), windows::add);
    assertThat(windows).hasSize(2);
    assertThat(out.fatal()).isNotNull().contains("2 of 3");
    assertThat(Thread.interrupted()).as("the interrupt is kept for the caller").isTrue();
  }
}
