package io.relaykit.storage.jdbc;

import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.message.Message;
import io.relaykit.outbox.OutboxStore;
import io.relaykit.tck.OutboxConcurrencyContract;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.InstantSource;

/** OutboxConcurrencyContract on POSTGRESQL: leases on the database clock (driven by the kit). */
class PostgresOutboxConcurrencyTest extends OutboxConcurrencyContract {
  private final TestDatabase db = TestDatabase.shared(TestDatabase.Kind.POSTGRESQL);
  private JdbcStorage storage;
  private JdbcOutboxStore outbox;

  @Override
  protected OutboxStore createStore(InstantSource storeClock) {
    // Fresh tables per run; the storage's own clock (ENQUEUED events) is the store's too.
    storage = db.storage(TestDatabase.newPrefix(), Duration.ofDays(7), storeClock);
    outbox = storage.outboxStore();
    return outbox;
  }

  @Override
  protected DeadLetterStore createDeadLetterStore() {
    return storage.deadLetterStore();
  }

  @Override
  protected void appendCommitted(String destination, Message message) {
    try (Connection c = storage.dataSource().getConnection()) {
      c.setAutoCommit(false);
      outbox.append(c, destination, message);
      c.commit();
    } catch (SQLException e) {
      throw new AssertionError(e);
    }
  }
}
