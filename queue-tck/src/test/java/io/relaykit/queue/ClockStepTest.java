package io.relaykit.queue;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.retry.Backoff;
import io.relaykit.tck.FakeClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * Wall-clock steps back and forward: durations are measured on the monotonic reading, wall-clock
 * instants are kept for what is stored or shown.
 */
class ClockStepTest {

  private final FakeClock clock = new FakeClock();
  private final InMemoryJournal journal = new InMemoryJournal();
  private final List<List<String>> sent = new ArrayList<>();
  /** Sends handed to it never answer until the test runs them. */
  private final List<Runnable> held = new ArrayList<>();
  private final Executor hold = held::add;

  private ReportQueue queue(int batchSize) {
    return ReportQueue.builder().clock(clock).journal(journal).batchSize(batchSize)
        .backoff(Backoff.fixed(Duration.ofSeconds(10))).build();
  }

  private BatchSender recording() {
    return batch -> {
      sent.add(batch.stream().map(QueuedEvent::eventId).toList());
      return BatchResult.allOk(batch);
    };
  }

  private static void enqueue(ReportQueue queue, String... ids) {
    for (String id : ids) {
      assertThat(queue.enqueue(new ReportEvent(id, "test", "p-" + id)).accepted()).isTrue();
    }
  }

  @Nested
  @DisplayName("the dispatcher")
  class Dispatcher {

    @Test
    @DisplayName("sends a partial batch after the flush interval of elapsed time, though the wall clock stepped back an hour")
    void flushIntervalAfterStepBack() {
      ReportQueue queue = queue(20);
      ReportDispatcher dispatcher = ReportDispatcher.builder(queue, recording()).clock(clock)
          .sendExecutor(Runnable::run).flushInterval(Duration.ofSeconds(2)).build();
      enqueue(queue, "a");
      clock.stepWall(Duration.ofHours(-1));
      clock.advance(Duration.ofMillis(1_999));
      assertThat(dispatcher.runOnce()).isZero();
      clock.advance(Duration.ofMillis(1));
      assertThat(dispatcher.runOnce()).isEqualTo(1);
      assertThat(sent).containsExactly(List.of("a"));
    }

    @Test
    @DisplayName("does not send a partial batch early when the wall clock steps forward a day")
    void flushIntervalAfterStepForward() {
      ReportQueue queue = queue(20);
      ReportDispatcher dispatcher = ReportDispatcher.builder(queue, recording()).clock(clock)
          .sendExecutor(Runnable::run).flushInterval(Duration.ofSeconds(2)).build();
      enqueue(queue, "a");
      clock.stepWall(Duration.ofDays(1));
      assertThat(dispatcher.runOnce()).isZero();
      clock.advance(Duration.ofSeconds(2));
      assertThat(dispatcher.runOnce()).isEqualTo(1);
    }

    @Test
    @DisplayName("gives up a hung send after sendTimeout of elapsed time whatever the wall clock does, and not before")
    void sendTimeoutIgnoresWallSteps() {
      ReportQueue queue = queue(1);
      ReportDispatcher dispatcher = ReportDispatcher.builder(queue, recording()).clock(clock)
          .sendExecutor(hold).sendTimeout(Duration.ofSeconds(60)).build();
      enqueue(queue, "a");
      assertThat(dispatcher.runOnce()).isEqualTo(1);
      clock.stepWall(Duration.ofDays(3));
      dispatcher.runOnce();
      assertThat(dispatcher.timedOutSends()).as("a step forward is no elapsed time").isZero();
      clock.stepWall(Duration.ofHours(-80));
      clock.advance(Duration.ofSeconds(60));
      dispatcher.runOnce();
      assertThat(dispatcher.timedOutSends()).as("60 s elapsed, though the wall clock went back")
          .isEqualTo(1);
      assertThat(queue.stats().pending()).isEqualTo(1);
    }
  }

  @Nested
  @DisplayName("the queue")
  class Queue {

    @Test
    @DisplayName("a retry waits its backoff of elapsed time, not an hour more, after the wall clock stepped back an hour")
    void retryAfterStepBack() {
      ReportQueue queue = queue(20);
      enqueue(queue, "a");
      queue.drainBatch();
      queue.nack(List.of("a"), true);
      clock.stepWall(Duration.ofHours(-1));
      clock.advance(Duration.ofSeconds(9));
      assertThat(queue.drainBatch()).isEmpty();
      assertThat(queue.readyCount(clock.instant())).isZero();
      clock.advance(Duration.ofSeconds(1));
      assertThat(queue.readyCount(clock.instant())).isEqualTo(1);
      assertThat(queue.nextReadyAt()).isPresent();
      assertThat(queue.drainBatch()).extracting(QueuedEvent::eventId).containsExactly("a");
    }

    @Test
    @DisplayName("the dispatcher sends a retry after its backoff though the wall clock stepped back")
    void dispatcherSendsRetryAfterStepBack() {
      ReportQueue queue = queue(20);
      List<Integer> calls = new ArrayList<>();
      ReportDispatcher dispatcher = ReportDispatcher.builder(queue, batch -> {
        calls.add(batch.size());
        return calls.size() == 1 ? BatchResult.allRetry(batch, null) : BatchResult.allOk(batch);
      }).clock(clock).sendExecutor(Runnable::run).flushInterval(Duration.ofSeconds(1)).build();
      enqueue(queue, "a");
      clock.advance(Duration.ofSeconds(1));
      assertThat(dispatcher.runOnce()).isEqualTo(1);
      clock.stepWall(Duration.ofHours(-1));
      clock.advance(Duration.ofSeconds(10));
      assertThat(dispatcher.runOnce()).isEqualTo(1);
      assertThat(calls).containsExactly(1, 1);
      assertThat(queue.stats().pending() + queue.stats().inflight()).isZero();
    }

    @Test
    @DisplayName("the dedupe window is elapsed time: a wall clock stepped forward two days does not forget an id acked a minute ago (its duplicate is still refused), and the window still ends after its length of elapsed time")
    void dedupeWindowAfterStepForward() {
      ReportQueue queue = ReportQueue.builder().clock(clock).capacity(100).batchSize(10)
          .dedupeWindow(Duration.ofHours(1), 1000).build();
      enqueue(queue, "a");
      queue.ack(List.of(queue.drainBatch().get(0).eventId()));
      clock.advance(Duration.ofMinutes(1));
      clock.stepWall(Duration.ofDays(2));
      assertThat(queue.enqueue(new ReportEvent("a", "n", "p")).reason())
          .as("a duplicate one minute later").isEqualTo(EnqueueResult.Reason.DUPLICATE);
      assertThat(queue.stats().seen()).isEqualTo(1);
      clock.advance(Duration.ofMinutes(59));
      assertThat(queue.enqueue(new ReportEvent("a", "n", "p")).accepted())
          .as("an hour of elapsed time later the id left the window").isTrue();
    }
  }
}
