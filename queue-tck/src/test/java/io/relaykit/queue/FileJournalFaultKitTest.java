package io.relaykit.queue;

import io.relaykit.queue.FaultyFileIo.Op;
import io.relaykit.tck.Await;
import io.relaykit.tck.QueueJournalFaultContract;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

/**
 * The fault-injection kit on a FileJournal in a temporary directory; a crash is crash(), and a
 * crash during a compaction holds the compaction at one of its file-system calls.
 */
class FileJournalFaultKitTest extends QueueJournalFaultContract {
  /** About how many file-system calls a compaction of the kit's small journals makes. */
  private static final int COMPACTION_STEPS = 8;

  @Override
  protected Backend backend() throws IOException {
    Path dir = Files.createTempDirectory("relaykit-journal-faults-");
    return new Backend() {
      private FaultyFileIo io;

      @Override
      public QueueJournal open() {
        io = new FaultyFileIo();
        return FileJournal.builder(dir).fileIo(io).build();
      }

      @Override
      public void crash(QueueJournal journal) {
        ((FileJournal) journal).crash();
      }

      @Override
      public boolean crashDuringCompaction(QueueJournal journal, int point) throws Exception {
        FileJournal j = (FileJournal) journal;
        FaultyFileIo held = io;
        int step = point % COMPACTION_STEPS;
        AtomicInteger seen = new AtomicInteger();
        held.blockWhen(c -> c.thread().getName().equals("relaykit-file-journal-compactor")
            && seen.getAndIncrement() == step);
        CompletableFuture<Void> compaction = CompletableFuture.runAsync(j::compact);
        try {
          Await.until(Duration.ofSeconds(10), "the compaction reaches step " + step + " or ends",
              () -> held.blockedCalls() > 0 || compaction.isDone());
          Await.until(Duration.ofSeconds(10), "everything recorded is durable while the"
              + " compaction is held", j::allDurable);
        } finally {
          // The process dies here: nothing of this instance writes again (the held call and
          // every later one fail), so the disk stays as it was at the held step.
          for (Op op : Op.values()) {
            held.failAlways(op, true);
          }
          held.release();
          j.crash();
        }
        return true;
      }

      @Override
      public void destroy() throws IOException {
        try (Stream<Path> files = Files.walk(dir)) {
          for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
            Files.deleteIfExists(p);
          }
        }
      }
    };
  }
}
