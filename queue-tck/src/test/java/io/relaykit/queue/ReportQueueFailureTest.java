package io.relaykit.queue;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleEvent.Stage;
import io.relaykit.monitor.LifecycleLog;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.queue.EnqueueResult.Reason;
import io.relaykit.queue.JournalException.Outcome;
import io.relaykit.tck.FakeClock;
import io.relaykit.tck.FaultyJournal;
import io.relaykit.tck.FaultyJournal.Call;
import io.relaykit.tck.FaultyJournal.Fault;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * The journal-first rule, operation by operation: when the journal throws, the queue is exactly
 * as before, the caller gets a JournalException naming the operation, and what the journal holds
 * agrees with the queue (checked by restoring a new queue from it).
 */
@DisplayName("ReportQueue when its journal fails")
class ReportQueueFailureTest {

  private final FakeClock clock = new FakeClock();
  private final InMemoryJournal storage = new InMemoryJournal();
  private final FaultyJournal journal = new FaultyJournal(storage);
  private final LifecycleLog log = new LifecycleLog(1_000);

  private ReportQueue.Builder builder() {
    return ReportQueue.builder().clock(clock).journal(journal).listener(log);
  }

  private static ReportEvent event(String id, Priority priority) {
    return new ReportEvent(id, "test.event", "payload-" + id, priority, null);
  }

  private static ReportEvent normal(String id) {
    return event(id, Priority.NORMAL);
  }

  private static List<String> ids(List<QueuedEvent> events) {
    return events.stream().map(QueuedEvent::eventId).toList();
  }

  /** What the journal holds: pending ids, as a restarted queue would load them. */
  private List<String> journaledPending() {
    return ids(storage.reopen().load().pending());
  }

  private List<String> journaledDead() {
    return ids(storage.reopen().load().dead());
  }

  /** A new queue restored from the journal's storage, as after a crash. */
  private ReportQueue restarted() {
    ReportQueue q = ReportQueue.builder().clock(clock).journal(storage.reopen()).build();
    q.restore();
    return q;
  }

  private static void assertOutcome(Throwable e, Outcome outcome, String... mentions) {
    assertThat(e).isInstanceOf(JournalException.class);
    assertThat(((JournalException) e).outcome()).isEqualTo(outcome);
    assertThat(e.getMessage()).contains(mentions);
  }

  @Nested
  @DisplayName("enqueue")
  class Enqueue {

    @Test
    @DisplayName("an append refused before writing changes nothing and names the operation and id")
    void refusedAppend() {
      ReportQueue queue = builder().build();
      queue.enqueue(normal("a"));
      QueueStats before = queue.stats();
      journal.failNext(Call.APPEND, Fault.BEFORE_WRITE);
      Throwable e = catchFrom(() -> queue.enqueue(normal("b")));
      assertOutcome(e, Outcome.NOT_RECORDED, "report-queue", "enqueue of b");
      assertThat(queue.stats()).isEqualTo(before);
      assertThat(queue.pendingIds()).containsExactly("a");
      assertThat(journaledPending()).containsExactly("a");
      assertThat(queue.enqueue(normal("b")).accepted()).as("a retry is accepted").isTrue();
    }

    @Test
    @DisplayName("an append written but reported as failed is not queued here; it may come back after a restart, once, and a retry with the same id never makes two")
    void unknownAppend() {
      ReportQueue queue = builder().build();
      journal.failNext(Call.APPEND, Fault.AFTER_WRITE);
      assertOutcome(catchFrom(() -> queue.enqueue(normal("b"))), Outcome.UNKNOWN, "enqueue of b");
      assertThat(queue.pendingIds()).isEmpty();
      assertThat(queue.enqueue(normal("b")).accepted()).isTrue();
      assertThat(restarted().pendingIds()).containsExactly("b");
    }

