package io.relaykit.queue;

import io.relaykit.queue.QueueJournal.Removal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.function.Consumer;
import javax.crypto.SecretKey;
import javax.crypto.spec.SecretKeySpec;

/**
 * The journals checked in under {@code src/test/resources/filejournal-v1}: written once by the
 * FileJournal of commit df7e079 (on-disk format version 1), before the format changed, by running
 * this class's {@link #main} from the test classpath of that commit. Running it with later code
 * would write the current format, not version 1: the files are not regenerated. {@link
 * FileJournalFormatTest} opens them with today's code and compares what it loads with
 * {@link #script} applied to an {@link InMemoryJournal}.
 *
 * <ul>
 *   <li>{@code single/}: one segment, closed cleanly ({@link #shortScript}).
 *   <li>{@code plain/} and {@code encrypted/} ({@link #KEY}): {@link #script} on 1 KiB segments,
 *       compacted halfway (a base segment), flushed, then abandoned without close, so the newest
 *       segment ends in its preallocated zeros as after a crash.
 * </ul>
 */
final class V1Fixture {
  static final SecretKey KEY = new SecretKeySpec(new byte[] {
      7, 1, 7, 1, 7, 1, 7, 1, 7, 1, 7, 1, 7, 1, 7, 1}, "AES");
  static final Instant T0 = Instant.parse("2026-01-01T00:00:00.123Z");

  private V1Fixture() {
  }

  static QueuedEvent event(String id, Priority priority, long millis) {
    Instant at = T0.plusMillis(millis);
    return new QueuedEvent(id, "fixture.event", "{\"id\":\"" + id + "\",\"pad\":\""
        + "p".repeat((int) (millis % 37)) + "\"}", priority, at, 0, at, null);
  }

  /** The changes of {@code single/}. */
  static void shortScript(QueueJournal j) {
    j.append(event("a", Priority.NORMAL, 0));
    j.append(event("b", Priority.CRITICAL, 1));
    j.reschedule("a", 1, T0.plusSeconds(1));
    j.append(new QueuedEvent("c", "ünïcode", "💳 payload", Priority.LOW, T0.plusMillis(2), 0,
        T0.plusMillis(2), T0.plusSeconds(300)));
    j.remove("b", Removal.ACKED);
    j.deadLetter("c", 1, "rejected");
    j.forget("b");
    j.append(event("d", Priority.CRITICAL, 3));
    j.remove("d", Removal.DROPPED);
  }

  /**
   * The changes of {@code plain/} and {@code encrypted/}; {@code midway} runs after the first
   * half (the fixture writer compacts there).
   */
  static void script(QueueJournal j, Consumer<QueueJournal> midway) {
    Priority[] priorities = Priority.values();
    for (int i = 0; i < 60; i++) {
      j.append(event("e" + i, priorities[i % priorities.length], i));
      if (i % 3 == 1) {
        j.remove("e" + (i - 1), Removal.ACKED);
      }
      if (i % 9 == 4) {
        j.reschedule("e" + i, 2, T0.plusSeconds(i));
      }
      if (i % 11 == 5) {
        j.deadLetter("e" + i, 3, "gave up on e" + i + " — ünïcode reason");
      }
      if (i % 6 == 3) {
        j.forget("e" + (i - 3));
      }
      if (i % 13 == 7) {
        j.remove("e" + i, Removal.DROPPED);
      }
      if (i == 30) {
        midway.accept(j);
      }
    }
    j.append(new QueuedEvent("expiring", "otp.sent", "{\"code\":\"123456\"}", Priority.CRITICAL,
        T0, 0, T0, T0.plusSeconds(300)));
    j.remove("e16", Removal.PURGED);
  }

  public static void main(String[] args) throws Exception {
    Path root = Path.of(args[0]);
    Path single = Files.createDirectories(root.resolve("single"));
    FileJournal s = FileJournal.builder(single).build();
    s.load();
    shortScript(s);
    s.close();
    for (SecretKey key : new SecretKey[] {null, KEY}) {
      Path dir = Files.createDirectories(root.resolve(key == null ? "plain" : "encrypted"));
      FileJournal.Builder b = FileJournal.builder(dir).segmentBytes(1024)
          .compactionMinBytes(Long.MAX_VALUE / 2);
      if (key != null) {
        b.encryptionKey(key);
      }
      FileJournal j = b.build();
      j.load();
      script(j, journal -> ((FileJournal) journal).compact());
      j.flush();
      j.crash();
    }
  }
}
