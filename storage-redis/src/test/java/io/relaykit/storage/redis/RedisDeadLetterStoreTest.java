package io.relaykit.storage.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.message.Message;
import io.relaykit.tck.DeadLetterStoreContract;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

@DisplayName("RedisDeadLetterStore on the real Redis")
class RedisDeadLetterStoreTest extends DeadLetterStoreContract {
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

  /** A store under a new name: empty, as the kit needs. */
  @Override
  protected DeadLetterStore createStore() {
    return storage.deadLetterStore("dlq-" + UUID.randomUUID());
  }

  @Nested
  @DisplayName("in Redis")
  class InRedis {
    @Test
    @DisplayName("a dead letter is one hash plus one index entry, both gone after remove")
    void holds() {
      RedisDeadLetterStore store = (RedisDeadLetterStore) store();
      DeadLetter d = deadLetter("m-1", "order.placed", "orders", "attempts exhausted", 3);
      store.add(d);
      String id = d.id();
      assertThat(id).isEqualTo("m-1@orders");
      assertThat(support.raw().hget(store.entryKey(id), "reason"))
          .isEqualTo("attempts exhausted");
      assertThat(support.raw().hget(store.entryKey(id), "messageId")).isEqualTo("m-1");
      assertThat(support.raw().hget(store.entryKey(id), "traceId"))
          .isEqualTo(d.message().traceId());
      assertThat(support.raw().zrange(store.indexKey(), 0, -1))
          .containsExactly(RedisDeadLetterStore.indexMember(d.lastFailureAt(), id));
      assertThat(store.entryKey(id)).startsWith(support.prefix + "dlq:{" + support.prefix
          + store.name() + "}:");
      assertThat(store.remove(id)).contains(d);
      assertThat(support.raw().exists(store.entryKey(id), store.indexKey())).isZero();
    }

    @Test
    @DisplayName("a dead letter larger than maxValueBytes is rejected naming its size and the limit")
    void oversize() {
      try (RedisStorage small = RedisStorage.open(support.config().maxValueBytes(4096).build())) {
        RedisDeadLetterStore store = small.deadLetterStore("small-" + UUID.randomUUID());
        DeadLetter big = DeadLetter.of(Message.builder().id("big").type("t")
            .payload(new byte[8192]).build(), "src", "r", null, 1,
            java.time.Instant.EPOCH, java.time.Instant.EPOCH);
        assertThatThrownBy(() -> store.add(big))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("big").hasMessageContaining("maxValueBytes 4096");
        assertThat(store.count(DeadLetterQuery.all())).isZero();
      }
    }

    @Test
    @DisplayName("an entry key holding another type is a clear error")
    void wrongType() {
      RedisDeadLetterStore store = (RedisDeadLetterStore) store();
      DeadLetter d = deadLetter("m-2", "t", "s", "r", 1);
      support.raw().set(store.entryKey(d.id()), "oops");
      assertThatThrownBy(() -> store.add(d))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining(store.entryKey(d.id())).hasMessageContaining("string");
    }

    @Test
    @DisplayName("bad store names are rejected naming the field")
    void badNames() {
      assertThatThrownBy(() -> storage.deadLetterStore(""))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("name");
      assertThatThrownBy(() -> storage.deadLetterStore("a}b"))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("braces");
    }
  }
}