    @Test
    @DisplayName("DROP_OLDEST: when the journal refuses the new event, nothing is evicted (both survive before: the old one was lost)")
    void dropOldestRefused() {
      ReportQueue queue = builder().capacity(2).dropPolicy(DropPolicy.DROP_OLDEST).build();
      queue.enqueue(normal("old-1"));
      queue.enqueue(normal("old-2"));
      journal.refuseEvents(e -> e.eventId().equals("big"));
      assertThatThrownBy(() -> queue.enqueue(normal("big")))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("big");
      assertThat(queue.pendingIds()).containsExactly("old-1", "old-2");
      assertThat(queue.stats().dropped()).isZero();
      assertThat(log.history("old-1")).extracting(LifecycleEvent::stage)
          .containsExactly(Stage.ENQUEUED);
      assertThat(journaledPending()).containsExactly("old-1", "old-2");
      assertThat(restarted().pendingIds()).containsExactly("old-1", "old-2");
    }

    @Test
    @DisplayName("DROP_LOWEST_PRIORITY: when the atomic evict-and-append fails, the low event stays and the new one is not queued")
    void dropLowestFails() {
      ReportQueue queue = builder().capacity(1).build();
      queue.enqueue(event("low", Priority.LOW));
      journal.failNext(Call.RECORD_ATOMICALLY, Fault.BEFORE_WRITE);
      assertOutcome(catchFrom(() -> queue.enqueue(event("pay", Priority.CRITICAL))),
          Outcome.NOT_RECORDED, "enqueue of pay");
      assertThat(queue.pendingIds()).containsExactly("low");
      assertThat(journaledPending()).containsExactly("low");
      EnqueueResult r = queue.enqueue(event("pay", Priority.CRITICAL));
      assertThat(r.droppedIds()).containsExactly("low");
      assertThat(journaledPending()).containsExactly("pay");
      assertThat(storage.reopen().load().seen()).as("the dropped id is forgotten")
          .containsOnlyKeys("pay");
    }

    @Test
    @DisplayName("a critical event whose sync fails: the outcome is unknown, the event is queued and sent, and a retry with the same id is a DUPLICATE")
    void criticalSyncFails() {
      ReportQueue queue = builder().build();
      journal.failNext(Call.AWAIT_DURABLE, Fault.BEFORE_WRITE);
      Throwable e = catchFrom(() -> queue.enqueue(event("pay", Priority.CRITICAL)));
      assertOutcome(e, Outcome.UNKNOWN, "pay", "cannot prove it durable", "same id");
      assertThat(queue.pendingIds()).containsExactly("pay");
      assertThat(queue.enqueue(event("pay", Priority.CRITICAL)).reason())
          .isEqualTo(Reason.DUPLICATE);
      assertThat(ids(queue.drainBatch())).containsExactly("pay");
    }

    @Test
    @DisplayName("a full journal: a normal event is JOURNAL_FULL, counted and reported, nothing evicted; a critical one throws JournalFullException")
    void journalFull() {
      List<String> drops = new ArrayList<>();
      MetricsListener metrics = new MetricsListener() {
        @Override
        public void dropped(String destination, String reason, long count) {
          drops.add(reason);
        }
      };
      ReportQueue queue = builder().capacity(1).metrics(metrics).build();
      queue.enqueue(event("low", Priority.LOW));
      journal.failAlways(Call.APPEND, Fault.FULL).failAlways(Call.RECORD_ATOMICALLY, Fault.FULL);
      EnqueueResult r = queue.enqueue(event("n", Priority.NORMAL));
      assertThat(r.reason()).isEqualTo(Reason.JOURNAL_FULL);
      assertThat(r.accepted()).isFalse();
      assertThat(queue.pendingIds()).as("nothing evicted").containsExactly("low");
      assertThat(queue.stats().journalFull()).isEqualTo(1);
      assertThat(queue.stats().dropped()).isZero();
      assertThat(drops).containsExactly("journal-full");
      assertThat(log.history("n")).extracting(LifecycleEvent::stage)
          .containsExactly(Stage.DROPPED);
      assertThatThrownBy(() -> queue.enqueue(event("pay", Priority.CRITICAL)))
          .isInstanceOf(JournalFullException.class).hasMessageContaining("pay")
          .hasMessageContaining("nothing recorded");
      assertThat(queue.pendingIds()).containsExactly("low");
      journal.heal();
      assertThat(queue.enqueue(event("n", Priority.NORMAL)).accepted()).as("the same id later")
          .isTrue();
    }

