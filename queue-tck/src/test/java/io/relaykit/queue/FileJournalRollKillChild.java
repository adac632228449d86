package io.relaykit.queue;

import java.nio.file.Path;
import java.time.Instant;

/**
 * The child process of {@link FileJournalRollKillTest}: opens (recovering) a FileJournal with
 * tiny segments, so that a segment roll happens every few records, and garbage enough for
 * compactions; four threads append CRITICAL events, printing each id after {@code append}
 * returned, and churn NORMAL events (append, then remove), until the process is killed.
 */
public final class FileJournalRollKillChild {
  private FileJournalRollKillChild() {
  }

  public static void main(String[] args) throws InterruptedException {
    Path dir = Path.of(args[0]);
    String round = args[1];
    FileJournal journal = FileJournal.builder(dir).segmentBytes(1024).compactionMinBytes(0)
        .commitInterval(java.time.Duration.ofMillis(2)).build();
    journal.load();
    Instant t0 = Instant.parse("2026-01-01T00:00:00Z");
    Thread[] threads = new Thread[4];
    for (int t = 0; t < threads.length; t++) {
      int producer = t;
      threads[t] = new Thread(() -> {
        for (int i = 0; ; i++) {
          String id = "c-" + round + "-" + producer + "-" + i;
          journal.append(new QueuedEvent(id, "roll.kill", "critical " + id, Priority.CRITICAL,
              t0, 0, t0, null));
          synchronized (System.out) {
            System.out.println(id);
            System.out.flush();
          }
          String churn = "g-" + round + "-" + producer + "-" + i;
          journal.append(new QueuedEvent(churn, "roll.kill", "garbage " + "x".repeat(100),
              Priority.NORMAL, t0, 0, t0, null));
          journal.remove(churn, QueueJournal.Removal.ACKED);
        }
      }, "producer-" + t);
      threads[t].start();
    }
    for (Thread t : threads) {
      t.join();
    }
  }
}
