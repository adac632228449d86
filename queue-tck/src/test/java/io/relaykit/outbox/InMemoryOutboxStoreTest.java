package io.relaykit.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.message.Message;
import io.relaykit.tck.OutboxStoreContract;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class InMemoryOutboxStoreTest extends OutboxStoreContract {

  private InMemoryOutboxStore store;

  @Override
  protected OutboxStore createStore() {
    store = new InMemoryOutboxStore();
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
}
