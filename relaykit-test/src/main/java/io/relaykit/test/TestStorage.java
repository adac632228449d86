package io.relaykit.test;

/** Where {@link RelayKitExtension} keeps the outbox, dead letters and idempotency rows. */
public enum TestStorage {
  /** relaykit-core's in-memory stores: the fastest; no SQL. */
  MEMORY,
  /**
   * relaykit-jdbc's stores on a private in-memory H2 database, dropped after the test: the outbox
   * append then runs in your JDBC transaction ({@link RelayKitExtension#dataSource()}).
   */
  H2
}
