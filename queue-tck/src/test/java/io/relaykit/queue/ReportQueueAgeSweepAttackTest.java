package io.relaykit.queue;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.tck.Await;
import io.relaykit.tck.FakeClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The max-age bound holds without traffic: an idle dispatcher (nothing pending, so it never
 * drains) still discards dead letters and pending events over their age, in bounded steps.
 */
class ReportQueueAgeSweepAttackTest {

  private final FakeClock clock = new FakeClock();
  private final InMemoryJournal journal = new InMemoryJournal();

  @Test
  @DisplayName("with no traffic, an idle dispatcher discards 100 dead letters 7 days old (64 per sweep) and they leave the journal")
  void idleDispatcherDiscardsOldDeadLetters() {
    ReportQueue queue = ReportQueue.builder().clock(clock).journal(journal).batchSize(500).build();
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < 100; i++) {
      ids.add("dl-" + i);
      queue.enqueue(new ReportEvent("dl-" + i, "n", "p"));
    }
    assertThat(queue.drainBatch()).hasSize(100);
    queue.nack(ids, false);
    assertThat(queue.deadIds()).hasSize(100);
    ReportDispatcher dispatcher = ReportDispatcher.builder(queue, BatchResult::allOk)
        .clock(clock).pollInterval(Duration.ofMillis(5)).build();
    dispatcher.start();
    try {
      clock.advance(Duration.ofDays(7));
      Await.until(Duration.ofSeconds(20), "the old dead letters are discarded",
          () -> queue.deadIds().isEmpty());
      assertThat(queue.stats().deadDropped()).isEqualTo(100);
    } finally {
      dispatcher.close(Duration.ofSeconds(5));
    }
    assertThat(journal.reopen().load().dead()).isEmpty();
  }

  @Test
  @DisplayName("the sweep itself is bounded: one call discards at most 64 dead letters, and does nothing before their age")
  void sweepIsBounded() {
    ReportQueue queue = ReportQueue.builder().clock(clock).journal(journal).batchSize(500).build();
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < 100; i++) {
      ids.add("s-" + i);
      queue.enqueue(new ReportEvent("s-" + i, "n", "p"));
    }
    queue.drainBatch();
    queue.nack(ids, false);
    clock.advance(Duration.ofDays(7).minusNanos(1));
    queue.sweep();
    assertThat(queue.deadIds()).hasSize(100);
    clock.advance(Duration.ofNanos(1));
    queue.sweep();
    assertThat(queue.deadIds()).hasSize(36);
    queue.sweep();
    assertThat(queue.deadIds()).isEmpty();
  }
}
