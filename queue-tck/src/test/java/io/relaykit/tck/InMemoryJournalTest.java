package io.relaykit.tck;

import io.relaykit.queue.InMemoryJournal;
import io.relaykit.queue.QueueJournal;

class InMemoryJournalTest extends QueueJournalContract {
  private InMemoryJournal last;

  @Override
  protected QueueJournal openJournal() {
    last = new InMemoryJournal();
    return last;
  }

  @Override
  protected QueueJournal reopenJournal() {
    last = last.reopen();
    return last;
  }
}
