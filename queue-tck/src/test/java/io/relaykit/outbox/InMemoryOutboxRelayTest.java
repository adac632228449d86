package io.relaykit.outbox;

import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.deadletter.InMemoryDeadLetterStore;
import io.relaykit.message.Message;
import io.relaykit.tck.OutboxRelayContract;

/** OutboxRelayContract on the in-memory outbox and dead-letter store. */
class InMemoryOutboxRelayTest extends OutboxRelayContract {
  private InMemoryOutboxStore store;

  @Override
  protected OutboxStore createStore() {
    store = new InMemoryOutboxStore(clock());
    return store;
  }

  @Override
  protected OutboxStore createStore(OutboxBound bound) {
    store = new InMemoryOutboxStore(clock(), bound);
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
