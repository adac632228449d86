package io.relaykit.storage.redis;

import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.idempotency.InMemoryIdempotencyStore;
import io.relaykit.idempotency.TieredIdempotencyStore;
import io.relaykit.retry.Backoff;
import java.time.Duration;
import java.time.InstantSource;
import java.util.Optional;
import org.junit.jupiter.api.DisplayName;

/**
 * The idempotency kit on a tiered store: the real Redis as the fast tier, the in-memory store as
 * the durable one (a JDBC durable tier lives in examples: adapters do not depend on each other).
 */
@DisplayName("TieredIdempotencyStore over the real Redis passes the idempotency kit")
class TieredRedisIdempotencyStoreTest extends RealTimeRedisIdempotencyContract {

  /** The current test's durable tier, which a second host shares. */
  private InMemoryIdempotencyStore durable;

  @Override
  protected IdempotencyStore createStore(InstantSource clock, Duration retention) {
    durable = new InMemoryIdempotencyStore(clock, retention);
    return new TieredIdempotencyStore(storage(clock, retention).idempotencyStore(), durable, clock,
        Backoff.exponential(Duration.ofSeconds(1)));
  }

  /** Another host: its own Redis connection and clock, the same Redis and durable tier. */
  @Override
  protected Optional<IdempotencyStore> storeOnHost(InstantSource hostClock) {
    return Optional.of(new TieredIdempotencyStore(hostStorage(hostClock).idempotencyStore(),
        durable, hostClock, Backoff.exponential(Duration.ofSeconds(1))));
  }
}
