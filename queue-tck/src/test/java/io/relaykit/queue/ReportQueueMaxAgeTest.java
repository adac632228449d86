package io.relaykit.queue;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleEvent.Stage;
import io.relaykit.tck.FakeClock;
import io.relaykit.tck.FaultyJournal;
import io.relaykit.tck.FaultyJournal.Call;
import io.relaykit.tck.FaultyJournal.Fault;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * What a report queue keeps is bounded by age by default: pending events and dead letters older
 * than their max age (7 days unless configured) are discarded and counted, by elapsed time, so a
 * wall-clock step discards nothing.
 */
class ReportQueueMaxAgeTest {

  private final FakeClock clock = new FakeClock();
  private final InMemoryJournal journal = new InMemoryJournal();
  private final List<LifecycleEvent> events = new CopyOnWriteArrayList<>();

  private ReportQueue.Builder builder() {
    return ReportQueue.builder().clock(clock).journal(journal).capacity(2000).batchSize(2000)
        .listener(events::add);
  }

  private static ReportEvent event(String id) {
    return new ReportEvent(id, "n", "p");
  }

  private static List<String> ids(List<QueuedEvent> batch) {
    return batch.stream().map(QueuedEvent::eventId).toList();
  }

  @Test
  @DisplayName("by default a pending event 7 days old (elapsed) is discarded at the next drain, counted as expired, reported, and gone from the journal; a younger one is sent")
  void defaultDiscardsPendingAfterSevenDays() {
    ReportQueue queue = builder().build();
    queue.enqueue(event("old"));
    clock.advance(Duration.ofDays(6));
    queue.enqueue(event("young"));
    clock.advance(Duration.ofDays(1));

    assertThat(ids(queue.drainBatch())).containsExactly("young");
    assertThat(queue.stats().expired()).isEqualTo(1);
    assertThat(events).anyMatch(e -> e.stage() == Stage.EXPIRED && e.messageId().equals("old")
        && e.detail().contains("max age"));
    assertThat(journal.reopen().load().pending()).extracting(QueuedEvent::eventId)
        .containsExactly("young");
  }

  @Test
  @DisplayName("a wall clock stepped 30 days forward discards nothing: ages are elapsed time")
  void wallStepDiscardsNothing() {
    ReportQueue queue = builder().build();
    for (int i = 0; i < 100; i++) {
      queue.enqueue(event("w-" + i));
    }
    clock.stepWall(Duration.ofDays(30));
    assertThat(queue.drainBatch()).hasSize(100);
    assertThat(queue.stats().expired()).isZero();
  }

  @Test
  @DisplayName("a dead letter is discarded 7 days after it died (not after it was enqueued), counted as a dead letter dropped and reported")
  void deadLettersAgeFromDeath() {
    ReportQueue queue = builder().build();
    queue.enqueue(event("d"));
    clock.advance(Duration.ofDays(5));
    queue.drainBatch();
    queue.nack(List.of("d"), false);
    clock.advance(Duration.ofDays(6));
    queue.drainBatch();
    assertThat(queue.deadIds()).containsExactly("d");
    clock.advance(Duration.ofDays(1));
    queue.drainBatch();
    assertThat(queue.deadIds()).isEmpty();
    assertThat(queue.stats().deadDropped()).isEqualTo(1);
    assertThat(events).anyMatch(e -> e.stage() == Stage.DROPPED && e.messageId().equals("d"));
    assertThat(journal.reopen().load().dead()).isEmpty();
  }

  @Test
  @DisplayName("after a restart an event counts its wall-clock age at the restore: 6 days then, discarded one elapsed day later")
  void restoredEventsKeepTheirAge() {
    ReportQueue first = builder().build();
    first.enqueue(event("r"));
    clock.advance(Duration.ofDays(6));
    ReportQueue second = builder().journal(journal.reopen()).build();
    assertThat(second.restore()).isEqualTo(1);
    clock.advance(Duration.ofHours(23));
    assertThat(second.pendingIds()).containsExactly("r");
    assertThat(second.stats().expired()).isZero();
    clock.advance(Duration.ofHours(1));
    assertThat(second.drainBatch()).isEmpty();
    assertThat(second.stats().expired()).isEqualTo(1);
  }

  @Test
  @DisplayName("a custom max age applies (a discarded id stays seen for the dedupe window), noMaxAge() keeps events for any age, and a zero, negative or null max age is refused naming the setting")
  void configuration() {
    ReportQueue hour = builder().maxAge(Duration.ofHours(1), Duration.ofHours(2)).build();
    hour.enqueue(event("h"));
    clock.advance(Duration.ofMinutes(61));
    assertThat(hour.drainBatch()).isEmpty();
    assertThat(hour.stats().expired()).isEqualTo(1);
    assertThat(hour.enqueue(event("h")).reason()).as("still seen for the 24 h dedupe window")
        .isEqualTo(EnqueueResult.Reason.DUPLICATE);

    ReportQueue forever = builder().journal(new InMemoryJournal()).noMaxAge().build();
    forever.enqueue(event("f"));
    clock.advance(Duration.ofDays(400));
    assertThat(ids(forever.drainBatch())).containsExactly("f");

    assertThatThrownBy(() -> builder().maxAge(Duration.ZERO, Duration.ofDays(1)).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxAge")
        .hasMessageContaining("noMaxAge()");
    assertThatThrownBy(() -> builder().maxAge(Duration.ofDays(1), Duration.ofDays(-1)).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("dead letters");
    assertThatThrownBy(() -> builder().maxAge(null, Duration.ofDays(1)).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxAge");
  }

  @Test
  @DisplayName("when the journal cannot record a discard by age, the drain does not fail: nothing is discarded, the events are sent rather than held, and the next drain discards what is still over its age")
  void journalFailureDuringDiscard() {
    FaultyJournal faulty = new FaultyJournal(journal);
    ReportQueue queue = builder().journal(faulty).build();
    queue.enqueue(event("a"));
    queue.enqueue(event("b"));
    clock.advance(Duration.ofDays(8));
    faulty.failNext(Call.RECORD_ATOMICALLY, Fault.BEFORE_WRITE);

    assertThat(ids(queue.drainBatch())).containsExactly("a", "b");
    assertThat(queue.stats().expired()).isZero();
    queue.nack(List.of("a", "b"), true, Duration.ZERO, null);
    clock.advance(Duration.ofSeconds(10)); // past the retry's backoff
    assertThat(queue.drainBatch()).isEmpty();
    assertThat(queue.stats().expired()).isEqualTo(2);
    assertThat(journal.reopen().load().pending()).isEmpty();
  }

  @Test
  @DisplayName("1000 events over their age go at most 64 per drain, each drain one journal change")
  void discardIsBounded() {
    BoundedWorkTest.CountingJournal counting = new BoundedWorkTest.CountingJournal(journal);
    ReportQueue queue = builder().journal(counting).build();
    for (int i = 0; i < 1000; i++) {
      queue.enqueue(event("b-" + i));
    }
    clock.advance(Duration.ofDays(8));
    int drains = 0;
    List<String> sent = new ArrayList<>();
    while (queue.stats().pending() > 0) {
      counting.calls.clear();
      sent.addAll(ids(queue.drainBatch()));
      assertThat(counting.total()).isLessThanOrEqualTo(1);
      drains++;
    }
    assertThat(sent).isEmpty();
    assertThat(drains).isEqualTo(16);
    assertThat(queue.stats().expired()).isEqualTo(1000);
  }
}
