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
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An interrupt delivered to the journal's own commit thread (which no caller owns), on an H2 file
 * database opened without the {@code retry:} file system (an application's own pool): the thread
 * ignores it, so the database stays open, every append is acknowledged and committed once.
 */
@DisplayName("JdbcQueueJournal with its commit thread interrupted")
class JdbcQueueJournalCommitThreadInterruptTest {

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
    return new QueuedEvent(id, "commit.thread", "{\"id\":\"" + id + "\"}", priority, T0, 0, T0,
        null);
  }

  @Test
  @DisplayName("interrupts of the commit thread under CRITICAL producers: no producer hangs, every acknowledged event is there once after reopen, the database stays open and later appends commit")
  void interruptStormOnCommitThread() throws Exception {
    TestDatabase db = TestDatabase.open(TestDatabase.Kind.H2_FILE, tempDir);
    toClose.add(db::close);
    JdbcStorage storage = db.storage(InstantSource.system());
    String name = "ct-" + UUID.randomUUID();
    JdbcQueueJournal j = storage.queueJournal(name, Duration.ofMillis(2));
    j.load();
    j.append(event("first", Priority.CRITICAL)); // the commit thread exists from here
    String threadName = "relaykit-journal-" + name;
    Set<Thread> own = Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.getName().equals(threadName)).collect(Collectors.toSet());
    assertThat(own).as("the journal's commit thread").hasSize(1);
    Thread commitThread = own.iterator().next();

    Set<String> acked = ConcurrentHashMap.newKeySet();
    List<CompletableFuture<Void>> producers = new ArrayList<>();
    for (int p = 0; p < 4; p++) {
      int id = p;
      producers.add(CompletableFuture.runAsync(() -> {
        for (int i = 0; i < 150; i++) {
          String e = "p" + id + "-" + i;
          try {
            j.append(event(e, Priority.CRITICAL));
            acked.add(e);
          } catch (JournalException ex) {
            // counted by the size check below
          }
        }
      }));
    }
    int interrupts = 0;
    while (producers.stream().anyMatch(f -> !f.isDone()) && interrupts < 5_000) {
      commitThread.interrupt();
      interrupts++;
      TimeUnit.MICROSECONDS.sleep(300);
    }
    CompletableFuture.allOf(producers.toArray(CompletableFuture[]::new))
        .get(30, TimeUnit.SECONDS);

    assertThat(acked).as("every append acknowledged: the interrupts were ignored").hasSize(600);
    j.append(event("after", Priority.CRITICAL));
    try (Connection c = db.connection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT 1")) {
      assertThat(rs.next()).as("the database is open").isTrue();
    }
    j.crash();
    JdbcQueueJournal reopened = storage.queueJournal(name, Duration.ofMillis(20));
    List<String> pending = reopened.load().pending().stream().map(QueuedEvent::eventId).toList();
    assertThat(pending).containsAll(acked).contains("first", "after").doesNotHaveDuplicates();
    reopened.close();
  }
}
