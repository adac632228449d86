package io.relaykit.storage.redis;

import io.lettuce.core.RedisException;
import io.lettuce.core.ScriptOutputType;
import io.relaykit.ordering.VersionGuard;
import java.util.OptionalLong;

/**
 * Entity versions in Redis: one string key per entity holding the highest version accepted, moved
 * forward by one Lua compare-and-set (versions compare as unsigned decimal strings, so all 63 bits
 * are exact, unlike Lua numbers). One round trip per call; one key per script, so it works on Redis
 * Cluster, and the entity's hash tag puts it in the slot of the entity's other keys.
 *
 * <p>Version keys have no expiry on purpose: a forgotten version would let a stale update through.
 * Each costs one small string; delete an entity's key when the entity is gone. Unreachable Redis
 * raises {@link RedisStorageException}; a key holding something else raises {@link
 * IllegalStateException}. Thread-safe.
 */
public final class RedisVersionGuard implements VersionGuard {

  /** The longest entity id accepted, as for idempotency keys. */
  public static final int MAX_ENTITY_ID_LENGTH = 512;

  private static final Script ADVANCE = new Script("""
      local cur = redis.call('GET', KEYS[1])
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
      Long r = ADVANCE.run(redis.sync(), ScriptOutputType.INTEGER, new String[] {key},
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

  /** The Redis key that holds {@code entityId}'s version. */
  String redisKey(String entityId) {
    return Keys.tagged(prefix, "ver", entityId);
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
