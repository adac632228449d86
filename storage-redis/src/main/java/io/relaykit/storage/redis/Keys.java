package io.relaykit.storage.redis;

/**
 * How relaykit names its Redis keys: {@code <prefix><space>:{<id>}}. The braces make {@code <id>}
 * the Redis Cluster hash tag, so every key of one entity lands in one slot and a Lua script that
 * touches several of them stays valid on a cluster. An id that already holds a non-empty hash tag
 * ({@code "{order-42}:sms"}) is kept as it is, so callers can put related keys in one slot.
 */
final class Keys {
  private Keys() {}

  static String tagged(String prefix, String space, String id) {
    int open = id.indexOf('{');
    if (open >= 0) {
      int close = id.indexOf('}', open + 1);
      if (close > open + 1) {
        return prefix + space + ":" + id;
      }
    }
    return prefix + space + ":{" + id + "}";
  }

  /** Validates a caller's key or id: not null, not blank, at most {@code max} characters. */
  static String requireKey(String field, String value, int max) {
    if (value == null) {
      throw new IllegalArgumentException(field + " must not be null");
    }
    if (value.isBlank()) {
      throw new IllegalArgumentException(field + " must not be blank, was '" + value + "'");
    }
    if (value.length() > max) {
      throw new IllegalArgumentException(field + " must be at most " + max
          + " characters, was " + value.length() + " ('" + value.substring(0, Math.min(32, max)) + "...')");
    }
    return value;
  }

  /** Validates a store or journal name: a key, and no braces (it goes inside a hash tag). */
  static String requireName(String field, String value, int max) {
    requireKey(field, value, max);
    if (value.indexOf('{') >= 0 || value.indexOf('}') >= 0) {
      throw new IllegalArgumentException(field + " must not contain braces, was '" + value + "'");
    }
    return value;
  }
}
