package io.relaykit.queue;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.tck.FakeClock;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Memory comes back after a burst: a long outage queues far more events than usual; once they are
 * sent and their ids leave the dedupe window, the queue's id structures are back to the size they
 * started at (measured as capacity, not heap).
 */
class ReportQueueBurstMemoryAttackTest {

  @Test
  @DisplayName("300 000 events queued during an outage, then sent and out of the dedupe window: the id table, per-id arrays and ring are back to their initial capacity; ids still dedupe")
  void structuresShrinkAfterBurst() {
    FakeClock clock = new FakeClock();
    ReportQueue queue = ReportQueue.builder().clock(clock).capacity(300_000).batchSize(10_000)
        .dedupeWindow(Duration.ofMinutes(10), 100_000).build();
    int[] initial = queue.indexCapacity();
    int n = 300_000;
    for (int i = 0; i < n; i++) {
      queue.enqueue(new ReportEvent("b-" + i, "n", "p"));
    }
    int[] peak = queue.indexCapacity();
    assertThat(peak[0]).as("table grew").isGreaterThan(initial[0]);
    assertThat(peak[1]).as("per-id arrays grew").isGreaterThanOrEqualTo(n);
    for (List<QueuedEvent> batch = queue.drainBatch(); !batch.isEmpty();
        batch = queue.drainBatch()) {
      assertThat(queue.ack(batch.stream().map(QueuedEvent::eventId).toList()))
          .isEqualTo(batch.size());
    }
    assertThat(queue.enqueue(new ReportEvent("b-299999", "n", "p")).reason())
        .as("inside the window: still a duplicate").isEqualTo(EnqueueResult.Reason.DUPLICATE);
    clock.advance(Duration.ofMinutes(11));
    // Trimming the window is bounded per operation (64 ids): 100 000 / 64 idle drains let it go.
    for (int i = 0; i < 2_000; i++) {
      queue.drainBatch();
    }
    assertThat(queue.indexCapacity()).as("table, per-id, ring slots").containsExactly(initial);
    assertThat(queue.enqueue(new ReportEvent("b-299999", "n", "p")).accepted())
        .as("left the window: accepted again").isTrue();
    assertThat(queue.drainBatch()).extracting(QueuedEvent::eventId).containsExactly("b-299999");
  }
}
