package io.relaykit.examples;

import static org.junit.jupiter.api.Assertions.fail;

import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.relaykit.storage.redis.RedisStorageConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * The shared Redis at 127.0.0.1:6379 ({@code RELAYKIT_REDIS_URI}) for tests: a random key prefix
 * per instance, a raw connection to look at what Redis holds, and the deletion of every key under
 * the prefix on close. Fails, naming Redis and how to start it, when it is not reachable. Costs
 * one connection.
 */
final class LocalRedis implements AutoCloseable {
  final String uri = System.getenv().getOrDefault("RELAYKIT_REDIS_URI", "redis://127.0.0.1:6379");
  final String prefix = "rk-examples:" + UUID.randomUUID().toString().substring(0, 8) + ":";
  private final RedisClient client = RedisClient.create(uri);
  private final StatefulRedisConnection<String, String> connection;

  LocalRedis() {
    StatefulRedisConnection<String, String> c = null;
    try {
      c = client.connect();
      c.sync().ping();
    } catch (RuntimeException e) {
      client.shutdown();
      fail("Redis is not reachable at " + uri + " (" + e.getMessage() + "); set"
          + " RELAYKIT_REDIS_URI, or start it: redis-server --daemonize yes --port 6379", e);
    }
    this.connection = c;
  }

  /** Raw commands, to look at what Redis holds. */
  RedisCommands<String, String> raw() {
    return connection.sync();
  }

  /** Storage settings for this Redis and prefix, with timeouts generous for a busy machine. */
  RedisStorageConfig.Builder config() {
    return RedisStorageConfig.builder().uri(uri).keyPrefix(prefix)
        .connectTimeout(Duration.ofSeconds(20)).commandTimeout(Duration.ofSeconds(10));
  }

  /** Every key under this instance's prefix. */
  List<String> keys() {
    List<String> keys = new ArrayList<>();
    ScanCursor cursor = ScanCursor.INITIAL;
    do {
      KeyScanCursor<String> page = raw().scan(cursor,
          ScanArgs.Builder.matches(prefix + "*").limit(1000));
      keys.addAll(page.getKeys());
      cursor = page;
    } while (!cursor.isFinished());
    return keys;
  }

  @Override
  public void close() {
    try {
      List<String> keys = keys();
      if (!keys.isEmpty()) {
        raw().unlink(keys.toArray(String[]::new));
      }
    } finally {
      connection.close();
      client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }
  }
}
