package io.relaykit.storage.jdbc;

import java.time.Duration;
import java.time.InstantSource;
import java.util.UUID;

/** The fault-injection kit on H2 in memory. */
class H2QueueJournalFaultTest extends io.relaykit.tck.QueueJournalFaultContract {
  private final JdbcStorage storage = TestDatabase.shared(TestDatabase.Kind.H2_MEMORY)
      .storage(TestDatabase.newPrefix(), Duration.ofDays(7), InstantSource.system());

  @Override
  protected Backend backend() {
    return new JdbcBackend(storage, "faults-" + UUID.randomUUID());
  }
}
