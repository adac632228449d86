package io.relaykit.storage.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.cluster.SlotHash;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Entity ids built to forge one another's version key: every id over the characters that take
 * part in the key's syntax ({@code a { } :}) up to five long must get a key of its own, whose
 * slot is that of its tag, and real advances on ids that shared a key in the old form stay apart.
 */
@DisplayName("RedisVersionGuard keys under ids built from the key's own syntax")
class RedisVersionGuardKeyAttackTest {
  private static RedisTestSupport support;
  private static RedisStorage storage;

  @BeforeAll
  static void connect() {
    support = new RedisTestSupport();
    storage = support.open();
  }

  @AfterAll
  static void cleanUp() {
    if (storage != null) {
      storage.close();
    }
    if (support != null) {
      support.close();
    }
  }

  private static List<String> ids(int maxLength) {
    char[] alphabet = {'a', '{', '}', ':'};
    List<String> out = new ArrayList<>();
    List<String> level = List.of("");
    for (int n = 1; n <= maxLength; n++) {
      List<String> next = new ArrayList<>();
      for (String prefix : level) {
        for (char c : alphabet) {
          next.add(prefix + c);
        }
      }
      out.addAll(next);
      level = next;
    }
    return out;
  }

  @Test
  @DisplayName("1 364 ids over a { } : give 1 364 keys; each key's cluster slot is its tag's (ids of only '}' get the empty tag: hashed whole)")
  void injective() {
    RedisVersionGuard guard = storage.versionGuard();
    Map<String, String> byKey = new HashMap<>();
    int emptyTags = 0;
    for (String id : ids(5)) {
      if (id.isBlank()) {
        continue;
      }
      String key = guard.redisKey(id);
      String other = byKey.put(key, id);
      assertThat(other).as("ids '%s' and '%s' share key %s", other, id, key).isNull();
      assertThat(key).endsWith("}:" + id);
      String tag = Keys.hashTag(key.substring(support.prefix.length()));
      if (id.replace("}", "").isEmpty()) {
        // Only '}': the tag is empty ("{}"), which Redis Cluster ignores, so the key is hashed
        // whole. Still a key of its own; its slot is not shared with anything on purpose.
        assertThat(tag).as(key).isNull();
        emptyTags++;
      } else {
        assertThat(tag).as("key %s has a hash tag", key).isNotNull();
        assertThat(SlotHash.getSlot(key)).isEqualTo(SlotHash.getSlot(tag));
      }
    }
    assertThat(byKey).hasSize(1364);
    assertThat(emptyTags).as("}, }}, ... }}}}}").isEqualTo(5);
  }

  @Test
  @DisplayName("ids that shared one key in the old form keep their own versions in Redis")
  void apartInRedis() {
    RedisVersionGuard guard = storage.versionGuard();
    String u = UUID.randomUUID().toString().substring(0, 8);
    List<String> ids = List.of(u, "{" + u + "}", "{" + u + "}}", u + "}", "{}" + u,
        "{" + u + "}:", "{" + u + "}:" + u);
    long version = 100;
    for (String id : ids) {
      assertThat(guard.advance(id, version)).as(id).isTrue();
      version -= 10;
    }
    version = 100;
    for (String id : ids) {
      assertThat(guard.current(id)).as(id).hasValue(version);
      version -= 10;
    }
  }
}