    @Test
    @DisplayName("a forget that fails keeps the id in the dedupe window; a second one refuses enqueues until the journal forgets again")
    void forgetFails() {
      ReportQueue queue = builder().dedupeWindow(Duration.ofHours(1), 2).build();
      for (String id : List.of("a", "b")) {
        queue.enqueue(normal(id));
        queue.ack(ids(queue.drainBatch()));
      }
      journal.failAlways(Call.FORGET, Fault.BEFORE_WRITE);
      assertThat(queue.enqueue(normal("c")).accepted()).as("the enqueue itself was recorded")
          .isTrue();
      assertThat(queue.stats().seen()).as("one over the bound").isEqualTo(3);
      assertThat(queue.enqueue(normal("a")).reason()).as("a is still remembered")
          .isEqualTo(Reason.DUPLICATE);
      assertOutcome(catchFrom(() -> queue.enqueue(normal("d"))), Outcome.NOT_RECORDED,
          "enqueue of d", "dedupe window");
      assertThat(journaledPending()).containsExactly("c");
      journal.heal();
      assertThat(queue.enqueue(normal("d")).accepted()).isTrue();
      assertThat(queue.stats().seen()).isEqualTo(2);
      assertThat(storage.reopen().load().seen()).containsOnlyKeys("c", "d");
    }
  }

  @Nested
  @DisplayName("ack and nack")
  class Settle {

    @Test
    @DisplayName("an ack that fails leaves the event in flight, counted once; the caller's retry acks it once and stats never go negative")
    void ackRetried() {
      ReportQueue queue = builder().build();
      queue.enqueue(normal("a"));
      queue.enqueue(normal("b"));
      queue.drainBatch();
      journal.failNext(Call.RECORD_ATOMICALLY, Fault.BEFORE_WRITE);
      assertOutcome(catchFrom(() -> queue.ack(List.of("a", "b"))), Outcome.NOT_RECORDED,
          "ack of a", "none acked");
      assertThat(queue.inflightIds()).containsExactly("a", "b");
      assertThat(queue.stats().inflight()).isEqualTo(2);
      assertThat(queue.stats().pending()).isZero();
      assertThat(queue.ack(List.of("a", "b"))).isEqualTo(2);
      assertThat(queue.ack(List.of("a", "b"))).isZero();
      QueueStats s = queue.stats();
      assertThat(s.inflight()).isZero();
      assertThat(s.pending()).isZero();
      assertThat(s.bytes()).isZero();
      assertThat(journaledPending()).isEmpty();
    }

    @Test
    @DisplayName("an ack of several ids is one journal change: when it fails none is acked and all stay in flight, in the journal too; a retry acks each once")
    void ackAllOrNothing() {
      ReportQueue queue = builder().build();
      for (String id : List.of("a", "b", "c")) {
        queue.enqueue(normal(id));
      }
      queue.drainBatch();
      journal.failNext(Call.RECORD_ATOMICALLY, Fault.BEFORE_WRITE);
      assertOutcome(catchFrom(() -> queue.ack(List.of("a", "b", "c"))), Outcome.NOT_RECORDED,
          "ack of a and 2 more", "none acked");
      assertThat(queue.inflightIds()).containsExactly("a", "b", "c");
      assertThat(journaledPending()).containsExactly("a", "b", "c");
      assertThat(queue.ack(List.of("a", "b", "c", "a"))).isEqualTo(3);
      assertThat(journaledPending()).isEmpty();
    }

    @Test
    @DisplayName("an ack of several ids whose reply is lost (the journal removed them) leaves them in flight; the retry acks each once and the journal ends empty")
    void ackLostReply() {
      ReportQueue queue = builder().build();
      for (String id : List.of("a", "b")) {
        queue.enqueue(normal(id));
      }
      queue.drainBatch();
      journal.failNext(Call.RECORD_ATOMICALLY, Fault.AFTER_WRITE);
      assertThatThrownBy(() -> queue.ack(List.of("a", "b"))).isInstanceOf(JournalException.class);
      assertThat(queue.inflightIds()).containsExactly("a", "b");
      assertThat(queue.ack(List.of("a", "b"))).isEqualTo(2);
      assertThat(queue.stats().inflight()).isZero();
      assertThat(queue.stats().bytes()).isZero();
      assertThat(journaledPending()).isEmpty();
    }

