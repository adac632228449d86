package io.relaykit.queue;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.queue.FaultyFileIo.Op;
import io.relaykit.tck.Await;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * An interrupt delivered to one of the journal's own threads (its I/O thread, its compaction
 * thread), which no caller owns: they ignore it and the journal goes on; a channel closed under
 * the I/O thread all the same fails the journal closed with an error that says so. It never hangs
 * a producer or drops an event it acknowledged.
 */
class FileJournalOwnThreadInterruptTest {

  private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");

  private final List<Path> dirs = new ArrayList<>();
  private final List<FileJournal> journals = new ArrayList<>();

  @AfterEach
  void cleanUp() throws IOException {
    journals.forEach(FileJournal::crash);
    for (Path d : dirs) {
      try (Stream<Path> files = Files.walk(d)) {
        for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
          Files.deleteIfExists(p);
        }
      }
    }
  }

  private Path newDir() throws IOException {
    Path d = Files.createTempDirectory("relaykit-own-thread-interrupt-");
    dirs.add(d);
    return d;
  }

  private static QueuedEvent event(String id, Priority priority) {
    return new QueuedEvent(id, "own.thread", "{\"id\":\"" + id + "\",\"pad\":\""
        + "x".repeat(60) + "\"}", priority, T0, 0, T0, null);
  }

  private static Set<Thread> threadsNamed(String name) {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.getName().equals(name)).collect(Collectors.toSet());
  }

  /** Opens a journal and finds its thread called {@code name} (one that was not there before). */
  private Opened open(FileJournal.Builder b, String name) {
    Set<Thread> before = threadsNamed(name);
    FileJournal j = b.build();
    journals.add(j);
    j.load();
    Set<Thread> mine = threadsNamed(name);
    mine.removeAll(before);
    assertThat(mine).as("the journal's own thread " + name).hasSize(1);
    return new Opened(j, mine.iterator().next());
  }

  private record Opened(FileJournal journal, Thread thread) {}

  private List<String> pendingAfterReopen(Path d) {
    FileJournal j = FileJournal.builder(d).build();
    journals.add(j);
    try {
      return j.load().pending().stream().map(QueuedEvent::eventId).toList();
    } finally {
      j.crash();
    }
  }

  @Test
  @DisplayName("an interrupt of the I/O thread during an fsync is ignored: the fsync completes, the waiting producer returns, and the journal goes on")
  void interruptDuringForceIsIgnored() throws Exception {
    Path d = newDir();
    FaultyFileIo io = new FaultyFileIo().passInterrupts(true);
    Opened o = open(FileJournal.builder(d).commitInterval(Duration.ofHours(1)).fileIo(io),
        "relaykit-file-journal-io");
    FileJournal j = o.journal();
    j.append(event("acked", Priority.CRITICAL));
    io.blockWhen(c -> c.op() == Op.FORCE && c.thread() == o.thread());
    CompletableFuture<Void> waiting = CompletableFuture.runAsync(
        () -> j.append(event("in-flight", Priority.CRITICAL)));
    Await.until(Duration.ofSeconds(10), "the I/O thread is in its fsync",
        () -> io.blockedCalls() == 1);
    o.thread().interrupt();
    io.release();

    waiting.get(10, TimeUnit.SECONDS);
    j.append(event("later", Priority.NORMAL));
    j.append(event("later-critical", Priority.CRITICAL));
    j.flush();
    assertThat(o.thread().isAlive()).isTrue();
    j.crash();
    assertThat(pendingAfterReopen(d))
        .containsExactly("acked", "in-flight", "later", "later-critical");
  }

  @Test
  @DisplayName("a write the I/O thread finds its channel closed for (as an interrupt during it would leave it) fails the journal closed with an error that says so: waiters are told, later changes refused, nothing hangs")
  void closedChannelFailsClosed() throws Exception {
    Path d = newDir();
    FaultyFileIo io = new FaultyFileIo();
    Opened o = open(FileJournal.builder(d).commitInterval(Duration.ofHours(1)).fileIo(io),
        "relaykit-file-journal-io");
    FileJournal j = o.journal();
    j.append(event("acked", Priority.CRITICAL));
    // The I/O thread interrupts itself at its next fsync (its own interrupts are not ignored):
    // the JDK then closes the channel and throws ClosedByInterruptException.
    io.blockWhen(c -> {
      if (c.op() == Op.FORCE && c.thread() == o.thread()) {
        Thread.currentThread().interrupt();
      }
      return false;
    });
    assertThatThrownBy(() -> j.append(event("in-flight", Priority.CRITICAL)))
        .isInstanceOf(JournalException.class)
        .hasMessageContaining("I/O thread was interrupted");
    io.release();
    assertThatThrownBy(() -> j.append(event("later", Priority.NORMAL)))
        .isInstanceOf(JournalException.class).hasMessageContaining("reopen");
    assertThatThrownBy(j::close).isInstanceOf(JournalException.class);
    assertThat(pendingAfterReopen(d)).contains("acked").doesNotContain("later");
  }

  @Test
  @DisplayName("an interrupt of the I/O thread while it starts a segment is ignored: no change is refused and the journal goes on")
  void interruptDuringSegmentStartGoesOn() throws Exception {
    Path d = newDir();
    FaultyFileIo io = new FaultyFileIo().passInterrupts(true);
    Opened o = open(FileJournal.builder(d).segmentBytes(1024)
        .commitInterval(Duration.ofMillis(5)).fileIo(io), "relaykit-file-journal-io");
    FileJournal j = o.journal();
    io.blockWhen(c -> c.op() == Op.CREATE && c.thread() == o.thread());
    List<String> acked = new ArrayList<>();
    CompletableFuture<List<String>> producer = CompletableFuture.supplyAsync(() -> {
      List<String> refused = new ArrayList<>();
      for (int i = 0; i < 40; i++) {
        try {
          j.append(event("e" + i, Priority.CRITICAL));
          synchronized (acked) {
            acked.add("e" + i);
          }
        } catch (JournalException e) {
          refused.add("e" + i);
        }
      }
      return refused;
    });
    Await.until(Duration.ofSeconds(10), "a roll creates the next segment",
        () -> io.blockedCalls() == 1);
    o.thread().interrupt();
    io.release();
    List<String> refused = producer.get(10, TimeUnit.SECONDS);

    assertThat(refused).as("no change refused: the interrupt was ignored").isEmpty();
    j.append(event("after", Priority.CRITICAL));
    j.close();
    List<String> reopened = pendingAfterReopen(d);
    List<String> expected = new ArrayList<>(acked);
    expected.add("after");
    assertThat(reopened).containsExactlyElementsOf(expected);
  }

  @Test
  @DisplayName("interrupts of the I/O thread at random points under producers and rolls are ignored: every change is acknowledged, and every one is there once after close and reopen")
  void interruptStormNeverHangsNorLoses() throws Exception {
    Path d = newDir();
    Opened o = open(FileJournal.builder(d).segmentBytes(4096)
        .commitInterval(Duration.ofMillis(2)), "relaykit-file-journal-io");
    FileJournal j = o.journal();
    Set<String> acked = ConcurrentHashMap.newKeySet();
    List<JournalException> failures = new java.util.concurrent.CopyOnWriteArrayList<>();
    AtomicBoolean stop = new AtomicBoolean();
    List<CompletableFuture<Void>> producers = new ArrayList<>();
    for (int p = 0; p < 4; p++) {
      int id = p;
      producers.add(CompletableFuture.runAsync(() -> {
        for (int i = 0; !stop.get() && i < 2_000; i++) {
          String e = "p" + id + "-" + i;
          try {
            j.append(event(e, i % 3 == 0 ? Priority.NORMAL : Priority.CRITICAL));
            acked.add(e);
          } catch (JournalException ex) {
            failures.add(ex);
          }
        }
      }));
    }
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(800);
    while (System.nanoTime() < deadline && producers.stream().anyMatch(f -> !f.isDone())) {
      o.thread().interrupt();
      Thread.onSpinWait();
      TimeUnit.MICROSECONDS.sleep(200);
    }
    stop.set(true);
    CompletableFuture.allOf(producers.toArray(CompletableFuture[]::new))
        .get(20, TimeUnit.SECONDS);
    assertThat(failures).as("no change failed").isEmpty();
    assertThat(o.thread().isInterrupted()).isFalse();
    j.close(); // the journal never failed: its final sync makes the NORMAL events durable too
    assertThat(pendingAfterReopen(d)).containsExactlyInAnyOrderElementsOf(acked);
  }

  @Test
  @DisplayName("an interrupt of the compaction thread during a compaction is ignored: it completes, the next one works, and nothing is lost")
  void interruptDuringCompaction() throws Exception {
    Path d = newDir();
    FaultyFileIo io = new FaultyFileIo().passInterrupts(true);
    Opened o = open(FileJournal.builder(d).segmentBytes(1024).compactionMinBytes(1L << 40)
        .commitInterval(Duration.ofMillis(5)).fileIo(io), "relaykit-file-journal-compactor");
    FileJournal j = o.journal();
    for (int i = 0; i < 30; i++) {
      j.append(event("e" + i, Priority.CRITICAL));
    }
    io.blockWhen(c -> c.thread() == o.thread()
        && (c.op() == Op.WRITE || c.op() == Op.FORCE));
    CompletableFuture<Void> compaction = CompletableFuture.runAsync(j::compact);
    Await.until(Duration.ofSeconds(10), "the compaction writes its base",
        () -> io.blockedCalls() >= 1);
    o.thread().interrupt();
    io.release();
    compaction.get(10, TimeUnit.SECONDS); // the interrupt was ignored
    j.append(event("after", Priority.CRITICAL));
    long before = j.compactions();
    j.compact();
    assertThat(j.compactions()).isEqualTo(before + 1);
    j.append(event("after-compaction", Priority.CRITICAL));
    j.close();
    List<String> expected = new ArrayList<>();
    for (int i = 0; i < 30; i++) {
      expected.add("e" + i);
    }
    expected.add("after");
    expected.add("after-compaction");
    assertThat(pendingAfterReopen(d)).containsExactlyElementsOf(expected);
  }
}
