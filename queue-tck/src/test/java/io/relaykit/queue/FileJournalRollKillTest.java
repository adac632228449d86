package io.relaykit.queue;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * kill -9 of a process whose FileJournal rolls a segment every few records (and compacts): after
 * each kill the journal reopens, every CRITICAL append that returned is there, and no event is
 * there twice. Three kills on the same directory, each at a random point of the writing.
 */
class FileJournalRollKillTest {

  @Test
  @DisplayName("kill -9 while segments roll and compact, three times over: every acknowledged critical event is recovered once, and the journal reopens each time")
  void killDuringRolls() throws Exception {
    Path dir = Files.createTempDirectory("relaykit-roll-kill-");
    SplittableRandom random = new SplittableRandom(System.nanoTime());
    List<String> confirmed = new ArrayList<>();
    long lastSegment = 0;
    try {
      for (int round = 0; round < 3; round++) {
        int kill = 100 + random.nextInt(300);
        confirmed.addAll(runAndKill(dir, "r" + round, kill));
        long newest = newestSegment(dir);
        assertThat(newest - lastSegment).as("segments rolled while the child wrote")
            .isGreaterThanOrEqualTo(10);
        lastSegment = newest;
        FileJournal journal = FileJournal.builder(dir).segmentBytes(1024).build();
        try {
          List<String> pending = journal.load().pending().stream().map(QueuedEvent::eventId)
              .toList();
          assertThat(pending).as("round " + round + ", killed after " + kill + " confirmations")
              .containsAll(confirmed).doesNotHaveDuplicates();
          assertThat(new HashSet<>(pending)).hasSameSizeAs(pending);
        } finally {
          journal.crash(); // writes nothing: the next child recovers the directory as killed
        }
      }
    } finally {
      try (Stream<Path> files = Files.walk(dir)) {
        for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
          Files.deleteIfExists(p);
        }
      } catch (IOException ignored) {
        // best effort
      }
    }
  }

  private static long newestSegment(Path dir) throws IOException {
    try (Stream<Path> files = Files.list(dir)) {
      return files.mapToLong(p -> SegmentFormat.seqOf(p.getFileName().toString(),
          SegmentFormat.SEGMENT)).max().orElse(-1);
    }
  }

  /** Starts the child on {@code dir}, reads {@code kill} confirmations, kills it (SIGKILL). */
  private static List<String> runAndKill(Path dir, String round, int kill) throws Exception {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Process child = new ProcessBuilder(java, "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp",
        System.getProperty("java.class.path"), FileJournalRollKillChild.class.getName(),
        dir.toString(), round)
        .redirectError(ProcessBuilder.Redirect.DISCARD)
        .start();
    List<String> confirmed = new ArrayList<>();
    try (BufferedReader out = new BufferedReader(
        new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
      String line;
      while (confirmed.size() < kill && (line = out.readLine()) != null) {
        confirmed.add(line);
      }
      child.destroyForcibly(); // SIGKILL: no shutdown hooks, no flush, no close
      assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();
    } finally {
      child.destroyForcibly();
    }
    assertThat(confirmed).as("the child confirmed critical appends").hasSize(kill);
    return confirmed;
  }
}
