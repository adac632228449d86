package io.relaykit.storage.redis;

import io.relaykit.internal.Texts;

/**
 * How relaykit names its Redis keys: {@code <prefix><space>:{<id>}}. The braces make {@code <id>}
 * the Redis Cluster hash tag, so every key of one entity lands in one slot and a Lua script that
 * touches several of them stays valid on a cluster. An id that already holds a non-empty hash tag
 * ({@code "{order-42}:sms"}) is kept as it is, so callers can put related keys in one slot.
 */
final class Keys {
  private Keys() {}

  /**
   * The exact, collision-free form {@code <prefix><space>:{<slot tag>}:<id>}: {@code <id>} is kept
   * whole after the tag, so distinct ids always give distinct keys, whatever characters they hold
   * ({@code "a"} and {@code "{a}"} included). The slot tag is the id's own hash tag if it has one
   * ({@code "{order-42}:sms"} gives {@code order-42}, so related ids share a slot), else the id
   * itself with any {@code '}'} left out. The tag never holds a {@code '}'}, so the first {@code
   * '}'} after {@code '{'} ends it: the key parses back to exactly one id, and Redis Cluster hashes
   * exactly the tag. An id made only of {@code '}'} characters gets the empty tag {@code {}},
   * which Redis Cluster ignores: its key is hashed whole (still a key of its own). {@code space}
   * must hold no braces.
   */
  static String exact(String prefix, String space, String id) {
    String tag = hashTag(id);
    if (tag == null) {
      tag = id.indexOf('}') < 0 ? id : id.replace("}", "");
    }
    return prefix + space + ":{" + tag + "}:" + id;
  }

  /** What Redis Cluster hashes of {@code s}: its hash tag, or null if it has none. */
  static String hashTag(String s) {
    int open = s.indexOf('{');
    if (open >= 0) {
      int close = s.indexOf('}', open + 1);
      if (close > open + 1) {
        return s.substring(open + 1, close);
      }
    }
    return null;
  }

  /**
   * The older form {@code <prefix><space>:{<id>}}, or the id as it is when it holds a hash tag.
   * Not injective: {@code "a"} and {@code "{a}"} both give {@code <space>:{a}}. Kept for stores
   * whose keys were written in it, and for reading idempotency keys of earlier releases.
   */
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
          + " characters, was " + value.length() + " ('"
          + Texts.truncateChars(value, Math.min(32, max)) + "')");
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
