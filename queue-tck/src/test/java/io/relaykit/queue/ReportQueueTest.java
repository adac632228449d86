package io.relaykit.queue;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleEvent.Stage;
import io.relaykit.monitor.LifecycleLog;
import io.relaykit.queue.EnqueueResult.Reason;
import io.relaykit.retry.Backoff;
import io.relaykit.tck.FakeClock;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class ReportQueueTest {

  private final FakeClock clock = new FakeClock();
  private final InMemoryJournal journal = new InMemoryJournal();
  private final LifecycleLog log = new LifecycleLog(10_000);

  private ReportQueue.Builder builder() {
    return ReportQueue.builder().clock(clock).journal(journal).listener(log);
  }

  private static ReportEvent normal(String id) {
    return new ReportEvent(id, "page.viewed", "{\"id\":\"" + id + "\"}");
  }

  private static ReportEvent event(String id, Priority priority) {
    return new ReportEvent(id, "test.event", "payload-" + id, priority, null);
  }

  private static List<String> ids(List<QueuedEvent> events) {
    return events.stream().map(QueuedEvent::eventId).toList();
  }

  private List<Stage> stages(String id) {
    return log.history(id).stream().map(LifecycleEvent::stage).toList();
  }

  /** A new queue on the same journal storage, restored: what a restarted process sees. */
  private ReportQueue restarted(ReportQueue.Builder b) {
    ReportQueue queue = b.journal(journal.reopen()).build();
    queue.restore();
    return queue;
  }

  @Nested
  @DisplayName("draining")
  class Draining {

    @Test
    @DisplayName("drain returns at most batchSize events and moves them to in flight")
    void batchDrain() {
      ReportQueue queue = builder().batchSize(20).capacity(100).build();
      for (int i = 0; i < 25; i++) {
        assertThat(queue.enqueue(normal("e" + i)).accepted()).isTrue();
        clock.advance(Duration.ofMillis(1));
      }
      List<QueuedEvent> first = queue.drainBatch();
      assertThat(first).hasSize(20);
      assertThat(ids(first)).startsWith("e0", "e1").endsWith("e19");
      assertThat(queue.stats().pending()).isEqualTo(5);
      assertThat(queue.stats().inflight()).isEqualTo(20);
      assertThat(queue.inflightIds()).containsExactlyElementsOf(ids(first));
      assertThat(ids(queue.drainBatch())).containsExactly("e20", "e21", "e22", "e23", "e24");
      assertThat(queue.drainBatch()).isEmpty();
      assertThat(queue.stats().inflight()).isEqualTo(25);
      assertThat(first.get(0).attempts()).isZero();
      assertThat(first.get(0).enqueuedAt()).isEqualTo(FakeClock.EPOCH);
    }

    @Test
    @DisplayName("highest priority drains first, oldest first within a priority")
    void priorityOrder() {
      ReportQueue queue = builder().batchSize(10).build();
      queue.enqueue(event("low-1", Priority.LOW));
      clock.advance(Duration.ofMillis(1));
      queue.enqueue(event("normal-1", Priority.NORMAL));
      clock.advance(Duration.ofMillis(1));
      queue.enqueue(event("critical-1", Priority.CRITICAL));
      clock.advance(Duration.ofMillis(1));
      queue.enqueue(event("normal-2", Priority.NORMAL));
      clock.advance(Duration.ofMillis(1));
      queue.enqueue(event("critical-2", Priority.CRITICAL));
      assertThat(queue.pendingIds()).containsExactly(
          "critical-1", "critical-2", "normal-1", "normal-2", "low-1");
      assertThat(ids(queue.drainBatch())).containsExactly(
          "critical-1", "critical-2", "normal-1", "normal-2", "low-1");
    }

    @Test
    @DisplayName("oldestPendingAge is the age of the oldest pending event in any lane or retry")
    void oldestPendingAge() {
      ReportQueue queue = builder().batchSize(1).backoff(Backoff.fixed(Duration.ofMinutes(5)))
          .build();
      assertThat(queue.oldestPendingAge()).isEmpty();
      queue.enqueue(event("low-1", Priority.LOW));
      clock.advance(Duration.ofSeconds(10));
      queue.enqueue(event("critical-1", Priority.CRITICAL));
      clock.advance(Duration.ofSeconds(5));
      assertThat(queue.oldestPendingAge()).contains(Duration.ofSeconds(15));

      assertThat(ids(queue.drainBatch())).containsExactly("critical-1");
      clock.advance(Duration.ofSeconds(1));
      assertThat(queue.oldestPendingAge()).as("in flight does not count")
          .contains(Duration.ofSeconds(16));

      assertThat(ids(queue.drainBatch())).containsExactly("low-1");
      assertThat(queue.oldestPendingAge()).as("everything in flight").isEmpty();
      queue.nack(List.of("critical-1"), true);
      assertThat(queue.oldestPendingAge()).as("a waiting retry is pending, aged from enqueue")
          .contains(Duration.ofSeconds(6));
    }

    @Test
    @DisplayName("ack removes in-flight events for good and ignores ids that are not in flight")
    void ack() {
      ReportQueue queue = builder().build();
      queue.enqueue(normal("a"));
      queue.enqueue(normal("b"));
      queue.enqueue(normal("c"));
      queue.drainBatch();
      assertThat(queue.ack(List.of("a", "b", "unknown"))).isEqualTo(2);
      assertThat(queue.ack(List.of("a"))).as("acked twice").isZero();
      assertThat(queue.inflightIds()).containsExactly("c");
      assertThat(queue.stats()).isEqualTo(new QueueStats(0, 1, 3, 0, 0, 0,
          "{\"id\":\"c\"}".length(), 0, 0));
      assertThat(journal.reopen().load().pending()).extracting(QueuedEvent::eventId)
          .containsExactly("c");
      assertThat(stages("a")).containsExactly(Stage.ENQUEUED, Stage.DELIVERED, Stage.ACKED);
    }

    @Test
    @DisplayName("nextReadyAt says when a drain can return something")
    void nextReadyAt() {
      ReportQueue queue = builder().build();
      assertThat(queue.nextReadyAt()).isEmpty();
      queue.enqueue(normal("a"));
      assertThat(queue.nextReadyAt()).contains(FakeClock.EPOCH);
      queue.drainBatch();
      assertThat(queue.nextReadyAt()).isEmpty();
      queue.nack(List.of("a"), true);
      assertThat(queue.nextReadyAt()).contains(FakeClock.EPOCH.plusSeconds(1));
      assertThat(queue.readyCount(clock.instant())).isZero();
      assertThat(queue.readyCount(FakeClock.EPOCH.plusSeconds(1))).isEqualTo(1);
    }
  }

  @Nested
  @DisplayName("deduplication")
  class Dedupe {

    @Test
    @DisplayName("a pending or in-flight duplicate is rejected")
    void duplicateRejected() {
      ReportQueue queue = builder().build();
      assertThat(queue.enqueue(normal("a")).reason()).isEqualTo(Reason.OK);
      assertThat(queue.enqueue(normal("a")).reason()).isEqualTo(Reason.DUPLICATE);
      queue.drainBatch();
      assertThat(queue.enqueue(normal("a")).reason()).isEqualTo(Reason.DUPLICATE);
      assertThat(queue.stats().inflight()).isEqualTo(1);
      assertThat(queue.stats().pending()).isZero();
    }

    @Test
    @DisplayName("a duplicate is rejected after the original was acked")
    void duplicateAfterAck() {
      ReportQueue queue = builder().build();
      queue.enqueue(normal("a"));
      queue.drainBatch();
      queue.ack(List.of("a"));
      EnqueueResult again = queue.enqueue(normal("a"));
      assertThat(again.accepted()).isFalse();
      assertThat(again.reason()).isEqualTo(Reason.DUPLICATE);
      assertThat(queue.stats().pending()).isZero();
      assertThat(queue.stats().seen()).isEqualTo(1);
    }

    @Test
    @DisplayName("an id leaves the dedupe window after its time and is accepted again")
    void windowByTime() {
      ReportQueue queue = builder().dedupeWindow(Duration.ofHours(1), 1000).build();
      queue.enqueue(normal("a"));
      queue.drainBatch();
      queue.ack(List.of("a"));
      clock.advance(Duration.ofMinutes(59));
      assertThat(queue.enqueue(normal("a")).reason()).isEqualTo(Reason.DUPLICATE);
      clock.advance(Duration.ofMinutes(1));
      assertThat(queue.enqueue(normal("a")).reason()).isEqualTo(Reason.OK);
    }

    @Test
    @DisplayName("the dedupe window holds at most maxIds ids, forgetting the oldest first")
    void windowByCount() {
      ReportQueue queue = builder().dedupeWindow(Duration.ofDays(1), 2).build();
      for (String id : List.of("a", "b", "c")) {
        queue.enqueue(normal(id));
        clock.advance(Duration.ofMillis(1));
      }
      queue.drainBatch();
      queue.ack(List.of("a", "b", "c"));
      assertThat(queue.stats().seen()).isEqualTo(2);
      assertThat(queue.enqueue(normal("b")).reason()).isEqualTo(Reason.DUPLICATE);
      assertThat(queue.enqueue(normal("a")).reason()).isEqualTo(Reason.OK);
      // The forgotten id is forgotten in the journal too, so a restart agrees.
      assertThat(journal.reopen().load().seen()).containsOnlyKeys("a", "c");
    }

    @Test
    @DisplayName("an id trimmed from the window while its event is pending is still a duplicate, and is forgotten once acked")
    void trimmedWhileLive() {
      ReportQueue queue = builder().dedupeWindow(Duration.ofDays(1), 1).build();
      queue.enqueue(normal("a"));
      queue.enqueue(normal("b"));
      assertThat(queue.stats().seen()).isEqualTo(1);
      assertThat(queue.enqueue(normal("a")).reason()).isEqualTo(Reason.DUPLICATE);
      queue.drainBatch();
      queue.ack(List.of("a"));
      assertThat(journal.reopen().load().seen()).containsOnlyKeys("b");
      assertThat(queue.enqueue(normal("a")).reason()).isEqualTo(Reason.OK);
    }
  }

  @Nested
  @DisplayName("capacity and drop policies")
  class Capacity {

    @Test
    @DisplayName("DROP_LOWEST_PRIORITY evicts the lowest-priority, oldest event for a higher-priority one")
    void lowestPriorityEviction() {
      ReportQueue queue = builder().capacity(3).build();
      queue.enqueue(event("low-old", Priority.LOW));
      clock.advance(Duration.ofMillis(1));
      queue.enqueue(event("normal", Priority.NORMAL));
      clock.advance(Duration.ofMillis(1));
      queue.enqueue(event("low-new", Priority.LOW));
      EnqueueResult result = queue.enqueue(event("critical", Priority.CRITICAL));
      assertThat(result.accepted()).isTrue();
      assertThat(result.droppedId()).contains("low-old");
      assertThat(queue.pendingIds()).containsExactly("critical", "normal", "low-new");
      assertThat(queue.stats().dropped()).isEqualTo(1);
      assertThat(stages("low-old")).containsExactly(Stage.ENQUEUED, Stage.DROPPED);
      assertThat(journal.reopen().load().seen()).doesNotContainKey("low-old");
      // A dropped event is not seen: it may be reported again once there is room.
      queue.drainBatch();
      queue.ack(List.of("normal"));
      assertThat(queue.enqueue(event("low-old", Priority.LOW)).reason()).isEqualTo(Reason.OK);
    }

    @Test
    @DisplayName("DROP_LOWEST_PRIORITY rejects an event that does not rank strictly higher")
    void samePriorityRejected() {
      ReportQueue queue = builder().capacity(2).build();
      queue.enqueue(event("n1", Priority.NORMAL));
      queue.enqueue(event("n2", Priority.NORMAL));
      EnqueueResult same = queue.enqueue(event("n3", Priority.NORMAL));
      assertThat(same.reason()).isEqualTo(Reason.QUEUE_FULL);
      assertThat(same.droppedId()).isEmpty();
      assertThat(queue.enqueue(event("l1", Priority.LOW)).reason()).isEqualTo(Reason.QUEUE_FULL);
      assertThat(queue.pendingIds()).containsExactly("n1", "n2");
      assertThat(queue.stats().dropped()).isEqualTo(2);
      assertThat(stages("n3")).containsExactly(Stage.DROPPED);
      // Not seen: the producer may retry it later.
      queue.drainBatch();
      queue.ack(List.of("n1"));
      assertThat(queue.enqueue(event("n3", Priority.NORMAL)).reason()).isEqualTo(Reason.OK);
    }

    @Test
    @DisplayName("DROP_OLDEST evicts the oldest event of the lowest priority that has one: a new LOW event takes a NORMAL one, not an older CRITICAL one")
    void dropOldest() {
      ReportQueue queue = builder().capacity(2).dropPolicy(DropPolicy.DROP_OLDEST).build();
      queue.enqueue(event("critical-old", Priority.CRITICAL));
      clock.advance(Duration.ofMillis(1));
      queue.enqueue(event("normal", Priority.NORMAL));
      EnqueueResult result = queue.enqueue(event("low-new", Priority.LOW));
      assertThat(result.accepted()).isTrue();
      assertThat(result.droppedId()).contains("normal");
      assertThat(queue.pendingIds()).containsExactly("critical-old", "low-new");
    }

    @Test
    @DisplayName("DROP_OLDEST never evicts a fsynced CRITICAL event while a LOW one is pending: a new LOW event takes the oldest LOW one")
    void dropOldestKeepsCritical() {
      ReportQueue queue = builder().capacity(3).dropPolicy(DropPolicy.DROP_OLDEST).build();
      queue.enqueue(event("payment", Priority.CRITICAL));
      queue.enqueue(event("view-1", Priority.LOW));
      queue.enqueue(event("view-2", Priority.LOW));
      assertThat(queue.enqueue(event("view-3", Priority.LOW)).droppedIds())
          .containsExactly("view-1");
      assertThat(queue.pendingIds()).containsExactly("payment", "view-2", "view-3");
      assertThat(journal.reopen().load().pending()).extracting(QueuedEvent::eventId)
          .containsExactly("payment", "view-2", "view-3");
    }

    @Test
    @DisplayName("DROP_OLDEST evicts a CRITICAL event only when every pending event is CRITICAL, and then the oldest")
    void dropOldestCriticalLast() {
      ReportQueue queue = builder().capacity(2).dropPolicy(DropPolicy.DROP_OLDEST).build();
      queue.enqueue(event("c1", Priority.CRITICAL));
      queue.enqueue(event("c2", Priority.CRITICAL));
      assertThat(queue.enqueue(event("l1", Priority.LOW)).droppedIds()).containsExactly("c1");
      assertThat(queue.enqueue(event("c3", Priority.CRITICAL)).droppedIds())
          .containsExactly("l1");
      assertThat(queue.pendingIds()).containsExactly("c2", "c3");
    }

    @Test
    @DisplayName("REJECT_NEW keeps what is queued")
    void rejectNew() {
      ReportQueue queue = builder().capacity(1).dropPolicy(DropPolicy.REJECT_NEW).build();
      queue.enqueue(event("low", Priority.LOW));
      assertThat(queue.enqueue(event("critical", Priority.CRITICAL)).reason())
          .isEqualTo(Reason.QUEUE_FULL);
      assertThat(queue.pendingIds()).containsExactly("low");
    }

    @Test
    @DisplayName("in-flight events count toward capacity but are never evicted")
    void inflightNotEvicted() {
      ReportQueue queue = builder().capacity(1).build();
      queue.enqueue(event("low", Priority.LOW));
      queue.drainBatch();
      assertThat(queue.enqueue(event("critical", Priority.CRITICAL)).reason())
          .isEqualTo(Reason.QUEUE_FULL);
      assertThat(queue.inflightIds()).containsExactly("low");
    }

    @Test
    @DisplayName("capacity counts payload bytes in UTF-8, evicting as many events as needed")
    void bytesCapacity() {
      ReportQueue queue = builder().capacity(100).maxBytes(10).build();
      queue.enqueue(new ReportEvent("a", "n", "ééé", Priority.LOW, null)); // 6 bytes
      queue.enqueue(new ReportEvent("b", "n", "xx", Priority.LOW, null)); // 2 bytes
      assertThat(queue.stats().bytes()).isEqualTo(8);
      assertThat(queue.enqueue(new ReportEvent("c", "n", "yyy", Priority.LOW, null)).reason())
          .isEqualTo(Reason.QUEUE_FULL);
      EnqueueResult big = queue.enqueue(
          new ReportEvent("d", "n", "zzzzzzzzz", Priority.NORMAL, null)); // 9 bytes
      assertThat(big.accepted()).isTrue();
      assertThat(big.droppedIds()).containsExactly("a", "b");
      assertThat(queue.stats().bytes()).isEqualTo(9);
    }

    @Test
    @DisplayName("an event larger than maxBytes on its own is TOO_LARGE and nothing is evicted")
    void tooLarge() {
      ReportQueue queue = builder().maxBytes(4).build();
      queue.enqueue(new ReportEvent("a", "n", "1", Priority.LOW, null));
      EnqueueResult r = queue.enqueue(new ReportEvent("big", "n", "12345", Priority.CRITICAL,
          null));
      assertThat(r.reason()).isEqualTo(Reason.TOO_LARGE);
      assertThat(queue.pendingIds()).containsExactly("a");
      assertThat(queue.stats().dropped()).isEqualTo(1);
      assertThat(log.history("big")).singleElement().satisfies(e -> {
        assertThat(e.stage()).isEqualTo(Stage.DROPPED);
        assertThat(e.detail()).contains("too large");
      });
    }

    @Test
    @DisplayName("expired events free their room before anything is evicted")
    void expiredFreeRoom() {
      ReportQueue queue = builder().capacity(1).build();
      queue.enqueue(new ReportEvent("otp", "otp", "123456", Priority.LOW,
          clock.instant().plusSeconds(60)));
      clock.advance(Duration.ofSeconds(60));
      EnqueueResult r = queue.enqueue(event("next", Priority.LOW));
      assertThat(r.accepted()).isTrue();
      assertThat(r.droppedIds()).isEmpty();
      assertThat(queue.stats().expired()).isEqualTo(1);
      assertThat(queue.stats().dropped()).isZero();
    }
  }

  @Nested
  @DisplayName("retries and dead letters")
  class Retries {

    @Test
    @DisplayName("a nacked event waits for its retry time")
    void retryWaits() {
      ReportQueue queue = builder().build();
      queue.enqueue(normal("a"));
      queue.drainBatch();
      NackResult r = queue.nack(List.of("a"), true);
      assertThat(r).isEqualTo(new NackResult(1, 0, 0));
      assertThat(queue.drainBatch()).isEmpty();
      clock.advance(Duration.ofMillis(999));
      assertThat(queue.drainBatch()).isEmpty();
      clock.advance(Duration.ofMillis(1));
      List<QueuedEvent> retried = queue.drainBatch();
      assertThat(ids(retried)).containsExactly("a");
      assertThat(retried.get(0).attempts()).isEqualTo(1);
    }

    @Test
    @DisplayName("the default backoff doubles: 1 s, 2 s, 4 s")
    void doublingBackoff() {
      ReportQueue queue = builder().maxAttempts(10).build();
      queue.enqueue(normal("a"));
      for (long expected : new long[] {1, 2, 4, 8}) {
        queue.drainBatch();
        Instant failedAt = clock.instant();
        queue.nack(List.of("a"), true);
        assertThat(queue.nextReadyAt()).contains(failedAt.plusSeconds(expected));
        clock.advance(Duration.ofSeconds(expected));
      }
      assertThat(journal.reopen().load().pending().get(0).attempts()).isEqualTo(4);
    }

    @Test
    @DisplayName("an event out of attempts becomes a dead letter with the reason")
    void maxAttempts() {
      ReportQueue queue = builder().maxAttempts(3).backoff(Backoff.fixed(Duration.ofSeconds(1)))
          .build();
      queue.enqueue(normal("a"));
      for (int i = 1; i <= 2; i++) {
        queue.drainBatch();
        assertThat(queue.nack(List.of("a"), true).requeued()).isEqualTo(1);
        clock.advance(Duration.ofSeconds(1));
      }
      queue.drainBatch();
      assertThat(queue.nack(List.of("a"), true)).isEqualTo(new NackResult(0, 1, 0));
      assertThat(queue.deadIds()).containsExactly("a");
      assertThat(queue.deadLetters().get(0).attempts()).isEqualTo(3);
      assertThat(queue.deadReason("a")).contains("attempts exhausted (3 of 3)");
      assertThat(queue.stats().deadLetters()).isEqualTo(1);
      assertThat(queue.stats().pending() + queue.stats().inflight()).isZero();
      assertThat(queue.enqueue(normal("a")).reason()).isEqualTo(Reason.DUPLICATE);
      assertThat(stages("a")).containsExactly(Stage.ENQUEUED, Stage.DELIVERED, Stage.RETRIED,
          Stage.DELIVERED, Stage.RETRIED, Stage.DELIVERED, Stage.DEAD_LETTERED);
      JournalState stored = journal.reopen().load();
      assertThat(stored.dead()).extracting(QueuedEvent::eventId).containsExactly("a");
      assertThat(stored.deadReasons()).containsEntry("a", "attempts exhausted (3 of 3)");
    }

    @Test
    @DisplayName("a non-retryable nack dead-letters at once")
    void nonRetryable() {
      ReportQueue queue = builder().build();
      queue.enqueue(normal("a"));
      queue.drainBatch();
      assertThat(queue.nack(List.of("a"), false)).isEqualTo(new NackResult(0, 1, 0));
      assertThat(queue.deadIds()).containsExactly("a");
      assertThat(queue.deadLetters().get(0).attempts()).isEqualTo(1);
      assertThat(queue.deadReason("a")).hasValueSatisfying(r -> assertThat(r)
          .contains("not retryable"));
    }

    @Test
    @DisplayName("a retry waiting for its time never blocks ready events")
    void retryDoesNotBlock() {
      ReportQueue queue = builder().build();
      queue.enqueue(event("old", Priority.CRITICAL));
      queue.drainBatch();
      queue.nack(List.of("old"), true);
      clock.advance(Duration.ofMillis(10));
      queue.enqueue(event("fresh", Priority.LOW));
      assertThat(ids(queue.drainBatch())).containsExactly("fresh");
      assertThat(queue.pendingIds()).containsExactly("old");
    }

    @Test
    @DisplayName("a due retry drains before newer events of its priority: oldest first")
    void dueRetryKeepsItsAge() {
      ReportQueue queue = builder().batchSize(1).build();
      queue.enqueue(normal("old"));
      queue.drainBatch();
      queue.nack(List.of("old"), true);
      clock.advance(Duration.ofMillis(500));
      queue.enqueue(normal("newer"));
      clock.advance(Duration.ofMillis(500));
      assertThat(ids(queue.drainBatch())).containsExactly("old");
      assertThat(ids(queue.drainBatch())).containsExactly("newer");
    }

    @Test
    @DisplayName("a Retry-After floor longer than the backoff wins; a shorter one does not")
    void retryAfterFloor() {
      ReportQueue queue = builder().build();
      queue.enqueue(normal("a"));
      queue.enqueue(normal("b"));
      queue.drainBatch();
      queue.nack(List.of("a"), true, Duration.ofSeconds(30), null);
      queue.nack(List.of("b"), true, Duration.ofMillis(100), null);
      clock.advance(Duration.ofSeconds(1));
      assertThat(ids(queue.drainBatch())).containsExactly("b");
      clock.advance(Duration.ofSeconds(29));
      assertThat(ids(queue.drainBatch())).containsExactly("a");
    }

    @Test
    @DisplayName("dead letters beyond their count bound push the oldest out, counted, reported and journaled, ids still seen")
    void deadLetterCountBound() {
      List<String> drops = new ArrayList<>();
      ReportQueue queue = builder().deadLetters(2, Long.MAX_VALUE)
          .metrics(new io.relaykit.monitor.MetricsListener() {
            @Override
            public void dropped(String destination, String reason, long count) {
              drops.add(reason);
            }
          }).build();
      for (String id : List.of("d1", "d2", "d3", "d4")) {
        queue.enqueue(normal(id));
        queue.drainBatch();
        queue.nack(List.of(id), false);
        clock.advance(Duration.ofMillis(1));
      }
      assertThat(queue.deadIds()).containsExactly("d3", "d4");
      assertThat(queue.stats().deadLetters()).isEqualTo(2);
      assertThat(queue.stats().deadDropped()).isEqualTo(2);
      assertThat(drops).containsExactly("dead-letter-overflow", "dead-letter-overflow");
      assertThat(stages("d1")).endsWith(Stage.DEAD_LETTERED, Stage.DROPPED);
      assertThat(log.history("d1").get(log.history("d1").size() - 1).detail())
          .contains("pushed out of the dead letters").contains("d3");
      assertThat(queue.enqueue(normal("d1")).reason()).as("its id stays seen")
          .isEqualTo(Reason.DUPLICATE);
      JournalState stored = journal.reopen().load();
      assertThat(ids(stored.dead())).containsExactly("d3", "d4");
      assertThat(stored.seen()).containsKeys("d1", "d2", "d3", "d4");
    }

    @Test
    @DisplayName("dead letters beyond their byte bound push out as many old ones as needed; one too large on its own is not kept")
    void deadLetterByteBound() {
      // Each costs its payload plus its one-byte reason.
      ReportQueue queue = builder().deadLetters(100, 11).build();
      for (String[] e : new String[][] {{"a", "xxxx"}, {"b", "yyyy"}, {"c", "zzzzzzzz"},
          {"huge", "h".repeat(11)}}) {
        queue.enqueue(new ReportEvent(e[0], "n", e[1]));
        queue.drainBatch();
        queue.nack(List.of(e[0]), false, Duration.ZERO, "r");
      }
      assertThat(queue.deadIds()).containsExactly("c");
      assertThat(queue.stats().deadDropped()).isEqualTo(3);
      assertThat(stages("huge")).endsWith(Stage.DELIVERED, Stage.DROPPED);
      assertThat(queue.inflightIds()).isEmpty();
      assertThat(queue.stats().bytes()).isZero();
      JournalState stored = journal.reopen().load();
      assertThat(ids(stored.dead())).containsExactly("c");
      assertThat(stored.pending()).isEmpty();
      assertThat(restarted(builder().deadLetters(100, 11)).deadIds()).containsExactly("c");
    }

    @Test
    @DisplayName("a dead letter's reason counts toward the dead letters' byte bound, also after a restart")
    void deadReasonBytesCount() {
      // Each dead letter costs 4 payload bytes + 8 reason bytes = 12: two exceed a bound of 20.
      ReportQueue queue = builder().deadLetters(100, 20).build();
      for (String id : List.of("a", "b")) {
        queue.enqueue(new ReportEvent(id, "n", "xxxx"));
        queue.drainBatch();
        queue.nack(List.of(id), false, Duration.ZERO, "reason-" + id);
      }
      assertThat(queue.deadIds()).containsExactly("b");
      assertThat(queue.stats().deadDropped()).isEqualTo(1);
      assertThat(stages("a")).endsWith(Stage.DEAD_LETTERED, Stage.DROPPED);
      // 4 payload bytes, but a 30-byte reason: too large on its own, not kept.
      queue.enqueue(new ReportEvent("long", "n", "yyyy"));
      queue.drainBatch();
      queue.nack(List.of("long"), false, Duration.ZERO, "r".repeat(30));
      assertThat(queue.deadIds()).containsExactly("b");
      assertThat(queue.stats().deadDropped()).isEqualTo(2);
      ReportQueue again = restarted(builder().deadLetters(100, 20));
      assertThat(again.deadReason("b")).contains("reason-b");
      again.enqueue(new ReportEvent("c", "n", "zzzz"));
      again.drainBatch();
      again.nack(List.of("c"), false, Duration.ZERO, "reason-c");
      assertThat(again.deadIds()).as("the restored dead letter's reason counts too")
          .containsExactly("c");
      assertThat(again.stats().deadDropped()).isEqualTo(1);
    }

    @Test
    @DisplayName("purging a dead letter removes it and keeps its id seen")
    void purge() {
      ReportQueue queue = builder().build();
      queue.enqueue(normal("a"));
      queue.drainBatch();
      queue.nack(List.of("a"), false);
      assertThat(queue.purgeDead(List.of("a", "nope"))).isEqualTo(1);
      assertThat(queue.deadIds()).isEmpty();
      assertThat(queue.enqueue(normal("a")).reason()).isEqualTo(Reason.DUPLICATE);
      JournalState stored = journal.reopen().load();
      assertThat(stored.dead()).isEmpty();
      assertThat(stored.seen()).containsKey("a");
    }
  }

  @Nested
  @DisplayName("metrics")
  class Metrics {

    @Test
    @DisplayName("every lost event is counted by reason under the queue's name")
    void dropsByReason() {
      List<String> drops = new ArrayList<>();
      ReportQueue queue = builder().name("clicks").capacity(1).maxBytes(20)
          .dropPolicy(DropPolicy.DROP_OLDEST)
          .metrics(new io.relaykit.monitor.MetricsListener() {
            @Override
            public void dropped(String destination, String reason, long count) {
              drops.add(destination + ":" + reason + ":" + count);
            }
          })
          .build();
      queue.enqueue(new ReportEvent("a", "n", "x", Priority.NORMAL, null));
      queue.enqueue(new ReportEvent("b", "n", "x", Priority.NORMAL, null)); // evicts a
      queue.enqueue(new ReportEvent("c", "n", "x".repeat(21), Priority.NORMAL, null));
      queue.enqueue(new ReportEvent("d", "n", "x", Priority.NORMAL, clock.instant()));
      queue.enqueue(new ReportEvent("e", "n", "x", Priority.NORMAL,
          clock.instant().plusSeconds(1)));
      clock.advance(Duration.ofSeconds(2));
      queue.drainBatch(); // e has expired

      assertThat(drops).containsExactly("clicks:capacity:1", "clicks:rejected:1",
          "clicks:expired:1", "clicks:capacity:1", "clicks:expired:1");
      assertThat(queue.stats().dropped()).isEqualTo(3);
      assertThat(queue.stats().expired()).isEqualTo(2);
    }

    @Test
    @DisplayName("a null metrics listener is refused")
    void nullMetrics() {
      assertThatThrownBy(() -> builder().metrics(null).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("metrics");
    }
  }

  @Nested
  @DisplayName("replaying dead letters")
  class Replay {

    @Test
    @DisplayName("a replayed dead letter is pending behind the others, ready now, attempts reset, journaled")
    void replay() {
      ReportQueue queue = builder().maxAttempts(2).build();
      queue.enqueue(normal("a"));
      queue.enqueue(normal("b"));
      queue.drainBatch();
      queue.nack(List.of("a"), false);
      queue.nack(List.of("b"), true);
      clock.advance(Duration.ofMinutes(1));
      queue.drainBatch();
      queue.nack(List.of("b"), true); // out of attempts
      assertThat(queue.deadIds()).containsExactly("a", "b");

      assertThat(queue.replayDead(List.of("b", "nope", "a"))).isEqualTo(2);

      assertThat(queue.deadIds()).isEmpty();
      assertThat(queue.deadReason("a")).isEmpty();
      assertThat(queue.stats().pending()).isEqualTo(2);
      List<QueuedEvent> drained = queue.drainBatch();
      assertThat(ids(drained)).as("in the order they were replayed").containsExactly("b", "a");
      assertThat(drained).allMatch(e -> e.attempts() == 0);
      assertThat(stages("b")).endsWith(Stage.DEAD_LETTERED, Stage.REPLAYED, Stage.DELIVERED);
      JournalState stored = journal.reopen().load();
      assertThat(stored.dead()).isEmpty();
      assertThat(ids(stored.pending())).containsExactly("b", "a");
      assertThat(stored.pending()).allMatch(e -> e.attempts() == 0);
    }

    @Test
    @DisplayName("a replay stops at capacity: the rest stay dead letters")
    void replayWithinCapacity() {
      ReportQueue queue = builder().capacity(2).build();
      queue.enqueue(normal("a"));
      queue.enqueue(normal("b"));
      queue.drainBatch();
      queue.nack(List.of("a", "b"), false);
      queue.enqueue(normal("c"));

      assertThat(queue.replayDead(List.of("a", "b"))).isEqualTo(1);

      assertThat(queue.pendingIds()).containsExactlyInAnyOrder("a", "c");
      assertThat(queue.deadIds()).containsExactly("b");
    }

    @Test
    @DisplayName("null ids are refused")
    void nullIds() {
      ReportQueue queue = builder().build();
      assertThatThrownBy(() -> queue.replayDead(null))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("eventIds");
    }
  }

  @Nested
  @DisplayName("expiry")
  class Expiry {

    @Test
    @DisplayName("an event past its expiry is never drained, and is counted and reported")
    void expiredNotDrained() {
      ReportQueue queue = builder().build();
      queue.enqueue(new ReportEvent("otp", "otp.sent", "123456", Priority.CRITICAL,
          clock.instant().plus(Duration.ofMinutes(5))));
      queue.enqueue(normal("keep"));
      clock.advance(Duration.ofMinutes(5));
      assertThat(ids(queue.drainBatch())).containsExactly("keep");
      assertThat(queue.stats().expired()).isEqualTo(1);
      assertThat(stages("otp")).containsExactly(Stage.ENQUEUED, Stage.EXPIRED);
      JournalState stored = journal.reopen().load();
      assertThat(stored.pending()).extracting(QueuedEvent::eventId).containsExactly("keep");
      assertThat(stored.seen()).containsKey("otp");
    }

    @Test
    @DisplayName("enqueueing an already expired event answers EXPIRED")
    void alreadyExpired() {
      ReportQueue queue = builder().build();
      EnqueueResult r = queue.enqueue(new ReportEvent("otp", "otp", "1", Priority.NORMAL,
          clock.instant()));
      assertThat(r.reason()).isEqualTo(Reason.EXPIRED);
      assertThat(queue.stats().expired()).isEqualTo(1);
      assertThat(queue.stats().pending()).isZero();
    }

    @Test
    @DisplayName("an event that expires while waiting for a retry is discarded, not retried")
    void expiresDuringRetry() {
      ReportQueue queue = builder().build();
      queue.enqueue(new ReportEvent("otp", "otp", "1", Priority.NORMAL,
          clock.instant().plusMillis(1500)));
      queue.drainBatch();
      queue.nack(List.of("otp"), true);
      clock.advance(Duration.ofSeconds(2));
      assertThat(queue.drainBatch()).isEmpty();
      assertThat(queue.stats().expired()).isEqualTo(1);
      assertThat(queue.pendingIds()).isEmpty();
    }

    @Test
    @DisplayName("an event that expired while in flight is discarded when nacked")
    void expiresInFlight() {
      ReportQueue queue = builder().build();
      queue.enqueue(new ReportEvent("otp", "otp", "1", Priority.NORMAL,
          clock.instant().plusSeconds(1)));
      queue.drainBatch();
      clock.advance(Duration.ofSeconds(1));
      assertThat(queue.nack(List.of("otp"), true)).isEqualTo(new NackResult(0, 0, 1));
      assertThat(queue.stats().expired()).isEqualTo(1);
      assertThat(queue.stats().inflight()).isZero();
    }

    @Test
    @DisplayName("an expired event that was nacked has left for good: a late ack or nack finds nothing, its id is forgotten with the window, and its room is free")
    void expiredOnNackLeaves() {
      ReportQueue queue = builder().capacity(1).dedupeWindow(Duration.ofSeconds(10), 100).build();
      queue.enqueue(new ReportEvent("otp", "otp", "1", Priority.NORMAL,
          clock.instant().plusSeconds(1)));
      queue.drainBatch();
      clock.advance(Duration.ofSeconds(1));
      assertThat(queue.nack(List.of("otp"), false)).as("expired wins over a rejection")
          .isEqualTo(new NackResult(0, 0, 1));
      assertThat(queue.nack(List.of("otp"), true)).isEqualTo(new NackResult(0, 0, 0));
      assertThat(queue.ack(List.of("otp"))).isZero();
      QueueStats stats = queue.stats();
      assertThat(stats.pending()).isZero();
      assertThat(stats.inflight()).isZero();
      assertThat(stats.deadLetters()).isZero();
      assertThat(stats.expired()).isEqualTo(1);
      assertThat(stages("otp")).containsExactly(Stage.ENQUEUED, Stage.DELIVERED, Stage.EXPIRED);
      assertThat(queue.enqueue(normal("other")).reason()).as("its room is free")
          .isEqualTo(Reason.OK);
      assertThat(queue.enqueue(normal("otp")).reason()).as("seen within the window")
          .isEqualTo(Reason.DUPLICATE);
      queue.drainBatch();
      queue.ack(List.of("other"));
      clock.advance(Duration.ofSeconds(11));
      assertThat(queue.enqueue(normal("otp")).reason()).as("forgotten once out of the window")
          .isEqualTo(Reason.OK);
      JournalState stored = journal.reopen().load();
      assertThat(ids(stored.pending())).containsExactly("otp");
      assertThat(stored.pending().get(0).payload()).isEqualTo(normal("otp").payload());
    }
  }

  @Nested
  @DisplayName("persistence")
  class Persistence {

    @Test
    @DisplayName("without a journal the queue is memory only: it dedupes, retries and dead-letters, and restore finds nothing")
    void memoryOnlyByDefault() {
      ReportQueue queue = ReportQueue.builder().clock(clock).maxAttempts(1).build();
      queue.enqueue(normal("a"));
      queue.enqueue(normal("b"));
      assertThat(queue.enqueue(normal("a")).reason()).isEqualTo(Reason.DUPLICATE);
      assertThat(ids(queue.drainBatch())).containsExactly("a", "b");
      assertThat(queue.ack(List.of("a"))).isEqualTo(1);
      assertThat(queue.nack(List.of("b"), true).dead()).isEqualTo(1);
      assertThat(queue.enqueue(normal("a")).reason()).isEqualTo(Reason.DUPLICATE);
      assertThat(queue.deadIds()).containsExactly("b");
      queue.flush();

      ReportQueue fresh = ReportQueue.builder().clock(clock).build();
      assertThat(fresh.restore()).isZero();
      assertThat(fresh.stats().seen()).isZero();
      assertThat(fresh.enqueue(normal("a")).accepted()).isTrue();
      // The journal given explicitly is still used: nothing leaked into it from the queues above.
      assertThat(journal.load().seen()).isEmpty();
    }

    @Test
    @DisplayName("pending events and seen ids survive a restart")
    void persistAndRestore() {
      ReportQueue.Builder b = builder();
      ReportQueue queue = b.build();
      queue.enqueue(event("acked", Priority.NORMAL));
      queue.drainBatch();
      queue.ack(List.of("acked"));
      clock.advance(Duration.ofSeconds(1));
      queue.enqueue(event("p1", Priority.LOW));
      queue.enqueue(event("p2", Priority.CRITICAL));

      ReportQueue restarted = restarted(b);
      assertThat(restarted.pendingIds()).containsExactly("p2", "p1");
      assertThat(restarted.enqueue(event("acked", Priority.NORMAL)).reason())
          .isEqualTo(Reason.DUPLICATE);
      assertThat(restarted.enqueue(event("p1", Priority.LOW)).reason())
          .isEqualTo(Reason.DUPLICATE);
      assertThat(restarted.stats().seen()).isEqualTo(3);
      assertThat(ids(restarted.drainBatch())).containsExactly("p2", "p1");
    }

    @Test
    @DisplayName("in-flight events come back pending and ready now; waiting retries keep their time")
    void inflightRequeued() {
      ReportQueue.Builder b = builder();
      ReportQueue queue = b.build();
      queue.enqueue(normal("sent"));
      queue.enqueue(normal("retry"));
      queue.drainBatch();
      queue.nack(List.of("retry"), true);

      ReportQueue restarted = restarted(b);
      assertThat(restarted.stats().pending()).isEqualTo(2);
      assertThat(restarted.stats().inflight()).isZero();
      assertThat(ids(restarted.drainBatch())).containsExactly("sent");
      clock.advance(Duration.ofSeconds(1));
      List<QueuedEvent> retry = restarted.drainBatch();
      assertThat(ids(retry)).containsExactly("retry");
      assertThat(retry.get(0).attempts()).isEqualTo(1);
    }

    @Test
    @DisplayName("restore returns the pending count and can be called only before the queue is used")
    void restoreOnce() {
      ReportQueue.Builder b = builder();
      ReportQueue queue = b.build();
      queue.enqueue(normal("a"));
      assertThatThrownBy(queue::restore).isInstanceOf(IllegalStateException.class);
      ReportQueue other = b.journal(journal.reopen()).build();
      assertThat(other.restore()).isEqualTo(1);
      assertThatThrownBy(other::restore).isInstanceOf(IllegalStateException.class);
    }

    @Test
    @DisplayName("events that expired while the queue was down are discarded on restore")
    void expiredOnRestore() {
      ReportQueue.Builder b = builder();
      ReportQueue queue = b.build();
      queue.enqueue(new ReportEvent("otp", "otp", "1", Priority.NORMAL,
          clock.instant().plusSeconds(30)));
      queue.enqueue(normal("keep"));
      clock.advance(Duration.ofMinutes(1));
      ReportQueue restarted = restarted(b);
      assertThat(restarted.pendingIds()).containsExactly("keep");
      assertThat(restarted.stats().expired()).isEqualTo(1);
      assertThat(restarted.enqueue(normal("otp")).reason()).isEqualTo(Reason.DUPLICATE);
    }

    @Test
    @DisplayName("every change is recoverable: after each step a restarted queue agrees")
    void everyChangeRecoverable() {
      everyStepRecoverable(journal, () -> journal.reopen());
    }

    @Test
    @DisplayName("every change is recoverable from a FileJournal too, across simulated crashes")
    void everyChangeRecoverableFromFile() throws IOException {
      Path dir = Files.createTempDirectory("relaykit-queue-");
      List<FileJournal> opened = new ArrayList<>();
      try {
        FileJournal first = FileJournal.builder(dir).build();
        opened.add(first);
        everyStepRecoverable(first, () -> {
          // Flush, then crash: group-committed changes are durable once flushed.
          opened.get(opened.size() - 1).flush();
          opened.get(opened.size() - 1).crash(); // a crashed process holds no lock
          FileJournal next = FileJournal.builder(dir).build();
          opened.add(next);
          return next;
        });
      } finally {
        opened.forEach(FileJournal::crash);
        try (Stream<Path> files = Files.walk(dir)) {
          for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
            Files.deleteIfExists(p);
          }
        }
      }
    }

    @Test
    @DisplayName("on a FileJournal, critical events enqueued by concurrent producers survive a crash and share fsyncs")
    void criticalOnFileJournal() throws Exception {
      Path dir = Files.createTempDirectory("relaykit-queue-critical-");
      FileJournal first = FileJournal.builder(dir).commitInterval(Duration.ofHours(1)).build();
      FileJournal second = null;
      int producers = 4;
      int perProducer = 50;
      try {
        ReportQueue queue = ReportQueue.builder().clock(clock).journal(first).capacity(1_000)
            .build();
        queue.restore();
        ExecutorService pool = Executors.newFixedThreadPool(producers);
        CountDownLatch start = new CountDownLatch(1);
        List<Future<?>> futures = new ArrayList<>();
        for (int p = 0; p < producers; p++) {
          int producer = p;
          futures.add(pool.submit(() -> {
            start.await();
            for (int i = 0; i < perProducer; i++) {
              queue.enqueue(event("c" + producer + "-" + i, Priority.CRITICAL));
            }
            return null;
          }));
        }
        start.countDown();
        for (Future<?> f : futures) {
          f.get(60, TimeUnit.SECONDS);
        }
        pool.shutdown();
        queue.enqueue(event("normal-unsynced", Priority.NORMAL));
        long syncs = first.syncCount();
        first.crash();

        second = FileJournal.builder(dir).build();
        ReportQueue restarted = ReportQueue.builder().clock(clock).journal(second)
            .capacity(1_000).build();
        assertThat(restarted.restore()).isEqualTo(producers * perProducer);
        assertThat(restarted.pendingIds()).doesNotContain("normal-unsynced");
        assertThat(syncs).as("fsyncs for %d critical enqueues", producers * perProducer)
            .isPositive().isLessThan(producers * perProducer);
      } finally {
        first.crash();
        if (second != null) {
          second.crash();
        }
        try (Stream<Path> files = Files.walk(dir)) {
          for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
            Files.deleteIfExists(p);
          }
        }
      }
    }

    private void everyStepRecoverable(QueueJournal live,
        java.util.function.Supplier<QueueJournal> reopen) {
      ReportQueue.Builder b = ReportQueue.builder().clock(clock).capacity(4).maxAttempts(2)
          .dedupeWindow(Duration.ofHours(1), 100);
      ReportQueue queue = b.journal(live).build();
      queue.restore();
      // A restart turns in-flight events back into pending ones, so every step that needs an
      // event in flight drains first.
      List<Consumer<ReportQueue>> steps = List.of(
          q -> q.enqueue(event("a", Priority.LOW)),
          q -> q.enqueue(event("b", Priority.NORMAL)),
          q -> q.enqueue(event("d", Priority.NORMAL)),
          q -> q.enqueue(event("e", Priority.CRITICAL)),
          q -> q.enqueue(new ReportEvent("c", "otp", "1", Priority.CRITICAL,
              clock.instant().plusSeconds(5))), // full: evicts a
          q -> {
            q.drainBatch();
            q.ack(List.of("e"));
          },
          q -> {
            q.drainBatch();
            q.nack(List.of("b"), true);
          },
          q -> {
            q.drainBatch();
            q.nack(List.of("d"), false);
          },
          q -> {
            q.drainBatch();
            q.nack(List.of("c"), true);
          },
          q -> {
            clock.advance(Duration.ofSeconds(6));
            q.drainBatch(); // c expires, b drains
          },
          q -> {
            q.drainBatch();
            q.nack(List.of("b"), true); // out of attempts
          },
          q -> q.purgeDead(List.of("d")),
          q -> q.replayDead(List.of("b")),
          q -> clock.advance(Duration.ofHours(2)),
          q -> q.enqueue(event("e", Priority.NORMAL))); // window passed: accepted again
      for (int i = 0; i < steps.size(); i++) {
        steps.get(i).accept(queue);
        ReportQueue restored = b.journal(reopen.get()).build();
        restored.restore();
        String step = "after step " + (i + 1);
        List<String> expectedPending = new ArrayList<>(queue.pendingIds());
        expectedPending.addAll(queue.inflightIds());
        assertThat(restored.pendingIds()).as(step)
            .containsExactlyInAnyOrderElementsOf(expectedPending);
        assertThat(restored.deadIds()).as(step).containsExactlyElementsOf(queue.deadIds());
        assertThat(restored.stats().seen()).as(step).isEqualTo(queue.stats().seen());
        for (String id : expectedPending) {
          assertThat(restored.enqueue(normal(id)).reason()).as(step + ": " + id)
              .isEqualTo(Reason.DUPLICATE);
        }
        // Continue on a restored queue, so the next step also checks recovery of recovery.
        queue = b.journal(reopen.get()).build();
        queue.restore();
      }
      assertThat(queue.pendingIds()).as("b was replayed").containsExactly("b", "e");
      assertThat(queue.deadIds()).isEmpty();
      assertThat(queue.stats().seen()).as("the window passed for b").isEqualTo(1);
    }
  }

  @Nested
  @DisplayName("bad input")
  class BadInput {

    @Test
    @DisplayName("an id longer than 512 characters (a megabyte) is refused naming eventId, whatever the journal: ids are persisted and remembered outside maxBytes")
    void hugeIdRefused() {
      String huge = "x".repeat(1 << 20);
      assertThatThrownBy(() -> new ReportEvent(huge, "n", "p"))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("eventId")
          .hasMessageContaining("512");
      ReportQueue queue = ReportQueue.builder().build();
      String longest = "y".repeat(512);
      assertThat(queue.enqueue(new ReportEvent(longest, "n", "p")).accepted()).isTrue();
      assertThat(queue.drainBatch()).extracting(QueuedEvent::eventId).containsExactly(longest);
    }

    @Test
    @DisplayName("blank ids and names, empty payloads and null priorities are refused naming the field")
    void invalidEvents() {
      assertThatThrownBy(() -> new ReportEvent(" ", "n", "p"))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("eventId");
      assertThatThrownBy(() -> new ReportEvent(null, "n", "p"))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("eventId");
      assertThatThrownBy(() -> new ReportEvent("\u2003", "n", "p"))
          .as("an em space is whitespace").isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("eventId");
      assertThatThrownBy(() -> new ReportEvent("id", "\t \n", "p"))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("name");
      assertThat(new ReportEvent(" x", "\u00A0", "p").eventId()).as("not blank").isEqualTo(" x");
      assertThatThrownBy(() -> new ReportEvent("id", "", "p"))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("name");
      assertThatThrownBy(() -> new ReportEvent("id", "n", ""))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("payload");
      assertThatThrownBy(() -> new ReportEvent("id", "n", "p", null, null))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("priority");
      ReportQueue queue = builder().build();
      assertThatThrownBy(() -> queue.enqueue(null))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("event");
      assertThatThrownBy(() -> queue.ack(null))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("eventIds");
      assertThatThrownBy(() -> queue.nack(List.of(), true, Duration.ofSeconds(-1), null))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("minDelay");
      assertThatThrownBy(() -> queue.drainBatch(null))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at");
      assertThat(queue.stats().pending()).isZero();
    }

    @Test
    @DisplayName("ids, names and payloads with an unpaired surrogate are refused naming the field and index: they would collide after a restart")
    void unpairedSurrogates() {
      assertThatThrownBy(() -> new ReportEvent("pay-\uD83D", "n", "p"))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("eventId")
          .hasMessageContaining("index 4").hasMessageContaining("U+D83D");
      assertThatThrownBy(() -> new ReportEvent("pay-\uDE00", "n", "p"))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("eventId");
      assertThatThrownBy(() -> new ReportEvent("id", "n\uD800", "p"))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("name");
      assertThatThrownBy(() -> new ReportEvent("id", "n", "{\"x\":\"\uDFFF\"}"))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("payload");
      ReportQueue queue = builder().build();
      assertThat(queue.enqueue(new ReportEvent("pay-\uD83D\uDE00", "n", "💳")).accepted())
          .as("a surrogate pair is a character like any other").isTrue();
      assertThat(restarted(builder()).pendingIds()).containsExactly("pay-\uD83D\uDE00");
    }

    @Test
    @DisplayName("ids and names holding U+0000 are refused naming the field and index (a PostgreSQL text column cannot hold it); payloads may hold it")
    void nulChars() {
      assertThatThrownBy(() -> new ReportEvent("pay\u0000", "n", "p"))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("eventId")
          .hasMessageContaining("U+0000").hasMessageContaining("index 3");
      assertThatThrownBy(() -> new ReportEvent("id", "\u0000n", "p"))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("name");
      ReportQueue queue = builder().build();
      assertThat(queue.enqueue(new ReportEvent("id", "n", "{\"x\":\"\u0000\"}")).accepted())
          .as("a payload is stored as bytes: U+0000 in it is fine").isTrue();
      assertThat(restarted(builder()).pendingIds()).containsExactly("id");
    }

    @Test
    @DisplayName("a dead reason holding U+0000 is stored with U+FFFD in its place, not refused")
    void reasonWithNul() {
      ReportQueue queue = builder().build();
      queue.enqueue(normal("a"));
      queue.drainBatch();
      queue.nack(List.of("a"), false, Duration.ZERO, "server said \u0000!");
      assertThat(queue.deadReason("a")).contains("server said \uFFFD!");
      assertThat(journal.reopen().load().deadReasons()).containsEntry("a", "server said \uFFFD!");
    }

    @Test
    @DisplayName("a dead reason with an unpaired surrogate is stored with U+FFFD in its place, not refused")
    void reasonWithSurrogate() {
      ReportQueue queue = builder().build();
      queue.enqueue(normal("a"));
      queue.drainBatch();
      queue.nack(List.of("a"), false, Duration.ZERO, "server said \uD800!");
      assertThat(queue.deadReason("a")).contains("server said \uFFFD!");
      assertThat(journal.reopen().load().deadReasons()).containsEntry("a", "server said \uFFFD!");
    }

    @Test
    @DisplayName("invalid configuration is refused naming the field and the value")
    void invalidConfig() {
      assertInvalid(ReportQueue.builder().capacity(0), "capacity", "0");
      assertInvalid(ReportQueue.builder().maxBytes(0), "maxBytes", "0");
      assertInvalid(ReportQueue.builder().batchSize(-1), "batchSize", "-1");
      assertInvalid(ReportQueue.builder().maxAttempts(0), "maxAttempts", "0");
      assertInvalid(ReportQueue.builder().backoff(null), "backoff", "null");
      assertInvalid(ReportQueue.builder().dropPolicy(null), "dropPolicy", "null");
      assertInvalid(ReportQueue.builder().dedupeWindow(Duration.ZERO, 10), "dedupeWindow",
          "PT0S");
      assertInvalid(ReportQueue.builder().dedupeWindow(Duration.ofHours(1), 0), "dedupeMaxIds",
          "0");
      assertInvalid(ReportQueue.builder().deadLetters(0, 10), "maxDeadLetters", "0");
      assertInvalid(ReportQueue.builder().deadLetters(10, 0), "maxDeadBytes", "0");
      assertInvalid(ReportQueue.builder().clock(null), "clock", "null");
      assertInvalid(ReportQueue.builder().listener(null), "listener", "null");
      assertInvalid(ReportQueue.builder().name(" "), "name", "blank");
    }

    private void assertInvalid(ReportQueue.Builder b, String field, String value) {
      assertThatThrownBy(b::build).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining(field).hasMessageContaining(value);
    }

    @Test
    @DisplayName("the defaults are the documented ones")
    void defaults() {
      ReportQueue queue = ReportQueue.builder().clock(clock).build();
      assertThat(queue.batchSize()).isEqualTo(20);
      for (int i = 0; i < 100; i++) {
        assertThat(queue.enqueue(normal("e" + i)).accepted()).isTrue();
      }
      assertThat(queue.enqueue(normal("e100")).reason()).isEqualTo(Reason.QUEUE_FULL);
      ReportQueue bytes = ReportQueue.builder().clock(clock).build();
      assertThat(bytes.enqueue(new ReportEvent("huge", "n", "x".repeat(64 * 1024 * 1024 + 1)))
          .reason()).as("payload bytes are bounded by default (64 MiB)")
          .isEqualTo(Reason.TOO_LARGE);
      List<QueuedEvent> batch = queue.drainBatch();
      assertThat(batch).hasSize(20);
      queue.nack(List.of(batch.get(0).eventId()), true);
      assertThat(queue.nextReadyAt()).contains(clock.instant());
      clock.advance(Duration.ofSeconds(1));
      // 4 more failures go to the dead letters after 5 attempts.
      String id = batch.get(0).eventId();
      for (int attempt = 2; attempt <= 5; attempt++) {
        queue.ack(List.of()); // no-op
        List<QueuedEvent> again = queue.drainBatch(Instant.MAX.minusSeconds(1));
        assertThat(ids(again)).contains(id);
        queue.nack(List.of(id), true);
      }
      assertThat(queue.deadIds()).containsExactly(id);
    }
  }

  @Nested
  @DisplayName("arrival order, retries, eviction and expiry inside a lane")
  class ArrivalOrder {

    @Test
    @DisplayName("an expiring event in the middle of a lane leaves it; its neighbours drain in order")
    void expiryInTheMiddle() {
      ReportQueue queue = builder().build();
      queue.enqueue(normal("a"));
      queue.enqueue(new ReportEvent("otp", "otp", "1", Priority.NORMAL,
          clock.instant().plusSeconds(5)));
      queue.enqueue(normal("b"));
      assertThat(queue.pendingIds()).containsExactly("a", "otp", "b");
      clock.advance(Duration.ofSeconds(5));
      assertThat(ids(queue.drainBatch())).containsExactly("a", "b");
      assertThat(queue.stats().expired()).isEqualTo(1);
      queue.enqueue(normal("c"));
      assertThat(ids(queue.drainBatch())).containsExactly("c");
    }

    @Test
    @DisplayName("retries that came due out of arrival order drain by arrival, before newer fresh events")
    void dueRetriesByArrival() {
      ReportQueue queue = builder().backoff(Backoff.fixed(Duration.ofSeconds(1))).build();
      for (String id : List.of("a", "b", "c", "d")) {
        queue.enqueue(normal(id));
      }
      queue.drainBatch();
      queue.ack(List.of("b", "d"));
      queue.nack(List.of("c"), true); // due at +1 s
      clock.advance(Duration.ofMillis(100));
      queue.nack(List.of("a"), true); // due at +1.1 s, but older than c
      queue.enqueue(normal("e"));
      // Waiting retries are listed by age among the ready, and do not block them.
      assertThat(queue.pendingIds()).containsExactly("a", "c", "e");
      assertThat(queue.readyCount(clock.instant())).isEqualTo(1);
      clock.advance(Duration.ofSeconds(1));
      assertThat(queue.readyCount(clock.instant())).isEqualTo(3);
      queue.enqueue(normal("f"));
      assertThat(queue.pendingIds()).containsExactly("a", "c", "e", "f");
      assertThat(ids(queue.drainBatch())).containsExactly("a", "c", "e", "f");
    }

    @Test
    @DisplayName("a due retry is merged with the fresh events by age, batch after batch")
    void dueRetryAcrossBatches() {
      ReportQueue queue = builder().batchSize(2).backoff(Backoff.fixed(Duration.ofSeconds(1)))
          .build();
      queue.enqueue(normal("f1"));
      queue.enqueue(normal("f2"));
      queue.enqueue(normal("f3"));
      assertThat(ids(queue.drainBatch())).containsExactly("f1", "f2");
      queue.nack(List.of("f2"), true);
      queue.enqueue(normal("f4"));
      clock.advance(Duration.ofSeconds(1));
      assertThat(ids(queue.drainBatch())).containsExactly("f2", "f3");
      assertThat(ids(queue.drainBatch())).containsExactly("f4");
    }

    @Test
    @DisplayName("DROP_OLDEST evicts the oldest event of the lowest non-empty lane even when it is a waiting retry")
    void dropOldestWaitingRetry() {
      ReportQueue queue = builder().capacity(3).dropPolicy(DropPolicy.DROP_OLDEST).build();
      queue.enqueue(normal("n1"));
      queue.drainBatch();
      queue.nack(List.of("n1"), true);
      queue.enqueue(normal("n2"));
      queue.enqueue(event("c1", Priority.CRITICAL));
      EnqueueResult r = queue.enqueue(event("l1", Priority.LOW));
      assertThat(r.droppedIds()).as("older than n2, the head of its lane's ready events")
          .containsExactly("n1");
      assertThat(queue.pendingIds()).containsExactly("c1", "n2", "l1");
      assertThat(queue.nextReadyAt()).contains(clock.instant());
      clock.advance(Duration.ofSeconds(1));
      assertThat(ids(queue.drainBatch())).containsExactly("c1", "n2", "l1");
      assertThat(queue.nextReadyAt()).as("the evicted retry is not scheduled any more").isEmpty();
      assertThat(journal.reopen().load().pending()).extracting(QueuedEvent::eventId)
          .containsExactlyInAnyOrder("n2", "c1", "l1");
      assertThat(stages("n1")).endsWith(Stage.RETRIED, Stage.DROPPED);
      queue.ack(List.of("c1"));
      assertThat(queue.enqueue(normal("n1")).reason()).as("dropped, so not seen")
          .isEqualTo(Reason.OK);
    }

    @Test
    @DisplayName("DROP_OLDEST empties the lowest lane oldest first before it takes from the next")
    void dropOldestInTurn() {
      ReportQueue queue = builder().capacity(4).dropPolicy(DropPolicy.DROP_OLDEST)
          .maxBytes(8).build();
      queue.enqueue(new ReportEvent("l1", "n", "11", Priority.LOW, null));
      queue.enqueue(new ReportEvent("c1", "n", "22", Priority.CRITICAL, null));
      queue.enqueue(new ReportEvent("l2", "n", "33", Priority.LOW, null));
      queue.enqueue(new ReportEvent("c2", "n", "44", Priority.CRITICAL, null));
      EnqueueResult r = queue.enqueue(new ReportEvent("n1", "n", "555555", Priority.NORMAL, null));
      assertThat(r.droppedIds()).containsExactly("l1", "l2", "c1");
      assertThat(queue.pendingIds()).containsExactly("c2", "n1");
      assertThat(queue.readyCount(clock.instant())).isEqualTo(2);
      assertThat(queue.stats().bytes()).isEqualTo(8);
    }

    @Test
    @DisplayName("DROP_LOWEST_PRIORITY evicts a due retry before a newer fresh event of its lane")
    void lowestPriorityEvictsDueRetry() {
      ReportQueue queue = builder().capacity(2).build();
      queue.enqueue(event("l1", Priority.LOW));
      queue.drainBatch();
      queue.nack(List.of("l1"), true);
      clock.advance(Duration.ofSeconds(1));
      assertThat(queue.readyCount(clock.instant())).isEqualTo(1);
      queue.enqueue(event("l2", Priority.LOW));
      EnqueueResult r = queue.enqueue(event("c", Priority.CRITICAL));
      assertThat(r.droppedIds()).containsExactly("l1");
      assertThat(queue.readyCount(clock.instant())).isEqualTo(2);
      assertThat(ids(queue.drainBatch())).containsExactly("c", "l2");
    }

    @Test
    @DisplayName("a due retry that expires is discarded from among the ready")
    void dueRetryExpires() {
      ReportQueue queue = builder().backoff(Backoff.fixed(Duration.ofSeconds(1))).build();
      queue.enqueue(new ReportEvent("x", "otp", "1", Priority.NORMAL,
          clock.instant().plusMillis(1500)));
      queue.enqueue(normal("y"));
      queue.drainBatch();
      queue.nack(List.of("x", "y"), true);
      clock.advance(Duration.ofSeconds(1));
      assertThat(queue.readyCount(clock.instant())).isEqualTo(2);
      clock.advance(Duration.ofMillis(500));
      assertThat(ids(queue.drainBatch())).containsExactly("y");
      assertThat(queue.stats()).extracting(QueueStats::expired, QueueStats::pending)
          .containsExactly(1L, 0);
    }

    @Test
    @DisplayName("age is arrival order: a clock stepping back reorders neither drains nor evictions")
    void clockStepBack() {
      AtomicReference<Instant> now = new AtomicReference<>(FakeClock.EPOCH);
      InstantSource steppy = now::get;
      ReportQueue queue = ReportQueue.builder().clock(steppy).journal(journal).capacity(2)
          .dropPolicy(DropPolicy.DROP_OLDEST).build();
      queue.enqueue(normal("first"));
      now.set(FakeClock.EPOCH.minus(Duration.ofHours(1)));
      queue.enqueue(normal("second"));
      assertThat(queue.pendingIds()).containsExactly("first", "second");
      assertThat(queue.enqueue(normal("third")).droppedIds()).containsExactly("first");
      assertThat(ids(queue.drainBatch())).containsExactly("second", "third");
      assertThat(queue.enqueue(normal("second")).reason()).as("still seen")
          .isEqualTo(Reason.DUPLICATE);
    }

    @Test
    @DisplayName("restore keeps arrival order: waiting retries wait, in-flight and due ones drain by age")
    void restoreOrder() {
      ReportQueue.Builder b = builder().backoff(Backoff.fixed(Duration.ofSeconds(1)));
      ReportQueue queue = b.build();
      for (String id : List.of("a", "b", "c", "d")) {
        queue.enqueue(normal(id));
      }
      queue.enqueue(event("e", Priority.LOW));
      queue.drainBatch();
      queue.nack(List.of("b"), true);

      ReportQueue waiting = restarted(b);
      assertThat(waiting.pendingIds()).containsExactly("a", "b", "c", "d", "e");
      waiting.enqueue(normal("f"));
      assertThat(ids(waiting.drainBatch())).containsExactly("a", "c", "d", "f", "e");

      clock.advance(Duration.ofSeconds(1));
      ReportQueue due = restarted(b);
      due.enqueue(normal("g"));
      assertThat(ids(due.drainBatch())).containsExactly("a", "b", "c", "d", "f", "g", "e");
    }

    @Test
    @DisplayName("an id dropped from the middle of the dedupe window leaves a hole the count skips")
    void windowHole() {
      ReportQueue queue = builder().capacity(3).dedupeWindow(Duration.ofDays(1), 3).build();
      queue.enqueue(event("a", Priority.NORMAL));
      queue.enqueue(event("b", Priority.LOW));
      queue.enqueue(event("c", Priority.NORMAL));
      assertThat(queue.enqueue(event("d", Priority.CRITICAL)).droppedIds()).containsExactly("b");
      assertThat(queue.stats().seen()).isEqualTo(3);
      queue.ack(ids(queue.drainBatch()));
      queue.enqueue(event("e", Priority.NORMAL)); // the window holds c, d, e: a is forgotten
      assertThat(queue.stats().seen()).isEqualTo(3);
      assertThat(queue.enqueue(event("c", Priority.NORMAL)).reason()).isEqualTo(Reason.DUPLICATE);
      assertThat(journal.reopen().load().seen()).containsOnlyKeys("c", "d", "e");
      assertThat(queue.enqueue(event("b", Priority.LOW)).reason()).as("dropped: never seen")
          .isEqualTo(Reason.OK);
      assertThat(queue.enqueue(event("a", Priority.LOW)).reason()).as("left the window")
          .isEqualTo(Reason.OK);
      assertThat(queue.stats().seen()).isEqualTo(3);
    }

    @Test
    @DisplayName("payload bytes count UTF-8 exactly: ASCII runs, 2-, 3- and 4-byte characters")
    void payloadBytes() {
      Map<String, Integer> cases = Map.of(
          "abcdefgh", 8,
          "abcdeé", 7,
          "abcd\u20ACxyz", 10,
          "ab\u20AC\uD83D\uDE00x", 10,
          "é", 2);
      ReportQueue queue = builder().capacity(100).build();
      long total = 0;
      int i = 0;
      for (Map.Entry<String, Integer> c : cases.entrySet()) {
        ReportEvent e = new ReportEvent("p" + i++, "n", c.getKey(), Priority.NORMAL, null);
        assertThat(QueuedEvent.accepted(e, clock.instant()).payloadBytes()).as(c.getKey())
            .isEqualTo(c.getValue());
        queue.enqueue(e);
        total += c.getValue();
      }
      assertThat(queue.stats().bytes()).isEqualTo(total);
    }
  }

  @Nested
  @DisplayName("concurrency")
  class Concurrency {

    @Test
    @DisplayName("producers and a drainer acking and nacking at once lose and duplicate nothing")
    void stress() throws Exception {
      int producers = 4;
      int perProducer = 2_000;
      ReportQueue queue = builder().capacity(producers * perProducer).batchSize(50)
          .maxAttempts(1_000).backoff(Backoff.fixed(Duration.ofMillis(1))).build();
      Map<String, AtomicInteger> acked = new ConcurrentHashMap<>();
      Set<String> inFlightNow = ConcurrentHashMap.newKeySet();
      AtomicBoolean doubleDelivery = new AtomicBoolean();
      ExecutorService pool = Executors.newFixedThreadPool(producers + 1);
      CountDownLatch start = new CountDownLatch(1);
      AtomicInteger rejected = new AtomicInteger();
      try {
        List<Future<?>> futures = new ArrayList<>();
        for (int p = 0; p < producers; p++) {
          int producer = p;
          futures.add(pool.submit(() -> {
            start.await();
            Priority[] priorities = Priority.values();
            for (int i = 0; i < perProducer; i++) {
              ReportEvent e = event("p" + producer + "-" + i, priorities[i % 3]);
              if (!queue.enqueue(e).accepted()) {
                rejected.incrementAndGet();
              }
              if (i % 7 == 0) {
                queue.enqueue(e); // a duplicate that must be refused
              }
            }
            return null;
          }));
        }
        Future<?> drainer = pool.submit(() -> {
          start.await();
          Random random = new Random(1);
          int total = producers * perProducer;
          while (acked.size() < total) {
            clock.advance(Duration.ofMillis(1));
            List<QueuedEvent> batch = queue.drainBatch();
            List<String> ok = new ArrayList<>();
            List<String> retry = new ArrayList<>();
            for (QueuedEvent e : batch) {
              if (!inFlightNow.add(e.eventId())) {
                doubleDelivery.set(true);
              }
              (random.nextInt(4) == 0 ? retry : ok).add(e.eventId());
            }
            retry.forEach(inFlightNow::remove);
            queue.nack(retry, true);
            ok.forEach(inFlightNow::remove);
            queue.ack(ok);
            ok.forEach(id -> acked.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet());
            if (Thread.currentThread().isInterrupted()) {
              return null;
            }
          }
          return null;
        });
        start.countDown();
        for (Future<?> f : futures) {
          f.get(60, TimeUnit.SECONDS);
        }
        drainer.get(60, TimeUnit.SECONDS);
      } finally {
        pool.shutdownNow();
      }
      assertThat(rejected.get()).isZero();
      assertThat(doubleDelivery.get()).as("an event was drained while already in flight")
          .isFalse();
      assertThat(acked).hasSize(producers * perProducer);
      assertThat(acked.values()).allSatisfy(n -> assertThat(n.get()).isEqualTo(1));
      assertThat(queue.stats()).isEqualTo(new QueueStats(0, 0, producers * perProducer, 0, 0, 0,
          0, 0, 0));
      JournalState stored = journal.reopen().load();
      assertThat(stored.pending()).isEmpty();
      assertThat(stored.seen()).hasSize(producers * perProducer);
    }
  }
}
