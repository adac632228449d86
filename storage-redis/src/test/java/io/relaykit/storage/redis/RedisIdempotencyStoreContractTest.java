package io.relaykit.storage.redis;

import io.relaykit.idempotency.IdempotencyStore;
import java.time.Duration;
import java.time.InstantSource;
import org.junit.jupiter.api.DisplayName;

/** The idempotency kit on the real Redis, in real time: Redis expires keys on its own clock. */
@DisplayName("RedisIdempotencyStore passes the idempotency kit on the real Redis")
class RedisIdempotencyStoreContractTest extends RealTimeRedisIdempotencyContract {

  @Override
  protected IdempotencyStore createStore(InstantSource clock, Duration retention) {
    return storage(clock, retention).idempotencyStore();
  }
}
