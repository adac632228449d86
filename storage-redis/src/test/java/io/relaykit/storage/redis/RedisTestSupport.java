package io.relaykit.storage.redis;

import static org.junit.jupiter.api.Assertions.fail;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The shared Redis at 127.0.0.1:6379 (or {@code RELAYKIT_REDIS_URI}) for tests: a random key prefix
 * per test class, a raw Lettuce connection to check what Redis really holds, and cleanup of every
 * key under the prefix. Fails, naming Redis and how to start it, when Redis is not reachable.
 */
final class RedisTestSupport implements AutoCloseable {

  static final String START_COMMAND = "redis-server --daemonize yes --bind 127.0.0.1 -::1 "
      + "--port 6379 --save \"\" --appendonly no --dir /var/lib/redis "
      + "--logfile /var/log/redis/ci.log";

  final String uri;
  final String prefix;
  private final RedisClient client;
  private final StatefulRedisConnection<String, String> connection;

  RedisTestSupport() {
    this(System.getenv("RELAYKIT_REDIS_URI"));
  }

  RedisTestSupport(String uriOrNull) {
    this.uri = uriOrNull == null || uriOrNull.isBlank() ? "redis://127.0.0.1:6379" : uriOrNull;
    this.prefix = "rktest:" + Long.toHexString(ThreadLocalRandom.current().nextLong()) + ":";
    RedisURI redisUri = RedisURI.create(uri);
    redisUri.setTimeout(Duration.ofSeconds(20));
    this.client = RedisClient.create(redisUri);
    client.setOptions(ClientOptions.builder().socketOptions(
        SocketOptions.builder().connectTimeout(Duration.ofSeconds(20)).build()).build());
    StatefulRedisConnection<String, String> c = null;
    try {
      c = client.connect();
      c.sync().ping();
    } catch (RuntimeException e) {
      client.shutdown();
      fail("Redis is not reachable at " + uri + " (" + e.getMessage() + "). Start it with: "
          + START_COMMAND + "  (or point RELAYKIT_REDIS_URI at a running Redis)", e);
    }
    this.connection = c;
  }

  /** Raw commands, to look at what Redis holds. */
  RedisCommands<String, String> raw() {
    return connection.sync();
  }

  RedisStorageConfig.Builder config() {
    // Generous timeouts: the shared machine can be very busy, and the first connect loads
    // Lettuce's classes inside the connect timeout.
    return RedisStorageConfig.builder().uri(uri).keyPrefix(prefix)
        .connectTimeout(Duration.ofSeconds(20)).commandTimeout(Duration.ofSeconds(10));
  }

  RedisStorage open() {
    return RedisStorage.open(config().build());
  }

  RedisStorage open(InstantSource clock) {
    return RedisStorage.open(config().build(), clock);
  }

  /** Every key under this support's prefix. */
  List<String> keys() {
    List<String> keys = new ArrayList<>();
    ScanCursor cursor = ScanCursor.INITIAL;
    do {
      KeyScanCursor<String> page = raw().scan(cursor, ScanArgs.Builder.matches(prefix + "*")
          .limit(1000));
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
