package io.relaykit.storage.jdbc;

/**
 * What a message key orders in the JDBC outbox: which rows a keyed row waits for. Chosen per store
 * ({@link JdbcStorage#outboxStore(OutboxOrderScope)}) and stored on each row at append, so rows
 * appended under one scope keep it when a later store uses the other.
 *
 * <p>Order itself is the same in both: the rows of one scope key are published in the order their
 * appending transactions committed (see {@link JdbcOutboxStore}).
 */
public enum OutboxOrderScope {
  /**
   * A key orders across all destinations (the default, and the only scope before schema version
   * 7): an audit row and an order event with key {@code o-1} are published in commit order, and a
   * failing row of {@code o-1} for one destination parks {@code o-1}'s rows for every destination.
   */
  KEY,

  /**
   * A key orders per destination: {@code (destination, key)} is the scope key, so a failing audit
   * row of {@code o-1} parks only {@code o-1}'s later audit rows, and rows of {@code o-1} for
   * different destinations go out in any order relative to each other.
   */
  KEY_PER_DESTINATION
}
