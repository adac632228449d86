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
import java.util.List;
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
 *   <li>{@code claim}: a fresh key's claim (one {@code EVALSHA} of a script that reads the
 *       server's {@code TIME}, {@code GET}s the key and {@code SET}s it {@code PX}), against
 *       {@code RAW_EVALSHA}: Lettuce running the same compare-and-set script by {@code EVALSHA}
 *       (the baseline of the ratio); and {@code RAW_LETTUCE}: {@code SET key token NX PX 30000},
 *       which decides nothing on the server's clock (informational). One round trip each.
 *   <li>{@code claimComplete}: claim, then complete (a compare-and-set script to DONE), against
 *       {@code RAW_EVALSHA}: {@code EVALSHA} of the same claim script, then of the same
 *       compare-and-set; and {@code RAW_LETTUCE}: {@code SET NX PX} followed by {@code EVALSHA} of
 *       the compare-and-set (informational).
 * </ul>
 * Keys live under a random run prefix and expire within a minute (lease 30 s, retention 60 s).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Threads(4)
public class RedisIdempotencyBenchmark {

  /** Who talks to Redis. */
  public enum Impl { RELAYKIT, RAW_EVALSHA, RAW_LETTUCE }

  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final long RETENTION_MILLIS = 60_000;
  private static final String LEASE_MILLIS = Long.toString(LEASE.toMillis());
  private static final String RETENTION = Long.toString(RETENTION_MILLIS);
  /**
   * The store's claim as a plain script: server clock, compare, set with the lease end in the
   * value. KEYS: the key. ARGV: token, lease ms, retention ms. {1, lease end} when claimed.
   */
  private static final String CLAIM = """
      local t = redis.call('TIME')
      local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
      local v = redis.call('GET', KEYS[1])
      if v == 'DONE' then
        return {2, 0}
      end
      if v and string.len(v) > 33 and string.sub(v, 33, 33) == '.' then
        local e = tonumber(string.sub(v, 34))
        if e > now then
          return {0, e}
        end
      end
      local e = now + tonumber(ARGV[2])
      redis.call('SET', KEYS[1], ARGV[1] .. '.' .. string.format('%.0f', e), 'PX',
        tonumber(ARGV[2]) + tonumber(ARGV[3]))
      return {1, e}
      """;
  private static final String COMPLETE = """
      local v = redis.call('GET', KEYS[1])
      if v and string.sub(v, 1, 33) == ARGV[1] .. '.' then
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
  private String claimSha;
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
    claimSha = raw.scriptLoad(CLAIM);
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
    return switch (impl) {
      case RELAYKIT -> store.claim(key, LEASE);
      case RAW_EVALSHA -> rawClaim(rawKey(key), rawToken());
      case RAW_LETTUCE -> raw.set(rawKey(key), token(), SetArgs.Builder.nx().px(LEASE.toMillis()));
    };
  }

  @Benchmark
  public Object claimComplete() {
    String key = "order-" + sequence.getAndIncrement() + ":sms";
    if (impl == Impl.RELAYKIT) {
      Claim claim = store.claim(key, LEASE);
      return store.complete(claim);
    }
    String redisKey = rawKey(key);
    String token = rawToken();
    if (impl == Impl.RAW_EVALSHA) {
      rawClaim(redisKey, token);
    } else if (!"OK".equals(raw.set(redisKey, token + "." + (System.currentTimeMillis()
        + LEASE.toMillis()), SetArgs.Builder.nx().px(LEASE.toMillis())))) {
      throw new IllegalStateException("fresh key " + redisKey + " was taken");
    }
    Long done = raw.evalsha(completeSha, ScriptOutputType.INTEGER, new String[] {redisKey},
        token, Long.toString(RETENTION_MILLIS));
    if (done != 1L) {
      throw new IllegalStateException("claim of fresh key " + redisKey + " did not complete");
    }
    return done;
  }

  /** The claim script by EVALSHA, as the store runs it; fails if the fresh key was not claimed. */
  private Object rawClaim(String redisKey, String token) {
    List<Object> r = raw.evalsha(claimSha, ScriptOutputType.MULTI, new String[] {redisKey},
        token, LEASE_MILLIS, RETENTION);
    if ((Long) r.get(0) != 1L) {
      throw new IllegalStateException("fresh key " + redisKey + " was taken: " + r);
    }
    return r;
  }

  /** The same key shape as the store's: prefix, space, hash-tagged business key. */
  private String rawKey(String key) {
    return prefix + "raw:{" + key + "}";
  }

  /** The same token shape as the store's: 32 hex digits, a dot, the lease expiry. */
  private static String token() {
    return rawToken() + "." + (System.currentTimeMillis() + LEASE.toMillis());
  }

  /** A claim token as the store makes it: 32 hex digits (the scripts append the lease end). */
  private static String rawToken() {
    return UUID.randomUUID().toString().replace("-", "");
  }
}
