package io.relaykit.storage.jdbc;

/** The relay tests on H2 in memory: claims by SELECT ... FOR UPDATE SKIP LOCKED + lease updates. */
class H2OutboxRelayTest extends JdbcOutboxRelayTest {
  H2OutboxRelayTest() {
    super(TestDatabase.Kind.H2_MEMORY);
  }
}
