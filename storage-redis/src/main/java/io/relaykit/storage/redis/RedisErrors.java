package io.relaykit.storage.redis;

import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.cluster.api.sync.RedisClusterCommands;

/** Sorting Redis failures into "not there" (retryable) and "the data is not ours" (not). */
final class RedisErrors {
  private RedisErrors() {}

  /** Whether Redis refused the command because a key holds another type of value. */
  static boolean isWrongType(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof RedisCommandExecutionException && t.getMessage() != null
          && t.getMessage().contains("WRONGTYPE")) {
        return true;
      }
    }
    return false;
  }

  /**
   * The error for a key that holds something relaykit did not write: names the key, its type, and
   * what to do.
   */
  static IllegalStateException wrongType(RedisConnector redis, String key, String expected,
      Throwable cause) {
    String type;
    try {
      RedisClusterCommands<String, String> sync = redis.sync();
      type = sync.type(key);
    } catch (RuntimeException e) {
      type = "another type";
    }
    return new IllegalStateException("Redis key '" + key + "' at " + redis.where() + " holds a "
        + type + ", not " + expected + ": another program wrote it. Delete the key or choose "
        + "another keyPrefix.", cause);
  }
}
