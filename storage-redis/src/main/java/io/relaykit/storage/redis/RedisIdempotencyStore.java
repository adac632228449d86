package io.relaykit.storage.redis;

import io.lettuce.core.RedisException;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.sync.RedisCommands;
import io.relaykit.idempotency.Claim;
import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.idempotency.IdempotencyUnavailableException;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

/**
 * Idempotency leases in Redis: one string key per business key, holding the owner's random token
 * while CLAIMED (with the lease as its Redis expiry) and {@code DONE} for the retention period after. A
 * crashed owner's key expires on the server's clock, so it never blocks retries for longer than its
 * lease, and no key is written without an expiry.
 *
 * <p>Cost: a first claim is one {@code SET NX PX} round trip, like hand-written Lettuce code; a
 * claim of a taken key adds one script call; complete and release are one script call each
 * (compare-and-set, compare-and-delete). Each operation touches one key, so it works on Redis
 * Cluster. Redis replication is asynchronous: after a failover a claim or DONE may be lost, which is
 * why {@link io.relaykit.idempotency.TieredIdempotencyStore} keeps a database as the final guard.
 *
 * <p>Unreachable Redis and command timeouts raise {@link IdempotencyUnavailableException}; a key
 * that holds data relaykit did not write raises {@link IllegalStateException}. Thread-safe.
 */
public final class RedisIdempotencyStore implements IdempotencyStore {

  /**
   * The value of a completed key. A claim's value is its token: 32 hex digits, a dot and the
   * lease's expiry in epoch milliseconds, so it never equals this.
   */
  static final String DONE = "DONE";

  /** Claims a key that SET NX found taken, atomically: it may have expired meanwhile. */
  private static final Script CLAIM = new Script("""
      local v = redis.call('GET', KEYS[1])
      if not v then
        redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
        return {1, tonumber(ARGV[2])}
      end
      if v == 'DONE' then
        return {2, -1}
      end
      return {0, redis.call('PTTL', KEYS[1]), v}
      """);

  private static final Script COMPLETE = new Script("""
      if redis.call('GET', KEYS[1]) == ARGV[1] then
        redis.call('SET', KEYS[1], 'DONE', 'PX', ARGV[2])
        return 1
      end
      return 0
      """);

  private static final Script RELEASE = new Script("""
      if redis.call('GET', KEYS[1]) == ARGV[1] then
        redis.call('DEL', KEYS[1])
        return 1
      end
      return 0
      """);

  private static final String EXPECTED = "a relaykit idempotency record (a string)";

  private final RedisConnector redis;
  private final InstantSource clock;
  private final String prefix;
  private final String retentionMillis;

  RedisIdempotencyStore(RedisConnector redis, InstantSource clock) {
    this.redis = redis;
    this.clock = clock;
    this.prefix = redis.config().keyPrefix();
    this.retentionMillis = Long.toString(redis.config().retention().toMillis());
  }

  @Override
  public Claim claim(String key, Duration lease) {
    Keys.requireKey("key", key, MAX_KEY_LENGTH);
    if (lease == null || lease.isNegative() || lease.toMillis() < 1) {
      throw new IllegalArgumentException("lease must be at least 1 ms, was " + lease);
    }
    String redisKey = redisKey(key);
    long leaseMillis = lease.toMillis();
    Instant expiresAt = Instant.ofEpochMilli(clock.millis() + leaseMillis);
    // The token carries the holder's lease expiry, so IN_PROGRESS answers report exactly the
    // holder's instant; the whole token is compared on complete and release.
    String token = UUID.randomUUID().toString().replace("-", "") + "." + expiresAt.toEpochMilli();
    try {
      RedisCommands<String, String> sync = redis.sync();
      if ("OK".equals(sync.set(redisKey, token, SetArgs.Builder.nx().px(leaseMillis)))) {
        return Claim.claimed(key, token, expiresAt);
      }
      List<Object> r = CLAIM.run(sync, ScriptOutputType.MULTI, new String[] {redisKey}, token,
          Long.toString(leaseMillis));
      long outcome = (Long) r.get(0);
      if (outcome == 1) {
        return Claim.claimed(key, token, expiresAt);
      }
      if (outcome == 2) {
        return Claim.done(key);
      }
      long ttl = (Long) r.get(1);
      Instant holderExpiry = holderExpiry((String) r.get(2));
      if (ttl < 0 || holderExpiry == null) {
        // relaykit never writes a claim without an expiry or in another format: this value is
        // someone else's, and taking it for a live claim could block the key forever.
        throw new IllegalStateException("Redis key '" + redisKey + "' at " + redis.where()
            + " holds a string " + (ttl < 0 ? "without expiry" : "in another format") + ", not "
            + EXPECTED + ": another program wrote it. Delete the key or choose another "
            + "keyPrefix.");
      }
      return Claim.inProgress(key, holderExpiry);
    } catch (RedisException e) {
      throw failure("claim", redisKey, e);
    }
  }

  /** The lease expiry a holder's token carries, or null if the value is not a token. */
  private static Instant holderExpiry(String value) {
    int dot = value.indexOf('.');
    if (dot != 32) {
      return null;
    }
    try {
      return Instant.ofEpochMilli(Long.parseLong(value, dot + 1, value.length(), 10));
    } catch (NumberFormatException e) {
      return null;
    }
  }

  @Override
  public boolean complete(Claim claim) {
    requireClaimed(claim);
    String redisKey = redisKey(claim.key());
    try {
      Long r = COMPLETE.run(redis.sync(), ScriptOutputType.INTEGER, new String[] {redisKey},
          claim.token(), retentionMillis);
      return r == 1L;
    } catch (RedisException e) {
      throw failure("complete", redisKey, e);
    }
  }

  @Override
  public boolean release(Claim claim) {
    requireClaimed(claim);
    String redisKey = redisKey(claim.key());
    try {
      Long r = RELEASE.run(redis.sync(), ScriptOutputType.INTEGER, new String[] {redisKey},
          claim.token());
      return r == 1L;
    } catch (RedisException e) {
      throw failure("release", redisKey, e);
    }
  }

  @Override
  public Optional<Claim.Status> status(String key) {
    Keys.requireKey("key", key, MAX_KEY_LENGTH);
    String redisKey = redisKey(key);
    try {
      String v = redis.sync().get(redisKey);
      if (v == null) {
        return Optional.empty();
      }
      return Optional.of(DONE.equals(v) ? Claim.Status.DONE : Claim.Status.CLAIMED);
    } catch (RedisException e) {
      throw failure("status", redisKey, e);
    }
  }

  /** The Redis key that holds {@code key}'s record. */
  String redisKey(String key) {
    return Keys.tagged(prefix, "idem", key);
  }

  private static void requireClaimed(Claim claim) {
    if (claim == null) {
      throw new IllegalArgumentException("claim must not be null");
    }
    if (!claim.isClaimed()) {
      throw new IllegalArgumentException(
          "claim must be CLAIMED to complete or release it, was " + claim.status());
    }
  }

  private RuntimeException failure(String op, String redisKey, RedisException e) {
    if (RedisErrors.isWrongType(e)) {
      return RedisErrors.wrongType(redis, redisKey, EXPECTED, e);
    }
    return new IdempotencyUnavailableException("Redis at " + redis.where() + " failed to " + op
        + " idempotency key '" + redisKey + "': " + e.getMessage(), e);
  }
}
