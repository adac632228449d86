package io.relaykit.storage.jdbc;

import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.tck.DeadLetterStoreContract;
import java.time.Duration;
import java.time.InstantSource;

/** DeadLetterStoreContract on PostgreSQL. */
class PostgresDeadLetterStoreTest extends DeadLetterStoreContract {
  private static final String PREFIX = TestDatabase.newPrefix();
  private final TestDatabase db = TestDatabase.shared(TestDatabase.Kind.POSTGRESQL);

  @Override
  protected DeadLetterStore createStore() {
    return db.emptied(PREFIX, Duration.ofDays(7), InstantSource.system()).deadLetterStore();
  }
}
