package io.relaykit.storage.redis;

import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.idempotency.InMemoryIdempotencyStore;
import io.relaykit.idempotency.TieredIdempotencyStore;
import io.relaykit.retry.Backoff;
import java.time.Duration;
import java.time.InstantSource;
import org.junit.jupiter.api.DisplayName;

/**
 * The idempotency kit on a tiered store: the real Redis as the fast tier, the in-memory store as
 * the durable one (a JDBC durable tier lives in examples: adapters do not depend on each other).
 */
@DisplayName("TieredIdempotencyStore over the real Redis passes the idempotency kit")
class TieredRedisIdempotencyStoreTest extends RealTimeRedisIdempotencyContract {

  @Override
  protected IdempotencyStore createStore(InstantSource clock, Duration retention) {
    return new TieredIdempotencyStore(storage(clock, retention).idempotencyStore(),
        new InMemoryIdempotencyStore(clock, retention), clock,
        Backoff.exponential(Duration.ofSeconds(1)));
  }
}
