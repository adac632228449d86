package io.relaykit.storage.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.ordering.VersionGuard;
import io.relaykit.tck.VersionGuardContract;
import java.util.OptionalLong;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

@DisplayName("RedisVersionGuard on the real Redis")
class RedisVersionGuardTest extends VersionGuardContract {
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

  @Override
  protected VersionGuard createGuard() {
    return storage.versionGuard();
  }

  @Nested
  @DisplayName("in Redis")
  class InRedis {
    private final RedisVersionGuard guard = storage.versionGuard();
    private final String entity = "order-" + UUID.randomUUID();

    @Test
    @DisplayName("the version is a decimal string under the entity's hash tag, without expiry")
    void holds() {
      assertThat(guard.advance(entity, 9)).isTrue();
      assertThat(guard.advance(entity, 10)).isTrue();
      String key = support.prefix + "ver.v2:{" + entity + "}:" + entity;
      assertThat(guard.redisKey(entity)).isEqualTo(key);
      assertThat(support.raw().get(key)).isEqualTo("10");
      assertThat(support.raw().pttl(key)).isEqualTo(-1L);
    }

    @Test
    @DisplayName("a version written in the old key format is the floor until the next accepted"
        + " update writes the new key")
    void legacyFloor() {
      support.raw().set(guard.legacyRedisKey(entity), "20");
      assertThat(guard.current(entity)).isEqualTo(OptionalLong.of(20));
      assertThat(guard.advance(entity, 20)).isFalse();
      assertThat(guard.advance(entity, 19)).isFalse();
      assertThat(guard.advance(entity, 21)).isTrue();
      assertThat(support.raw().get(guard.redisKey(entity))).isEqualTo("21");
      assertThat(guard.current(entity)).isEqualTo(OptionalLong.of(21));
    }

    @Test
    @DisplayName("versions compare as numbers, not as text, across digit counts")
    void numericOrder() {
      assertThat(guard.advance(entity, 99)).isTrue();
      assertThat(guard.advance(entity, 100)).isTrue();
      assertThat(guard.advance(entity, 99)).isFalse();
      assertThat(guard.advance(entity, 9_007_199_254_740_993L)).isTrue();
      assertThat(guard.advance(entity, 9_007_199_254_740_992L)).as("beyond Lua's exact doubles")
          .isFalse();
      assertThat(guard.current(entity)).isEqualTo(OptionalLong.of(9_007_199_254_740_993L));
    }

    @Test
    @DisplayName("a key holding something else is a clear error, and it is left alone")
    void notOurs() {
      String key = guard.redisKey(entity);
      support.raw().set(key, "v12");
      assertThatThrownBy(() -> guard.advance(entity, 13))
          .isInstanceOf(IllegalStateException.class).hasMessageContaining(key);
      assertThatThrownBy(() -> guard.current(entity))
          .isInstanceOf(IllegalStateException.class).hasMessageContaining(key);
      support.raw().del(key);
      support.raw().lpush(key, "x");
      assertThatThrownBy(() -> guard.advance(entity, 13))
          .isInstanceOf(IllegalStateException.class).hasMessageContaining("list");
      assertThat(support.raw().lrange(key, 0, -1)).containsExactly("x");
    }

    @Test
    @DisplayName("an oversize entity id is rejected naming the limit")
    void oversize() {
      assertThatThrownBy(() -> guard.advance("e".repeat(513), 1))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("entityId")
          .hasMessageContaining("512");
    }
  }
}
