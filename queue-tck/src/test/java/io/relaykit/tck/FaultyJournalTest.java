package io.relaykit.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.queue.InMemoryJournal;
import io.relaykit.queue.JournalException;
import io.relaykit.queue.JournalFullException;
import io.relaykit.queue.Priority;
import io.relaykit.queue.QueueJournal.Change;
import io.relaykit.queue.QueueJournal.Removal;
import io.relaykit.queue.QueuedEvent;
import io.relaykit.tck.FaultyJournal.Call;
import io.relaykit.tck.FaultyJournal.Fault;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("FaultyJournal")
class FaultyJournalTest {

  private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");
  private final InMemoryJournal storage = new InMemoryJournal();
  private final FaultyJournal journal = new FaultyJournal(storage);

  private static QueuedEvent event(String id) {
    return new QueuedEvent(id, "n", "p-" + id, Priority.NORMAL, T0, 0, T0, null);
  }

  private List<String> pendingIds() {
    return storage.reopen().load().pending().stream().map(QueuedEvent::eventId).toList();
  }

  @Test
  @DisplayName("the nth call of a kind fails once, before writing: nothing recorded, outcome NOT_RECORDED")
  void nthBeforeWrite() {
    journal.failOn(Call.APPEND, 2, Fault.BEFORE_WRITE);
    journal.append(event("a"));
    assertThatThrownBy(() -> journal.append(event("b")))
        .isInstanceOfSatisfying(JournalException.class,
            e -> assertThat(e.outcome()).isEqualTo(JournalException.Outcome.NOT_RECORDED))
        .hasMessageContaining("APPEND #2");
    journal.append(event("c"));
    assertThat(pendingIds()).containsExactly("a", "c");
    assertThat(journal.calls(Call.APPEND)).isEqualTo(3);
    assertThat(journal.injected()).isEqualTo(1);
  }

  @Test
  @DisplayName("a call that fails after the write is recorded and reported as failed, outcome UNKNOWN")
  void afterWrite() {
    journal.append(event("a"));
    journal.failNext(Call.REMOVE, Fault.AFTER_WRITE);
    assertThatThrownBy(() -> journal.remove("a", Removal.ACKED))
        .isInstanceOfSatisfying(JournalException.class,
            e -> assertThat(e.outcome()).isEqualTo(JournalException.Outcome.UNKNOWN));
    assertThat(pendingIds()).isEmpty();
  }

  @Test
  @DisplayName("FULL throws JournalFullException; failAlways holds until heal; refused events are an IllegalArgumentException")
  void fullAlwaysRefused() {
    journal.failAlways(Call.RECORD_ATOMICALLY, Fault.FULL);
    for (int i = 0; i < 3; i++) {
      assertThatThrownBy(() -> journal.recordAtomically(List.of(new Change.Append(event("x")))))
          .isInstanceOf(JournalFullException.class);
    }
    journal.refuseEvents(e -> e.eventId().startsWith("big"));
    assertThatThrownBy(() -> journal.append(event("big-1")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("big-1");
    journal.heal();
    journal.append(event("big-2"));
    journal.recordAtomically(List.of(new Change.Append(event("x"))));
    assertThat(pendingIds()).containsExactly("big-2", "x");
  }

  @Test
  @DisplayName("a failed sync throws UNKNOWN whether or not the wrapped sync ran; a failed load never reaches the wrapped journal")
  void syncAndLoad() {
    journal.failNext(Call.AWAIT_DURABLE, Fault.BEFORE_WRITE);
    assertThatThrownBy(() -> journal.awaitDurable(1))
        .isInstanceOfSatisfying(JournalException.class,
            e -> assertThat(e.outcome()).isEqualTo(JournalException.Outcome.UNKNOWN));
    journal.failNext(Call.LOAD, Fault.AFTER_WRITE);
    assertThatThrownBy(journal::load).isInstanceOf(JournalException.class);
    assertThat(journal.load().pending()).isEmpty();
  }
}
