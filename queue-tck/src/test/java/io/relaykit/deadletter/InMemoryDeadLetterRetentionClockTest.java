package io.relaykit.deadletter;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.message.Message;
import io.relaykit.tck.FakeClock;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The in-memory dead-letter store lives in one process, so retention has one clock to go by: the
 * caller's ({@code now}, the relay's clock). The store's own clock (for replay-mark leases) takes
 * no part in it.
 */
class InMemoryDeadLetterRetentionClockTest {

  @Test
  @DisplayName("purgeFailedOlderThan measures the age on the caller's now, not on the store's"
      + " lease clock")
  void ageIsMeasuredOnTheCallersNow() {
    FakeClock storeClock = new FakeClock(Instant.parse("2030-01-01T00:00:00Z"));
    InMemoryDeadLetterStore store = new InMemoryDeadLetterStore(storeClock);
    Instant failed = Instant.parse("2026-03-01T12:00:00Z");
    Message m = Message.builder().id("m1").type("t").payload("{}").build();
    DeadLetter d = new DeadLetter(m, "orders", null, "exhausted", null, null, 3, failed, failed);
    store.add(d);
    Duration retention = Duration.ofDays(7);

    // The store's clock is years ahead; the caller's says six days: nothing is old.
    assertThat(store.purgeFailedOlderThan(retention, 10, failed.plus(Duration.ofDays(6))))
        .isZero();
    assertThat(store.find(d.id())).contains(d);

    assertThat(store.purgeFailedOlderThan(retention, 10, failed.plus(Duration.ofDays(8))))
        .isEqualTo(1);
    assertThat(store.find(d.id())).isEmpty();
  }
}
