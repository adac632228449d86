package io.relaykit.queue;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.tck.FakeClock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An event that expired while the queue was down is discarded and counted by the restore. That
 * decision must survive the next crash: otherwise a wall clock set back afterwards brings the
 * event back, and it is delivered after it was reported expired. Found by the fault kit's
 * interrupt and compaction-crash run (seed 987809 of FileJournalFaultKitTest, which fails only
 * when the crash comes before the journal's next group commit).
 */
@DisplayName("an expiry decided at restore survives the next crash")
class RestoreExpiryDurableTest {

  @TempDir
  Path tempDir;

  private static ReportQueue queue(FakeClock clock, QueueJournal journal) {
    ReportQueue q = ReportQueue.builder().clock(clock).journal(journal).capacity(10).build();
    q.restore();
    return q;
  }

  @Test
  @DisplayName("restore expires e1 and the process dies before a group commit; the clock steps back 48 h: e1 stays gone")
  void expiredAtRestoreStaysGone() throws Exception {
    Path dir = Files.createDirectories(tempDir.resolve("j"));
    FakeClock clock = new FakeClock();
    FileJournal j1 = FileJournal.builder(dir).commitInterval(Duration.ofHours(1)).clock(clock)
        .build();
    ReportQueue q1 = queue(clock, j1);
    q1.enqueue(new ReportEvent("e1", "restore.expiry", "p", Priority.CRITICAL,
        clock.instant().plusMillis(30)));
    j1.crash();

    clock.advance(Duration.ofSeconds(1));
    FileJournal j2 = FileJournal.builder(dir).commitInterval(Duration.ofHours(1)).clock(clock)
        .build();
    ReportQueue q2 = queue(clock, j2);
    assertThat(q2.stats().pending()).isZero();
    assertThat(q2.stats().expired()).as("e1 reported expired").isEqualTo(1);
    j2.crash(); // before the journal's next group commit

    clock.stepWall(Duration.ofHours(-48));
    FileJournal j3 = FileJournal.builder(dir).commitInterval(Duration.ofHours(1)).clock(clock)
        .build();
    ReportQueue q3 = queue(clock, j3);
    assertThat(q3.pendingIds()).as("an event reported expired never comes back").isEmpty();
    j3.close();
  }
}
