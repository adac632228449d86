package io.relaykit.storage.jdbc;

import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.message.Message;
import io.relaykit.outbox.OutboxBound;
import io.relaykit.outbox.OutboxStore;
import io.relaykit.tck.OutboxRelayContract;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;

/** OutboxRelayContract on the JDBC outbox and dead-letter table, POSTGRESQL. */
class PostgresOutboxRelayContractTest extends OutboxRelayContract {
  private static final String PREFIX = TestDatabase.newPrefix();
  private final TestDatabase db = TestDatabase.shared(TestDatabase.Kind.POSTGRESQL);

  private JdbcStorage storage;
  private JdbcOutboxStore outbox;

  @Override
  protected OutboxStore createStore() {
    return createStore(OutboxBound.unbounded());
  }

  @Override
  protected OutboxStore createStore(OutboxBound bound) {
    storage = db.emptied(PREFIX, Duration.ofDays(7), clock());
    outbox = storage.outboxStore(bound);
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
