package io.relaykit.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.message.Message;
import io.relaykit.tck.OutboxStoreContract;
import io.relaykit.trace.TracePropagation;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class InMemoryOutboxStoreTest extends OutboxStoreContract {

  private InMemoryOutboxStore store;

  @Override
  protected OutboxStore createStore() {
    store = new InMemoryOutboxStore(clock());
    return store;
  }

  @Override
  protected OutboxStore createStore(TracePropagation propagation) {
    store = new InMemoryOutboxStore(clock(), OutboxBound.unbounded(), propagation);
    return store;
  }

  @Override
  protected OutboxStore createStore(OutboxBound bound) {
    store = new InMemoryOutboxStore(clock(), bound);
    return store;
  }

  @Override
  protected void appendCommitted(String destination, Message message) {
    store.append(destination, message);
  }

  @Test
  @DisplayName("append returns increasing sequences and rejects a blank destination or null message")
  void appendArguments() {
    Message m = Message.builder().type("t").payload("x").build();
    long first = store.append("orders", m);
    assertThat(store.append("orders", m)).isGreaterThan(first);

    assertThatThrownBy(() -> store.append(" ", m))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("destination");
    assertThatThrownBy(() -> store.append("orders", null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("message");
    assertThat(store.stats(m.createdAt()).unsent()).isEqualTo(2);
  }

  @Test
  @DisplayName("built without a clock, the store decides on the time each caller passes")
  void withoutClockUsesCallersTime() {
    InMemoryOutboxStore callers = new InMemoryOutboxStore();
    callers.append("orders", Message.builder().type("t").payload("x").build());
    Instant t = Instant.parse("2026-01-01T00:00:00Z");
    Duration lease = Duration.ofSeconds(30);

    OutboxRecord r = callers.claim("relay-a", 10, lease, t).get(0);

    assertThat(r.leaseExpiresAt()).isEqualTo(t.plus(lease));
    assertThat(callers.claim("relay-b", 10, lease, t.plus(lease))).hasSize(1);
    assertThatThrownBy(() -> new InMemoryOutboxStore(null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("clock");
  }
}
