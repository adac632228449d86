package io.relaykit.queue;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * FileJournal on a real file system that runs out of space: a 512 KiB tmpfs that this test mounts
 * in a temporary directory and unmounts afterwards. That needs root (CAP_SYS_ADMIN), which CI and
 * the development machines have; without it the test fails saying so. The same failures are
 * injected without root through {@link FaultyFileIo} in {@link FileJournalFaultTest}.
 */
class FileJournalFullDiskTest {

  private static final Instant T0 = Instant.parse("2026-01-01T00:00:00.123Z");

  @Test
  @DisplayName("on a full tmpfs, refused appends never come back, accepted ones all do, and appends and segment rolls work again once space is freed")
  void fullFileSystem() throws Exception {
    Path mount = Files.createTempDirectory("relaykit-tmpfs-");
    try {
      run("mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", mount.toString());
    } catch (IOException e) {
      Files.delete(mount);
      throw new AssertionError("FileJournalFullDiskTest mounts a 512 KiB tmpfs to fill it up,"
          + " which needs root (CAP_SYS_ADMIN; CI runs as root). Run the tests as root, or run"
          + " FileJournalFaultTest for the same failures injected without root. " + e.getMessage(),
          e);
    }
    List<FileJournal> opened = new ArrayList<>();
    try {
      Path dir = mount.resolve("journal");
      FileJournal journal = FileJournal.builder(dir).segmentBytes(16 * 1024)
          .commitInterval(Duration.ofHours(1)).compactionMinBytes(Long.MAX_VALUE / 2).build();
      opened.add(journal);
      journal.load();
      Path filler = mount.resolve("filler");
      long free = fill(filler);
      assertThat(free).as("the filler took all the space").isZero();
      // Leave room for about a segment and a half, so the disk fills at a roll and in between.
      try (RandomAccessFile f = new RandomAccessFile(filler.toFile(), "rw")) {
        f.setLength(f.length() - 24 * 1024);
      }

      List<String> accepted = new ArrayList<>();
      Set<String> refused = new HashSet<>();
      Set<String> unknown = new HashSet<>();
      for (int i = 0; i < 5_000 && refused.size() < 5; i++) {
        String id = "a" + i;
        long ticket;
        try {
          ticket = journal.appendDeferringSync(event(id));
        } catch (JournalException e) {
          assertThat(e).hasMessageContaining("No space left on device");
          refused.add(id);
          continue;
        }
        try {
          journal.awaitDurable(ticket);
          accepted.add(id);
        } catch (JournalException e) {
          assertThat(e).hasMessageContaining("No space left on device");
          unknown.add(id);
        }
      }
      assertThat(refused).as("appends refused for want of space").isNotEmpty();

      Files.delete(filler);
      for (int i = 0; i < 300; i++) {
        journal.append(event("b" + i));
        accepted.add("b" + i);
      }
      long segments;
      try (var files = Files.list(dir)) {
        segments = files.filter(p -> p.toString().endsWith(".seg")).count();
      }
      assertThat(segments).as("segments rolled after space was freed").isGreaterThan(3);
      journal.crash();

      FileJournal reopened = FileJournal.builder(dir).build();
      opened.add(reopened);
      List<String> recovered = reopened.load().pending().stream().map(QueuedEvent::eventId)
          .toList();
      assertThat(recovered).doesNotHaveDuplicates().containsSubsequence(accepted)
          .doesNotContainAnyElementsOf(refused);
      Set<String> extra = new HashSet<>(recovered);
      accepted.forEach(extra::remove);
      assertThat(unknown).as("only appends whose fsync failed may come back")
          .containsAll(extra);
    } finally {
      opened.forEach(FileJournal::crash);
      run("umount", mount.toString());
      Files.delete(mount);
    }
  }

  private static QueuedEvent event(String id) {
    return new QueuedEvent(id, "disk.full", "{\"id\":\"" + id + "\",\"pad\":\"" + "x".repeat(60)
        + "\"}", Priority.CRITICAL, T0, 0, T0, null);
  }

  /** Writes {@code filler} until the file system is full; returns the space left (0). */
  private static long fill(Path filler) throws IOException {
    byte[] block = new byte[4096];
    try (var out = Files.newOutputStream(filler)) {
      while (true) {
        out.write(block);
      }
    } catch (IOException e) {
      if (!String.valueOf(e.getMessage()).contains("No space left")) {
        throw e;
      }
    }
    return filler.getParent().toFile().getUsableSpace();
  }

  private static void run(String... command) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new IOException(String.join(" ", command) + " failed: " + out.trim());
    }
  }
}
