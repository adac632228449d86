package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.queue.JournalException;
import io.relaykit.queue.Priority;
import io.relaykit.queue.QueuedEvent;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * JdbcQueueJournal commits on its own thread: an interrupted caller ends only its own wait, and
 * never closes an H2 file database (a {@code FileChannel} closes when the thread writing it is
 * interrupted, and H2 closes the database with it).
 */
@DisplayName("JdbcQueueJournal with interrupted callers")
class JdbcQueueJournalOwnThreadTest {

  private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");

  @TempDir
  Path tempDir;

  private final List<AutoCloseable> toClose = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    Collections.reverse(toClose);
    for (AutoCloseable c : toClose) {
      c.close();
    }
  }

  private static QueuedEvent event(String id, Priority priority) {
    return new QueuedEvent(id, "own.thread", "{\"id\":\"" + id + "\"}", priority, T0, 0, T0, null);
  }

  private record Outcome(RuntimeException thrown, boolean stillInterrupted) {}

  /** Runs {@code body} on a new thread that interrupts itself first; returns what it threw. */
  private static Outcome onInterruptedThread(Runnable body) throws Exception {
    AtomicReference<Outcome> out = new AtomicReference<>();
    Thread t = new Thread(() -> {
      Thread.currentThread().interrupt();
      RuntimeException thrown = null;
      try {
        body.run();
      } catch (RuntimeException e) {
        thrown = e;
      }
      out.set(new Outcome(thrown, Thread.currentThread().isInterrupted()));
    }, "interrupted-producer");
    t.start();
    t.join(TimeUnit.SECONDS.toMillis(20));
    assertThat(out.get()).as("the interrupted call returned").isNotNull();
    return out.get();
  }

  private TestDatabase database(TestDatabase.Kind kind) {
    // Its own database: on the code before the fix the H2 one is closed for good by the test.
    TestDatabase db = TestDatabase.open(kind, tempDir);
    toClose.add(db::close);
    return db;
  }

  @ParameterizedTest
  @EnumSource(value = TestDatabase.Kind.class, names = {"H2_FILE", "POSTGRESQL"})
  @DisplayName("a critical append, flush and load on an interrupted thread throw at once with the flag kept, and every other thread's changes commit")
  void interruptedCallersCloseNothing(TestDatabase.Kind kind) throws Exception {
    TestDatabase db = database(kind);
    JdbcStorage storage = db.storage(InstantSource.system());
    String name = "own-" + UUID.randomUUID();
    // No background commit: the interrupted critical append's change is not yet committed when it
    // waits (a commit in between would rightly let it return).
    JdbcQueueJournal j = storage.queueJournal(name, Duration.ofHours(1));
    Outcome load = onInterruptedThread(j::load);
    assertThat(load.stillInterrupted()).isTrue();
    if (load.thrown() != null) {
      assertThat(load.thrown()).isInstanceOf(JournalException.class);
      j.load();
    }
    j.append(event("before", Priority.CRITICAL));

    Outcome critical = onInterruptedThread(() -> j.append(event("x", Priority.CRITICAL)));
    assertThat(critical.stillInterrupted()).as("the interrupt flag stays set").isTrue();
    assertThat(critical.thrown()).isInstanceOf(JournalException.class);
    assertThat(((JournalException) critical.thrown()).outcome())
        .isEqualTo(JournalException.Outcome.UNKNOWN);
    j.append(event("y", Priority.NORMAL));
    Outcome flush = onInterruptedThread(j::flush);
    assertThat(flush.stillInterrupted()).isTrue();

    // Healthy threads go on, and the database is open for every store.
    j.append(event("after", Priority.CRITICAL));
    j.append(event("n", Priority.NORMAL));
    j.flush();
    try (Connection c = db.connection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT 1")) {
      assertThat(rs.next()).isTrue();
    }
    j.crash();
    JdbcQueueJournal reopened = storage.queueJournal(name, Duration.ofMillis(20));
    assertThat(reopened.load().pending()).extracting(QueuedEvent::eventId)
        .containsExactly("before", "x", "y", "after", "n");
    reopened.close();
  }

  @ParameterizedTest
  @EnumSource(value = TestDatabase.Kind.class, names = {"H2_FILE"})
  @DisplayName("producers interrupted at random leave every append that returned committed, and the database open")
  void manyInterruptedProducers(TestDatabase.Kind kind) throws Exception {
    TestDatabase db = database(kind);
    JdbcStorage storage = db.storage(InstantSource.system());
    String name = "many-" + UUID.randomUUID();
    JdbcQueueJournal j = storage.queueJournal(name, Duration.ofMillis(5));
    j.load();
    List<String> accepted = Collections.synchronizedList(new ArrayList<>());
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < 4; t++) {
      int n = t;
      threads.add(new Thread(() -> {
        for (int i = 0; i < 100; i++) {
          String id = "t" + n + "-" + i;
          try {
            j.append(event(id, i % 2 == 0 ? Priority.CRITICAL : Priority.NORMAL));
            accepted.add(id);
          } catch (JournalException e) {
            Thread.interrupted();
          }
        }
      }));
    }
    threads.forEach(Thread::start);
    SplittableRandom random = new SplittableRandom(7);
    while (threads.stream().anyMatch(Thread::isAlive)) {
      threads.get(random.nextInt(threads.size())).interrupt();
      Thread.yield();
    }
    for (Thread t : threads) {
      t.join();
    }
    j.append(event("last", Priority.CRITICAL));
    j.crash();
    JdbcQueueJournal reopened = storage.queueJournal(name, Duration.ofMillis(20));
    assertThat(reopened.load().pending()).extracting(QueuedEvent::eventId)
        .containsAll(accepted).contains("last");
    reopened.close();
  }

  @ParameterizedTest
  @EnumSource(value = TestDatabase.Kind.class, names = {"H2_FILE"})
  @DisplayName("past its buffer bound, while the database answers, an appender waits for the journal's commit instead of being refused")
  void fullBufferIsBackpressure(TestDatabase.Kind kind) throws Exception {
    TestDatabase db = database(kind);
    JdbcStorage storage = db.storage(InstantSource.system());
    String name = "bp-" + UUID.randomUUID();
    // An hour between commits: only the backpressure commits make room.
    JdbcQueueJournal j = storage.queueJournal(name, Duration.ofHours(1), 10, 1_000_000);
    j.load();
    for (int i = 0; i < 50; i++) {
      j.append(event("n" + i, Priority.NORMAL));
    }
    j.crash();
    JdbcQueueJournal reopened = storage.queueJournal(name, Duration.ofMillis(20));
    // Every append returned; all but the last few (buffered, not yet committed) are in the table.
    assertThat(reopened.load().pending()).extracting(QueuedEvent::eventId).hasSizeGreaterThan(44)
        .startsWith("n0", "n1", "n2");
    reopened.close();
  }
}
