package io.relaykit.storage.h2;

import io.relaykit.message.Message;
import io.relaykit.outbox.OutboxStore;
import io.relaykit.tck.OutboxStoreContract;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;

/** OutboxStoreContract on PostgreSQL. */
class PostgresOutboxStoreTest extends OutboxStoreContract {
  private static final String PREFIX = TestDatabase.newPrefix();
  private final TestDatabase db = TestDatabase.shared(TestDatabase.Kind.POSTGRESQL);

  private JdbcStorage storage;

  @Override
  protected OutboxStore createStore() {
    storage = db.emptied(PREFIX, Duration.ofDays(7), clock());
    return storage.outboxStore();
  }

  @Override
  protected void appendCommitted(String destination, Message message) {
    try (Connection c = storage.dataSource().getConnection()) {
      c.setAutoCommit(false);
      storage.outboxStore().append(c, destination, message);
      c.commit();
    } catch (SQLException e) {
      throw new AssertionError(e);
    }
  }
}
