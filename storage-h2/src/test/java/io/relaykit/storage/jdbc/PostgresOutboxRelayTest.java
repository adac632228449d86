package io.relaykit.storage.jdbc;

/** The relay tests on PostgreSQL: claims by one UPDATE ... WHERE seq IN (... SKIP LOCKED). */
class PostgresOutboxRelayTest extends JdbcOutboxRelayTest {
  PostgresOutboxRelayTest() {
    super(TestDatabase.Kind.POSTGRESQL);
  }
}
