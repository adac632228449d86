package io.relaykit.queue;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.retry.Backoff;
import io.relaykit.tck.FakeClock;
import io.relaykit.tck.FaultyJournal;
import io.relaykit.tck.FaultyJournal.Call;
import io.relaykit.tck.FaultyJournal.Fault;
import io.relaykit.tck.LogCapture;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** What the dispatcher does when the sender, the executor or the queue's journal fails. */
@DisplayName("ReportDispatcher when something fails")
class ReportDispatcherFailureTest {

  private final FakeClock clock = new FakeClock();
  private final InMemoryJournal storage = new InMemoryJournal();
  private final FaultyJournal journal = new FaultyJournal(storage);
  private final List<List<String>> sent = Collections.synchronizedList(new ArrayList<>());

  private ReportQueue queue(int batchSize) {
    return ReportQueue.builder().clock(clock).journal(journal).batchSize(batchSize)
        .backoff(Backoff.fixed(Duration.ofSeconds(1))).build();
  }

  private static void enqueue(ReportQueue queue, String... ids) {
    for (String id : ids) {
      assertThat(queue.enqueue(new ReportEvent(id, "test", "p-" + id)).accepted()).isTrue();
    }
  }

  private BatchSender recordingOk() {
    return batch -> {
      sent.add(batch.stream().map(QueuedEvent::eventId).toList());
      return BatchResult.allOk(batch);
    };
  }

  private ReportDispatcher.Builder direct(ReportQueue queue, BatchSender sender) {
    return ReportDispatcher.builder(queue, sender).clock(clock).sendExecutor(Runnable::run);
  }

  /** Throws {@code t}, checked or not, from a method that declares nothing. */
  @SuppressWarnings("unchecked")
  private static <T extends Throwable> RuntimeException sneaky(Throwable t) throws T {
    throw (T) t;
  }

  @Nested
  @DisplayName("a journal that fails the drain")
  class DrainFails {

    @Test
    @DisplayName("a failing drain is counted and backs off exponentially on the clock, capped at a minute, instead of retrying at once; the first good drain ends the pause")
    void backsOff() {
      ReportQueue queue = queue(2);
      queue.enqueue(new ReportEvent("x", "test", "p-x", Priority.NORMAL,
          clock.instant().plusSeconds(1)));
      enqueue(queue, "a");
      clock.advance(Duration.ofSeconds(1)); // "x" expired: a drain must journal its removal
      journal.failAlways(Call.REMOVE, Fault.BEFORE_WRITE);
      ReportDispatcher dispatcher = direct(queue, recordingOk()).build();

      long[] expectedPauses = {1, 2, 4, 8, 16, 32, 60, 60};
      for (int failure = 0; failure < expectedPauses.length; failure++) {
        assertThat(dispatcher.runOnce()).isZero();
        assertThat(dispatcher.drainFailures()).isEqualTo(failure + 1);
        assertThat(journal.calls(Call.REMOVE)).isEqualTo(failure + 1);
        Duration pause = Duration.ofSeconds(expectedPauses[failure]);
        clock.advance(pause.minusMillis(1));
        for (int i = 0; i < 3; i++) {
          assertThat(dispatcher.runOnce()).as("within the pause").isZero();
        }
        assertThat(journal.calls(Call.REMOVE)).as("no drain tried within a pause of " + pause)
            .isEqualTo(failure + 1);
        clock.advance(Duration.ofMillis(1));
      }
      assertThat(queue.pendingIds()).containsExactly("x", "a");
      assertThat(sent).isEmpty();

      journal.heal();
      assertThat(dispatcher.runOnce()).isEqualTo(1);
      assertThat(sent).containsExactly(List.of("a"));
      assertThat(queue.stats().expired()).isEqualTo(1);
      assertThat(dispatcher.drainFailures()).isEqualTo(expectedPauses.length);
    }

