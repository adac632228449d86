package io.relaykit.queue;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.tck.FakeClock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The work one queue operation does under the lock is bounded, and so are its journal calls,
 * whatever the queue's or the dedupe window's size: housekeeping that a wall-clock step makes due
 * all at once is spread over the next calls.
 */
class BoundedWorkTest {

  private final FakeClock clock = new FakeClock();
  private final CountingJournal journal = new CountingJournal(new InMemoryJournal());

  /** Counts the calls a queue makes, by method name. */
  static final class CountingJournal implements QueueJournal {
    final QueueJournal delegate;
    final Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();

    CountingJournal(QueueJournal delegate) {
      this.delegate = delegate;
    }

    int calls(String method) {
      return calls.getOrDefault(method, new AtomicInteger()).get();
    }

    int total() {
      return calls.values().stream().mapToInt(AtomicInteger::get).sum();
    }

    private void count(String method) {
      calls.computeIfAbsent(method, k -> new AtomicInteger()).incrementAndGet();
    }

    @Override
    public void append(QueuedEvent event) {
      count("append");
      delegate.append(event);
    }

    @Override
    public long recordAtomically(List<Change> changes) {
      count("recordAtomically");
      return delegate.recordAtomically(changes);
    }

    @Override
    public void remove(String eventId, Removal removal) {
      count("remove");
      delegate.remove(eventId, removal);
    }

    @Override
    public void reschedule(String eventId, int attempts, Instant nextAttemptAt) {
      count("reschedule");
      delegate.reschedule(eventId, attempts, nextAttemptAt);
    }

    @Override
    public void deadLetter(String eventId, int attempts, String reason) {
      count("deadLetter");
      delegate.deadLetter(eventId, attempts, reason);
    }

    @Override
    public void forget(String eventId) {
      count("forget");
      delegate.forget(eventId);
    }

    @Override
    public JournalState load() {
      return delegate.load();
    }

    @Override
    public void flush() {
      delegate.flush();
    }

    @Override
    public void close() {
      delegate.close();
    }
  }

  @Test
  @DisplayName("two idle days past the dedupe window's age let at most 64 ids go per call, in one journal change, not the whole window in one enqueue")
  void windowTrimIsBounded() {
    ReportQueue queue = ReportQueue.builder().clock(clock).journal(journal).capacity(2000)
        .batchSize(2000).dedupeWindow(Duration.ofHours(1), 100_000).build();
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < 1000; i++) {
      ids.add("id-" + i);
      queue.enqueue(new ReportEvent("id-" + i, "n", "p"));
    }
    queue.drainBatch();
    queue.ack(ids);
    assertThat(queue.stats().seen()).isEqualTo(1000);
    clock.advance(Duration.ofDays(2)); // idle two days: the whole window ages at once
    journal.calls.clear();

