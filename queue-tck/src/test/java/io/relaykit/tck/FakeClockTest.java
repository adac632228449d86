package io.relaykit.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class FakeClockTest {

  @Test
  @DisplayName("time moves only when the test moves it")
  void advances() {
    FakeClock clock = new FakeClock();
    assertThat(clock.instant()).isEqualTo(FakeClock.EPOCH);
    assertThat(clock.advance(Duration.ofSeconds(5))).isEqualTo(FakeClock.EPOCH.plusSeconds(5));
    assertThat(clock.instant()).isEqualTo(FakeClock.EPOCH.plusSeconds(5));
  }

  @Test
  @DisplayName("time does not go back")
  void neverBack() {
    FakeClock clock = new FakeClock();
    clock.advance(Duration.ofSeconds(1));
    assertThatThrownBy(() -> clock.set(FakeClock.EPOCH))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("time does not go back");
    assertThatThrownBy(() -> clock.advance(Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("must not be negative");
  }

  @Test
  @DisplayName("the wall clock steps back and forward on its own; the monotonic reading moves only forward, with elapsed time or alone")
  void wallAndMonotonicApart() {
    FakeClock clock = new FakeClock();
    long start = clock.nanoTime();
    assertThat(clock.stepWall(Duration.ofHours(-1))).isEqualTo(FakeClock.EPOCH.minusSeconds(3600));
    assertThat(clock.nanoTime()).as("a wall step is not elapsed time").isEqualTo(start);
    clock.advance(Duration.ofSeconds(2));
    assertThat(clock.instant()).isEqualTo(FakeClock.EPOCH.minusSeconds(3598));
    assertThat(clock.nanoTime() - start).isEqualTo(2_000_000_000L);
    clock.stepWall(Duration.ofDays(3));
    assertThat(clock.nanoTime() - start).isEqualTo(2_000_000_000L);
    assertThat(clock.advanceMonotonic(Duration.ofMillis(5)) - start).isEqualTo(2_005_000_000L);
    assertThat(clock.instant()).isEqualTo(FakeClock.EPOCH.minusSeconds(3598).plus(Duration.ofDays(3)));
    assertThatThrownBy(() -> clock.advanceMonotonic(Duration.ofNanos(-1)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("never goes back");
  }
}
