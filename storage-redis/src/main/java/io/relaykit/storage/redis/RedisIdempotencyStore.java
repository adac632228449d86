package io.relaykit.storage.redis;

import io.lettuce.core.RedisException;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.cluster.SlotHash;
import io.relaykit.idempotency.Claim;
import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.idempotency.IdempotencyUnavailableException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

/**
 * Idempotency leases in Redis: one string key per business key, holding the owner's claim while
 * CLAIMED and {@code DONE} for the retention period after. A claim's value is its token (32 hex
 * digits), a dot and the lease's end in epoch milliseconds on the Redis server's clock.
 *
 * <p>One clock: every decision is made in a Lua script on the Redis server's own clock ({@code
 * TIME}, and {@code PX} expiries), never on this host's, so a host whose clock is 31 s fast cannot
 * take a fresh claim, nor one 8 days fast forget a DONE key. The host clock is not used at all.
 * Fenced by the token: a claim key lives for its lease plus the retention ({@code PX}), so a holder
 * that outlasts its lease can still complete, release or renew it as long as nobody took it over;
 * a takeover writes a new token, which the old holder's scripts then do not match. No key is
 * written without an expiry.
 *
 * <h2>Keys</h2>
 * A business key {@code k} lives at {@code <prefix>idem.v2:{<slot tag>}:k}, {@code k} kept whole,
 * so distinct business keys never share a record, whatever characters they hold (braces too); the
 * slot tag is {@code k}'s own hash tag if it has one ({@code "{order-42}:sms"}: all keys of order
 * 42 in one cluster slot), else {@code k}. Releases before this one used {@code
 * <prefix>idem:{k}} (or {@code <prefix>idem:k} for a tagged key), where {@code "a"} and {@code
 * "{a}"} collided. Those records are not read unless {@link
 * RedisStorageConfig#readLegacyIdempotencyKeys()} is set: then a claim or status of a key whose
 * new record is absent also honours a DONE or live claim at its legacy key (read only, when both
 * share a slot), for as long as legacy records live (one retention); the legacy collision applies
 * to those reads. Without it, work completed just before an upgrade may run once more if
 * redelivered; with a {@link io.relaykit.idempotency.TieredIdempotencyStore} the database tier
 * still answers DONE.
 *
 * <p>Cost: claim, complete, release, renew and status are one script call ({@code EVALSHA}) each,
 * on one key, so they work on Redis Cluster. Redis replication is asynchronous: after a failover a
 * claim or DONE may be lost, which is why {@link io.relaykit.idempotency.TieredIdempotencyStore}
 * keeps a database as the final guard.
 *
 * <p>Unreachable Redis and command timeouts raise {@link IdempotencyUnavailableException}; a key
 * that holds data relaykit did not write raises {@link IllegalStateException}. Thread-safe.
 */
public final class RedisIdempotencyStore implements IdempotencyStore {

  /** The value of a completed key; a claim's value (32 hex digits, a dot, digits) never equals it. */
  static final String DONE = "DONE";

  /** Length of a claim token: 32 hex digits. */
  private static final int TOKEN_LENGTH = 32;

  /**
   * Server "now" in epoch ms, and the lease end a claim value carries (nil if the value is not a
   * claim). Shared by the scripts below.
   */
  private static final String PRELUDE = """
      local function now_ms()
        local t = redis.call('TIME')
        return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
      end
      local function lease_end(v)
        if string.len(v) > 33 and string.sub(v, 33, 33) == '.' then
          return tonumber(string.sub(v, 34))
        end
        return nil
      end
      """;

  /**
   * KEYS: the key, and optionally its legacy key (read only: a DONE or live claim there counts).
   * ARGV: token, lease ms, retention ms. Returns {1, lease end} when claimed, {2, 0}
   * when DONE, {0, holder's lease end} when a live claim holds it, {3, PTTL} for a foreign value.
   */
  private static final Script CLAIM = new Script(PRELUDE + """
      local now = now_ms()
      local v = redis.call('GET', KEYS[1])
      if not v and KEYS[2] then
        local l = redis.call('GET', KEYS[2])
        if l == 'DONE' then
          return {2, 0}
        end
        if l then
          local pt = redis.call('PTTL', KEYS[2])
          if pt > 0 then
            return {0, now + pt}
          end
        end
      end
      if v == 'DONE' then
        return {2, 0}
      end
      if v then
        local e = lease_end(v)
        if not e then
          return {3, redis.call('PTTL', KEYS[1])}
        end
        if e > now then
          return {0, e}
        end
      end
      local e = now + tonumber(ARGV[2])
      redis.call('SET', KEYS[1], ARGV[1] .. '.' .. string.format('%.0f', e), 'PX',
        tonumber(ARGV[2]) + tonumber(ARGV[3]))
      return {1, e}
      """);

