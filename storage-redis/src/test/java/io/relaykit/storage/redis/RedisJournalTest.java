package io.relaykit.storage.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.queue.JournalException;
import io.relaykit.queue.Priority;
import io.relaykit.queue.QueueJournal;
import io.relaykit.queue.QueuedEvent;
import io.relaykit.tck.QueueJournalContract;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * The journal kit on the real Redis. Every reopen builds a new {@link RedisStorage} (a new Lettuce
 * client and connection), as a restarted gateway process would.
 */
@DisplayName("RedisJournal on the real Redis")
class RedisJournalTest extends QueueJournalContract {
  private static RedisTestSupport support;
  private final List<RedisStorage> storages = new ArrayList<>();
  private String name;

  @BeforeAll
  static void connect() {
    support = new RedisTestSupport();
  }

  @AfterAll
  static void cleanUp() {
    if (support != null) {
      support.close();
    }
  }

  @AfterEach
  void closeStorages() {
    storages.forEach(RedisStorage::close);
    storages.clear();
  }

  @Override
  protected QueueJournal openJournal() {
    name = "gateway-" + UUID.randomUUID();
    return reopenJournal();
  }

  @Override
  protected QueueJournal reopenJournal() {
    RedisStorage storage = support.open();
    storages.add(storage);
    return storage.journal(name);
  }

  @Nested
  @DisplayName("in Redis")
  class InRedis {
    @Test
    @DisplayName("the state lives in a few keys under the journal's hash tag, and destroy removes "
        + "them")
    void keys() throws Exception {
      RedisJournal journal = (RedisJournal) fresh();
      journal.append(event("a"));
      journal.append(event("b"));
      journal.deadLetter("b", 1, "rejected");
      List<String> keys = support.keys().stream().filter(k -> k.contains(name)).toList();
      assertThat(keys).hasSize(9).allSatisfy(k -> assertThat(k)
          .startsWith(support.prefix + "journal:{" + support.prefix + name + "}:"));
      assertThat(support.raw().zrange(keys.stream().filter(k -> k.endsWith(":pending"))
          .findFirst().orElseThrow(), 0, -1)).containsExactly("a");
      journal.destroy();
      assertThat(support.keys()).noneMatch(k -> k.contains(name));
    }

    @Test
    @DisplayName("bad names, ids and oversize events are rejected naming the field")
    void badInput() throws Exception {
      RedisStorage storage = support.open();
      storages.add(storage);
      assertThatThrownBy(() -> storage.journal(" "))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("name");
      assertThatThrownBy(() -> storage.journal("a{b}"))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("braces");
      RedisStorage small = RedisStorage.open(support.config().maxValueBytes(1024).build());
      storages.add(small);
      QueueJournal journal = small.journal("small-" + UUID.randomUUID());
      QueuedEvent big = new QueuedEvent("big", "n", "x".repeat(2000), Priority.LOW, T0, 0, T0,
          null);
      assertThatThrownBy(() -> journal.append(big))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("big").hasMessageContaining("maxValueBytes 1024");
      assertThatThrownBy(() -> journal.remove("", QueueJournal.Removal.ACKED))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("eventId");
      assertThatThrownBy(() -> journal.reschedule("a", -1, T0))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("attempts");
      assertThat(journal.load().pending()).isEmpty();
    }

    @Test
    @DisplayName("a key of the journal holding another type is a clear JournalException")
    void wrongType() throws Exception {
      QueueJournal journal = fresh();
      String pendingKey = support.prefix + "journal:{" + support.prefix + name + "}:pending";
      support.raw().set(pendingKey, "not a sorted set");
      assertThatThrownBy(() -> journal.append(event("a")))
          .isInstanceOf(JournalException.class)
          .hasMessageContaining(name).hasMessageContaining("another type");
    }
  }
}
