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
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The final commit of a close, or a commit in progress during a simulated crash, runs on the
 * journal's commit thread after the close has begun to stop it: an interrupt of that thread from
 * another thread (code that interrupts every thread it finds, or whatever interrupted the closer)
 * must still be ignored while the thread commits, on an H2 file database without the {@code
 * retry:} file system, or H2 closes the whole database and the close's final commit is lost.
 */
@DisplayName("JdbcQueueJournal: interrupts of the commit thread while a close stops it")
class JdbcQueueJournalCloseInterruptRaceTest {

  private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");

  @TempDir
  Path tempDir;

  private TestDatabase db;

  @AfterEach
  void closeDb() {
    if (db != null) {
      db.close();
    }
  }

  private static QueuedEvent event(String id, Priority priority) {
    return new QueuedEvent(id, "close.race", "{\"id\":\"" + id + "\"}", priority, T0, 0, T0,
        null);
  }

  private static Thread commitThread(String name) {
    String threadName = "relaykit-journal-" + name;
    List<Thread> own = Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.getName().equals(threadName)).collect(Collectors.toList());
    assertThat(own).as("the journal's commit thread").hasSize(1);
    return own.get(0);
  }

  @Test
  @DisplayName("an interrupted closer's close returns at once; an interrupt of the commit thread during the close's final commit is ignored: the database stays open and every accepted event is there once after reopen")
  void interruptDuringFinalCommitOfInterruptedClose() throws Exception {
    db = TestDatabase.open(TestDatabase.Kind.H2_FILE, tempDir);
    CommitHookDataSource hooked = new CommitHookDataSource(db.dataSource());
    JdbcStorage storage = JdbcStorage.open(hooked, Dialect.H2, TestDatabase.newPrefix(),
        Duration.ofDays(1), InstantSource.system());
    String name = "cr-" + UUID.randomUUID();
    // A long interval: only the close commits what follows.
    JdbcQueueJournal j = storage.queueJournal(name, Duration.ofHours(1));
    j.load();
    j.append(event("first", Priority.CRITICAL)); // the commit thread exists from here
    Thread commitThread = commitThread(name);
    List<String> accepted = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      j.append(event("n" + i, Priority.NORMAL));
      accepted.add("n" + i);
    }

    CountDownLatch atCommit = new CountDownLatch(1);
    CountDownLatch go = new CountDownLatch(1);
    AtomicBoolean flagAtCommit = new AtomicBoolean();
    hooked.onNextCommit(commit -> {
      atCommit.countDown();
      try {
        if (!go.await(30, TimeUnit.SECONDS)) {
          throw new AssertionError("test never released the commit");
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt(); // what an interrupt during H2's I/O would be
      }
      flagAtCommit.set(Thread.currentThread().isInterrupted());
      commit.run();
    });

    CompletableFuture<JournalException> closer = new CompletableFuture<>();
    Thread closing = new Thread(() -> {
      Thread.currentThread().interrupt(); // the closer was cancelled
      try {
        j.close();
        closer.complete(null);
      } catch (JournalException e) {
        closer.complete(e);
      } catch (Throwable t) {
        closer.completeExceptionally(t);
      }
    }, "interrupted-closer");
    closing.start();
    JournalException thrown = closer.get(10, TimeUnit.SECONDS);
    assertThat(thrown).as("the interrupted closer's wait ended at once, outcome unknown")
        .isNotNull();
    assertThat(thrown.outcome()).isEqualTo(JournalException.Outcome.UNKNOWN);

    assertThat(atCommit.await(10, TimeUnit.SECONDS))
        .as("the close's final commit runs on the commit thread").isTrue();
    commitThread.interrupt(); // from another thread, while the commit thread writes
    go.countDown();
    commitThread.join(TimeUnit.SECONDS.toMillis(10));
    assertThat(commitThread.isAlive()).as("the commit thread stopped after the close").isFalse();

    try (Connection c = db.connection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT 1")) {
      assertThat(rs.next()).as("the database is open").isTrue();
    }
    JdbcQueueJournal reopened = storage.queueJournal(name, Duration.ofMillis(20));
    List<String> pending = reopened.load().pending().stream().map(QueuedEvent::eventId).toList();
    assertThat(pending).as("the close's final commit wrote every accepted event, once")
        .containsAll(accepted).contains("first").doesNotHaveDuplicates().hasSize(201);
    reopened.close();
    assertThat(flagAtCommit.get()).as("the commit thread's interrupt flag while it committed")
        .isFalse();
  }

  @Test
  @DisplayName("a crash while the commit thread commits: an interrupt of that thread meanwhile is ignored and the database stays open")
  void interruptDuringCommitWhileCrashing() throws Exception {
    db = TestDatabase.open(TestDatabase.Kind.H2_FILE, tempDir);
    CommitHookDataSource hooked = new CommitHookDataSource(db.dataSource());
    JdbcStorage storage = JdbcStorage.open(hooked, Dialect.H2, TestDatabase.newPrefix(),
        Duration.ofDays(1), InstantSource.system());
    String name = "cc-" + UUID.randomUUID();
    JdbcQueueJournal j = storage.queueJournal(name, Duration.ofHours(1));
    j.load();
    j.append(event("first", Priority.CRITICAL));
    Thread commitThread = commitThread(name);
    CountDownLatch atCommit = new CountDownLatch(1);
    CountDownLatch go = new CountDownLatch(1);
    AtomicBoolean flagAtCommit = new AtomicBoolean();
    hooked.onNextCommit(commit -> {
      atCommit.countDown();
      try {
        if (!go.await(30, TimeUnit.SECONDS)) {
          throw new AssertionError("test never released the commit");
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      flagAtCommit.set(Thread.currentThread().isInterrupted());
      commit.run();
    });
    CompletableFuture<Void> producer = CompletableFuture.runAsync(
        () -> j.append(event("second", Priority.CRITICAL)));
    assertThat(atCommit.await(10, TimeUnit.SECONDS)).isTrue();
    CompletableFuture<Void> crashing = CompletableFuture.runAsync(j::crash);
    // crash() marks the thread stoppable before it waits for the commit in progress
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (commitThread.getState() != Thread.State.WAITING
        && commitThread.getState() != Thread.State.TIMED_WAITING) {
      assertThat(System.nanoTime() - deadline).as("commit thread parked in the hook").isNegative();
      Thread.onSpinWait();
    }
    while (!crashing.isDone() && !isStopping(j)) {
      assertThat(System.nanoTime() - deadline).as("crash began").isNegative();
      Thread.onSpinWait();
    }
    commitThread.interrupt();
    go.countDown();
    crashing.get(10, TimeUnit.SECONDS);
    try {
      producer.get(10, TimeUnit.SECONDS);
    } catch (java.util.concurrent.ExecutionException e) {
      // outcome unknown after a crash: either answer is fine, but an answer it is
    }
    try (Connection c = db.connection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT 1")) {
      assertThat(rs.next()).as("the database is open").isTrue();
    }
    JdbcQueueJournal reopened = storage.queueJournal(name, Duration.ofMillis(20));
    List<String> pending = reopened.load().pending().stream().map(QueuedEvent::eventId).toList();
    assertThat(pending).contains("first").doesNotHaveDuplicates();
    reopened.close();
    assertThat(flagAtCommit.get()).as("the commit thread's interrupt flag while it committed")
        .isFalse();
  }

  private static boolean isStopping(JdbcQueueJournal j) {
    try {
      java.lang.reflect.Field f = JdbcQueueJournal.class.getDeclaredField("stopping");
      f.setAccessible(true);
      return f.getBoolean(j);
    } catch (ReflectiveOperationException e) {
      throw new AssertionError(e);
    }
  }
}
