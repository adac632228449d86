package io.relaykit.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lettuce.core.RedisURI;
import io.relaykit.idempotency.Claim;
import io.relaykit.idempotency.IdempotencyUnavailableException;
import io.relaykit.idempotency.TieredIdempotencyStore;
import io.relaykit.storage.jdbc.JdbcStorageConfig;
import io.relaykit.storage.jdbc.JdbcStorage;
import io.relaykit.storage.redis.RedisStorage;
import io.relaykit.storage.redis.RedisStorageConfig;
import io.relaykit.tck.Await;
import io.relaykit.tck.FaultProxy;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code TieredIdempotencyStore.of(redis, jdbc)} while Redis is unreachable, on real H2 and
 * PostgreSQL: workers race to run one effect per key (an INSERT into a table of the same database,
 * with no unique key, so a duplicate would show). Redis is down from the start (a closed port), or
 * goes away mid-run (a {@link FaultProxy} in front of the shared Redis is cut). Either way the
 * JDBC tier keeps the claims exclusive: every key's effect happens exactly once and ends DONE in
 * the database.
 */
@DisplayName("TieredIdempotencyStore over Redis and JDBC when Redis is unreachable")
class TieredRedisOutageTest {
  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final int WORKERS = 4;

  /** Timeouts short enough that an unreachable Redis costs little per call. */
  private static RedisStorageConfig fastFailing(String uri, String prefix) {
    return RedisStorageConfig.builder().uri(uri).keyPrefix(prefix)
        .commandTimeout(Duration.ofMillis(500))
        .connectTimeout(Duration.ofSeconds(1))
        .reconnectMaxDelay(Duration.ofMillis(200))
        .build();
  }

  private static JdbcStorage jdbc(TestDatabase db) throws SQLException {
    JdbcStorage storage = JdbcStorage.open(JdbcStorageConfig.builder().jdbcUrl(db.url).build(),
        java.time.InstantSource.system());
    try (Connection c = storage.dataSource().getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE outage_effects (effect_key VARCHAR(200) NOT NULL)");
    }
    return storage;
  }

