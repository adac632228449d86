package io.relaykit.queue;

import java.io.IOException;
import java.nio.file.Path;

/**
 * The child process of {@link FileJournalLockTest}: opens a FileJournal on the directory it is
 * given, prints {@code open}, and holds it until its standard input ends (or it is killed).
 */
public final class FileJournalLockChild {
  private FileJournalLockChild() {
  }

  public static void main(String[] args) throws IOException {
    FileJournal journal = FileJournal.builder(Path.of(args[0])).build();
    journal.load();
    System.out.println("open");
    System.out.flush();
    while (System.in.read() >= 0) {
      // hold the journal open until the parent closes our input
    }
    journal.close();
  }
}