  /** KEYS: the key. ARGV: token, retention ms. 1 if the token's claim became DONE. */
  private static final Script COMPLETE = new Script("""
      local v = redis.call('GET', KEYS[1])
      if v and string.sub(v, 1, 33) == ARGV[1] .. '.' then
        redis.call('SET', KEYS[1], 'DONE', 'PX', ARGV[2])
        return 1
      end
      return 0
      """);

  /**
   * KEYS: the key. ARGV: retention ms. Sets DONE over an absent key, any claim or DONE: 1; leaves
   * a foreign value alone: 0.
   */
  private static final Script MARK_DONE = new Script(PRELUDE + """
      local v = redis.call('GET', KEYS[1])
      if v and v ~= 'DONE' and lease_end(v) == nil then
        return 0
      end
      redis.call('SET', KEYS[1], 'DONE', 'PX', ARGV[1])
      return 1
      """);

  /** KEYS: the key. ARGV: token. 1 if the token's claim was deleted. */
  private static final Script RELEASE = new Script("""
      local v = redis.call('GET', KEYS[1])
      if v and string.sub(v, 1, 33) == ARGV[1] .. '.' then
        redis.call('DEL', KEYS[1])
        return 1
      end
      return 0
      """);

  /** KEYS: the key. ARGV: token, lease ms, retention ms. The new lease end, or 0 if not owned. */
  private static final Script RENEW = new Script(PRELUDE + """
      local v = redis.call('GET', KEYS[1])
      if v and string.sub(v, 1, 33) == ARGV[1] .. '.' then
        local e = now_ms() + tonumber(ARGV[2])
        redis.call('SET', KEYS[1], ARGV[1] .. '.' .. string.format('%.0f', e), 'PX',
          tonumber(ARGV[2]) + tonumber(ARGV[3]))
        return e
      end
      return 0
      """);

  /**
   * KEYS: the key, optionally its legacy key. 0 absent or lapsed, 1 live claim (or a foreign
   * value), 2 DONE.
   */
  private static final Script STATUS = new Script(PRELUDE + """
      local v = redis.call('GET', KEYS[1])
      if not v and KEYS[2] then
        local l = redis.call('GET', KEYS[2])
        if l == 'DONE' then
          return 2
        end
        if l and redis.call('PTTL', KEYS[2]) > 0 then
          return 1
        end
        return 0
      end
      if not v then
        return 0
      end
      if v == 'DONE' then
        return 2
      end
      local e = lease_end(v)
      if e and e <= now_ms() then
        return 0
      end
      return 1
      """);

  /** The key space of idempotency records; "idem:" held the older, ambiguous encoding. */
  static final String SPACE = "idem.v2";

  private static final String EXPECTED = "a relaykit idempotency record (a string)";

  private final RedisConnector redis;
  private final String prefix;
  private final String retentionMillis;
  private final boolean readLegacyKeys;

  RedisIdempotencyStore(RedisConnector redis) {
    this.redis = redis;
    this.prefix = redis.config().keyPrefix();
    this.readLegacyKeys = redis.config().readLegacyIdempotencyKeys();
    this.retentionMillis = Long.toString(redis.config().retention().toMillis());
  }

  @Override
  public Claim claim(String key, Duration lease) {
    Keys.requireKey("key", key, MAX_KEY_LENGTH);
    String leaseMillis = leaseMillis(lease);
    String redisKey = redisKey(key);
    String token = UUID.randomUUID().toString().replace("-", "");
    try {
      List<Object> r = CLAIM.run(redis.sync(), ScriptOutputType.MULTI, keys(key, redisKey),
          token, leaseMillis, retentionMillis);
      long outcome = (Long) r.get(0);
      long at = (Long) r.get(1);
      if (outcome == 1) {
        return Claim.claimed(key, token, Instant.ofEpochMilli(at));
      }
      if (outcome == 2) {
        return Claim.done(key);
      }
      if (outcome == 0) {
        return Claim.inProgress(key, Instant.ofEpochMilli(at));
      }
      // relaykit never writes a value in another format: this one is someone else's, and taking
      // it for a live claim could block the key forever.
      throw new IllegalStateException("Redis key '" + redisKey + "' at " + redis.where()
          + " holds a string in another format" + (at < 0 ? ", without expiry," : "") + " not "
          + EXPECTED + ": another program wrote it. Delete the key or choose another keyPrefix.");
    } catch (RedisException e) {
      throw failure("claim", redisKey, e);
    }
  }

