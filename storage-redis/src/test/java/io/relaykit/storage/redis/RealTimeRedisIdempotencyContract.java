package io.relaykit.storage.redis;

import io.relaykit.tck.Await;
import io.relaykit.tck.IdempotencyStoreContract;
import java.time.Duration;
import java.time.InstantSource;
import io.relaykit.idempotency.IdempotencyStore;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInfo;

/**
 * The idempotency kit's hooks for a store backed by the real Redis, in real time: Redis expires
 * keys on its own clock, so the kit's clock is the system clock and "advance" waits. Each test
 * class gets its own Redis key prefix and one {@link RedisStorage} per retention, kept for the
 * class (by test class, so two subclasses running side by side share nothing).
 */
abstract class RealTimeRedisIdempotencyContract extends IdempotencyStoreContract {

  /** What one test class holds open. */
  private static final class ClassState {
    final RedisTestSupport support = new RedisTestSupport();
    final Map<Duration, RedisStorage> storages = new ConcurrentHashMap<>();
    final List<RedisStorage> hosts = new CopyOnWriteArrayList<>();
  }

  private static final Map<Class<?>, ClassState> STATES = new ConcurrentHashMap<>();

  @BeforeAll
  static void connect(TestInfo info) {
    ClassState state = new ClassState();
    STATES.put(info.getTestClass().orElseThrow(), state);
    // Load Lettuce's classes before the kit's short real-time leases start counting.
    try (RedisStorage warm = state.support.open()) {
      warm.idempotencyStore().status("warm-up");
    }
  }

  @AfterAll
  static void cleanUp(TestInfo info) {
    ClassState state = STATES.remove(info.getTestClass().orElseThrow());
    if (state != null) {
      state.storages.values().forEach(RedisStorage::close);
      state.hosts.forEach(RedisStorage::close);
      state.support.close();
    }
  }

  /** This test class's Redis storage for {@code retention}, opened on first use. */
  protected final RedisStorage storage(InstantSource clock, Duration retention) {
    ClassState state = STATES.get(getClass());
    return state.storages.computeIfAbsent(retention, r ->
        RedisStorage.open(state.support.config().retention(r).build(), clock));
  }

  /** A second Redis storage on the same key prefix, as another host with clock {@code hostClock}. */
  protected final RedisStorage hostStorage(InstantSource hostClock) {
    ClassState state = STATES.get(getClass());
    RedisStorage host = RedisStorage.open(state.support.config().retention(retention()).build(),
        hostClock);
    state.hosts.add(host);
    return host;
  }

  @Override
  protected Optional<IdempotencyStore> storeOnHost(InstantSource hostClock) {
    return Optional.of(hostStorage(hostClock).idempotencyStore());
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
