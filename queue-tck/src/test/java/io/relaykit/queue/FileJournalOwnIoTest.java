package io.relaykit.queue;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.queue.FaultyFileIo.Op;
import io.relaykit.queue.QueueJournal.Removal;
import io.relaykit.tck.Await;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * The journal owns its I/O: callers' threads never write or force its files, so an interrupted
 * caller ends only its own wait, and a compaction never holds up group commits.
 */
class FileJournalOwnIoTest {

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
    Path d = Files.createTempDirectory("relaykit-own-io-");
    dirs.add(d);
    return d;
  }

  private FileJournal loaded(FileJournal.Builder b) {
    FileJournal j = b.build();
    journals.add(j);
    j.load();
    return j;
  }

  private List<String> pendingAfterReopen(Path d) {
    FileJournal j = FileJournal.builder(d).build();
    journals.add(j);
    return j.load().pending().stream().map(QueuedEvent::eventId).toList();
  }

  private static QueuedEvent event(String id, Priority priority) {
    return new QueuedEvent(id, "own.io", "{\"id\":\"" + id + "\"}", priority, T0, 0, T0, null);
  }

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
    t.join(TimeUnit.SECONDS.toMillis(10));
    assertThat(out.get()).as("the interrupted call returned").isNotNull();
    return out.get();
  }

  private record Outcome(RuntimeException thrown, boolean stillInterrupted) {}

  @Nested
  @DisplayName("an interrupted caller")
  class Interrupt {

    @Test
    @DisplayName("a critical append on an interrupted thread throws UNKNOWN, keeps the interrupt flag, and every other thread's appends stay durable")
    void interruptedCriticalAppendBreaksNothing() throws Exception {
      Path d = newDir();
      FileJournal j = loaded(FileJournal.builder(d).commitInterval(Duration.ofMillis(5)));
      j.append(event("before", Priority.CRITICAL));

      Outcome o = onInterruptedThread(() -> j.append(event("interrupted", Priority.CRITICAL)));

      assertThat(o.stillInterrupted()).as("the interrupt flag stays set").isTrue();
      if (o.thrown() != null) {
        assertThat(o.thrown()).isInstanceOf(JournalException.class);
        assertThat(((JournalException) o.thrown()).outcome())
            .isEqualTo(JournalException.Outcome.UNKNOWN);
      }
      j.append(event("after-critical", Priority.CRITICAL));
      j.append(event("after-normal", Priority.NORMAL));
      j.flush();
      j.crash();
      assertThat(pendingAfterReopen(d)).contains("before", "after-critical", "after-normal")
          // Recorded before the interrupt: the journal's own thread made it durable.
          .contains("interrupted");
    }

    @Test
    @DisplayName("flush and close on an interrupted thread throw UNKNOWN or return, and leave the journal working and the files whole")
    void interruptedFlushAndClose() throws Exception {
      Path d = newDir();
      FileJournal j = loaded(FileJournal.builder(d).commitInterval(Duration.ofHours(1))
          .commitRecords(Integer.MAX_VALUE));
      j.append(event("a", Priority.NORMAL));
      Outcome flush = onInterruptedThread(j::flush);
      assertThat(flush.stillInterrupted()).isTrue();
      if (flush.thrown() != null) {
        assertThat(((JournalException) flush.thrown()).outcome())
            .isEqualTo(JournalException.Outcome.UNKNOWN);
      }
      j.append(event("b", Priority.CRITICAL));
      j.append(event("c", Priority.NORMAL));
      Outcome close = onInterruptedThread(j::close);
      assertThat(close.stillInterrupted()).isTrue();
      // An interrupted close still gets its final sync from the journal's own thread.
      assertThat(pendingAfterReopen(d)).containsExactly("a", "b", "c");
    }

    @Test
    @DisplayName("a critical appender interrupted while its fsync is slow returns at once with UNKNOWN; its event is durable once the disk answers, and the journal keeps working")
    void interruptDuringSlowFsync() throws Exception {
      Path d = newDir();
      FaultyFileIo io = new FaultyFileIo();
      FileJournal j = loaded(FileJournal.builder(d).fileIo(io));
      j.append(event("before", Priority.CRITICAL));
      io.blockWhen(c -> c.op() == Op.FORCE);
      CompletableFuture<Outcome> waiting = new CompletableFuture<>();
      Thread producer = new Thread(() -> {
        RuntimeException thrown = null;
        try {
          j.append(event("slow", Priority.CRITICAL));
        } catch (RuntimeException e) {
          thrown = e;
        }
        waiting.complete(new Outcome(thrown, Thread.currentThread().isInterrupted()));
      });
      producer.start();
      try {
        Await.until(Duration.ofSeconds(10), "an fsync is stuck", () -> io.blockedCalls() > 0);
        producer.interrupt();
        Outcome o = waiting.get(5, TimeUnit.SECONDS);
        assertThat(o.thrown()).isInstanceOf(JournalException.class)
            .hasMessageContaining("interrupted");
        assertThat(((JournalException) o.thrown()).outcome())
            .isEqualTo(JournalException.Outcome.UNKNOWN);
        assertThat(o.stillInterrupted()).isTrue();
      } finally {
        io.release();
      }
      j.append(event("after", Priority.CRITICAL));
      j.crash();
      assertThat(pendingAfterReopen(d)).containsExactly("before", "slow", "after");
    }

    @Test
    @DisplayName("producers interrupted at random while others append leave every append that returned durable")
    void manyInterruptedProducers() throws Exception {
      Path d = newDir();
      FileJournal j = loaded(FileJournal.builder(d).segmentBytes(4096)
          .commitInterval(Duration.ofMillis(2)));
      List<String> accepted = java.util.Collections.synchronizedList(new ArrayList<>());
      List<Thread> threads = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        int n = t;
        threads.add(new Thread(() -> {
          for (int i = 0; i < 200; i++) {
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
      java.util.SplittableRandom random = new java.util.SplittableRandom(42);
      while (threads.stream().anyMatch(Thread::isAlive)) {
        threads.get(random.nextInt(threads.size())).interrupt();
        Thread.yield();
      }
      for (Thread t : threads) {
        t.join();
      }
      j.append(event("last", Priority.CRITICAL));
      j.crash();
      assertThat(pendingAfterReopen(d)).containsAll(accepted).contains("last");
    }
  }

  @Nested
  @DisplayName("a running compaction")
  class CompactionOffCommitPath {

    @Test
    @DisplayName("group commits keep their interval while a compaction is stuck, and a crash during it loses nothing accepted more than a commit interval before")
    void groupCommitsRunDuringCompaction() throws Exception {
      Path d = newDir();
      FaultyFileIo io = new FaultyFileIo();
      // The compaction's base writes hang: a compaction that takes forever.
      io.blockWhen(c -> c.path() != null
          && c.path().getFileName().toString().contains(SegmentFormat.BASE)
          && (c.op() == Op.WRITE || c.op() == Op.FORCE || c.op() == Op.CREATE));
      FileJournal j = loaded(FileJournal.builder(d).segmentBytes(16 * 1024).fileIo(io)
          .commitInterval(Duration.ofMillis(5)).compactionMinBytes(32 * 1024));
      List<String> live = new ArrayList<>();
      for (int n = 0; io.blockedCalls() == 0 && n < 5_000; n++) {
        j.append(event("g" + n, Priority.NORMAL));
        if (n % 8 != 0) {
          j.remove("g" + n, Removal.ACKED);
        } else {
          live.add("g" + n);
        }
      }
      try {
        Await.until(Duration.ofSeconds(10), "a compaction is stuck writing its base",
            () -> io.blockedCalls() > 0);
        for (int k = 0; k < 3; k++) {
          long syncs = j.syncCount();
          j.append(event("late" + k, Priority.NORMAL));
          Await.until(Duration.ofSeconds(10), "group commit " + k + " during the compaction",
              () -> j.syncCount() > syncs);
        }
        assertThat(io.blockedCalls()).as("the compaction is still stuck").isPositive();
        // A process crash now: the stuck compaction never writes again.
        io.failAlways(Op.WRITE, true).failAlways(Op.FORCE, true).failAlways(Op.CREATE, true)
            .failAlways(Op.MOVE, true).failAlways(Op.DELETE, true)
            .failAlways(Op.SYNC_DIRECTORY, true).failAlways(Op.TRUNCATE, true);
        journals.remove(j);
        j.crash();
      } finally {
        io.release();
      }
      List<String> kept = pendingAfterReopen(d);
      assertThat(kept).contains("late0", "late1", "late2").containsAll(live);
    }
  }
}
