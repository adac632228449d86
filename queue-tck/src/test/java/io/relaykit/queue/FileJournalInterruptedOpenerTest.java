package io.relaykit.queue;

import static org.assertj.core.api.Assertions.assertThat;

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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The opening thread is a caller's thread: an interrupt that reaches it while the open starts the
 * first segment fails only that start (the next change starts one on the journal's I/O thread),
 * and the opener's interrupt flag stays set, as it does for every other interrupted caller.
 */
@DisplayName("FileJournal opened by an interrupted thread")
class FileJournalInterruptedOpenerTest {

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

  private static QueuedEvent event(String id) {
    return new QueuedEvent(id, "opener", "{\"id\":\"" + id + "\"}", Priority.CRITICAL, T0, 0, T0,
        null);
  }

  /** What the opening thread saw: the journal, and its interrupt flag right after the open. */
  private record Opened(FileJournal journal, boolean flagAfterOpen) {}

  @Test
  @DisplayName("an interrupt of the opener during the first segment's start: the open succeeds, the opener's interrupt flag stays set, and the next change starts the segment")
  void interruptDuringFirstSegmentStartKeepsOpenersFlag() throws Exception {
    Path d = Files.createTempDirectory("relaykit-interrupted-opener-");
    dirs.add(d);
    FaultyFileIo io = new FaultyFileIo().passInterrupts(true);
    CompletableFuture<Opened> opened = new CompletableFuture<>();
    Thread opener = new Thread(() -> {
      try {
        FileJournal j = FileJournal.builder(d).commitInterval(Duration.ofMillis(5)).fileIo(io)
            .build();
        opened.complete(new Opened(j, Thread.interrupted()));
      } catch (Throwable t) {
        opened.completeExceptionally(t);
      }
    }, "interrupted-opener");
    io.blockWhen(c -> c.op() == Op.CREATE && c.thread() == opener);
    opener.start();
    Await.until(Duration.ofSeconds(10), "the opener creates the first segment",
        () -> io.blockedCalls() == 1);
    opener.interrupt();
    io.release();
    Opened o = opened.get(10, TimeUnit.SECONDS);
    journals.add(o.journal());

    assertThat(o.flagAfterOpen()).as("the opener's interrupt flag after the open").isTrue();
    FileJournal j = o.journal();
    j.load();
    j.append(event("after-open"));
    j.close();
    FileJournal reopened = FileJournal.builder(d).build();
    journals.add(reopened);
    assertThat(reopened.load().pending()).extracting(QueuedEvent::eventId)
        .containsExactly("after-open");
  }
}
