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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * One failed fsync, and every fsync after it would succeed: what each caller was told, what is
 * durable once a later fsync succeeds (in the reopened journal: the failed one never forces
 * again), and that nothing is stuck.
 */
class FileJournalFsyncThenSuccessTest {

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

  private static QueuedEvent event(String id, Priority priority) {
    return new QueuedEvent(id, "fsync.then.success", "{\"id\":\"" + id + "\"}", priority, T0, 0,
        T0, null);
  }

  private FileJournal open(FileJournal.Builder b) {
    FileJournal j = b.build();
    journals.add(j);
    return j;
  }

  private static List<String> ids(JournalState s) {
    return s.pending().stream().map(QueuedEvent::eventId).toList();
  }

  @Test
  @DisplayName("every critical waiter of the failed fsync gets UNKNOWN, later changes NOT_RECORDED, no further fsync runs, close returns and frees the directory; after reopen the next fsync succeeds and makes the recovered state durable: acknowledged events once, UNKNOWN ones once or not at all, refused ones never")
  void failedFsyncThenSuccess() throws Exception {
    Path d = Files.createTempDirectory("relaykit-fsync-then-success-");
    dirs.add(d);
    FaultyFileIo io = new FaultyFileIo();
    FileJournal j = open(FileJournal.builder(d).commitInterval(Duration.ofHours(1)).fileIo(io));
    j.load();
    j.append(event("acked", Priority.CRITICAL));
    j.append(event("normal-before", Priority.NORMAL));
    // The I/O thread is held at the failing fsync while the three critical appenders arrive:
    // the first one's record is in the failing sync, the others' in it or after it.
    io.blockWhen(c -> c.op() == Op.FORCE);
    io.failNext(Op.FORCE);
    List<CompletableFuture<Void>> waiters = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      String id = "unknown-" + i;
      waiters.add(CompletableFuture.runAsync(() -> j.append(event(id, Priority.CRITICAL))));
    }
    Await.until(Duration.ofSeconds(10), "the I/O thread is at its fsync",
        () -> io.blockedCalls() == 1);
    io.release();
    List<String> notRecorded = new ArrayList<>();
    for (int i = 0; i < waiters.size(); i++) {
      CompletableFuture<Void> w = waiters.get(i);
      assertThatThrownBy(() -> w.get(10, TimeUnit.SECONDS))
          .isInstanceOf(ExecutionException.class)
          .cause().isInstanceOf(JournalException.class)
          .hasMessageContaining("Input/output error");
      JournalException e = (JournalException) unwrap(w);
      if (e.outcome() == JournalException.Outcome.NOT_RECORDED) {
        notRecorded.add("unknown-" + i);
      }
    }
    assertThat(notRecorded).as("the first appender's record was in the failed fsync")
        .hasSizeLessThan(3);
    int forces = io.calls(Op.FORCE);
    JournalException refused = null;
    try {
      j.append(event("refused", Priority.NORMAL));
    } catch (JournalException e) {
      refused = e;
    }
    assertThat(refused).as("a later change is refused, not accepted and dropped").isNotNull();
    assertThat(refused.outcome()).isEqualTo(JournalException.Outcome.NOT_RECORDED);
    assertThatThrownBy(j::flush).isInstanceOf(JournalException.class);
    assertThat(io.calls(Op.FORCE)).as("the failed journal never fsyncs again").isEqualTo(forces);
    long start = System.nanoTime();
    assertThatThrownBy(j::close).isInstanceOf(JournalException.class);
    assertThat(TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start))
        .as("close is not stuck").isLessThan(5);

    // Not stuck: the directory opens again at once, and its first fsync succeeds.
    FileJournal reopened = open(FileJournal.builder(d));
    List<String> recovered = ids(reopened.load());
    assertThat(recovered).contains("acked").doesNotContain("refused").doesNotHaveDuplicates();
    notRecorded.forEach(id -> assertThat(recovered).doesNotContain(id));
    assertThat(recovered).allMatch(id -> id.equals("acked") || id.equals("normal-before")
        || id.startsWith("unknown-"));
    reopened.append(event("after", Priority.CRITICAL));
    reopened.crash();

    // What that successful fsync made durable: everything the reopened journal recovered.
    FileJournal again = open(FileJournal.builder(d));
    List<String> durable = ids(again.load());
    List<String> expected = new ArrayList<>(recovered);
    expected.add("after");
    assertThat(durable).containsExactlyElementsOf(expected);
  }

  private static Throwable unwrap(CompletableFuture<Void> f) {
    try {
      f.join();
      return null;
    } catch (java.util.concurrent.CompletionException e) {
      return e.getCause();
    }
  }
}