    @Test
    @DisplayName("a nack whose reschedule fails leaves the event in flight, not stuck: pending and in flight stay consistent and the id is not a phantom duplicate")
    void nackRescheduleFails() {
      ReportQueue queue = builder().capacity(1).build();
      queue.enqueue(normal("a"));
      queue.drainBatch();
      journal.failNext(Call.RESCHEDULE, Fault.BEFORE_WRITE);
      assertOutcome(catchFrom(() -> queue.nack(List.of("a"), true)), Outcome.NOT_RECORDED,
          "nack of a");
      QueueStats s = queue.stats();
      assertThat(s.inflight()).isEqualTo(1);
      assertThat(s.pending()).isZero();
      assertThat(queue.inflightIds()).containsExactly("a");
      assertThat(queue.nack(List.of("a"), true).requeued()).isEqualTo(1);
      assertThat(queue.pendingIds()).containsExactly("a");
      assertThat(storage.reopen().load().pending().get(0).attempts()).isEqualTo(1);
    }

    @Test
    @DisplayName("a nack whose dead letter fails leaves the event in flight, not a dead letter")
    void nackDeadLetterFails() {
      ReportQueue queue = builder().build();
      queue.enqueue(normal("a"));
      queue.drainBatch();
      journal.failNext(Call.DEAD_LETTER, Fault.BEFORE_WRITE);
      assertOutcome(catchFrom(() -> queue.nack(List.of("a"), false)), Outcome.NOT_RECORDED,
          "nack of a");
      assertThat(queue.inflightIds()).containsExactly("a");
      assertThat(queue.deadIds()).isEmpty();
      assertThat(journaledDead()).isEmpty();
      assertThat(queue.nack(List.of("a"), false).dead()).isEqualTo(1);
      assertThat(journaledDead()).containsExactly("a");
    }

    @Test
    @DisplayName("an expiry that fails while draining drains nothing and never returns the expired event")
    void expiryFailsInDrain() {
      ReportQueue queue = builder().build();
      queue.enqueue(new ReportEvent("otp", "otp.sent", "123456", Priority.CRITICAL,
          clock.instant().plusSeconds(60)));
      queue.enqueue(normal("a"));
      clock.advance(Duration.ofMinutes(2));
      journal.failNext(Call.REMOVE, Fault.BEFORE_WRITE);
      assertOutcome(catchFrom(queue::drainBatch), Outcome.NOT_RECORDED, "expiry of otp");
      assertThat(queue.pendingIds()).containsExactly("otp", "a");
      assertThat(queue.stats().expired()).isZero();
      assertThat(ids(queue.drainBatch())).containsExactly("a");
      assertThat(queue.stats().expired()).isEqualTo(1);
      assertThat(journaledPending()).containsExactly("a");
    }
  }

  @Nested
  @DisplayName("dead letters and restore")
  class DeadAndRestore {

    private ReportQueue withDead(String id) {
      ReportQueue queue = builder().build();
      queue.enqueue(normal(id));
      queue.drainBatch();
      queue.nack(List.of(id), false);
      return queue;
    }

    @Test
    @DisplayName("a replay whose append fails keeps the dead letter, here and after a restart (before: purged first, so lost)")
    void replayFails() {
      ReportQueue queue = withDead("a");
      journal.failNext(Call.APPEND, Fault.BEFORE_WRITE);
      assertOutcome(catchFrom(() -> queue.replayDead(List.of("a"))), Outcome.NOT_RECORDED,
          "replayDead of a");
      assertThat(queue.deadIds()).containsExactly("a");
      assertThat(queue.pendingIds()).isEmpty();
      assertThat(restarted().deadIds()).containsExactly("a");
      journal.heal();
      assertThat(queue.replayDead(List.of("a"))).isEqualTo(1);
      assertThat(restarted().pendingIds()).containsExactly("a");
      assertThat(journaledDead()).isEmpty();
    }