  @ParameterizedTest(name = "on {0}")
  @ValueSource(strings = {"h2", "postgres"})
  @DisplayName("Redis down from the start (a closed port): claims dedupe through the database, "
      + "each effect exactly once")
  void downFromTheStart(String kind) throws Exception {
    int closedPort;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      closedPort = s.getLocalPort();
    }
    try (TestDatabase db = TestDatabase.open(kind);
        JdbcStorage durable = jdbc(db);
        RedisStorage redis = RedisStorage.open(
            fastFailing("redis://127.0.0.1:" + closedPort, "rk-outage:"))) {
      assertThatThrownBy(() -> redis.idempotencyStore().claim("probe", LEASE))
          .as("the fast tier really is unreachable")
          .isInstanceOf(IdempotencyUnavailableException.class);
      TieredIdempotencyStore tiered =
          TieredIdempotencyStore.of(redis.idempotencyStore(), durable.idempotencyStore());

      List<String> keys = keys(60);
      race(tiered, durable, keys, null);

      assertThat(tiered.fastTierInUse()).isFalse();
      assertExactlyOnceAndDone(durable, keys);
    }
  }

  @ParameterizedTest(name = "on {0}")
  @ValueSource(strings = {"h2", "postgres"})
  @DisplayName("Redis goes away mid-run: Redis held the work done before, the database guards the "
      + "rest, each effect exactly once")
  void cutMidRun(String kind) throws Exception {
    try (LocalRedis shared = new LocalRedis();
        TestDatabase db = TestDatabase.open(kind);
        JdbcStorage durable = jdbc(db)) {
      RedisURI target = RedisURI.create(shared.uri);
      try (FaultProxy proxy = FaultProxy.to(target.getHost(), target.getPort());
          RedisStorage redis = RedisStorage.open(
              fastFailing("redis://127.0.0.1:" + proxy.port(), shared.prefix))) {
        // The first calls load scripts; make them before the short timeouts matter.
        try (RedisStorage warm = RedisStorage.open(shared.config()
            .uri("redis://127.0.0.1:" + proxy.port()).build())) {
          warm.idempotencyStore().complete(warm.idempotencyStore().claim("warm-up", LEASE));
        }
        // Redis connects lazily; connect now, or the racing workers' first calls find it "still
        // connecting" and start out on the durable tier.
        redis.idempotencyStore().status("warm-up");
        TieredIdempotencyStore tiered =
            TieredIdempotencyStore.of(redis.idempotencyStore(), durable.idempotencyStore());
        assertThat(tiered.fastTierInUse()).isTrue();
        List<String> keys = keys(120);
        race(tiered, durable, keys, () -> {
          proxy.refuseConnections();
          proxy.cutConnections();
        });

        assertThat(tiered.fastTierInUse()).as("Redis is out of use after the cut").isFalse();
        assertExactlyOnceAndDone(durable, keys);
      }
      // Before the cut Redis really was the fast tier: it holds DONE for part of the keys.
      long doneInRedis = shared.keys().stream()
          .filter(k -> !k.endsWith("warm-up"))
          .filter(k -> "DONE".equals(shared.raw().get(k)))
          .count();
      assertThat(doneInRedis).as("keys DONE in Redis before the cut").isPositive();
    }
  }

  private static List<String> keys(int n) {
    List<String> keys = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      keys.add("order-" + i + ":sms");
    }
    return keys;
  }

  /**
   * {@link #WORKERS} threads each go through every key (in its own order) until the key is DONE,
   * running the effect when CLAIMED; {@code atQuarter}, if any, runs once a quarter of the work is
   * through.
   */
  private static void race(TieredIdempotencyStore tiered, JdbcStorage durable, List<String> keys,
      Runnable atQuarter) throws Exception {
    AtomicInteger progress = new AtomicInteger();
    CountDownLatch quarter = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(WORKERS);
    try {
      List<Future<?>> futures = new ArrayList<>();
      for (int w = 0; w < WORKERS; w++) {
        List<String> order = new ArrayList<>(keys);
        Collections.shuffle(order, new Random(w));
        futures.add(pool.submit(() -> {
          for (String key : order) {
            Await.until(Duration.ofSeconds(30), key + " DONE",
                () -> runOnceStep(tiered, durable, key));
            if (progress.incrementAndGet() == keys.size()) {
              quarter.countDown();
            }
          }
          return null;
        }));
      }
      if (atQuarter != null) {
        assertThat(quarter.await(60, TimeUnit.SECONDS)).as("a quarter of the work done").isTrue();
        atQuarter.run();
      }
      for (Future<?> f : futures) {
        f.get(120, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  /** One claim of {@code key}: true once it is DONE (by this call's effect or another's). */
  private static boolean runOnceStep(TieredIdempotencyStore tiered, JdbcStorage durable,
      String key) {
    Claim c = tiered.claim(key, LEASE);
    if (c.status() == Claim.Status.DONE) {
      return true;
    }
    if (!c.isClaimed()) {
      return false; // IN_PROGRESS: another worker runs it
    }
    try (Connection conn = durable.dataSource().getConnection();
        PreparedStatement ps = conn.prepareStatement(
            "INSERT INTO outage_effects (effect_key) VALUES (?)")) {
      ps.setString(1, key);
      ps.executeUpdate();
    } catch (SQLException e) {
      tiered.release(c);
      throw new AssertionError("the effect for " + key + " failed: " + e, e);
    }
    assertThat(tiered.complete(c)).as("completing " + key).isTrue();
    return true;
  }

  private static void assertExactlyOnceAndDone(JdbcStorage durable, List<String> keys)
      throws SQLException {
    Map<String, Integer> effects = new HashMap<>();
    try (Connection c = durable.dataSource().getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(
            "SELECT effect_key, COUNT(*) FROM outage_effects GROUP BY effect_key")) {
      while (rs.next()) {
        effects.put(rs.getString(1), rs.getInt(2));
      }
    }
    Map<String, Integer> once = new HashMap<>();
    keys.forEach(k -> once.put(k, 1));
    assertThat(effects).as("effects per key").isEqualTo(once);
    for (String key : keys) {
      assertThat(durable.idempotencyStore().status(key)).as(key).contains(Claim.Status.DONE);
    }
  }
}
