package io.relaykit.queue;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.tck.FakeClock;
import io.relaykit.tck.FaultyJournal;
import io.relaykit.tck.FaultyJournal.Call;
import io.relaykit.tck.FaultyJournal.Fault;
import java.util.AbstractCollection;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Hostile or unlucky id lists for ack, nack and purgeDead: a collection that fails half way,
 * repeated and unknown ids, a lost reply then a retry.
 */
class ReportQueueBatchInputAttackTest {

  private final FakeClock clock = new FakeClock();
  private final InMemoryJournal journal = new InMemoryJournal();

  private ReportQueue queueWith(QueueJournal j, String... ids) {
    ReportQueue queue = ReportQueue.builder().clock(clock).journal(j).batchSize(100).build();
    for (String id : ids) {
      assertThat(queue.enqueue(new ReportEvent(id, "n", "p")).accepted()).isTrue();
    }
    assertThat(queue.drainBatch()).hasSize(ids.length);
    return queue;
  }

  /** Yields {@code ids}, then throws (a list modified by another thread, say). */
  private static AbstractCollection<String> failingAfter(List<String> ids) {
    return new AbstractCollection<>() {
      @Override
      public Iterator<String> iterator() {
        Iterator<String> it = ids.iterator();
        return new Iterator<>() {
          @Override
          public boolean hasNext() {
            return true;
          }

          @Override
          public String next() {
            if (it.hasNext()) {
              return it.next();
            }
            throw new IllegalStateException("collection changed while iterated");
          }
        };
      }

      @Override
      public int size() {
        return ids.size() + 1;
      }
    };
  }

  @Test
  @DisplayName("an id collection that throws half way leaves nack's, ack's and purgeDead's events unchanged: a retry with a good list settles them")
  void collectionFailingHalfWay() {
    ReportQueue queue = queueWith(journal, "a", "b", "c", "d");
    assertThatThrownBy(() -> queue.nack(failingAfter(List.of("a", "b")), false))
        .isInstanceOf(IllegalStateException.class);
    assertThat(queue.inflightIds()).containsExactlyInAnyOrder("a", "b", "c", "d");
    assertThat(queue.nack(List.of("a", "b"), false).dead()).isEqualTo(2);

    assertThatThrownBy(() -> queue.ack(failingAfter(List.of("c"))))
        .isInstanceOf(IllegalStateException.class);
    assertThat(queue.ack(List.of("c"))).isEqualTo(1);

    assertThatThrownBy(() -> queue.purgeDead(failingAfter(List.of("a"))))
        .isInstanceOf(IllegalStateException.class);
    assertThat(queue.purgeDead(List.of("a", "b"))).isEqualTo(2);
    assertThat(queue.deadIds()).isEmpty();
    assertThat(queue.ack(List.of("d"))).isEqualTo(1);
    assertThat(journal.reopen().load().pending()).isEmpty();
  }

  @Test
  @DisplayName("repeated, unknown and null ids in one nack: each in-flight event settles once, the rest are ignored, one journal change")
  void repeatedAndUnknownIds() {
    ReportQueue queue = queueWith(journal, "a", "b");
    List<String> ids = new ArrayList<>(List.of("a", "zz", "a", "b", "b", "unknown"));
    ids.add(null);
    NackResult r = queue.nack(ids, true);
    assertThat(r.requeued()).isEqualTo(2);
    assertThat(queue.pendingIds()).containsExactlyInAnyOrder("a", "b");
    assertThat(queue.purgeDead(Set.of("a", "b", "nope"))).isZero();
  }

  @Test
  @DisplayName("a nack whose reply is lost (recorded, reported failed) is retried with the same ids: settled once, attempts counted once")
  void lostReplyThenRetry() {
    FaultyJournal faulty = new FaultyJournal(journal);
    ReportQueue queue = queueWith(faulty, "a", "b");
    faulty.failNext(Call.RECORD_ATOMICALLY, Fault.AFTER_WRITE);
    assertThatThrownBy(() -> queue.nack(List.of("a", "b"), true))
        .isInstanceOf(JournalException.class);
    assertThat(queue.inflightIds()).containsExactlyInAnyOrder("a", "b");
    assertThat(queue.nack(List.of("a", "b"), true).requeued()).isEqualTo(2);
    assertThat(journal.reopen().load().pending())
        .allSatisfy(e -> assertThat(e.attempts()).isEqualTo(1)).hasSize(2);
  }
}