    @Test
    @DisplayName("a purge that fails keeps the dead letter")
    void purgeFails() {
      ReportQueue queue = withDead("a");
      journal.failNext(Call.REMOVE, Fault.BEFORE_WRITE);
      assertOutcome(catchFrom(() -> queue.purgeDead(List.of("a"))), Outcome.NOT_RECORDED,
          "purgeDead of a");
      assertThat(queue.deadIds()).containsExactly("a");
      assertThat(queue.deadReason("a")).isPresent();
      assertThat(queue.purgeDead(List.of("a"))).isEqualTo(1);
      assertThat(journaledDead()).isEmpty();
    }

    @Test
    @DisplayName("a restore whose load fails changes nothing and can be called again")
    void restoreFails() {
      builder().build().enqueue(normal("a"));
      ReportQueue queue = builder().build();
      journal.failNext(Call.LOAD, Fault.BEFORE_WRITE);
      assertOutcome(catchFrom(queue::restore), Outcome.NOT_RECORDED, "restore");
      assertThat(queue.stats().pending()).isZero();
      assertThat(queue.restore()).isEqualTo(1);
      assertThat(queue.pendingIds()).containsExactly("a");
    }
  }

  @Nested
  @DisplayName("queries")
  class Queries {

    private long journalCalls() {
      long n = 0;
      for (Call c : Call.values()) {
        n += journal.calls(c);
      }
      return n;
    }

    @Test
    @DisplayName("stats, toString and readyCount change nothing and write nothing to the journal, even with ids due to leave the window and retries due later")
    void queriesWriteNothing() {
      ReportQueue queue = builder().dedupeWindow(Duration.ofSeconds(1), 2).build();
      queue.restore();
      queue.enqueue(normal("a"));
      queue.drainBatch();
      queue.ack(List.of("a"));
      queue.enqueue(normal("r"));
      queue.drainBatch();
      queue.nack(List.of("r"), true); // retry at +1 s (the default backoff)
      clock.advance(Duration.ofMillis(1500)); // "a" and "r" left the window by age, "r" is due
      queue.enqueue(normal("b"));
      queue.drainBatch(); // takes "b" and the due retry "r"
      queue.nack(List.of("r"), true); // attempt 2: retry at +2 s
      clock.advance(Duration.ofSeconds(2)); // "b" left the window by age too
      queue.enqueue(normal("c")); // trims the window: "a" forgotten
      queue.enqueue(normal("d"));
      queue.drainBatch(); // "c", "d" and the due retry "r"
      queue.ack(List.of("c")); // "c" stays seen: it is in the window
      clock.advance(Duration.ofSeconds(5)); // every id is older than the window now: "c" is due
      // to be forgotten, which a query must leave to the next change
      long before = journalCalls();

      QueueStats stats = queue.stats();
      String text = queue.toString();
      int readyLater = queue.readyCount(clock.instant().plusSeconds(60));
      int readyNow = queue.readyCount(clock.instant());

      assertThat(journalCalls()).as("journal calls made by the queries").isEqualTo(before);
      assertThat(stats.seen()).as("ids still in the window at the clock's time").isZero();
      assertThat(text).contains("pending=0", "inflight=3"); // "b", "d", "r"
      assertThat(readyNow).isZero();
      assertThat(readyLater).isZero();
      assertThat(queue.stats()).isEqualTo(stats);
      assertThat(journalCalls()).isEqualTo(before);
    }

    @Test
    @DisplayName("readyCount at a later time does not make a retry drain before its time")
    void readyCountDoesNotPromote() {
      ReportQueue queue = builder().build();
      queue.restore();
      queue.enqueue(normal("r"));
      queue.drainBatch();
      queue.nack(List.of("r"), true); // retry at +1 s
      assertThat(queue.readyCount(clock.instant().plusSeconds(2))).isEqualTo(1);
      assertThat(queue.readyCount(clock.instant())).isZero();
      assertThat(queue.drainBatch()).as("not due yet").isEmpty();
      assertThat(queue.nextReadyAt()).contains(clock.instant().plusSeconds(1));
      clock.advance(Duration.ofSeconds(1));
      assertThat(ids(queue.drainBatch())).containsExactly("r");
    }
  }

  private static Throwable catchFrom(Runnable r) {
    try {
      r.run();
    } catch (RuntimeException e) {
      return e;
    }
    throw new AssertionError("expected the call to throw");
  }
}
