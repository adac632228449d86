package io.relaykit.deadletter;

import io.relaykit.tck.DeadLetterStoreContract;

class InMemoryDeadLetterStoreTest extends DeadLetterStoreContract {

  @Override
  protected DeadLetterStore createStore() {
    return new InMemoryDeadLetterStore();
  }
}
