package io.relaykit.tck;

import io.relaykit.queue.InMemoryJournal;

class InMemoryJournalFaultTest extends QueueJournalFaultContract {
  @Override
  protected Backend backend() {
    InMemoryJournal storage = new InMemoryJournal();
    return storage::reopen;
  }
}