    @Test
    @DisplayName("flush tries once and throws the journal's failure instead of spinning; close leaves the events journaled")
    void flushAndClose() {
      ReportQueue queue = queue(2);
      queue.enqueue(new ReportEvent("x", "test", "p-x", Priority.NORMAL,
          clock.instant().plusSeconds(1)));
      enqueue(queue, "a");
      clock.advance(Duration.ofSeconds(1));
      journal.failAlways(Call.REMOVE, Fault.BEFORE_WRITE);
      ReportDispatcher dispatcher = direct(queue, recordingOk()).build();
      assertThatThrownBy(dispatcher::flush).isInstanceOf(JournalException.class)
          .hasMessageContaining("flush could not drain");
      assertThat(dispatcher.drainFailures()).isEqualTo(1);
      dispatcher.close(Duration.ofSeconds(30));
      assertThat(dispatcher.drainFailures()).isEqualTo(2);
      assertThat(sent).isEmpty();
      assertThat(ids(storage.reopen().load().pending())).containsExactly("x", "a");
    }
  }

  @Nested
  @DisplayName("a sender that throws")
  class SenderThrows {

    @Test
    @DisplayName("an Error from the sender retries the batch instead of stranding it in flight")
    void error() {
      ReportQueue queue = queue(2);
      int[] calls = {0};
      ReportDispatcher dispatcher = direct(queue, batch -> {
        if (calls[0]++ == 0) {
          throw new AssertionError("a bug in the sender");
        }
        return BatchResult.allOk(batch);
      }).build();
      enqueue(queue, "a", "b");
      assertThat(dispatcher.runOnce()).isEqualTo(1);
      assertThat(queue.inflightIds()).isEmpty();
      assertThat(queue.pendingIds()).containsExactly("a", "b");
      assertThat(dispatcher.inFlightBatches()).isZero();
      clock.advance(Duration.ofSeconds(5));
      assertThat(dispatcher.runOnce()).isEqualTo(1);
      assertThat(queue.stats().pending() + queue.stats().inflight()).isZero();
    }

    @Test
    @DisplayName("a checked exception thrown sneakily retries the batch too")
    void checked() {
      ReportQueue queue = queue(1);
      ReportDispatcher dispatcher = direct(queue, batch -> {
        throw ReportDispatcherFailureTest.<RuntimeException>sneaky(
            new IOException("connection reset"));
      }).build();
      enqueue(queue, "a");
      dispatcher.runOnce();
      assertThat(queue.inflightIds()).isEmpty();
      assertThat(queue.pendingIds()).containsExactly("a");
      assertThat(storage.reopen().load().pending().get(0).attempts())
          .as("a failed attempt, journaled").isEqualTo(1);
    }

    @Test
    @DisplayName("a VirtualMachineError is rethrown, after its batch was retried")
    void virtualMachineError() {
      ReportQueue queue = queue(1);
      ReportDispatcher dispatcher = direct(queue, batch -> {
        throw new OutOfMemoryError("simulated");
      }).build();
      enqueue(queue, "a");
      assertThatThrownBy(dispatcher::runOnce).isInstanceOf(OutOfMemoryError.class);
      assertThat(queue.pendingIds()).containsExactly("a");
      assertThat(dispatcher.inFlightBatches()).isZero();
    }
  }

  @Nested
  @DisplayName("a send that does not answer")
  class Timeout {

