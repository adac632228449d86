package io.relaykit.queue;

import io.relaykit.tck.QueueJournalFaultContract;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/** The fault-injection kit on a FileJournal in a temporary directory; a crash is crash(). */
class FileJournalFaultKitTest extends QueueJournalFaultContract {
  @Override
  protected Backend backend() throws IOException {
    Path dir = Files.createTempDirectory("relaykit-journal-faults-");
    return new Backend() {
      @Override
      public QueueJournal open() {
        return FileJournal.builder(dir).build();
      }

      @Override
      public void crash(QueueJournal journal) {
        ((FileJournal) journal).crash();
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
