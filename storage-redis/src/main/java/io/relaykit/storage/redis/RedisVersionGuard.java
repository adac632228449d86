package io.relaykit.storage.redis;

import io.lettuce.core.RedisException;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.cluster.SlotHash;
import io.relaykit.ordering.VersionGuard;
import java.util.OptionalLong;

/**
 * Entity versions in Redis: one string key per entity holding the highest version accepted, moved
 * forward by one Lua compare-and-set (versions compare as unsigned decimal strings, so all 63 bits
 * are exact, unlike Lua numbers). One round trip per call (a read of an entity absent in the new
 * format adds one GET); a script touches one slot, so it works on Redis Cluster, and the entity's
 * hash tag puts it in the slot of the entity's other keys.
 *
 * <p>Keys: {@code <prefix>ver.v2:{<slot tag>}:<entityId>}, the id kept whole, so {@code "a"} and
 * {@code "{a}"} never share a version. A version written by an earlier release under the old,
 * ambiguous {@code <prefix>ver:{<entityId>}} is read as the floor while the new key is absent (when
 * both share a slot), so an upgrade lets no stale update through.
 *
 * <p><b>The window between advance and the update.</b> {@link #advance} records the version in
 * Redis before the caller applies the update, and Redis cannot share the caller's transaction. If
 * the update then fails, the process dies, or the script ran but its reply was lost, the
 * redelivery is answered "stale" and the update is never applied. Where that matters use {@link
 * VersionGuard#applyIfNewer} (check, apply, then advance), whose race is stated there: two updates
 * of one entity at once may both apply, so run one entity's updates one at a time (key-ordered
 * consumers). Or keep the version in the database that holds the state (the JDBC guard's {@code
 * advance(Connection, ...)}).
 *
 * <p>Version keys have no expiry on purpose: a forgotten version would let a stale update through.
 * Each costs one small string; delete an entity's key when the entity is gone. Unreachable Redis
 * raises {@link RedisStorageException}; a key holding something else raises {@link
 * IllegalStateException}. Thread-safe.
 */
public final class RedisVersionGuard implements VersionGuard {

  /** The longest entity id accepted, as for idempotency keys. */
  public static final int MAX_ENTITY_ID_LENGTH = 512;

  /** KEYS: the version key, optionally its legacy key (read when the first is absent). */
  private static final Script ADVANCE = new Script("""
      local cur = redis.call('GET', KEYS[1])
      if not cur and KEYS[2] then
        cur = redis.call('GET', KEYS[2])
      end
      local v = ARGV[1]
      if cur then
        if not string.match(cur, '^%d+$') then
          return -1
        end
        if #cur > #v or (#cur == #v and cur >= v) then
          return 0
        end
      end
      redis.call('SET', KEYS[1], v)
      return 1
      """);

  private static final String EXPECTED = "a relaykit entity version (a decimal string)";

  private final RedisConnector redis;
  private final String prefix;

  RedisVersionGuard(RedisConnector redis) {
    this.redis = redis;
    this.prefix = redis.config().keyPrefix();
  }

  @Override
  public boolean advance(String entityId, long version) {
    Keys.requireKey("entityId", entityId, MAX_ENTITY_ID_LENGTH);
    if (version < 0) {
      throw new IllegalArgumentException("version must be >= 0, was " + version);
    }
    String key = redisKey(entityId);
    try {
      Long r = ADVANCE.run(redis.sync(), ScriptOutputType.INTEGER, keys(entityId, key),
          Long.toString(version));
      if (r == -1L) {
        throw notOurs(key, null);
      }
      return r == 1L;
    } catch (RedisException e) {
      throw failure("advance", key, e);
    }
  }

  @Override
  public OptionalLong current(String entityId) {
    Keys.requireKey("entityId", entityId, MAX_ENTITY_ID_LENGTH);
    String key = redisKey(entityId);
    String v;
    try {
      v = redis.sync().get(key);
      String[] keys = keys(entityId, key);
      if (v == null && keys.length == 2) {
        key = keys[1];
        v = redis.sync().get(key);
      }
    } catch (RedisException e) {
      throw failure("read", key, e);
    }
    if (v == null) {
      return OptionalLong.empty();
    }
    try {
      return OptionalLong.of(Long.parseLong(v));
    } catch (NumberFormatException e) {
      throw notOurs(key, e);
    }
  }

  /**
   * The Redis key that holds {@code entityId}'s version: {@code <prefix>ver.v2:{<slot tag>}:<id>}
   * (see {@link Keys#exact}), so distinct ids never share a version, while an id's slot is that
   * of its entity's idempotency keys.
   */
  String redisKey(String entityId) {
    return Keys.exact(prefix, "ver.v2", entityId);
  }

  /**
   * Where releases before the exact encoding kept the version: {@code <prefix>ver:{<id>}}, or
   * {@code <prefix>ver:<id>} for an id with a hash tag; ambiguous ({@code "a"} and {@code "{a}"}).
   */
  String legacyRedisKey(String entityId) {
    return Keys.tagged(prefix, "ver", entityId);
  }

  /**
   * The version key, plus the legacy key when both share a slot: a version written by an earlier
   * release stays the floor until the entity's next accepted update writes the new key, so an
   * upgrade lets no stale update through. (A legacy version shared by two colliding ids is the
   * floor for both: updates may be refused, never wrongly accepted.)
   */
  private String[] keys(String entityId, String key) {
    String legacy = legacyRedisKey(entityId);
    return SlotHash.getSlot(legacy) == SlotHash.getSlot(key) ? new String[] {key, legacy}
        : new String[] {key};
  }

  private IllegalStateException notOurs(String key, Throwable cause) {
    return new IllegalStateException("Redis key '" + key + "' at " + redis.where()
        + " holds a string that is not " + EXPECTED + ": another program wrote it. Delete the "
        + "key or choose another keyPrefix.", cause);
  }

  private RuntimeException failure(String op, String key, RedisException e) {
    if (RedisErrors.isWrongType(e)) {
      return RedisErrors.wrongType(redis, key, EXPECTED, e);
    }
    return new RedisStorageException("Redis at " + redis.where() + " failed to " + op
        + " version key '" + key + "': " + e.getMessage(), e);
  }
}