    @Test
    @DisplayName("is given up after sendTimeout on the clock: its events are retried, and its late answer is ignored and counted")
    void timeoutRequeuesAndIgnoresLateAnswer() {
      ReportQueue queue = queue(2);
      ArrayDeque<Runnable> tasks = new ArrayDeque<>();
      Executor manual = tasks::add;
      ReportDispatcher dispatcher = ReportDispatcher.builder(queue, recordingOk()).clock(clock)
          .sendExecutor(manual).sendTimeout(Duration.ofSeconds(30)).build();
      enqueue(queue, "a", "b");
      assertThat(dispatcher.runOnce()).isEqualTo(1);
      Runnable hung = tasks.poll();
      assertThat(queue.inflightIds()).containsExactly("a", "b");

      clock.advance(Duration.ofSeconds(29));
      dispatcher.runOnce();
      assertThat(dispatcher.timedOutSends()).as("not yet").isZero();
      clock.advance(Duration.ofSeconds(1));
      assertThat(dispatcher.runOnce()).as("nothing ready until the retry time").isZero();
      assertThat(dispatcher.timedOutSends()).isEqualTo(1);
      assertThat(dispatcher.inFlightBatches()).isZero();
      assertThat(queue.inflightIds()).isEmpty();
      assertThat(queue.pendingIds()).containsExactly("a", "b");

      clock.advance(Duration.ofSeconds(1));
      assertThat(dispatcher.runOnce()).as("sent again").isEqualTo(1);
      Runnable second = tasks.poll();
      assertThat(queue.inflightIds()).containsExactly("a", "b");

      hung.run(); // the first send answers at last: OK for both, but they were drained again
      assertThat(dispatcher.lateResults()).isEqualTo(1);
      assertThat(queue.inflightIds()).as("the late answer settles nothing")
          .containsExactly("a", "b");
      second.run();
      assertThat(queue.stats().pending() + queue.stats().inflight()).isZero();
      assertThat(sent).hasSize(2);
      assertThat(storage.reopen().load().pending()).isEmpty();
    }

    @Test
    @DisplayName("the default timeout is 60 s; a non-positive one is refused")
    void config() {
      ReportQueue queue = queue(1);
      ArrayDeque<Runnable> tasks = new ArrayDeque<>();
      ReportDispatcher dispatcher = ReportDispatcher.builder(queue, recordingOk()).clock(clock)
          .sendExecutor(tasks::add).build();
      enqueue(queue, "a");
      dispatcher.runOnce();
      clock.advance(Duration.ofSeconds(59));
      dispatcher.runOnce();
      assertThat(dispatcher.timedOutSends()).isZero();
      clock.advance(Duration.ofSeconds(1));
      dispatcher.runOnce();
      assertThat(dispatcher.timedOutSends()).isEqualTo(1);
      assertThatThrownBy(() -> ReportDispatcher.builder(queue, recordingOk())
          .sendTimeout(Duration.ZERO).build()).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("sendTimeout");
    }
  }

  @Nested
  @DisplayName("the queue's journal cannot record an outcome")
  class Unrecorded {

    @Test
    @DisplayName("the batch goes back to pending, is sent again after a pause that doubles, and is acked once the journal recovers")
    void ackFails() {
      ReportQueue queue = queue(2);
      ReportDispatcher dispatcher = direct(queue, recordingOk()).build();
      enqueue(queue, "a", "b");
      journal.failAlways(Call.RECORD_ATOMICALLY, Fault.BEFORE_WRITE); // one change for both acks
      dispatcher.runOnce();
      assertThat(queue.inflightIds()).as("not stuck in flight").isEmpty();
      assertThat(queue.pendingIds()).containsExactly("a", "b");
      assertThat(dispatcher.unrecordedOutcomes()).isEqualTo(2);
      assertThat(queue.nextReadyAt()).contains(clock.instant().plusSeconds(1));

      clock.advance(Duration.ofSeconds(1));
      dispatcher.runOnce();
      assertThat(sent).hasSize(2);
      assertThat(queue.nextReadyAt()).as("doubled").contains(clock.instant().plusSeconds(2));

      journal.heal();
      clock.advance(Duration.ofSeconds(2));
      dispatcher.runOnce();
      assertThat(sent).hasSize(3);
      assertThat(queue.stats().pending() + queue.stats().inflight()).isZero();
      assertThat(storage.reopen().load().pending()).isEmpty();
      assertThat(dispatcher.unrecordedOutcomes()).isEqualTo(4);
    }

    @Test
    @DisplayName("a nack that fails half way leaves what it recorded and sends the rest again")
    void nackFailsPartly() {
      ReportQueue queue = queue(3);
      ReportDispatcher dispatcher = direct(queue, batch -> BatchResult.builder()
          .ok("a").reject("b", "bad").retry("c").build()).build();
      enqueue(queue, "a", "b", "c");
      journal.failNext(Call.DEAD_LETTER, Fault.BEFORE_WRITE);
      dispatcher.runOnce();
      assertThat(queue.deadIds()).isEmpty();
      assertThat(queue.pendingIds()).as("a was acked; b and c back").containsExactly("b", "c");
      assertThat(storage.reopen().load().pending()).extracting(QueuedEvent::eventId)
          .containsExactly("b", "c");
    }
  }

