package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.queue.JournalException;
import io.relaykit.queue.Priority;
import io.relaykit.queue.QueuedEvent;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Critical producers interrupted at random (and the journal's commit thread too) while the
 * database goes away, hands out broken connections, and comes back: every producer gets an answer,
 * and after recovery an event is back exactly when its answer allows: acknowledged ones always,
 * refused ones never, those of unknown outcome at most once, and the journal commits again.
 */
@DisplayName("JdbcQueueJournal: interrupted critical producers through an outage")
class JdbcQueueJournalInterruptedProducerOutageTest {

  private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");
  private static final int PRODUCERS = 4;
  private static final int PHASE = 60;

  @TempDir
  Path tempDir;

  private TestDatabase db;

  @AfterEach
  void closeDb() {
    if (db != null) {
      db.close();
    }
  }

  private static QueuedEvent event(String id) {
    return new QueuedEvent(id, "outage", "{\"id\":\"" + id + "\"}", Priority.CRITICAL, T0, 0, T0,
        null);
  }

  @ParameterizedTest
  @EnumSource(value = TestDatabase.Kind.class, names = {"H2_FILE", "POSTGRESQL"})
  @DisplayName("each event is back after recovery as its answer allows: OK always, NOT_RECORDED never, UNKNOWN at most once")
  void interruptedProducersThroughOutage(TestDatabase.Kind kind) throws Exception {
    db = TestDatabase.open(kind, tempDir);
    FlakyDataSource flaky = new FlakyDataSource(db.dataSource());
    JdbcStorage storage = JdbcStorage.open(flaky, db.dialect(), TestDatabase.newPrefix(),
        Duration.ofDays(1), InstantSource.system());
    String name = "ipo-" + UUID.randomUUID();
    JdbcQueueJournal j = storage.queueJournal(name, Duration.ofMillis(5));
    j.load();
    j.append(event("first"));
    Thread commitThread = Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.getName().equals("relaykit-journal-" + name)).findFirst().orElseThrow();

    Set<String> acked = ConcurrentHashMap.newKeySet();
    Set<String> refused = ConcurrentHashMap.newKeySet();
    Set<String> unknown = ConcurrentHashMap.newKeySet();
    Set<String> flagLost = ConcurrentHashMap.newKeySet();
    List<Thread> producers = new ArrayList<>();
    java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
    for (int p = 0; p < PRODUCERS; p++) {
      int id = p;
      producers.add(new Thread(() -> {
        for (int i = 0; !stop.get(); i++) {
          String e = "p" + id + "-" + i;
          try {
            j.append(event(e));
            acked.add(e);
          } catch (JournalException ex) {
            boolean flag = Thread.interrupted();
            if (ex.getCause() instanceof InterruptedException && !flag) {
              flagLost.add(e);
            }
            (ex.outcome() == JournalException.Outcome.NOT_RECORDED ? refused : unknown).add(e);
          }
          Thread.interrupted();
        }
      }, "outage-producer-" + p));
    }
    producers.forEach(Thread::start);

    SplittableRandom random = new SplittableRandom(61206L);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    int phase = 0;
    int mark = 0;
    while (producers.stream().anyMatch(Thread::isAlive)) {
      assertThat(System.nanoTime() - deadline).as("producers answered").isNegative();
      int answered = acked.size() + refused.size() + unknown.size();
      if (phase == 0 && acked.size() >= PHASE) {
        flaky.down(true);
        phase = 1;
        mark = answered;
      } else if (phase == 1 && flaky.failures.get() >= 10 && answered >= mark + PHASE) {
        flaky.down(false);
        flaky.closeNextConnections(2);
        phase = 2;
        mark = acked.size();
      } else if (phase == 2 && acked.size() >= mark + PHASE) {
        stop.set(true);
        phase = 3;
      }
      producers.get(random.nextInt(PRODUCERS)).interrupt();
      commitThread.interrupt();
      producers.get(random.nextInt(PRODUCERS)).join(1);
    }
    flaky.down(false);

    // The journal commits again: a flush (retried while the last probe still reports the outage)
    long flushDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
    while (true) {
      try {
        j.flush();
        break;
      } catch (JournalException e) {
        assertThat(System.nanoTime() - flushDeadline).as("flush after recovery: " + e)
            .isNegative();
        Thread.onSpinWait();
      }
    }
    j.append(event("after"));
    j.close();

    assertThat(flagLost).as("interrupted waits that lost the flag").isEmpty();
    assertThat(phase).as("the outage happened while producers ran").isEqualTo(3);
    JdbcQueueJournal reopened = storage.queueJournal(name, Duration.ofMillis(20));
    List<String> pending = reopened.load().pending().stream().map(QueuedEvent::eventId).toList();
    reopened.close();
    assertThat(pending).doesNotHaveDuplicates().containsAll(acked).contains("first", "after");
    Set<String> refusedBack = pending.stream().filter(refused::contains)
        .collect(Collectors.toSet());
    assertThat(refusedBack).as("refused events after recovery").isEmpty();
    Set<String> unexplained = pending.stream()
        .filter(e -> !acked.contains(e) && !unknown.contains(e) && !e.equals("first")
            && !e.equals("after"))
        .collect(Collectors.toSet());
    assertThat(unexplained).as("events back without an OK or UNKNOWN answer").isEmpty();
  }
}
