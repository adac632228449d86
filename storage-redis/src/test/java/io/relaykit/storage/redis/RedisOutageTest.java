package io.relaykit.storage.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.relaykit.idempotency.Claim;
import io.relaykit.idempotency.IdempotencyUnavailableException;
import io.relaykit.idempotency.InMemoryIdempotencyStore;
import io.relaykit.idempotency.TieredIdempotencyStore;
import io.relaykit.retry.Backoff;
import io.relaykit.tck.Await;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Outages of a real {@code redis-server} child process: killed mid-run, restarted on the same port,
 * paused (slow), and down before the application starts. The tiered store must keep working on the
 * durable tier, never run an effect twice, and use Redis again when it is back.
 */
@DisplayName("Redis outages: a real redis-server killed, restarted and paused")
class RedisOutageTest {
  private static final Duration LEASE = Duration.ofSeconds(30);

  private RedisServerProcess server;
  private RedisStorage storage;
  private InMemoryIdempotencyStore durable;
  private TieredIdempotencyStore tiered;

  @BeforeEach
  void start() throws Exception {
    server = new RedisServerProcess().start();
    // The first commands in a JVM load Lettuce's classes, which on a busy machine takes longer
    // than the short command timeout below: run them once with generous timeouts.
    try (RedisStorage warm = RedisStorage.open(fastFailing(server.uri()).toBuilder()
        .commandTimeout(Duration.ofSeconds(30)).connectTimeout(Duration.ofSeconds(30)).build())) {
      RedisIdempotencyStore store = warm.idempotencyStore();
      Claim c = store.claim("warm-up", LEASE);
      store.status("warm-up");
      store.release(c);
      store.complete(store.claim("warm-up", LEASE));
    }
    storage = RedisStorage.open(fastFailing(server.uri()));
    durable = new InMemoryIdempotencyStore(InstantSource.system(), Duration.ofHours(1));
    tiered = new TieredIdempotencyStore(storage.idempotencyStore(), durable,
        InstantSource.system(),
        Backoff.exponential(Duration.ofMillis(100)).withMax(Duration.ofMillis(400)));
    assertThat(tiered.claim("first", LEASE).isClaimed()).isTrue();
    assertThat(tiered.fastTierInUse()).isTrue();
  }

  @AfterEach
  void stop() throws Exception {
    if (storage != null) {
      storage.close();
    }
    if (server != null) {
      server.close();
    }
  }

  private static RedisStorageConfig fastFailing(String uri) {
    return RedisStorageConfig.builder().uri(uri).keyPrefix("outage:")
        .commandTimeout(Duration.ofMillis(500))
        .connectTimeout(Duration.ofSeconds(10))
        .reconnectMaxDelay(Duration.ofMillis(200))
        .build();
  }

  /** What the server really holds at {@code key}, read with a separate client. */
  private String get(String key) {
    RedisClient client = RedisClient.create(server.uri());
    try (StatefulRedisConnection<String, String> c = client.connect()) {
      return c.sync().get(key);
    } finally {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }
  }

  private String redisKey(String key) {
    return storage.idempotencyStore().redisKey(key);
  }

  /**
   * Claims {@code key} until it is DONE, running the effect when CLAIMED; IN_PROGRESS means
   * another worker holds it, so ask again.
   */
  private void runOnce(String key, Map<String, AtomicInteger> effects) {
    while (true) {
      Claim c = tiered.claim(key, LEASE);
      if (c.status() == Claim.Status.DONE) {
        return;
      }
      if (c.isClaimed()) {
        effects.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
        assertThat(tiered.complete(c)).as("completing " + key).isTrue();
        return;
      }
      Thread.onSpinWait();
    }
  }

