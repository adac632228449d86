package io.relaykit.idempotency;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.tck.FakeClock;
import io.relaykit.tck.IdempotencyStoreContract;
import java.time.Duration;
import java.time.InstantSource;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class InMemoryIdempotencyStoreTest extends IdempotencyStoreContract {

  @Override
  protected IdempotencyStore createStore(InstantSource clock, Duration retention) {
    return new InMemoryIdempotencyStore(clock, retention);
  }

  @Test
  @DisplayName("the constructor rejects a null clock and a non-positive retention, naming them")
  void badConfig() {
    assertThatThrownBy(() -> new InMemoryIdempotencyStore(null, Duration.ofMinutes(1)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("clock");
    assertThatThrownBy(() -> new InMemoryIdempotencyStore(new FakeClock(), Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("retention");
  }
}
