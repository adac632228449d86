package io.relaykit.bench;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisException;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.relaykit.idempotency.Claim;
import io.relaykit.storage.redis.RedisIdempotencyStore;
import io.relaykit.storage.redis.RedisStorage;
import io.relaykit.storage.redis.RedisStorageConfig;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;

/**
 * {@link RedisIdempotencyStore} beside hand-written Lettuce doing the same work, in the same run,
 * against the Redis at {@code RELAYKIT_REDIS_URI} (default {@code redis://127.0.0.1:6379}).
 * Both sides use one shared connection and four caller threads, so Lettuce pipelines their
 * commands alike.
 *
 * <ul>
 *   <li>{@code claim}: a fresh key's claim, against raw {@code SET key token NX PX 30000}: one
 *       round trip each.
 *   <li>{@code claimComplete}: claim, then complete (a compare-and-set script to DONE), against
 *       raw {@code SET NX PX} followed by {@code EVALSHA} of the same compare-and-set.
 * </ul>
 * Keys live under a random run prefix and expire within a minute (lease 30 s, retention 60 s).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Threads(4)
public class RedisIdempotencyBenchmark {

  /** Who talks to Redis. */
  public enum Impl { RELAYKIT, RAW_LETTUCE }

  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final long RETENTION_MILLIS = 60_000;
  private static final String COMPLETE = """
      if redis.call('GET', KEYS[1]) == ARGV[1] then
        redis.call('SET', KEYS[1], 'DONE', 'PX', ARGV[2])
        return 1
      end
      return 0
      """;

  @Param
  Impl impl;

  private final AtomicLong sequence = new AtomicLong();
  private String prefix;
  private RedisStorage storage;
  private RedisIdempotencyStore store;
  private RedisClient client;
  private StatefulRedisConnection<String, String> connection;
  private RedisCommands<String, String> raw;
  private String completeSha;

  @Setup(Level.Trial)
  public void open() {
    String uri = System.getenv().getOrDefault("RELAYKIT_REDIS_URI", "redis://127.0.0.1:6379");
    prefix = "bench:" + UUID.randomUUID().toString().substring(0, 8) + ":";
    client = RedisClient.create(uri);
    try {
      connection = client.connect();
      raw = connection.sync();
      raw.ping();
    } catch (RedisException e) {
      client.shutdown();
      throw new IllegalStateException("Redis is not reachable at " + uri + " (RELAYKIT_REDIS_URI):"
          + " start it with `redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379"
          + " --save \"\" --appendonly no`", e);
    }
    completeSha = raw.scriptLoad(COMPLETE);
    storage = RedisStorage.open(RedisStorageConfig.builder()
        .uri(uri)
        .keyPrefix(prefix)
        .retention(Duration.ofMillis(RETENTION_MILLIS))
        .build());
    store = storage.idempotencyStore();
    // The store connects on first use and fails callers that arrive while it connects; connect
    // here, before four threads start at once.
    store.status("connect");
  }

  @TearDown(Level.Trial)
  public void close() {
    storage.close();
    connection.close();
    client.shutdown();
  }

  @Benchmark
  public Object claim() {
    String key = "order-" + sequence.getAndIncrement() + ":sms";
    if (impl == Impl.RELAYKIT) {
      return store.claim(key, LEASE);
    }
    return raw.set(rawKey(key), token(), SetArgs.Builder.nx().px(LEASE.toMillis()));
  }

  @Benchmark
  public Object claimComplete() {
    String key = "order-" + sequence.getAndIncrement() + ":sms";
    if (impl == Impl.RELAYKIT) {
      Claim claim = store.claim(key, LEASE);
      return store.complete(claim);
    }
    String redisKey = rawKey(key);
    String token = token();
    if (!"OK".equals(raw.set(redisKey, token, SetArgs.Builder.nx().px(LEASE.toMillis())))) {
      throw new IllegalStateException("fresh key " + redisKey + " was taken");
    }
    Long done = raw.evalsha(completeSha, ScriptOutputType.INTEGER, new String[] {redisKey},
        token, Long.toString(RETENTION_MILLIS));
    return done;
  }

  /** The same key shape as the store's: prefix, space, hash-tagged business key. */
  private String rawKey(String key) {
    return prefix + "raw:{" + key + "}";
  }

  /** The same token shape as the store's: 32 hex digits, a dot, the lease expiry. */
  private static String token() {
    return UUID.randomUUID().toString().replace("-", "") + "."
        + (System.currentTimeMillis() + LEASE.toMillis());
  }
}
