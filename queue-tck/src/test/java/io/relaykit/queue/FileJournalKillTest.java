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
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class FileJournalKillTest {

  @Test
  @DisplayName("kill -9 of a process enqueueing into a FileJournal loses no critical event whose enqueue returned")
  void killNine() throws Exception {
    Path dir = Files.createTempDirectory("relaykit-kill-");
    Process child = null;
    try {
      String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
      child = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
          FileJournalCrashChild.class.getName(), dir.toString())
          .redirectError(ProcessBuilder.Redirect.DISCARD)
          .start();
      List<String> confirmed = new ArrayList<>();
      try (BufferedReader out = new BufferedReader(
          new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
        String line;
        while (confirmed.size() < 100 && (line = out.readLine()) != null) {
          confirmed.add(line);
        }
        child.destroyForcibly(); // SIGKILL: no shutdown hooks, no flush, no close
        assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();
      }
      assertThat(confirmed).as("the child confirmed critical enqueues").hasSize(100);

      try (FileJournal journal = FileJournal.builder(dir).build()) {
        JournalState state = journal.load();
        Set<String> recovered = new HashSet<>();
        state.pending().forEach(e -> recovered.add(e.eventId()));
        assertThat(recovered).containsAll(confirmed);
        // Recovered events form a prefix of what was enqueued: nothing out of order, no holes.
        int max = state.pending().stream()
            .mapToInt(e -> Integer.parseInt(e.eventId().substring(2))).max().orElse(-1);
        assertThat(recovered).hasSize(max + 1);
      }
    } finally {
      if (child != null) {
        child.destroyForcibly();
      }
      try (Stream<Path> files = Files.walk(dir)) {
        for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
          Files.deleteIfExists(p);
        }
      } catch (IOException ignored) {
        // best effort
      }
    }
  }
}
