package io.relaykit.queue;

import java.nio.file.Path;
import java.time.Instant;

/**
 * The child process of {@link FileJournalKillTest}: enqueues events into a queue on a
 * FileJournal forever, printing each id after {@code enqueue} returned, until it is killed.
 * Every third event is CRITICAL.
 */
public final class FileJournalCrashChild {
  private FileJournalCrashChild() {
  }

  public static void main(String[] args) {
    Path dir = Path.of(args[0]);
    ReportQueue queue = ReportQueue.builder()
        .journal(FileJournal.builder(dir).build())
        .capacity(1_000_000)
        .build();
    queue.restore();
    for (int i = 0; ; i++) {
      Priority priority = i % 3 == 0 ? Priority.CRITICAL : Priority.NORMAL;
      String id = "e-" + i;
      queue.enqueue(new ReportEvent(id, "crash.test", "payload " + i + " at " + Instant.now(),
          priority, null));
      if (priority == Priority.CRITICAL) {
        System.out.println(id);
        System.out.flush();
      }
    }
  }
}