  @Test
  @DisplayName("killed mid-run: the tiered store falls back to the durable tier and no effect runs "
      + "twice")
  void killMidRun() throws Exception {
    int keys = 120;
    int workers = 4;
    Map<String, AtomicInteger> effects = new ConcurrentHashMap<>();
    AtomicInteger progress = new AtomicInteger();
    CountDownLatch halfway = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(workers);
    try {
      List<Future<?>> futures = new ArrayList<>();
      for (int w = 0; w < workers; w++) {
        List<String> order = new ArrayList<>();
        for (int i = 0; i < keys; i++) {
          order.add("order-" + i);
        }
        Collections.shuffle(order, new java.util.Random(w));
        futures.add(pool.submit(() -> {
          for (String key : order) {
            runOnce(key, effects);
            if (progress.incrementAndGet() == keys) {
              halfway.countDown();
            }
          }
          return null;
        }));
      }
      assertThat(halfway.await(20, TimeUnit.SECONDS)).as("workers got halfway").isTrue();
      server.kill();
      for (Future<?> f : futures) {
        f.get(30, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }

    assertThat(effects).hasSize(keys);
    assertThat(effects.values()).allSatisfy(n -> assertThat(n.get()).isEqualTo(1));
    for (int i = 0; i < keys; i++) {
      assertThat(durable.status("order-" + i)).contains(Claim.Status.DONE);
    }
    assertThat(tiered.fastTierInUse()).isFalse();
    assertThatThrownBy(() -> storage.idempotencyStore().claim("x", LEASE))
        .isInstanceOf(IdempotencyUnavailableException.class)
        .hasMessageContaining("127.0.0.1:" + server.port());
  }

  @Test
  @DisplayName("restarted on the same port: the client reconnects, the tiered store uses Redis "
      + "again and fills in what it lost")
  void restart() throws Exception {
    Claim before = tiered.claim("order-1", LEASE);
    assertThat(tiered.complete(before)).isTrue();
    assertThat(get(redisKey("order-1"))).isEqualTo("DONE");

    server.kill();
    Claim during = tiered.claim("order-2", LEASE);
    assertThat(during.isClaimed()).isTrue();
    assertThat(tiered.fastTierInUse()).isFalse();

    server.start();
    Await.until(Duration.ofSeconds(8), "the tiered store to use Redis again", () -> {
      tiered.claim("probe-" + System.nanoTime(), LEASE);
      return tiered.fastTierInUse();
    });
    // The restarted server lost everything (no persistence) and its script cache: completing the
    // outage-time claim writes the durable tier, then fills in Redis through EVAL after NOSCRIPT.
    assertThat(tiered.claim("order-2", LEASE).status()).isEqualTo(Claim.Status.IN_PROGRESS);
    assertThat(tiered.complete(during)).isTrue();
    assertThat(get(redisKey("order-2"))).isEqualTo("DONE");
    // A key done before the outage is DONE from the durable tier, and Redis is filled in again.
    assertThat(get(redisKey("order-1"))).isNull();
    assertThat(tiered.claim("order-1", LEASE).status()).isEqualTo(Claim.Status.DONE);
    assertThat(get(redisKey("order-1"))).isEqualTo("DONE");
  }

  @Test
  @DisplayName("slow Redis: a command timeout falls back to the durable tier instead of hanging")
  void slowRedis() throws Exception {
    assertThat(server.command("CLIENT PAUSE 2500 ALL")).isEqualTo("+OK");

    long start = System.nanoTime();
    Claim c = tiered.claim("order-3", LEASE);
    Duration took = Duration.ofNanos(System.nanoTime() - start);

    assertThat(c.isClaimed()).isTrue();
    assertThat(took).as("one command timeout (500 ms), not the 2.5 s pause").isLessThan(
        Duration.ofMillis(2000));
    assertThat(tiered.fastTierInUse()).isFalse();
    assertThat(durable.status("order-3")).contains(Claim.Status.CLAIMED);
    assertThat(tiered.claim("order-3", LEASE).status()).isEqualTo(Claim.Status.IN_PROGRESS);

    Await.until(Duration.ofSeconds(8), "Redis to answer again after the pause", () -> {
      tiered.claim("probe-" + System.nanoTime(), LEASE);
      return tiered.fastTierInUse();
    });
    // The timed-out SET NX still ran once the pause ended: Redis holds an orphaned fast claim
    // until its lease ends. The durable tier is the truth for DONE, so the answer is right anyway.
    assertThat(get(redisKey("order-3"))).isNotNull().isNotEqualTo("DONE");
    assertThat(tiered.complete(c)).isTrue();
    assertThat(tiered.claim("order-3", LEASE).status()).isEqualTo(Claim.Status.DONE);
  }

  @Test
  @DisplayName("a slow connection handshake is bounded by the connect timeout, not the command"
      + " timeout: a Redis that answers HELLO after 1.5 s is connected to, then used")
  void slowHandshakeWithinConnectTimeout() throws Exception {
    // A new client of its own, so its first command makes the handshake; CLIENT PAUSE holds every
    // command, HELLO included, for 1.5 s: three times the 500 ms command timeout, well inside the
    // 10 s connect timeout. The command itself is sent after the handshake, once the pause ended.
    try (RedisStorage fresh = RedisStorage.open(fastFailing(server.uri()))) {
      assertThat(server.command("CLIENT PAUSE 1500 ALL")).isEqualTo("+OK");
      assertThat(fresh.idempotencyStore().status("handshake-probe")).isEmpty();
    }
  }

  @Test
  @DisplayName("a script cache flushed under the store is reloaded with EVAL")
  void noScript() throws Exception {
    Claim c = storage.idempotencyStore().claim("order-4", LEASE);
    assertThat(server.command("SCRIPT FLUSH")).isEqualTo("+OK");
    assertThat(storage.idempotencyStore().complete(c)).isTrue();
    assertThat(get(redisKey("order-4"))).isEqualTo("DONE");
  }

  @Test
  @DisplayName("down when the application starts: calls fail fast, and Redis is used once it is up")
  void downAtStart() throws Exception {
    storage.close();
    server.kill();
    storage = RedisStorage.open(fastFailing(server.uri()));
    RedisIdempotencyStore fast = storage.idempotencyStore();
    tiered = new TieredIdempotencyStore(fast, durable, InstantSource.system(),
        Backoff.fixed(Duration.ofMillis(100)));

    long start = System.nanoTime();
    assertThatThrownBy(() -> fast.claim("order-5", LEASE))
        .isInstanceOf(IdempotencyUnavailableException.class)
        .hasMessageContaining("127.0.0.1:" + server.port());
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(2));
    assertThat(tiered.claim("order-5", LEASE).isClaimed()).isTrue();

    server.start();
    Await.until(Duration.ofSeconds(8), "the tiered store to use Redis once it is up", () -> {
      tiered.claim("probe-" + System.nanoTime(), LEASE);
      return tiered.fastTierInUse();
    });
    Claim c = tiered.claim("order-6", LEASE);
    assertThat(get(redisKey("order-6"))).isNotNull().isNotEqualTo("DONE");
    assertThat(tiered.complete(c)).isTrue();
    assertThat(get(redisKey("order-6"))).isEqualTo("DONE");
  }
}
