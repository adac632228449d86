package io.relaykit.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.deadletter.InMemoryDeadLetterStore;
import io.relaykit.message.Message;
import io.relaykit.message.PublishReceipt;
import io.relaykit.message.Publisher;
import io.relaykit.testing.Awaits;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** Faults aimed at the wakeup's subscriptions: a failing demand and the subscriber bound. */
@DisplayName("outbox wakeup under subscription faults")
class OutboxWakeAttackTest {
  private static final Duration LONG_POLL = Duration.ofSeconds(30);
  private static final Duration DEADLINE = Duration.ofSeconds(10);

  private final List<Message> published = new CopyOnWriteArrayList<>();
  private final Publisher publisher = new Publisher() {
    @Override
    public CompletableFuture<PublishReceipt> publish(String destination, Message message) {
      published.add(message);
      return CompletableFuture.completedFuture(
          new PublishReceipt(message.id(), destination, "p" + published.size()));
    }

    @Override
    public void close() {}
  };

  @Test
  @DisplayName("a demand whose start throws fails the subscribe and leaves no subscriber behind;"
      + " the next subscribe starts the demand again")
  void throwingDemandLeavesNoSubscriber() {
    AtomicInteger starts = new AtomicInteger();
    OutboxWakeup wakeup = OutboxWakeup.create(new OutboxWakeup.Demand() {
      @Override
      public void started() {
        if (starts.incrementAndGet() == 1) {
          throw new IllegalStateException("no thread for the listener");
        }
      }

      @Override
      public void stopped() {}
    });
    AtomicInteger runs = new AtomicInteger();
    assertThatThrownBy(() -> wakeup.subscribe(runs::incrementAndGet))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("listener");
    assertThat(wakeup.subscribers()).isZero();
    wakeup.wake();
    assertThat(runs.get()).isZero();
    OutboxWakeup.Subscription s = wakeup.subscribe(runs::incrementAndGet);
    assertThat(starts.get()).isEqualTo(2);
    wakeup.wake();
    assertThat(runs.get()).isEqualTo(1);
    s.close();
  }

  @Test
  @DisplayName("the relay past the 1 024-subscriber bound fails to start naming the bound, runs"
      + " no loop, and starts once a subscription is freed")
  void relayPastTheBound() {
    InMemoryOutboxStore store = new InMemoryOutboxStore();
    OutboxWakeup wakeup = store.wakeup().orElseThrow();
    List<OutboxWakeup.Subscription> subs = new ArrayList<>();
    for (int i = 0; i < OutboxWakeup.MAX_SUBSCRIBERS; i++) {
      subs.add(wakeup.subscribe(() -> {}));
    }
    try (OutboxRelay relay = OutboxRelay.builder(store, publisher, new InMemoryDeadLetterStore())
        .pollInterval(LONG_POLL).build()) {
      assertThatThrownBy(relay::start).isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("1024");
      store.append("orders", Message.builder().type("t").payload("p").build());
      assertThat(wakeup.subscribers()).isEqualTo(OutboxWakeup.MAX_SUBSCRIBERS);
      subs.remove(0).close();
      relay.start();
      assertThat(wakeup.subscribers()).isEqualTo(OutboxWakeup.MAX_SUBSCRIBERS);
      Awaits.until(DEADLINE, "the row published", () -> published.size() == 1);
    }
    assertThat(wakeup.subscribers()).isEqualTo(OutboxWakeup.MAX_SUBSCRIBERS - 1);
    subs.forEach(OutboxWakeup.Subscription::close);
  }
}