    assertThat(queue.enqueue(new ReportEvent("new", "n", "p")).accepted()).isTrue();
    assertThat(journal.calls("forget")).isZero();
    assertThat(journal.calls("recordAtomically")).as("one change for the ids let go").isEqualTo(1);
    assertThat(journal.total()).isEqualTo(2);
    int calls = 1;
    while (journal.delegate.load().seen().containsKey("id-999")) {
      journal.calls.clear();
      queue.drainBatch();
      assertThat(journal.total()).isLessThanOrEqualTo(1);
      calls++;
    }
    assertThat(calls).as("1000 ids, 64 per call").isEqualTo(16);
    assertThat(queue.stats().seen()).isEqualTo(1);
    assertThat(queue.enqueue(new ReportEvent("id-0", "n", "p")).accepted()).as("forgotten")
        .isTrue();
  }

  @Test
  @DisplayName("a drain after 1000 events expired at once discards at most 64 per call and never returns an expired event")
  void expiryIsBounded() {
    ReportQueue queue = ReportQueue.builder().clock(clock).journal(journal).capacity(2000)
        .batchSize(10).build();
    for (int i = 0; i < 1000; i++) {
      queue.enqueue(new ReportEvent("otp-" + i, "n", "p", Priority.NORMAL,
          clock.instant().plusSeconds(60)));
    }
    queue.enqueue(new ReportEvent("keep", "n", "p", Priority.LOW, null));
    clock.stepWall(Duration.ofDays(1));
    List<String> drained = new ArrayList<>();
    int drains = 0;
    while (drained.isEmpty()) {
      journal.calls.clear();
      queue.drainBatch().forEach(e -> drained.add(e.eventId()));
      assertThat(journal.calls("remove") + journal.calls("recordAtomically"))
          .isLessThanOrEqualTo(64);
      drains++;
    }
    assertThat(drained).containsExactly("keep");
    assertThat(drains).isEqualTo(16);
    assertThat(queue.stats().expired()).isEqualTo(1000);
  }

  @Test
  @DisplayName("the up to 64 expired events one drain discards are one journal change, not one journal call each (one Redis round trip or one SQL commit under the queue lock)")
  void expiriesOfOneDrainAreOneJournalChange() {
    ReportQueue queue = ReportQueue.builder().clock(clock).journal(journal).capacity(2000)
        .batchSize(10).build();
    for (int i = 0; i < 200; i++) {
      queue.enqueue(new ReportEvent("exp-" + i, "n", "p", Priority.NORMAL,
          clock.instant().plusSeconds(60)));
    }
    clock.advance(Duration.ofMinutes(2));
    int drains = 0;
    while (queue.stats().pending() > 0) {
      journal.calls.clear();
      assertThat(queue.drainBatch()).isEmpty();
      assertThat(journal.total()).as("journal calls of one drain").isEqualTo(1);
      drains++;
    }
    assertThat(drains).isEqualTo(4);
    assertThat(queue.stats().expired()).isEqualTo(200);
    assertThat(journal.delegate.load().pending()).isEmpty();
  }

  @Test
  @DisplayName("an ack of 500 in-flight ids is one journal change, not one journal call per id (one Redis round trip or one SQL commit under the queue lock)")
  void ackOfManyIdsIsOneJournalChange() {
    ReportQueue queue = ReportQueue.builder().clock(clock).journal(journal).capacity(1000)
        .batchSize(500).build();
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < 500; i++) {
      ids.add("a-" + i);
      queue.enqueue(new ReportEvent("a-" + i, "n", "p"));
    }
    assertThat(queue.drainBatch()).hasSize(500);
    List<String> withRepeats = new ArrayList<>(ids);
    withRepeats.add("a-0");
    withRepeats.add("unknown");
    journal.calls.clear();

    assertThat(queue.ack(withRepeats)).isEqualTo(500);
    assertThat(journal.total()).as("journal calls for one ack of 500 ids").isEqualTo(1);
    assertThat(journal.delegate.load().pending()).isEmpty();
    assertThat(queue.stats().inflight()).isZero();
    assertThat(queue.stats().bytes()).isZero();
    assertThat(queue.ack(ids)).as("acked once").isZero();
  }

  @Test
  @DisplayName("stats() two idle days past the dedupe window walks at most 64 aged ids under the lock: the rest still count as seen (they are still remembered, a duplicate is still refused) until enqueues and drains let them go")
  void statsWalksBoundedWindow() {
    ReportQueue queue = ReportQueue.builder().clock(clock).journal(journal).capacity(2000)
        .batchSize(2000).dedupeWindow(Duration.ofHours(1), 100_000).build();
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < 1000; i++) {
      ids.add("s-" + i);
      queue.enqueue(new ReportEvent("s-" + i, "n", "p"));
    }
    queue.drainBatch();
    queue.ack(ids);
    clock.advance(Duration.ofDays(2));

    assertThat(queue.stats().seen()).as("1000 remembered, 64 visited and found aged")
        .isEqualTo(1000 - 64);
    while (journal.delegate.load().seen().containsKey("s-999")) {
      queue.drainBatch();
    }
    assertThat(queue.stats().seen()).isZero();
  }
}
