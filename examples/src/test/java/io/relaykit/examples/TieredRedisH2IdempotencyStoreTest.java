package io.relaykit.examples;

import org.junit.jupiter.api.DisplayName;

/** The idempotency kit on {@code TieredIdempotencyStore.of(redis, jdbc)}, JDBC on H2. */
@DisplayName("TieredIdempotencyStore over the real Redis and H2 passes the idempotency kit")
class TieredRedisH2IdempotencyStoreTest extends TieredJdbcIdempotencyContract {
  @Override
  protected String databaseKind() {
    return "h2";
  }
}
