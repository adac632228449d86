package io.relaykit.queue;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Comparator;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** One open FileJournal per directory: a lock file, checked in this JVM and across processes. */
class FileJournalLockTest {

  private static final Instant T0 = Instant.parse("2026-01-01T00:00:00.123Z");
  private Path dir;

  @AfterEach
  void cleanUp() throws IOException {
    if (dir != null) {
      try (Stream<Path> files = Files.walk(dir)) {
        for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
          Files.deleteIfExists(p);
        }
      }
    }
  }

  private static QueuedEvent event(String id) {
    return new QueuedEvent(id, "lock.test", "payload", Priority.CRITICAL, T0, 0, T0, null);
  }

  @Test
  @DisplayName("a second journal on an open directory in the same JVM fails with one clear error naming the directory, and changes nothing; after close it opens")
  void sameJvm() throws IOException {
    dir = Files.createTempDirectory("relaykit-lock-");
    FileJournal first = FileJournal.builder(dir).build();
    first.load();
    first.append(event("a"));
    assertThatThrownBy(() -> FileJournal.builder(dir).build())
        .isInstanceOf(JournalException.class)
        .hasMessageContaining(dir.toString())
        .hasMessageContaining("already open in this process");
    first.append(event("b"));
    first.close();
    try (FileJournal second = FileJournal.builder(dir).build()) {
      assertThat(second.load().pending()).extracting(QueuedEvent::eventId)
          .containsExactly("a", "b");
    }
  }

  @Test
  @DisplayName("a journal open in another process locks the directory: opening it here fails naming the directory; once that process is killed, it opens")
  void otherProcess() throws Exception {
    dir = Files.createTempDirectory("relaykit-lock-");
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Process child = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
        FileJournalLockChild.class.getName(), dir.toString())
        .redirectError(ProcessBuilder.Redirect.DISCARD)
        .start();
    try {
      try (BufferedReader out = new BufferedReader(
          new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
        assertThat(out.readLine()).as("the child opened the journal").isEqualTo("open");
        assertThatThrownBy(() -> FileJournal.builder(dir).build())
            .isInstanceOf(JournalException.class)
            .hasMessageContaining(dir.toString())
            .hasMessageContaining("in use by another process");
        try (Stream<Path> files = Files.list(dir)) {
          assertThat(files.map(p -> p.getFileName().toString()).sorted().toList())
              .as("the refused open touched nothing").hasSize(2); // .lock and one segment
        }
        child.destroyForcibly(); // SIGKILL: the operating system releases the lock
        assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();
      }
      try (FileJournal journal = FileJournal.builder(dir).build()) {
        assertThat(journal.load().pending()).isEmpty();
      }
    } finally {
      child.destroyForcibly();
    }
  }

  @Test
  @DisplayName("an open that fails with an Error (out of memory reading a record) releases the lock: the next open in this JVM succeeds and loads everything")
  void lockReleasedWhenOpenFailsWithError() throws IOException {
    dir = Files.createTempDirectory("relaykit-lock-");
    try (FileJournal first = FileJournal.builder(dir).build()) {
      first.append(event("a"));
    }
    FileIo failing = new FileIo() {
      @Override
      public java.nio.channels.FileChannel open(Path path, java.nio.file.OpenOption... options)
          throws IOException {
        throw new OutOfMemoryError("simulated: no heap for this segment");
      }
    };
    assertThatThrownBy(() -> FileJournal.builder(dir).fileIo(failing).build())
        .isInstanceOf(OutOfMemoryError.class);
    try (FileJournal again = FileJournal.builder(dir).build()) {
      assertThat(again.load().pending()).extracting(QueuedEvent::eventId).containsExactly("a");
    }
  }
}
