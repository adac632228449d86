package io.relaykit.testing;

import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A settable clock for queue-core's own tests (queue-core cannot see queue-tck's FakeClock). Time
 * moves only when the test moves it; reads are volatile, so other threads see an advance at once.
 */
public final class TestClock implements InstantSource {

  public static final Instant START = Instant.parse("2026-01-01T00:00:00Z");

  private final AtomicReference<Instant> now = new AtomicReference<>(START);

  @Override
  public Instant instant() {
    return now.get();
  }

  public Instant advance(Duration duration) {
    if (duration.isNegative()) {
      throw new IllegalArgumentException("time does not go back: " + duration);
    }
    return now.updateAndGet(t -> t.plus(duration));
  }

  public Instant advanceMillis(long millis) {
    return advance(Duration.ofMillis(millis));
  }
}
