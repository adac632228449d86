package io.relaykit.storage.jdbc;

import io.relaykit.queue.QueueJournal;
import io.relaykit.tck.QueueJournalFaultContract;
import java.time.Duration;

/**
 * One journal name on a JDBC storage, for the fault kit: every open is a new instance on that
 * name, and a crash stops an instance without committing what it buffers.
 */
final class JdbcBackend implements QueueJournalFaultContract.Backend {
  private final JdbcStorage storage;
  private final String name;

  JdbcBackend(JdbcStorage storage, String name) {
    this.storage = storage;
    this.name = name;
  }

  @Override
  public QueueJournal open() {
    return storage.queueJournal(name, Duration.ofMillis(20));
  }

  @Override
  public void crash(QueueJournal journal) {
    ((JdbcQueueJournal) journal).crash();
  }
}
