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
}
