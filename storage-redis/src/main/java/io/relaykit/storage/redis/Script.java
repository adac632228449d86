package io.relaykit.storage.redis;

import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.cluster.api.sync.RedisClusterCommands;
import io.relaykit.internal.Digests;

/**
 * A Lua script run by its SHA-1 ({@code EVALSHA}); when the server does not know it (after a
 * restart, a failover or {@code SCRIPT FLUSH}) it is sent in full once with {@code EVAL}, which also
 * caches it again. Every script touches only the keys it is given, all in one hash slot.
 */
final class Script {
  private final String text;
  private final String sha;

  Script(String text) {
    this.text = text;
    this.sha = sha1(text);
  }

  <T> T run(RedisClusterCommands<String, String> redis, ScriptOutputType type, String[] keys,
      String... args) {
    try {
      return redis.evalsha(sha, type, keys, args);
    } catch (RedisNoScriptException e) {
      return redis.eval(text, type, keys, args);
    } catch (RedisCommandExecutionException e) {
      if (e.getMessage() != null && e.getMessage().startsWith("NOSCRIPT")) {
        return redis.eval(text, type, keys, args);
      }
      throw e;
    }
  }

  String sha() {
    return sha;
  }

  private static String sha1(String text) {
    return Digests.sha1Hex(text);
  }

}
