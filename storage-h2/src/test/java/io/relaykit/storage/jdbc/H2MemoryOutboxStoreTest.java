package io.relaykit.storage.jdbc;

import io.relaykit.message.Message;
import io.relaykit.outbox.OutboxStore;
import io.relaykit.tck.OutboxStoreContract;
import io.relaykit.trace.TracePropagation;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;

/** OutboxStoreContract on H2 in memory. */
class H2MemoryOutboxStoreTest extends OutboxStoreContract {
  private static final String PREFIX = TestDatabase.newPrefix();
  private final TestDatabase db = TestDatabase.shared(TestDatabase.Kind.H2_MEMORY);

  private JdbcStorage storage;
  private JdbcOutboxStore store;

  @Override
  protected OutboxStore createStore() {
    storage = db.emptied(PREFIX, Duration.ofDays(7), clock());
    store = storage.outboxStore();
    return store;
  }

  @Override
  protected OutboxStore createStore(TracePropagation propagation) {
    createStore();
    store = store.withTracePropagation(propagation);
    return store;
  }

  @Override
  protected OutboxStore createStore(io.relaykit.outbox.OutboxBound bound) {
    createStore();
    store = storage.outboxStore(bound);
    return store;
  }

  @Override
  protected java.util.Optional<OpenTransaction> begin(OutboxStore s) {
    return java.util.Optional.of(JdbcTransactions.open(storage.dataSource(),
        (JdbcOutboxStore) s));
  }

  @Override
  protected long walkableKeyHeads() {
    return JdbcTransactions.walkableHeads(storage.dataSource(), PREFIX);
  }

  @Override
  protected void appendCommitted(String destination, Message message) {
    try (Connection c = storage.dataSource().getConnection()) {
      c.setAutoCommit(false);
      store.append(c, destination, message);
      c.commit();
    } catch (SQLException e) {
      throw new AssertionError(e);
    }
  }

  @Override
  protected boolean supportsRequestIds() {
    return true;
  }

  @Override
  protected long appendWithRequestId(String destination, Message message, String requestId) {
    try (Connection c = storage.dataSource().getConnection()) {
      c.setAutoCommit(true);
      return store.append(c, destination, message, requestId);
    } catch (SQLException e) {
      throw new AssertionError(e);
    }
  }
}