  @Nested
  @DisplayName("an executor that rejects, and a closed dispatcher")
  class Closed {

    @Test
    @DisplayName("a batch the executor rejects was never sent: it goes back to pending without an attempt")
    void rejected() {
      ReportQueue queue = queue(1);
      Executor rejecting = r -> {
        throw new RejectedExecutionException("full");
      };
      ReportDispatcher dispatcher = ReportDispatcher.builder(queue, recordingOk()).clock(clock)
          .sendExecutor(rejecting).build();
      enqueue(queue, "a");
      assertThat(dispatcher.runOnce()).isZero();
      assertThat(queue.pendingIds()).containsExactly("a");
      assertThat(queue.inflightIds()).isEmpty();
      assertThat(dispatcher.inFlightBatches()).isZero();
      assertThat(queue.nextReadyAt()).as("after a poll interval").contains(
          clock.instant().plusMillis(200));
      assertThat(storage.reopen().load().pending().get(0).attempts()).isZero();
      assertThat(sent).isEmpty();
    }

    @Test
    @DisplayName("flush after close refuses, and dead-letters nothing it never sent")
    void flushAfterClose() {
      ReportQueue queue = ReportQueue.builder().clock(clock).journal(journal).batchSize(2)
          .maxAttempts(1).build();
      ReportDispatcher dispatcher = ReportDispatcher.builder(queue, recordingOk()).clock(clock)
          .build();
      dispatcher.close(Duration.ofSeconds(1));
      enqueue(queue, "a", "b");
      assertThatThrownBy(dispatcher::flush).isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("closed");
      assertThat(queue.deadIds()).isEmpty();
      assertThat(queue.pendingIds()).containsExactly("a", "b");
      assertThat(storage.reopen().load().pending())
          .allSatisfy(e -> assertThat(e.attempts()).isZero());
      assertThat(sent).isEmpty();
    }
  }

  @Test
  @DisplayName("payloads are never logged: a batch whose send throws, an event the server rejects"
      + " and a dead letter the journal first fails to record leave their payloads in no relaykit"
      + " log line at any level")
  void payloadsAreNeverLogged() {
    String marker = "payload-marker-" + UUID.randomUUID();
    try (LogCapture logs = LogCapture.open()) {
      ReportQueue queue = queue(10);
      for (String id : List.of("a", "b")) {
        assertThat(queue.enqueue(new ReportEvent(id, "test", "{\"card\":\"" + marker + "\"}"))
            .accepted()).isTrue();
      }
      int[] calls = {0};
      BatchSender sender = batch -> {
        if (calls[0]++ == 0) {
          throw sneaky(new IOException("server down"));
        }
        return BatchResult.builder().reject("a", "server refused it").ok("b").build();
      };
      ReportDispatcher dispatcher = direct(queue, sender).build();
      journal.failNext(Call.DEAD_LETTER, Fault.BEFORE_WRITE);

      dispatcher.runOnce();
      for (int i = 0; i < 20 && !queue.deadIds().contains("a"); i++) {
        clock.advance(Duration.ofSeconds(5));
        dispatcher.runOnce();
      }

      assertThat(queue.deadIds()).as("dead after %s sends; pending %s, journal faults %s",
          calls[0], queue.pendingIds(), journal.injected()).containsExactly("a");
      assertThat(queue.deadLetters().get(0).payload()).contains(marker);
      assertThat(queue.pendingIds()).isEmpty();
      assertThat(journal.injected()).as("the dead-letter fault was hit").isEqualTo(1);
      assertThat(logs.lines()).as("the failed send was logged")
          .anyMatch(l -> l.contains("server down"));
      logs.assertNeverContains(marker);
      assertThat(queue.deadLetters().get(0).toString()).doesNotContain(marker);
    }
  }

  private static List<String> ids(List<QueuedEvent> events) {
    return events.stream().map(QueuedEvent::eventId).toList();
  }
}
