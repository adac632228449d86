package io.relaykit.queue;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.tck.FakeClock;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** An interrupted caller at the queue's and the dispatcher's blocking points. */
class ReportQueueInterruptTest {

  private final FakeClock clock = new FakeClock();
  private final InMemoryJournal journal = new InMemoryJournal();

  @AfterEach
  void clearInterrupt() {
    Thread.interrupted();
  }

  @Test
  @DisplayName("an interrupted producer's enqueue, drain and ack complete (the queue's lock is not interruptible) and keep its interrupt flag")
  void queueKeepsFlag() {
    ReportQueue queue = ReportQueue.builder().clock(clock).journal(journal).build();
    Thread.currentThread().interrupt();
    assertThat(queue.enqueue(new ReportEvent("a", "n", "p", Priority.CRITICAL, null)).accepted())
        .isTrue();
    assertThat(queue.drainBatch()).hasSize(1);
    assertThat(queue.ack(List.of("a"))).isEqualTo(1);
    assertThat(Thread.currentThread().isInterrupted()).isTrue();
    assertThat(journal.reopen().load().seen()).containsKey("a");
  }

  @Test
  @DisplayName("flush interrupted while a batch is in flight returns at once, keeps the flag, and leaves the batch in flight to settle later")
  void flushInterrupted() {
    ReportQueue queue = ReportQueue.builder().clock(clock).journal(journal).build();
    List<Runnable> held = new ArrayList<>();
    ReportDispatcher dispatcher = ReportDispatcher.builder(queue, BatchResult::allOk)
        .clock(clock).sendExecutor(held::add).build();
    queue.enqueue(new ReportEvent("a", "n", "p"));
    Thread.currentThread().interrupt();
    dispatcher.flush();
    assertThat(Thread.interrupted()).isTrue();
    assertThat(dispatcher.inFlightBatches()).isEqualTo(1);
    held.forEach(Runnable::run);
    assertThat(dispatcher.inFlightBatches()).isZero();
    assertThat(journal.reopen().load().pending()).isEmpty();
  }
}
