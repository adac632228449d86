package io.relaykit.storage.redis;

import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.idempotency.InMemoryIdempotencyStore;
import io.relaykit.idempotency.TieredIdempotencyStore;
import io.relaykit.retry.Backoff;
import io.relaykit.tck.Await;
import io.relaykit.tck.IdempotencyStoreContract;
import java.time.Duration;
import java.time.InstantSource;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;

/**
 * The idempotency kit on a tiered store: the real Redis as the fast tier, the in-memory store as
 * the durable one (a JDBC durable tier lives in examples: adapters do not depend on each other).
 */
@DisplayName("TieredIdempotencyStore over the real Redis passes the idempotency kit")
class TieredRedisIdempotencyStoreTest extends IdempotencyStoreContract {
  private static RedisTestSupport support;
  private static final Map<Duration, RedisStorage> STORAGES = new HashMap<>();

  @BeforeAll
  static void connect() {
    support = new RedisTestSupport();
    // Load Lettuce's classes before the kit's short real-time leases start counting.
    try (RedisStorage warm = support.open()) {
      warm.idempotencyStore().status("warm-up");
    }
  }

  @AfterAll
  static void cleanUp() {
    STORAGES.values().forEach(RedisStorage::close);
    STORAGES.clear();
    if (support != null) {
      support.close();
    }
  }

  @Override
  protected IdempotencyStore createStore(InstantSource clock, Duration retention) {
    RedisStorage storage = STORAGES.computeIfAbsent(retention, r ->
        RedisStorage.open(support.config().retention(r).build(), clock));
    return new TieredIdempotencyStore(storage.idempotencyStore(),
        new InMemoryIdempotencyStore(clock, retention), clock,
        Backoff.exponential(Duration.ofSeconds(1)));
  }

  @Override
  protected InstantSource clock() {
    return InstantSource.system();
  }

  @Override
  protected void advance(Duration duration) {
    Await.elapsed(duration);
  }

  @Override
  protected Duration lease() {
    return Duration.ofMillis(1000);
  }

  @Override
  protected Duration retention() {
    // Well above the lease: on a busy machine a test step can take a second or more.
    return Duration.ofMillis(4000);
  }

  @Override
  protected Duration clockTolerance() {
    return Duration.ofMillis(5);
  }
}
