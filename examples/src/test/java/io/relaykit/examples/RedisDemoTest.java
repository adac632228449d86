package io.relaykit.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.relaykit.idempotency.Claim;
import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.idempotency.IdempotencyUnavailableException;
import io.relaykit.storage.redis.RedisStorage;
import io.relaykit.storage.redis.RedisStorageConfig;
import io.relaykit.tck.Await;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * The demo on {@code --storage redis}: H2 in a temp folder holds orders, outbox and effects; the
 * local Redis, under a key prefix of its own (deleted afterwards), fronts the idempotency store.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RedisDemoTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final String REDIS_URI =
      System.getenv().getOrDefault("RELAYKIT_REDIS_URI", "redis://127.0.0.1:6379");

  private DemoOptions options;
  private RedisClient client;
  private StatefulRedisConnection<String, String> connection;
  private RunningDemo demo;

  @BeforeAll
  void start(@TempDir Path data) throws Exception {
    options = new DemoOptions("127.0.0.1", 0, data, "redis", "memory", 0, null,
        Duration.ofSeconds(2), "demo-test-" + UUID.randomUUID().toString().substring(0, 8));
    client = RedisClient.create(REDIS_URI);
    try {
      connection = client.connect();
    } catch (RuntimeException e) {
      client.shutdown();
      client = null;
      throw new AssertionError("Redis is not reachable at " + REDIS_URI + " (set"
          + " RELAYKIT_REDIS_URI, or start it: redis-server --daemonize yes --port 6379)", e);
    }
    demo = RunningDemo.start(options);
  }

  @AfterAll
  void stop() {
    if (demo != null) {
      demo.close();
    }
    if (connection != null) {
      RedisCommands<String, String> redis = connection.sync();
      List<String> keys = redis.keys(CheckoutApp.redisKeyPrefix(options) + "*");
      if (!keys.isEmpty()) {
        redis.del(keys.toArray(String[]::new));
      }
      connection.close();
    }
    if (client != null) {
      client.shutdown();
    }
  }

  /** Whether Redis says DONE; a check that times out on the loaded machine is asked again. */
  private static boolean doneIn(RedisStorage redis, String key) {
    try {
      return redis.idempotencyStore().status(key).filter(s -> s == Claim.Status.DONE).isPresent();
    } catch (IdempotencyUnavailableException e) {
      return false;
    }
  }

  @Test
  @DisplayName("an order ends SUCCESS with sms = 1 and coupon = 1, and Redis holds both as DONE "
      + "(at the latest once a redelivery reaches it)")
  void success() throws Exception {
    String id = demo.orderSucceedsWithOneOfEachEffect(WAIT);

    try (RedisStorage redis = RedisStorage.open(RedisStorageConfig.builder().uri(REDIS_URI)
        .keyPrefix(CheckoutApp.redisKeyPrefix(options)).build())) {
      for (Orders.Effect effect : Orders.Effect.values()) {
        String key = "delivered:" + effect.messageId(id);
        Await.until(WAIT, key + " DONE in Redis", () -> {
          if (doneIn(redis, key)) {
            return true;
          }
          // On a loaded machine a Redis command can time out (250 ms), and the tiered store then
          // backs off Redis for a second; a fast DONE missed meanwhile is written by the next
          // call that reaches Redis. A redelivery is such a call: once the durable tier is DONE,
          // it is answered DONE (never CLAIMED, so it cannot take the key from the handler).
          IdempotencyStore deliveries = demo.app().deliveries;
          if (deliveries.status(key).orElse(null) == Claim.Status.DONE) {
            assertThat(deliveries.claim(key, options.lease()).status())
                .isEqualTo(Claim.Status.DONE);
          }
          return doneIn(redis, key);
        });
      }
    }
  }
}
