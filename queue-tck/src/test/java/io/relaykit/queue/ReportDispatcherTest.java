package io.relaykit.queue;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleEvent.Stage;
import io.relaykit.monitor.LifecycleLog;
import io.relaykit.tck.Await;
import io.relaykit.tck.FakeClock;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class ReportDispatcherTest {

  private final FakeClock clock = new FakeClock();
  private final InMemoryJournal journal = new InMemoryJournal();
  private final LifecycleLog log = new LifecycleLog(10_000);
  private final List<List<String>> sent = Collections.synchronizedList(new ArrayList<>());

  private ReportQueue queue(int batchSize) {
    return ReportQueue.builder().clock(clock).journal(journal).listener(log).batchSize(batchSize)
        .build();
  }

  /** A sender that records each batch and answers with {@code answer}. */
  private BatchSender recording(java.util.function.Function<List<QueuedEvent>, BatchResult> answer) {
    return batch -> {
      sent.add(batch.stream().map(QueuedEvent::eventId).toList());
      return answer.apply(batch);
    };
  }

  private ReportDispatcher.Builder direct(ReportQueue queue, BatchSender sender) {
    return ReportDispatcher.builder(queue, sender).clock(clock).sendExecutor(Runnable::run)
        .flushInterval(Duration.ofSeconds(5));
  }

  private static void enqueue(ReportQueue queue, String... ids) {
    for (String id : ids) {
      assertThat(queue.enqueue(new ReportEvent(id, "test", "p-" + id)).accepted()).isTrue();
    }
  }

  @Nested
  @DisplayName("when to send")
  class WhenToSend {

    @Test
    @DisplayName("a full batch is sent at once")
    void fullBatch() {
      ReportQueue queue = queue(3);
      ReportDispatcher dispatcher = direct(queue, recording(BatchResult::allOk)).build();
      enqueue(queue, "a", "b");
      assertThat(dispatcher.runOnce()).isZero();
      assertThat(sent).isEmpty();
      enqueue(queue, "c");
      assertThat(dispatcher.runOnce()).isEqualTo(1);
      assertThat(sent).containsExactly(List.of("a", "b", "c"));
      assertThat(queue.stats().pending() + queue.stats().inflight()).isZero();
      assertThat(journal.reopen().load().pending()).isEmpty();
    }

    @Test
    @DisplayName("a partial batch is sent once the flush interval has passed")
    void flushInterval() {
      ReportQueue queue = queue(10);
      ReportDispatcher dispatcher = direct(queue, recording(BatchResult::allOk)).build();
      enqueue(queue, "a");
      clock.advance(Duration.ofMillis(4_999));
      assertThat(dispatcher.runOnce()).isZero();
      clock.advance(Duration.ofMillis(1));
      assertThat(dispatcher.runOnce()).isEqualTo(1);
      assertThat(sent).containsExactly(List.of("a"));
      // The interval restarts at each send.
      enqueue(queue, "b");
      clock.advance(Duration.ofSeconds(1));
      assertThat(dispatcher.runOnce()).isZero();
    }

    @Test
    @DisplayName("several full batches go out in one step, highest priority first")
    void severalBatches() {
      ReportQueue queue = queue(2);
      ReportDispatcher dispatcher = direct(queue, recording(BatchResult::allOk))
          .maxInFlightBatches(4).build();
      enqueue(queue, "n1", "n2", "n3", "n4");
      queue.enqueue(new ReportEvent("c1", "pay", "1", Priority.CRITICAL, null));
      assertThat(dispatcher.runOnce()).isEqualTo(2);
      assertThat(sent).containsExactly(List.of("c1", "n1"), List.of("n2", "n3"));
      assertThat(queue.pendingIds()).containsExactly("n4");
    }

    @Test
    @DisplayName("flush sends everything ready now, full batch or not")
    void flush() {
      ReportQueue queue = queue(2);
      ReportDispatcher dispatcher = direct(queue, recording(BatchResult::allOk)).build();
      enqueue(queue, "a", "b", "c");
      dispatcher.flush();
      assertThat(sent).containsExactly(List.of("a", "b"), List.of("c"));
      assertThat(queue.stats().pending() + queue.stats().inflight()).isZero();
    }
  }

  @Nested
  @DisplayName("outcomes")
  class Outcomes {

    @Test
    @DisplayName("each event is acked, retried or dead-lettered by its own outcome; an unmentioned event is retried")
    void perEvent() {
      ReportQueue queue = queue(4);
      ReportDispatcher dispatcher = direct(queue, recording(batch -> BatchResult.builder()
          .ok("ok").retry("retry").reject("bad", "schema v9 unknown").build())).build();
      enqueue(queue, "ok", "retry", "bad", "forgotten");
      dispatcher.runOnce();

      assertThat(queue.stats().inflight()).isZero();
      assertThat(queue.pendingIds()).containsExactlyInAnyOrder("retry", "forgotten");
      assertThat(queue.deadIds()).containsExactly("bad");
      assertThat(queue.deadReason("bad")).contains("rejected by receiver: schema v9 unknown");
      assertThat(log.history("ok")).extracting(LifecycleEvent::stage)
          .containsExactly(Stage.ENQUEUED, Stage.DELIVERED, Stage.ACKED);
      assertThat(log.history("forgotten")).extracting(LifecycleEvent::stage)
          .containsExactly(Stage.ENQUEUED, Stage.DELIVERED, Stage.RETRIED);
      assertThat(log.history("bad")).extracting(LifecycleEvent::stage)
          .containsExactly(Stage.ENQUEUED, Stage.DELIVERED, Stage.DEAD_LETTERED);
      JournalState stored = journal.reopen().load();
      assertThat(stored.pending()).extracting(QueuedEvent::attempts).containsOnly(1);
      assertThat(stored.deadReasons()).containsKey("bad");
    }

    @Test
    @DisplayName("an event that expired before its batch went out never reaches the sender and is reported")
    void expiredNeverSent() {
      ReportQueue queue = queue(10);
      ReportDispatcher dispatcher = direct(queue, recording(BatchResult::allOk)).build();
      queue.enqueue(new ReportEvent("otp", "otp.sent", "123456", Priority.CRITICAL,
          clock.instant().plusSeconds(3)));
      enqueue(queue, "keep");
      clock.advance(Duration.ofSeconds(5));
      assertThat(dispatcher.runOnce()).isEqualTo(1);
      assertThat(sent).containsExactly(List.of("keep"));
      assertThat(queue.stats().expired()).isEqualTo(1);
      assertThat(log.history("otp")).extracting(LifecycleEvent::stage)
          .containsExactly(Stage.ENQUEUED, Stage.EXPIRED);
    }

    @Test
    @DisplayName("Retry-After is a floor under the backoff delay")
    void retryAfter() {
      ReportQueue queue = queue(2);
      ReportDispatcher dispatcher = direct(queue, recording(batch -> BatchResult.builder()
          .retry("slow", Duration.ofSeconds(30)).retry("fast", Duration.ofMillis(10)).build()))
          .build();
      enqueue(queue, "slow", "fast");
      dispatcher.runOnce();
      clock.advance(Duration.ofSeconds(1));
      assertThat(queue.readyCount(clock.instant())).isEqualTo(1);
      assertThat(queue.nextReadyAt()).contains(FakeClock.EPOCH.plusSeconds(1));
      clock.advance(Duration.ofSeconds(28));
      assertThat(queue.readyCount(clock.instant())).isEqualTo(1);
      clock.advance(Duration.ofSeconds(1));
      assertThat(queue.readyCount(clock.instant())).isEqualTo(2);
    }

    @Test
    @DisplayName("a sender that throws gets every event of the batch retried, and the dispatcher keeps going")
    void senderThrows() {
      ReportQueue queue = queue(2);
      int[] calls = {0};
      ReportDispatcher dispatcher = direct(queue, batch -> {
        if (calls[0]++ == 0) {
          throw new IllegalStateException("connection reset");
        }
        return BatchResult.allOk(batch);
      }).build();
      enqueue(queue, "a", "b");
      dispatcher.runOnce();
      assertThat(queue.pendingIds()).containsExactlyInAnyOrder("a", "b");
      clock.advance(Duration.ofSeconds(5));
      assertThat(dispatcher.runOnce()).isEqualTo(1);
      assertThat(queue.stats().pending() + queue.stats().inflight()).isZero();
      assertThat(calls[0]).isEqualTo(2);
    }

    @Test
    @DisplayName("an outcome for an event that was not in the batch is ignored")
    void foreignIdsIgnored() {
      ReportQueue queue = queue(1);
      enqueue(queue, "elsewhere");
      queue.drainBatch(); // in flight, but not through this dispatcher
      ReportDispatcher dispatcher = direct(queue, recording(batch -> BatchResult.builder()
          .ok(batch.get(0).eventId()).ok("elsewhere").build())).build();
      enqueue(queue, "a");
      assertThat(dispatcher.runOnce()).isEqualTo(1);
      assertThat(sent).containsExactly(List.of("a"));
      assertThat(queue.inflightIds()).containsExactly("elsewhere");
    }
  }

  @Nested
  @DisplayName("in-flight limit")
  class InFlightLimit {

    @Test
    @DisplayName("at most maxInFlightBatches batches are in flight")
    void limit() {
      ReportQueue queue = queue(2);
      ArrayDeque<Runnable> tasks = new ArrayDeque<>();
      Executor manual = tasks::add;
      ReportDispatcher dispatcher = ReportDispatcher.builder(queue, recording(BatchResult::allOk))
          .clock(clock).sendExecutor(manual).maxInFlightBatches(2).build();
      enqueue(queue, "a", "b", "c", "d", "e", "f", "g", "h");
      assertThat(dispatcher.runOnce()).isEqualTo(2);
      assertThat(dispatcher.inFlightBatches()).isEqualTo(2);
      assertThat(dispatcher.runOnce()).isZero();
      assertThat(queue.stats().inflight()).isEqualTo(4);
      tasks.poll().run();
      assertThat(dispatcher.inFlightBatches()).isEqualTo(1);
      assertThat(dispatcher.runOnce()).isEqualTo(1);
      assertThat(dispatcher.inFlightBatches()).isEqualTo(2);
      while (!tasks.isEmpty()) {
        tasks.poll().run();
      }
      assertThat(dispatcher.runOnce()).isEqualTo(1);
      tasks.poll().run();
      assertThat(sent).hasSize(4);
      assertThat(queue.stats().pending() + queue.stats().inflight()).isZero();
    }
  }

  @Nested
  @DisplayName("lifecycle")
  class Lifecycle {

    @Test
    @DisplayName("the background loop sends a full batch at once and a partial one after the flush interval")
    void backgroundLoop() {
      ReportQueue queue = queue(3);
      ReportDispatcher dispatcher = ReportDispatcher.builder(queue, recording(BatchResult::allOk))
          .clock(clock).flushInterval(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(5))
          .build();
      dispatcher.start();
      try {
        enqueue(queue, "a", "b", "c");
        Await.until(Duration.ofSeconds(10), "the full batch is sent", () -> sent.size() == 1);
        enqueue(queue, "d");
        clock.advance(Duration.ofSeconds(5));
        Await.until(Duration.ofSeconds(10), "the partial batch is sent", () -> sent.size() == 2);
        assertThat(sent.get(1)).containsExactly("d");
        Await.until(Duration.ofSeconds(10), "everything is acked",
            () -> queue.stats().inflight() == 0);
      } finally {
        dispatcher.close(Duration.ofSeconds(5));
      }
      assertThat(journal.reopen().load().pending()).isEmpty();
      assertThatThrownBy(dispatcher::start).isInstanceOf(IllegalStateException.class);
    }

    @Test
    @DisplayName("close sends what is ready before the deadline and leaves the rest journaled")
    void closeWithDeadline() throws InterruptedException {
      ReportQueue queue = queue(1);
      CountDownLatch release = new CountDownLatch(1);
      ReportDispatcher dispatcher = ReportDispatcher.builder(queue, batch -> {
        sent.add(List.of(batch.get(0).eventId()));
        if (batch.get(0).eventId().equals("stuck")) {
          try {
            release.await(30, TimeUnit.SECONDS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          return BatchResult.allRetry(batch, null);
        }
        return BatchResult.allOk(batch);
      }).clock(clock).build();
      enqueue(queue, "ok-1", "stuck", "never");
      // Long enough for "ok-1" and the start of "stuck" on a busy machine; "stuck" then holds
      // the sender past the deadline.
      dispatcher.close(Duration.ofSeconds(2));
      release.countDown();

      assertThat(sent).containsExactly(List.of("ok-1"), List.of("stuck"));
      ReportQueue restarted = ReportQueue.builder().clock(clock).journal(journal.reopen())
          .build();
      assertThat(restarted.restore()).isEqualTo(2);
      assertThat(restarted.pendingIds()).containsExactlyInAnyOrder("stuck", "never");
    }

    @Test
    @DisplayName("close with nothing to do returns at once and is idempotent")
    void closeIdle() {
      ReportDispatcher dispatcher = direct(queue(2), recording(BatchResult::allOk)).build();
      dispatcher.close(Duration.ofSeconds(1));
      dispatcher.close(Duration.ofSeconds(1));
      assertThat(dispatcher.runOnce()).isZero();
    }
  }

  @Nested
  @DisplayName("configuration")
  class Configuration {

    @Test
    @DisplayName("invalid settings are refused naming the field and the value")
    void invalid() {
      ReportQueue queue = queue(1);
      BatchSender sender = BatchResult::allOk;
      assertInvalid(ReportDispatcher.builder(null, sender), "queue");
      assertInvalid(ReportDispatcher.builder(queue, null), "sender");
      assertInvalid(ReportDispatcher.builder(queue, sender).flushInterval(Duration.ZERO),
          "flushInterval must be a positive duration, was PT0S");
      assertInvalid(ReportDispatcher.builder(queue, sender).maxInFlightBatches(0),
          "maxInFlightBatches must be >= 1, was 0");
      assertInvalid(ReportDispatcher.builder(queue, sender).pollInterval(null),
          "pollInterval must be a positive duration, was null");
      assertInvalid(ReportDispatcher.builder(queue, sender).clock(null), "clock");
      assertThatThrownBy(() -> direct(queue, sender).build().close(Duration.ofSeconds(-1)))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("deadline");
      assertThatThrownBy(() -> BatchResult.builder().retry("a", Duration.ofSeconds(-1)))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("retryAfter");
      assertThatThrownBy(() -> BatchResult.builder().ok(" "))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("eventId");
    }

    private void assertInvalid(ReportDispatcher.Builder b, String message) {
      assertThatThrownBy(b::build).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining(message);
    }
  }
}
