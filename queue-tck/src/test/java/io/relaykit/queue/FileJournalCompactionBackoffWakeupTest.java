package io.relaykit.queue;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.queue.FaultyFileIo.Op;
import io.relaykit.queue.QueueJournal.Removal;
import io.relaykit.tck.Await;
import io.relaykit.tck.FakeClock;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Comparator;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * While a failed compaction backs off, the compaction thread sleeps: the I/O thread's rounds (one
 * per commit interval, and one per critical sync) do not wake it for nothing. Counted in wakeups
 * of its loop against I/O rounds, not in time.
 */
@DisplayName("FileJournal: the compaction thread sleeps through its backoff")
class FileJournalCompactionBackoffWakeupTest {

  private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");

  private Path dir;
  private FileJournal journal;

  @AfterEach
  void cleanUp() throws IOException {
    if (journal != null) {
      journal.crash();
    }
    if (dir != null) {
      try (Stream<Path> files = Files.walk(dir)) {
        for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
          Files.deleteIfExists(p);
        }
      }
    }
  }

  @Test
  @DisplayName("100 I/O rounds during a backoff wake the compaction thread at most twice; it still retries once the backoff elapsed")
  void backoffIsNotWokenByEveryRound() throws Exception {
    dir = Files.createTempDirectory("relaykit-backoff-wakeups-");
    FaultyFileIo io = new FaultyFileIo().failAlways(Op.MOVE, true);
    FakeClock clock = new FakeClock();
    journal = FileJournal.builder(dir).segmentBytes(1024).fileIo(io).clock(clock)
        .commitInterval(Duration.ofMillis(2)).compactionMinBytes(1).build();
    FileJournal j = journal;
    j.load();
    for (int i = 0; i < 100; i++) {
      j.append(new QueuedEvent("e" + i, "backoff", "{\"i\":" + i + "}", Priority.NORMAL, T0, 0,
          T0, null));
      j.remove("e" + i, Removal.ACKED);
    }
    Await.until(Duration.ofSeconds(10), "a compaction fails", () -> io.failures(Op.MOVE) >= 1);
    // Let the wakeup that may race the failure settle: 5 rounds.
    long settle = j.flusherRounds();
    Await.until(Duration.ofSeconds(10), "5 I/O rounds", () -> j.flusherRounds() > settle + 5);

    long wakeups = j.compactionWakeups();
    long rounds = j.flusherRounds();
    Await.until(Duration.ofSeconds(20), "100 I/O rounds", () -> j.flusherRounds() > rounds + 100);
    assertThat(j.compactionWakeups() - wakeups)
        .as("compaction-thread wakeups during 100 I/O rounds of a backoff (a compaction is due"
            + " at every round)")
        .isLessThanOrEqualTo(2);
    assertThat(io.failures(Op.MOVE)).as("no retry before the backoff elapsed").isEqualTo(1);

    io.failAlways(Op.MOVE, false);
    clock.advanceMonotonic(Duration.ofSeconds(2));
    Await.until(Duration.ofSeconds(10), "the compaction is retried after its backoff",
        () -> j.compactions() >= 1);
  }
}