  @Override
  public boolean complete(Claim claim) {
    requireClaimed(claim);
    String token = ownToken(claim);
    if (token == null) {
      return false;
    }
    String redisKey = redisKey(claim.key());
    try {
      Long r = COMPLETE.run(redis.sync(), ScriptOutputType.INTEGER, new String[] {redisKey},
          token, retentionMillis);
      return r == 1L;
    } catch (RedisException e) {
      throw failure("complete", redisKey, e);
    }
  }

  /**
   * Writes DONE whoever holds the key, one script call (see {@link IdempotencyStore#markDone});
   * a value another program wrote is left alone and fails like {@link #claim}.
   */
  @Override
  public boolean markDone(String key) {
    Keys.requireKey("key", key, MAX_KEY_LENGTH);
    String redisKey = redisKey(key);
    Long r;
    try {
      r = MARK_DONE.run(redis.sync(), ScriptOutputType.INTEGER, new String[] {redisKey},
          retentionMillis);
    } catch (RedisException e) {
      throw failure("mark done", redisKey, e);
    }
    if (r != 1L) {
      throw new IllegalStateException("Redis key '" + redisKey + "' does not hold "
          + EXPECTED + ": another program wrote it. Delete the key or choose another keyPrefix.");
    }
    return true;
  }

  @Override
  public boolean release(Claim claim) {
    requireClaimed(claim);
    String token = ownToken(claim);
    if (token == null) {
      return false;
    }
    String redisKey = redisKey(claim.key());
    try {
      Long r = RELEASE.run(redis.sync(), ScriptOutputType.INTEGER, new String[] {redisKey},
          token);
      return r == 1L;
    } catch (RedisException e) {
      throw failure("release", redisKey, e);
    }
  }

  @Override
  public boolean renew(Claim claim, Duration lease) {
    requireClaimed(claim);
    String leaseMillis = leaseMillis(lease);
    String token = ownToken(claim);
    if (token == null) {
      return false;
    }
    String redisKey = redisKey(claim.key());
    try {
      Long r = RENEW.run(redis.sync(), ScriptOutputType.INTEGER, new String[] {redisKey},
          token, leaseMillis, retentionMillis);
      return r != 0L;
    } catch (RedisException e) {
      throw failure("renew", redisKey, e);
    }
  }

  /** The 32-hex token of a claim this store issued, or null (a token it never issued owns nothing). */
  private static String ownToken(Claim claim) {
    String t = claim.token();
    if (t.length() != TOKEN_LENGTH) {
      return null;
    }
    for (int i = 0; i < TOKEN_LENGTH; i++) {
      if (Character.digit(t.charAt(i), 16) < 0) {
        return null;
      }
    }
    return t;
  }

  private static String leaseMillis(Duration lease) {
    if (lease == null || lease.isNegative() || lease.toMillis() < 1) {
      throw new IllegalArgumentException("lease must be at least 1 ms, was " + lease);
    }
    return Long.toString(lease.toMillis());
  }

  @Override
  public Optional<Claim.Status> status(String key) {
    Keys.requireKey("key", key, MAX_KEY_LENGTH);
    String redisKey = redisKey(key);
    try {
      Long v = STATUS.run(redis.sync(), ScriptOutputType.INTEGER, keys(key, redisKey));
      if (v == 0L) {
        return Optional.empty();
      }
      return Optional.of(v == 2L ? Claim.Status.DONE : Claim.Status.CLAIMED);
    } catch (RedisException e) {
      throw failure("status", redisKey, e);
    }
  }

  /**
   * The Redis key that holds {@code key}'s record: {@code <prefix>idem.v2:{<slot tag>}:<key>} (see
   * {@link Keys#exact}), so distinct keys never share a record and the keys of one entity ({@code
   * "{order-42}:sms"}, {@code "{order-42}:email"}) share a cluster slot.
   */
  String redisKey(String key) {
    return Keys.exact(prefix, SPACE, key);
  }

  /**
   * Where releases before the exact encoding kept {@code key}: {@code <prefix>idem:{<key>}}, or
   * {@code <prefix>idem:<key>} for a key with a hash tag. Ambiguous ({@code "a"} and {@code "{a}"}
   * share one), so read only when configured, for one retention period after an upgrade.
   */
  String legacyRedisKey(String key) {
    return Keys.tagged(prefix, "idem", key);
  }

  /** The script keys: the record, plus its legacy key when configured and in the same slot. */
  private String[] keys(String key, String redisKey) {
    if (readLegacyKeys) {
      String legacy = legacyRedisKey(key);
      if (SlotHash.getSlot(legacy) == SlotHash.getSlot(redisKey)) {
        return new String[] {redisKey, legacy};
      }
    }
    return new String[] {redisKey};
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
