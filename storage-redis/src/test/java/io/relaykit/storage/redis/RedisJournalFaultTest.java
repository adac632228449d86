package io.relaykit.storage.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lettuce.core.RedisURI;
import io.relaykit.queue.JournalException;
import io.relaykit.queue.JournalState;
import io.relaykit.queue.Priority;
import io.relaykit.queue.QueueJournal;
import io.relaykit.queue.QueueJournal.Removal;
import io.relaykit.queue.QueuedEvent;
import io.relaykit.tck.Await;
import io.relaykit.tck.FaultProxy;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * RedisJournal when the link to Redis fails, through a TCP fault proxy: the script reaches Redis,
 * the connection is cut before the reply; a down Redis refuses at once.
 */
@DisplayName("RedisJournal when the link to Redis fails")
class RedisJournalFaultTest {
  private static final Instant T0 = Instant.parse("2026-01-01T00:00:00.123Z");
  private static RedisTestSupport support;

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

  private static QueuedEvent event(String id) {
    return new QueuedEvent(id, "test.event", "p-" + id, Priority.NORMAL, T0, 0, T0, null);
  }

  private static RedisStorage viaProxy(FaultProxy proxy) {
    return RedisStorage.open(support.config().uri("redis://" + proxy.address())
        .commandTimeout(Duration.ofSeconds(3)).connectTimeout(Duration.ofSeconds(3)).build());
  }

  private String pendingKey(String name) {
    return support.prefix + "journal:{" + support.prefix + name + "}:pending";
  }

  /**
   * Runs {@code change} with the server's replies dropped; once {@code applied} says Redis ran
   * it, cuts the connection. Returns what the call did: null if it returned, else its exception.
   */
  private static Throwable withLostReply(FaultProxy proxy, Runnable change,
      BooleanSupplier applied) throws Exception {
    proxy.dropReplies();
    CompletableFuture<Void> call = CompletableFuture.runAsync(change);
    try {
      Await.until(Duration.ofSeconds(10), "the script to run in Redis", applied);
      proxy.cutConnections();
    } finally {
      proxy.heal();
    }
    try {
      call.get(20, TimeUnit.SECONDS);
      return null;
    } catch (java.util.concurrent.ExecutionException e) {
      return e.getCause();
    }
  }

  @Test
  @DisplayName("a change whose reply is lost is unknown, a retry of it is harmless, and the next changes succeed: nothing twice, nothing lost")
  void lostReply() throws Exception {
    String name = "lost-" + UUID.randomUUID();
    RedisURI server = RedisURI.create(support.uri);
    try (FaultProxy proxy = FaultProxy.to(server.getHost(), server.getPort());
        RedisStorage storage = viaProxy(proxy)) {
      QueueJournal journal = storage.journal(name);
      journal.load();
      journal.append(event("a"));
      journal.append(event("b"));

      Throwable ack = withLostReply(proxy, () -> journal.remove("a", Removal.ACKED),
          () -> support.raw().zscore(pendingKey(name), "a") == null);
      assertThat(ack).as("the reset reaches the caller").isInstanceOfSatisfying(
          JournalException.class,
          e -> assertThat(e.outcome()).isEqualTo(JournalException.Outcome.UNKNOWN));
      Await.until(Duration.ofSeconds(10), "the journal to reach Redis again", () -> {
        try {
          journal.remove("a", Removal.ACKED); // the caller's retry
          return true;
        } catch (JournalException e) {
          return false;
        }
      });
      Throwable append = withLostReply(proxy, () -> journal.append(event("c")),
          () -> support.raw().zscore(pendingKey(name), "c") != null);
      assertThat(append).isInstanceOfSatisfying(JournalException.class,
          e -> assertThat(e.outcome()).isEqualTo(JournalException.Outcome.UNKNOWN));
      Await.until(Duration.ofSeconds(10), "a retry of the append", () -> {
        try {
          journal.append(event("c"));
          return true;
        } catch (JournalException e) {
          return false;
        }
      });
      journal.append(event("d"));
      journal.deadLetter("b", 1, "rejected");

      try (RedisStorage direct = support.open()) {
        RedisJournal restarted = direct.journal(name);
        JournalState state = restarted.load();
        assertThat(state.pending()).extracting(QueuedEvent::eventId).containsExactly("c", "d");
        assertThat(state.dead()).extracting(QueuedEvent::eventId).containsExactly("b");
        assertThat(state.seen()).containsOnlyKeys("a", "b", "c", "d");
        assertThat(support.raw().zrange(pendingKey(name), 0, -1)).containsExactly("c", "d");
        restarted.destroy();
      }
    }
  }

  @Test
  @DisplayName("while Redis is unreachable every change is refused at once, nothing recorded")
  void down() throws Exception {
    String name = "down-" + UUID.randomUUID();
    RedisURI server = RedisURI.create(support.uri);
    try (FaultProxy proxy = FaultProxy.to(server.getHost(), server.getPort());
        RedisStorage storage = viaProxy(proxy)) {
      QueueJournal journal = storage.journal(name);
      journal.load();
      journal.append(event("a"));
      proxy.refuseConnections();
      proxy.cutConnections();
      Await.until(Duration.ofSeconds(10), "the client to notice the outage", () -> {
        try {
          journal.append(event("probe"));
          return false;
        } catch (JournalException e) {
          return e.outcome() == JournalException.Outcome.NOT_RECORDED;
        }
      });
      long started = System.nanoTime();
      assertThatThrownBy(() -> journal.append(new QueuedEvent("pay", "n", "p", Priority.CRITICAL,
          T0, 0, T0, null))).isInstanceOfSatisfying(JournalException.class,
              e -> assertThat(e.outcome()).isEqualTo(JournalException.Outcome.NOT_RECORDED))
          .hasMessageContaining("nothing recorded");
      assertThat(Duration.ofNanos(System.nanoTime() - started)).as("fails fast")
          .isLessThan(Duration.ofSeconds(3));
      proxy.heal();
      try (RedisStorage direct = support.open()) {
        RedisJournal restarted = direct.journal(name);
        assertThat(restarted.load().pending()).extracting(QueuedEvent::eventId)
            .containsExactly("a");
        restarted.destroy();
      }
    }
  }
}
