package io.relaykit.outbox;

import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.deadletter.InMemoryDeadLetterStore;
import io.relaykit.message.Message;
import io.relaykit.tck.OutboxConcurrencyContract;
import java.time.InstantSource;

/** OutboxConcurrencyContract on the in-memory outbox, on its own clock. */
class InMemoryOutboxConcurrencyTest extends OutboxConcurrencyContract {
  private InMemoryOutboxStore store;

  @Override
  protected OutboxStore createStore(InstantSource storeClock) {
    store = new InMemoryOutboxStore(storeClock);
    return store;
  }

  @Override
  protected DeadLetterStore createDeadLetterStore() {
    return new InMemoryDeadLetterStore();
  }

  @Override
  protected void appendCommitted(String destination, Message message) {
    store.append(destination, message);
  }
}
