package io.relaykit.idempotency;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.message.Delivery;
import io.relaykit.message.Message;
import io.relaykit.tck.FakeClock;
import io.relaykit.tck.LostReply;
import io.relaykit.tck.SwitchableIdempotencyStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * An interrupt of the handler's thread while a failed complete is retried: the retries stop at
 * once, the interrupt flag stays set for the consumer loop, and the delivery is acknowledged (the
 * effect ran); the key stays claimed as when every attempt fails.
 */
@DisplayName("IdempotentHandler: an interrupt during the complete retries")
class IdempotentHandlerCompleteInterruptTest {

  private final FakeClock clock = new FakeClock();
  private final InMemoryIdempotencyStore store =
      new InMemoryIdempotencyStore(clock, Duration.ofHours(1));
  private final SwitchableIdempotencyStore switchable =
      new SwitchableIdempotencyStore(store, "test");
  private final AtomicInteger runs = new AtomicInteger();
  private final List<Duration> pauses = new ArrayList<>();

  private static Message order(String id) {
    return Message.builder().type("order.paid").key(id).payload("{}").build();
  }

  private static String key(Message m) {
    return m.key().orElse("") + ":sms";
  }

  @AfterEach
  void clearFlag() {
    Thread.interrupted();
  }

  @Test
  @DisplayName("interrupted in the first back-off: no further attempt, flag kept, acknowledged,"
      + " key CLAIMED")
  void interruptInBackoff() throws Exception {
    IdempotentHandler h = IdempotentHandler.builder(switchable, IdempotentHandlerCompleteInterruptTest::key,
        Duration.ofMinutes(1), d -> {
          runs.incrementAndGet();
          switchable.down(true);
        }).pause(d -> {
          pauses.add(d);
          throw new InterruptedException("shutdown");
        }).build();
    int before = switchable.calls();

    h.handle(Delivery.first(order("o-1"), "orders"));

    assertThat(Thread.currentThread().isInterrupted()).as("flag kept").isTrue();
    assertThat(pauses).hasSize(1);
    assertThat(switchable.calls() - before).as("claim, one complete").isEqualTo(2);
    switchable.down(false);
    assertThat(store.status("o-1:sms")).contains(Claim.Status.CLAIMED);
    assertThat(runs).hasValue(1);
  }

  @Test
  @DisplayName("the delegate returns with the flag set and complete fails once: the real sleep"
      + " pause stops the retries at once instead of spinning, the flag stays set")
  void flagSetBeforeComplete() throws Exception {
    IdempotentHandler h = IdempotentHandler.builder(switchable, IdempotentHandlerCompleteInterruptTest::key,
        Duration.ofMinutes(1), d -> {
          runs.incrementAndGet();
          switchable.down(true);
          Thread.currentThread().interrupt();
        }).build();
    int before = switchable.calls();
    long start = System.nanoTime();

    h.handle(Delivery.first(order("o-2"), "orders"));

    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
    assertThat(Thread.currentThread().isInterrupted()).isTrue();
    assertThat(switchable.calls() - before).isEqualTo(2);
  }

  @Test
  @DisplayName("the flag set and a complete that committed but lost its reply: the key is DONE")
  void flagSetAndLostReply() throws Exception {
    LostReply<IdempotencyStore> seam = LostReply.over(IdempotencyStore.class, store)
        .dropNextReplyOf("complete");
    IdempotentHandler h = IdempotentHandler.builder(seam.store(), IdempotentHandlerCompleteInterruptTest::key,
        Duration.ofMinutes(1), d -> Thread.currentThread().interrupt()).build();

    h.handle(Delivery.first(order("o-3"), "orders"));

    assertThat(seam.dropped()).isEqualTo(1);
    assertThat(Thread.currentThread().isInterrupted()).isTrue();
    assertThat(store.status("o-3:sms")).contains(Claim.Status.DONE);
  }
}
