package io.relaykit.queue;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import javax.crypto.SecretKey;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Journals written by an earlier version of {@link FileJournal} (checked in, see {@link
 * V1Fixture}) are read by today's code: exactly the events, dead letters and seen ids they hold.
 */
class FileJournalFormatTest {

  private Path work;

  @AfterEach
  void cleanUp() throws IOException {
    if (work != null) {
      try (Stream<Path> files = Files.walk(work)) {
        for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
          Files.deleteIfExists(p);
        }
      }
    }
  }

  /** A writable copy of the fixture directory {@code name}. */
  private Path copyOf(String name) throws IOException, URISyntaxException {
    Path source = Path.of(getClass().getResource("/filejournal-v1/" + name).toURI());
    work = work != null ? work : Files.createTempDirectory("relaykit-format-");
    Path dir = Files.createDirectories(work.resolve(name));
    try (Stream<Path> files = Files.list(source)) {
      for (Path p : files.toList()) {
        Files.copy(p, dir.resolve(p.getFileName()));
      }
    }
    return dir;
  }

  private static JournalState expected(boolean shortScript) {
    InMemoryJournal model = new InMemoryJournal();
    if (shortScript) {
      V1Fixture.shortScript(model);
    } else {
      V1Fixture.script(model, j -> { });
    }
    return model.load();
  }

  private static JournalState open(Path dir, SecretKey key) {
    FileJournal.Builder b = FileJournal.builder(dir);
    if (key != null) {
      b.encryptionKey(key);
    }
    try (FileJournal journal = b.build()) {
      return journal.load();
    }
  }

  @Test
  @DisplayName("a single version-1 segment, closed cleanly, is read exactly")
  void singleSegment() throws Exception {
    Path dir = copyOf("single");
    JournalState state = open(dir, null);
    assertThat(state).isEqualTo(expected(true));
    assertThat(state.pending()).extracting(QueuedEvent::eventId).containsExactly("a");
    assertThat(state.dead()).extracting(QueuedEvent::eventId).containsExactly("c");
    assertThat(state.deadReasons()).containsExactlyEntriesOf(java.util.Map.of("c", "rejected"));
    assertThat(state.seen().keySet()).containsExactly("a", "c");
    assertRewrittenInFormat2(dir);
    assertThat(open(dir, null)).as("and again after reopening").isEqualTo(expected(true));
  }

  /** Opening a format-1 directory rewrote it: one base and one segment, both format 2. */
  private static void assertRewrittenInFormat2(Path dir) throws IOException {
    try (Stream<Path> files = Files.list(dir)) {
      List<Path> all = files.filter(p -> !p.getFileName().toString().equals(FileJournal.LOCK_FILE))
          .sorted().toList();
      assertThat(all).extracting(p -> p.getFileName().toString().replaceAll("\\d", "#"))
          .containsExactly("journal-####################.base",
              "journal-####################.seg");
      for (Path p : all) {
        assertThat(Files.readAllBytes(p)[4]).as("format of %s", p.getFileName()).isEqualTo((byte) 2);
      }
    }
  }

  @Test
  @DisplayName("a version-1 directory with a base segment and a crashed newest segment is read exactly")
  void plainDirectory() throws Exception {
    checkDirectory("plain", null);
  }

  @Test
  @DisplayName("an encrypted version-1 directory is read exactly with its key")
  void encryptedDirectory() throws Exception {
    checkDirectory("encrypted", V1Fixture.KEY);
  }

  private void checkDirectory(String name, SecretKey key) throws Exception {
    Path dir = copyOf(name);
    JournalState want = expected(false);
    JournalState state = open(dir, key);
    assertThat(state).isEqualTo(want);
    assertThat(state.pending()).hasSize(33);
    assertThat(state.dead()).extracting(QueuedEvent::eventId)
        .containsExactly("e5", "e38", "e49");
    assertThat(state.pending()).extracting(QueuedEvent::eventId).endsWith("expiring");
    assertRewrittenInFormat2(dir);
    assertThat(open(dir, key)).as("and again after reopening").isEqualTo(want);
  }
}
