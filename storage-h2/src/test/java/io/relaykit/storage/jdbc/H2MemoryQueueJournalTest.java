package io.relaykit.storage.jdbc;

import io.relaykit.queue.QueueJournal;
import io.relaykit.tck.QueueJournalContract;
import java.time.Duration;
import java.time.InstantSource;
import java.util.UUID;

/** QueueJournalContract on H2 in memory. */
class H2MemoryQueueJournalTest extends QueueJournalContract {
  private static final String PREFIX = TestDatabase.newPrefix();
  private final JdbcStorage storage = TestDatabase.shared(TestDatabase.Kind.H2_MEMORY)
      .storage(PREFIX, Duration.ofDays(7), InstantSource.system());
  private String name;

  @Override
  protected QueueJournal openJournal() {
    name = "journal-" + UUID.randomUUID();
    return storage.queueJournal(name, Duration.ofMillis(20));
  }

  @Override
  protected QueueJournal reopenJournal() {
    return storage.queueJournal(name, Duration.ofMillis(20));
  }
}
