package io.relaykit.examples;

import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.idempotency.TieredIdempotencyStore;
import io.relaykit.storage.jdbc.JdbcStorageConfig;
import io.relaykit.storage.jdbc.JdbcStorage;
import io.relaykit.storage.redis.RedisStorage;
import io.relaykit.tck.Await;
import io.relaykit.tck.IdempotencyStoreContract;
import java.time.Duration;
import java.time.InstantSource;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.TestInfo;

/**
 * The idempotency kit on the tiered store as the demo wires it, {@code
 * TieredIdempotencyStore.of(redis, jdbc)}: the real Redis (a key prefix of its own) as the fast
 * tier, the JDBC store of storage-h2 on a real database (H2 or a PostgreSQL schema of its own) as
 * the durable one. Redis expires keys on its own clock, so the kit runs in real time: the clock is
 * the system clock and "advance" waits. Each test class keeps one Redis storage and one JDBC storage
 * per retention, opened on first use (the kit's keys are unique per test, so tests share them safely).
 */
abstract class TieredJdbcIdempotencyContract extends IdempotencyStoreContract {

  /** What one test class holds open. */
  private static final class ClassState implements AutoCloseable {
    final LocalRedis redis = new LocalRedis();
    final TestDatabase database;
    final Map<Duration, RedisStorage> fast = new ConcurrentHashMap<>();
    final Map<Duration, JdbcStorage> durable = new ConcurrentHashMap<>();
    final Map<Duration, JdbcStorageConfig> durableConfigs = new ConcurrentHashMap<>();
    final java.util.List<AutoCloseable> hosts = new java.util.concurrent.CopyOnWriteArrayList<>();

    ClassState(String databaseKind) {
      this.database = TestDatabase.open(databaseKind);
      // Load Lettuce's classes before the kit's short real-time leases start counting.
      try (RedisStorage warm = RedisStorage.open(redis.config().build())) {
        warm.idempotencyStore().status("warm-up");
      }
    }

    @Override
    public void close() {
      try {
        fast.values().forEach(RedisStorage::close);
        durable.values().forEach(JdbcStorage::close);
        for (AutoCloseable h : hosts) {
          try {
            h.close();
          } catch (Exception e) {
            throw new IllegalStateException("could not close a second host's storage", e);
          }
        }
      } finally {
        try {
          redis.close();
        } finally {
          database.close();
        }
      }
    }
  }

  private static final Map<Class<?>, ClassState> STATES = new ConcurrentHashMap<>();

  /** {@code h2} or {@code postgres}: the database under the durable tier. */
  protected abstract String databaseKind();

  @AfterAll
  static void cleanUp(TestInfo info) {
    ClassState state = STATES.remove(info.getTestClass().orElseThrow());
    if (state != null) {
      state.close();
    }
  }

  @Override
  protected IdempotencyStore createStore(InstantSource clock, Duration retention) {
    ClassState state = STATES.computeIfAbsent(getClass(), c -> new ClassState(databaseKind()));
    RedisStorage fast = state.fast.computeIfAbsent(retention, r ->
        RedisStorage.open(state.redis.config().retention(r).build(), clock));
    JdbcStorage durable = state.durable.computeIfAbsent(retention, r -> {
      JdbcStorageConfig config = JdbcStorageConfig.builder().jdbcUrl(state.database.url)
          .tablePrefix("tiered" + state.durable.size() + "_").retention(r).build();
      state.durableConfigs.put(r, config);
      return JdbcStorage.open(config, clock);
    });
    return TieredIdempotencyStore.of(fast.idempotencyStore(), durable.idempotencyStore());
  }

  /**
   * A second host: its own Redis and JDBC storages on the same Redis prefix and tables, with
   * {@code hostClock} as its clock; both tiers decide on their servers' clocks (Redis TIME, the
   * database's {@code DatabaseClock.database()}), which the kit's system clock matches.
   */
  @Override
  protected java.util.Optional<IdempotencyStore> storeOnHost(InstantSource hostClock) {
    ClassState state = STATES.get(getClass());
    RedisStorage fast = RedisStorage.open(state.fast.get(retention()).config(), hostClock);
    state.hosts.add(fast);
    JdbcStorage durable = JdbcStorage.open(state.durableConfigs.get(retention()), hostClock);
    state.hosts.add(durable);
    return java.util.Optional.of(new TieredIdempotencyStore(fast.idempotencyStore(),
        durable.idempotencyStore(), hostClock,
        io.relaykit.retry.Backoff.exponential(Duration.ofSeconds(1))));
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
