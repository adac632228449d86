package io.relaykit.examples;

import org.junit.jupiter.api.DisplayName;

/** The idempotency kit on {@code TieredIdempotencyStore.of(redis, jdbc)}, JDBC on PostgreSQL. */
@DisplayName("TieredIdempotencyStore over the real Redis and PostgreSQL passes the idempotency kit")
class TieredRedisPostgresIdempotencyStoreTest extends TieredJdbcIdempotencyContract {
  @Override
  protected String databaseKind() {
    return "postgres";
  }
}
