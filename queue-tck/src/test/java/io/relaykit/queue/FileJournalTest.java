package io.relaykit.queue;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.queue.QueueJournal.Removal;
import io.relaykit.tck.Await;
import io.relaykit.tck.QueueJournalContract;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.function.Consumer;
import java.util.stream.Stream;
import javax.crypto.SecretKey;
import javax.crypto.spec.SecretKeySpec;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class FileJournalTest extends QueueJournalContract {

  private static final SecretKey KEY = new SecretKeySpec(new byte[] {
      1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, "AES");
  private static final SecretKey OTHER_KEY = new SecretKeySpec(new byte[] {
      9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9}, "AES");

  private final List<Path> dirs = new ArrayList<>();
  private final List<FileJournal> journals = new ArrayList<>();
  private Path dir;
  private FileJournal last;

  @Override
  protected QueueJournal openJournal() throws IOException {
    dir = newDir();
    last = track(FileJournal.builder(dir).build());
    return last;
  }

  @Override
  protected QueueJournal reopenJournal() {
    // Whatever the previous instance did not sync is lost, as in a process crash.
    last.crash();
    last = track(FileJournal.builder(dir).build());
    return last;
  }

  @AfterEach
  void cleanUp() throws IOException {
    journals.forEach(FileJournal::crash);
    journals.clear();
    for (Path d : dirs) {
      try (Stream<Path> files = Files.walk(d)) {
        for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
          Files.deleteIfExists(p);
        }
      }
    }
    dirs.clear();
  }

  private Path newDir() throws IOException {
    Path d = Files.createTempDirectory("relaykit-file-journal-");
    dirs.add(d);
    return d;
  }

  private FileJournal track(FileJournal journal) {
    journals.add(journal);
    return journal;
  }

  private FileJournal open(Path directory, SecretKey key) {
    FileJournal.Builder b = FileJournal.builder(directory);
    if (key != null) {
      b.encryptionKey(key);
    }
    return track(b.build());
  }

  /** Builds {@code builder}'s journal, tracked for clean-up, and loads it. */
  private FileJournal loaded(FileJournal.Builder builder) {
    FileJournal journal = track(builder.build());
    journal.load();
    return journal;
  }

  /** What a new unencrypted journal with default settings loads from {@code directory}. */
  private JournalState reload(Path directory) {
    FileJournal journal = open(directory, null);
    try {
      return journal.load();
    } finally {
      journal.crash(); // releases the directory's lock, writing nothing
    }
  }

  /** A new directory holding one segment file, {@code name}, with {@code bytes}. */
  private Path dirWith(String name, byte[] bytes) throws IOException {
    Path d = newDir();
    Files.write(d.resolve(name), bytes);
    return d;
  }

  private static List<Path> bases(Path directory) throws IOException {
    try (Stream<Path> files = Files.list(directory)) {
      return files.filter(p -> p.getFileName().toString().endsWith(".base")).sorted().toList();
    }
  }

  private static List<Path> segments(Path directory) throws IOException {
    try (Stream<Path> files = Files.list(directory)) {
      return files.filter(p -> p.getFileName().toString().endsWith(".seg")).sorted().toList();
    }
  }

  /** A small script of changes; each is applied to a journal and to the reference model. */
  private static List<Consumer<QueueJournal>> script() {
    List<Consumer<QueueJournal>> steps = new ArrayList<>();
    steps.add(j -> j.append(event("a", Priority.NORMAL, T0)));
    steps.add(j -> j.append(event("b", Priority.CRITICAL, T0.plusMillis(1))));
    steps.add(j -> j.reschedule("a", 1, T0.plusSeconds(1)));
    steps.add(j -> j.append(new QueuedEvent("c", "ünïcode", "💳 payload", Priority.LOW,
        T0.plusMillis(2), 0, T0.plusMillis(2), T0.plusSeconds(300))));
    steps.add(j -> j.remove("b", Removal.ACKED));
    steps.add(j -> j.deadLetter("c", 1, "rejected"));
    steps.add(j -> j.forget("b"));
    steps.add(j -> j.remove("a", Removal.DROPPED));
    return steps;
  }

  /**
   * Writes the script, syncing after each change, and returns the segment file's length after
   * each prefix together with the state each prefix produces.
   */
  private record Written(Path segment, byte[] bytes, long[] ends, List<JournalState> states) {
  }

  private Written writeScript(SecretKey key) throws IOException {
    Path d = newDir();
    FileJournal journal = open(d, key);
    journal.load();
    InMemoryJournal model = new InMemoryJournal();
    List<Consumer<QueueJournal>> steps = script();
    long[] ends = new long[steps.size() + 1];
    List<JournalState> states = new ArrayList<>();
    Path segment = segments(d).get(0);
    ends[0] = journal.sizeOnDisk();
    states.add(model.load());
    for (int i = 0; i < steps.size(); i++) {
      steps.get(i).accept(journal);
      steps.get(i).accept(model);
      journal.flush();
      // The file itself is longer while open: its tail is preallocated zeros.
      ends[i + 1] = journal.sizeOnDisk();
      states.add(model.load());
    }
    journal.close();
    assertThat(Files.size(segment)).as("close cuts the preallocated zeros off")
        .isEqualTo(ends[steps.size()]);
    return new Written(segment, Files.readAllBytes(segment), ends, states);
  }

  private JournalState recoverFrom(byte[] bytes, String segmentName, SecretKey key)
      throws IOException {
    Path d = dirWith(segmentName, bytes);
    return open(d, key).load();
  }

  @Nested
  @DisplayName("crash recovery")
  class CrashRecovery {

    @Test
    @DisplayName("a segment cut at every byte offset recovers exactly the complete records before the cut")
    void truncatedAtEveryOffset() throws IOException {
      truncateEverywhere(null);
    }

    @Test
    @DisplayName("an encrypted segment cut around every record boundary and every 5th byte recovers exactly the complete records before the cut")
    void truncatedEncrypted() throws IOException {
      truncateEverywhere(KEY);
    }

    private void truncateEverywhere(SecretKey key) throws IOException {
      Written w = writeScript(key);
      String name = w.segment().getFileName().toString();
      java.util.TreeSet<Integer> cuts = new java.util.TreeSet<>();
      for (int cut = 0; cut <= w.bytes().length; cut += key == null ? 1 : 5) {
        cuts.add(cut);
      }
      for (long end : w.ends()) {
        for (int d = -2; d <= 2; d++) {
          if (end + d >= 0 && end + d <= w.bytes().length) {
            cuts.add((int) end + d);
          }
        }
      }
      for (int cut : cuts) {
        int complete = 0;
        while (complete + 1 < w.ends().length && w.ends()[complete + 1] <= cut) {
          complete++;
        }
        byte[] prefix = java.util.Arrays.copyOf(w.bytes(), cut);
        Path d = dirWith(name, prefix);
        FileJournal recovered = open(d, key);
        assertThat(recovered.load()).as("cut at byte %d of %d: %d complete records", cut,
            w.bytes().length, complete).isEqualTo(w.states().get(complete));
        // The torn tail is gone: new records follow the good ones and survive a reopen.
        recovered.append(event("after-cut", Priority.CRITICAL, T0.plusSeconds(9)));
        recovered.close();
        JournalState again = open(d, key).load();
        assertThat(again.pending()).as("cut at byte %d", cut)
            .extracting(QueuedEvent::eventId).endsWith("after-cut");
        assertThat(again.pending()).hasSize(w.states().get(complete).pending().size() + 1);
      }
    }

    @Test
    @DisplayName("a flipped byte anywhere in a record before the last is a JournalException naming the file and offset")
    void flippedByteIsReported() throws IOException {
      Written w = writeScript(null);
      String name = w.segment().getFileName().toString();
      long lastRecordStart = w.ends()[w.ends().length - 2];
      for (int at = (int) w.ends()[0]; at < lastRecordStart; at++) {
        byte[] bytes = w.bytes().clone();
        bytes[at] ^= 0x40;
        int flipped = at;
        int recordStart = 0;
        for (long end : w.ends()) {
          if (end <= flipped) {
            recordStart = (int) end;
          }
        }
        assertThatThrownBy(() -> recoverFrom(bytes, name, null))
            .as("byte %d flipped", at)
            .isInstanceOf(JournalException.class)
            .hasMessageContaining(name)
            .hasMessageContaining("at offset " + recordStart);
      }
    }

    @Test
    @DisplayName("a flipped bit in the very last record is corruption naming the file and offset, not a torn tail")
    void badLastRecordIsCorrupt() throws IOException {
      Written w = writeScript(null);
      byte[] bytes = w.bytes().clone();
      bytes[bytes.length - 1] ^= 0x01;
      String name = w.segment().getFileName().toString();
      assertThatThrownBy(() -> recoverFrom(bytes, name, null))
          .isInstanceOf(JournalException.class).hasMessageContaining(name)
          .hasMessageContaining("at offset " + w.ends()[w.ends().length - 2]);
    }

    @Test
    @DisplayName("a file that is not a journal segment is reported, not replayed")
    void badMagic() throws IOException {
      Written w = writeScript(null);
      byte[] bytes = w.bytes().clone();
      bytes[0] = 'X';
      assertThatThrownBy(() -> recoverFrom(bytes, w.segment().getFileName().toString(), null))
          .isInstanceOf(JournalException.class)
          .hasMessageContaining("bad magic");
    }

    @Test
    @DisplayName("a sealed segment cut short is corruption, not a torn tail")
    void sealedSegmentCutShort() throws IOException {
      Path d = newDir();
      FileJournal journal = loaded(FileJournal.builder(d).segmentBytes(1024));
      for (int i = 0; i < 40; i++) {
        journal.append(event("e" + i, Priority.NORMAL, T0.plusMillis(i)));
      }
      journal.close();
      List<Path> segs = segments(d);
      assertThat(segs).hasSizeGreaterThan(2);
      assertThat(reload(d).pending()).hasSize(40);
      byte[] first = Files.readAllBytes(segs.get(0));
      Files.write(segs.get(0), java.util.Arrays.copyOf(first, first.length - 3));
      assertThatThrownBy(() -> track(FileJournal.builder(d).build()))
          .isInstanceOf(JournalException.class)
          .hasMessageContaining(segs.get(0).getFileName().toString())
          .hasMessageContaining("sealed segment");
    }
  }

  @Nested
  @DisplayName("group commit")
  class GroupCommit {

    @Test
    @DisplayName("a normal change reaches the file within the commit interval without flush")
    void committedByInterval() throws IOException {
      Path d = newDir();
      FileJournal journal = loaded(FileJournal.builder(d).commitInterval(Duration.ofMillis(5)));
      long before = Files.size(segments(d).get(0));
      journal.append(event("n", Priority.NORMAL, T0));
      Await.until(Duration.ofSeconds(10), "the flusher writes the record",
          () -> sizeOf(d) > before);
      Await.until(Duration.ofSeconds(10), "the flusher syncs", () -> journal.syncCount() > 0);
      journal.crash();
      assertThat(reload(d).pending())
          .extracting(QueuedEvent::eventId).containsExactly("n");
    }

    @Test
    @DisplayName("a normal change reaches the file once commitRecords changes are waiting")
    void committedByCount() throws IOException {
      Path d = newDir();
      FileJournal journal = loaded(FileJournal.builder(d).commitInterval(Duration.ofHours(1))
          .commitRecords(10));
      for (int i = 0; i < 9; i++) {
        journal.append(event("e" + i, Priority.LOW, T0));
      }
      assertThat(journal.syncCount()).isZero();
      journal.append(event("e9", Priority.LOW, T0));
      Await.until(Duration.ofSeconds(10), "the tenth change triggers a sync",
          () -> journal.syncCount() > 0);
      journal.crash();
      assertThat(reload(d).pending()).hasSize(10);
    }

    @Test
    @DisplayName("unsynced normal changes are lost in a crash, critical ones and those before them are not")
    void crashLosesOnlyUnsynced() throws IOException {
      Path d = newDir();
      FileJournal journal = loaded(FileJournal.builder(d).commitInterval(Duration.ofHours(1)));
      journal.append(event("n1", Priority.NORMAL, T0));
      journal.append(event("c1", Priority.CRITICAL, T0));
      journal.append(event("n2", Priority.NORMAL, T0));
      journal.crash();
      assertThat(reload(d).pending())
          .extracting(QueuedEvent::eventId).containsExactly("n1", "c1");
    }

    @Test
    @DisplayName("critical appends waiting together share one fsync")
    void criticalAppendsShareSync() throws IOException {
      Path d = newDir();
      FileJournal journal = loaded(FileJournal.builder(d).commitInterval(Duration.ofHours(1)));
      long t1 = journal.appendDeferringSync(event("c1", Priority.CRITICAL, T0));
      long t2 = journal.appendDeferringSync(event("c2", Priority.CRITICAL, T0));
      long t3 = journal.appendDeferringSync(event("c3", Priority.CRITICAL, T0));
      journal.awaitDurable(t3);
      journal.awaitDurable(t1);
      journal.awaitDurable(t2);
      assertThat(journal.syncCount()).isEqualTo(1);
      journal.crash();
      assertThat(reload(d).pending()).hasSize(3);
    }
  }

  @Nested
  @DisplayName("shared syncs")
  class SharedSyncs {

    @Test
    @DisplayName("critical producers that wait while an fsync runs all share the next one instead of syncing one by one")
    void waitingProducersShareTheNextSync() throws Exception {
      // Deterministic: the first fsync is held until the three other producers are parked waiting
      // for their own records; the next fsync must then cover all three. (How many records one
      // fsync covers under free-running load is a scheduling figure: the JMH rows report it.)
      Path d = newDir();
      java.util.concurrent.atomic.AtomicBoolean first = new java.util.concurrent.atomic.AtomicBoolean(true);
      FaultyFileIo io = new FaultyFileIo();
      FileJournal journal = loaded(FileJournal.builder(d).commitInterval(Duration.ofHours(1)).fileIo(io));
      io.blockWhen(call -> call.op() == FaultyFileIo.Op.FORCE && first.getAndSet(false));
      long syncsBefore = journal.syncCount();
      List<Throwable> failures = java.util.Collections.synchronizedList(new ArrayList<>());
      Thread leader = producer(journal, "lead", failures);
      Await.until(Duration.ofSeconds(30), "the first fsync to start", () -> io.blockedCalls() == 1);
      List<Thread> followers = new ArrayList<>();
      for (int t = 0; t < 3; t++) {
        followers.add(producer(journal, "follow-" + t, failures));
      }
      Await.until(Duration.ofSeconds(30), "the three followers to wait for their records",
          () -> followers.stream().allMatch(f -> f.getState() == Thread.State.WAITING
              || f.getState() == Thread.State.TIMED_WAITING));
      io.release();
      leader.join(30_000);
      for (Thread follower : followers) {
        follower.join(30_000);
      }
      assertThat(failures).isEmpty();
      assertThat(leader.isAlive() || followers.stream().anyMatch(Thread::isAlive)).isFalse();
      assertThat(journal.syncCount() - syncsBefore)
          .as("one fsync for the leader's record, one shared by the three followers")
          .isEqualTo(2);
      journal.crash();
      assertThat(reload(d).pending()).hasSize(4);
    }

    private Thread producer(FileJournal journal, String id, List<Throwable> failures) {
      Thread producer = new Thread(() -> {
        try {
          journal.append(event(id, Priority.CRITICAL, T0));
        } catch (Throwable e) {
          failures.add(e);
        }
      }, "producer-" + id);
      producer.setDaemon(true);
      producer.start();
      return producer;
    }

    @Test
    @DisplayName("a lone critical producer syncs each record on its own")
    void loneProducer() throws IOException {
      Path d = newDir();
      FileJournal journal = loaded(FileJournal.builder(d).commitInterval(Duration.ofHours(1)));
      for (int i = 0; i < 50; i++) {
        journal.append(event("solo-" + i, Priority.CRITICAL, T0.plusMillis(i)));
        assertThat(journal.syncCount()).isEqualTo(i + 1);
      }
    }
  }

  @Nested
  @DisplayName("compaction")
  class Compaction {

    /**
     * {@link #churn churn} on a journal in {@code d} with 8 KiB segments that compacts only when
     * asked to.
     */
    private FileJournal churnCompactingOnDemand(Path d, InMemoryJournal model) {
      return churn(FileJournal.builder(d).segmentBytes(8 * 1024)
          .compactionMinBytes(Long.MAX_VALUE / 2), model);
    }

    /**
     * Records 400 appends on a loaded journal, most of them acked (some forgotten), some
     * rescheduled or dead-lettered, mirroring each change on {@code model}.
     */
    private FileJournal churn(FileJournal.Builder builder, InMemoryJournal model) {
      FileJournal journal = loaded(builder);
      for (int i = 0; i < 400; i++) {
        QueuedEvent e = new QueuedEvent("e" + i, "churn", "x".repeat(200), Priority.NORMAL,
            T0.plusMillis(i), 0, T0.plusMillis(i), null);
        journal.append(e);
        model.append(e);
        if (i % 10 != 0) {
          journal.remove(e.eventId(), Removal.ACKED);
          model.remove(e.eventId(), Removal.ACKED);
          if (i % 3 == 0) {
            journal.forget(e.eventId());
            model.forget(e.eventId());
          }
        }
        if (i % 50 == 0) {
          journal.reschedule(e.eventId(), 2, T0.plusSeconds(i));
          model.reschedule(e.eventId(), 2, T0.plusSeconds(i));
        }
        if (i % 100 == 0) {
          journal.deadLetter(e.eventId(), 3, "dead " + i);
          model.deadLetter(e.eventId(), 3, "dead " + i);
        }
      }
      return journal;
    }

    @Test
    @DisplayName("compaction rewrites the live state into one smaller base segment that replays the same")
    void compactsToLiveState() throws IOException {
      Path d = newDir();
      InMemoryJournal model = new InMemoryJournal();
      FileJournal journal = churnCompactingOnDemand(d, model);
      journal.flush();
      long before = journal.sizeOnDisk();
      assertThat(segments(d)).hasSizeGreaterThan(3);

      journal.compact();

      // The base holding the live state, and the active segment it continues in.
      assertThat(segments(d)).hasSize(1);
      assertThat(bases(d)).hasSize(1);
      assertThat(journal.sizeOnDisk()).isLessThan(before / 3);
      journal.append(event("after", Priority.CRITICAL, T0.plusSeconds(999)));
      model.append(event("after", Priority.CRITICAL, T0.plusSeconds(999)));
      journal.crash();
      assertThat(reload(d)).isEqualTo(model.load());
    }

    @Test
    @DisplayName("the flusher compacts on its own once most of the journal is garbage")
    void compactsAutomatically() throws IOException {
      Path d = newDir();
      InMemoryJournal model = new InMemoryJournal();
      FileJournal journal = churn(FileJournal.builder(d).segmentBytes(8 * 1024)
          .commitInterval(Duration.ofMillis(5)).compactionMinBytes(16 * 1024), model);
      // About 120 KiB were written, of which about 20 KiB are live: once compaction keeps the
      // garbage under half, the files hold under 60 KiB.
      Await.until(Duration.ofSeconds(10), "the journal shrinks under 60 KiB",
          () -> journal.sizeOnDisk() < 60 * 1024);
      journal.close();
      assertThat(reload(d)).isEqualTo(model.load());
    }

    @Test
    @DisplayName("changes recorded while compactions run are all kept, in order")
    void writesDuringCompaction() throws Exception {
      Path d = newDir();
      FileJournal journal = loaded(FileJournal.builder(d).segmentBytes(4 * 1024)
          .compactionMinBytes(Long.MAX_VALUE / 2));
      int total = 2_000;
      java.util.concurrent.atomic.AtomicInteger written =
          new java.util.concurrent.atomic.AtomicInteger();
      Thread writer = new Thread(() -> {
        for (int i = 0; i < total; i++) {
          journal.append(event("w" + i, Priority.NORMAL, T0.plusMillis(i)));
          if (i % 2 == 1) {
            journal.remove("w" + (i - 1), Removal.ACKED);
          }
          written.incrementAndGet();
        }
      });
      writer.start();
      int compactions = 0;
      while (writer.isAlive() || compactions < 3) {
        journal.compact();
        compactions++;
      }
      writer.join(30_000);
      assertThat(written.get()).isEqualTo(total);
      journal.close();

      JournalState state = reload(d);
      List<String> expected = new ArrayList<>();
      for (int i = 1; i < total; i += 2) {
        expected.add("w" + i);
      }
      assertThat(state.pending()).extracting(QueuedEvent::eventId)
          .containsExactlyElementsOf(expected);
      assertThat(state.seen()).hasSize(total);
      assertThat(compactions).isGreaterThanOrEqualTo(3);
    }

    @Test
    @DisplayName("a crash before the compacted segment is installed keeps the old segments")
    void crashBeforeInstall() throws IOException {
      Path d = newDir();
      InMemoryJournal model = new InMemoryJournal();
      FileJournal journal = churnCompactingOnDemand(d, model);
      journal.close();
      List<Path> segs = segments(d);
      // A half-written compaction output, as a crash in the middle of writing it leaves it.
      Path tmp = d.resolve(String.format("journal-%020d.seg.tmp", segs.size() + 1));
      Files.write(tmp, java.util.Arrays.copyOf(Files.readAllBytes(segs.get(0)), 100));

      assertThat(reload(d)).isEqualTo(model.load());
      assertThat(Files.exists(tmp)).as("the unfinished output is deleted").isFalse();
    }

    @Test
    @DisplayName("a crash after the compacted segment is installed but before the old ones are deleted replays only the new one")
    void crashAfterInstall() throws IOException {
      Path d = newDir();
      InMemoryJournal model = new InMemoryJournal();
      FileJournal journal = churnCompactingOnDemand(d, model);
      journal.flush();
      Path copy = newDir();
      for (Path p : segments(d)) {
        Files.copy(p, copy.resolve(p.getFileName()));
      }
      journal.compact();
      journal.close();
      Path base = bases(d).get(0);
      Path active = segments(d).get(0);
      Files.copy(base, copy.resolve(base.getFileName()));
      assertThat(segments(copy)).hasSizeGreaterThan(2);

      assertThat(reload(copy)).isEqualTo(model.load());
      assertThat(segments(copy)).containsExactly(copy.resolve(active.getFileName()));
      assertThat(bases(copy)).containsExactly(copy.resolve(base.getFileName()));
    }
  }

  @Nested
  @DisplayName("encryption")
  class Encryption {

    @Test
    @DisplayName("an encrypted journal round-trips and keeps ids and payloads out of the file")
    void roundTrip() throws IOException {
      Path d = newDir();
      FileJournal journal = open(d, KEY);
      journal.load();
      QueuedEvent secret = new QueuedEvent("card-4111", "payment.captured",
          "{\"pan\":\"4111111111111111\"}", Priority.CRITICAL, T0, 0, T0, null);
      journal.append(secret);
      journal.deadLetter("card-4111", 1, "reason-visible?");
      journal.close();

      String raw = new String(Files.readAllBytes(segments(d).get(0)), StandardCharsets.ISO_8859_1);
      assertThat(raw).doesNotContain("4111111111111111").doesNotContain("card-4111")
          .doesNotContain("payment.captured").doesNotContain("reason-visible");
      JournalState state = open(d, KEY).load();
      assertThat(state.dead()).containsExactly(secret.rescheduled(1, T0));
      assertThat(state.deadReasons()).containsEntry("card-4111", "reason-visible?");
    }

    @Test
    @DisplayName("a wrong key is a clear JournalException, not garbage")
    void wrongKey() throws IOException {
      Path d = newDir();
      FileJournal journal = open(d, KEY);
      journal.load();
      journal.append(event("a", Priority.CRITICAL, T0));
      journal.close();

      assertThatThrownBy(() -> open(d, OTHER_KEY))
          .isInstanceOf(JournalException.class)
          .hasMessageContaining("wrong key")
          .hasMessageContaining(segments(d).get(0).getFileName().toString());
      assertThatThrownBy(() -> open(d, null))
          .isInstanceOf(JournalException.class)
          .hasMessageContaining("is encrypted");
    }

    @Test
    @DisplayName("a key for an unencrypted journal is refused")
    void keyForPlainJournal() throws IOException {
      Path d = newDir();
      open(d, null).close();
      assertThatThrownBy(() -> open(d, KEY))
          .isInstanceOf(JournalException.class)
          .hasMessageContaining("not encrypted");
    }

    @Test
    @DisplayName("a record that fails authentication is reported with file and offset")
    void tamperedRecord() throws IOException {
      Written w = writeScript(KEY);
      // Re-frame record 1 with a valid checksum over altered ciphertext: only GCM can notice.
      byte[] bytes = w.bytes().clone();
      int start = (int) w.ends()[0];
      int length = ((bytes[start] & 0xff) << 24) | ((bytes[start + 1] & 0xff) << 16)
          | ((bytes[start + 2] & 0xff) << 8) | (bytes[start + 3] & 0xff);
      bytes[start + 12 + 20] ^= 0x01;
      java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
      crc.update(bytes, start + 12, length);
      int c = (int) crc.getValue();
      bytes[start + 8] = (byte) (c >>> 24);
      bytes[start + 9] = (byte) (c >>> 16);
      bytes[start + 10] = (byte) (c >>> 8);
      bytes[start + 11] = (byte) c;
      assertThatThrownBy(() -> recoverFrom(bytes, w.segment().getFileName().toString(), KEY))
          .isInstanceOf(JournalException.class)
          .hasMessageContaining("at offset " + start)
          .hasMessageContaining("wrong key, or the data was tampered with");
    }
  }

  @Nested
  @DisplayName("preallocated tail")
  class PreallocatedTail {

    /** A crashed journal's one segment: the file bytes and where each record ends. */
    private record Crashed(String name, byte[] bytes, long[] ends, List<JournalState> states) {
    }

    /** Appends {@code events} (CRITICAL, so each is synced), then crashes, keeping the zeros. */
    private Crashed crashAfter(QueuedEvent... events) throws IOException {
      Path d = newDir();
      FileJournal journal = open(d, null);
      journal.load();
      InMemoryJournal model = new InMemoryJournal();
      long[] ends = new long[events.length + 1];
      List<JournalState> states = new ArrayList<>();
      ends[0] = journal.sizeOnDisk();
      states.add(model.load());
      for (int i = 0; i < events.length; i++) {
        journal.append(events[i]);
        model.append(events[i]);
        ends[i + 1] = journal.sizeOnDisk();
        states.add(model.load());
      }
      journal.crash();
      Path segment = segments(d).get(0);
      return new Crashed(segment.getFileName().toString(), Files.readAllBytes(segment), ends,
          states);
    }

    private QueuedEvent critical(String id, int payloadChars) {
      return new QueuedEvent(id, "order.paid", "p".repeat(payloadChars), Priority.CRITICAL,
          T0, 0, T0, null);
    }

    /** Recovers {@code bytes}, then appends one more event and checks that it survives a reopen. */
    private JournalState recoverAndAppend(byte[] bytes, String name) throws IOException {
      Path d = dirWith(name, bytes);
      FileJournal recovered = open(d, null);
      JournalState state = recovered.load();
      recovered.append(critical("after-recovery", 10));
      recovered.close();
      JournalState again = reload(d);
      assertThat(again.pending()).extracting(QueuedEvent::eventId)
          .containsExactlyElementsOf(Stream.concat(
              state.pending().stream().map(QueuedEvent::eventId), Stream.of("after-recovery"))
              .toList());
      return state;
    }

    @Test
    @DisplayName("the active segment is extended with zeros ahead of its records; sizeOnDisk and a closed file hold only the records")
    void zerosAhead() throws IOException {
      Path d = newDir();
      FileJournal journal = open(d, null);
      journal.load();
      journal.append(critical("a", 100));
      Path segment = segments(d).get(0);
      long records = journal.sizeOnDisk();
      assertThat(Files.size(segment)).isGreaterThanOrEqualTo(64 * 1024);
      byte[] bytes = Files.readAllBytes(segment);
      for (int i = (int) records; i < bytes.length; i++) {
        assertThat(bytes[i]).as("byte %d", i).isZero();
      }
      journal.close();
      assertThat(Files.size(segment)).isEqualTo(records);
    }

    @Test
    @DisplayName("a crash leaves the zero tail; reopening ends the records there, keeps the tail, and appends after the last record")
    void restartAfterCrash() throws IOException {
      Crashed c = crashAfter(critical("a", 50), critical("b", 60), critical("c", 70));
      assertThat((long) c.bytes().length).isGreaterThan(c.ends()[3]);

      Path d = dirWith(c.name(), c.bytes());
      Path segment = d.resolve(c.name());
      FileJournal recovered = open(d, null);
      assertThat(recovered.load()).isEqualTo(c.states().get(3));
      assertThat(recovered.sizeOnDisk()).isEqualTo(c.ends()[3]);
      assertThat(Files.size(segment)).as("no torn write: the preallocated tail is kept")
          .isEqualTo(c.bytes().length);
      recovered.append(critical("d", 80));
      recovered.crash();
      byte[] after = Files.readAllBytes(segment);
      assertThat(java.util.Arrays.copyOf(after, (int) c.ends()[3]))
          .isEqualTo(java.util.Arrays.copyOf(c.bytes(), (int) c.ends()[3]));
      assertThat(reload(d).pending()).extracting(QueuedEvent::eventId)
          .containsExactly("a", "b", "c", "d");
    }

    @Test
    @DisplayName("a record written partway, followed by zeros, is a torn write at every length: the records before it survive")
    void partialRecordThenZeros() throws IOException {
      Crashed c = crashAfter(critical("a", 50), critical("b", 300));
      int start = (int) c.ends()[1];
      int end = (int) c.ends()[2];
      int tested = 0;
      for (int written = 1; written < end - start; written++) {
        byte[] bytes = new byte[c.bytes().length];
        System.arraycopy(c.bytes(), 0, bytes, 0, start + written);
        // A record whose missing bytes were zeros anyway is complete.
        boolean complete = java.util.Arrays.equals(bytes, c.bytes());
        assertThat(recoverAndAppend(bytes, c.name())).as("%d of %d bytes of the last record",
            written, end - start).isEqualTo(c.states().get(complete ? 2 : 1));
        tested += complete ? 0 : 1;
      }
      assertThat(tested).isGreaterThan(end - start - 10);
    }

    @Test
    @DisplayName("an unsynced last record whose later part reached the disk before an earlier sector is torn: it is cut at its start, the records before it survive")
    void zeroSectorInsideLastRecord() throws IOException {
      Crashed c = crashAfter(critical("a", 50), critical("b", 2000));
      int start = (int) c.ends()[1];
      int sector = (start / 512 + 1) * 512;
      assertThat(sector + 512).isLessThan((int) c.ends()[2]);
      byte[] bytes = c.bytes().clone();
      java.util.Arrays.fill(bytes, sector, sector + 512, (byte) 0);

      Path d = dirWith(c.name(), bytes);
      Path segment = d.resolve(c.name());
      assertThat(reload(d)).isEqualTo(c.states().get(1));
      assertThat(Files.size(segment)).as("cut at the torn record").isEqualTo(start);
      assertThat(recoverAndAppend(bytes, c.name())).isEqualTo(c.states().get(1));
    }

    @Test
    @DisplayName("a record with a zero-filled sector followed by complete records is corruption naming the file and offset, not a torn tail: nothing is cut")
    void zeroSectorBeforeCompleteRecords() throws IOException {
      Crashed c = crashAfter(critical("a", 50), critical("b", 2000), critical("c", 40));
      int start = (int) c.ends()[1];
      int sector = (start / 512 + 1) * 512;
      byte[] bytes = c.bytes().clone();
      java.util.Arrays.fill(bytes, sector, sector + 512, (byte) 0);

      Path d = dirWith(c.name(), bytes);
      Path segment = d.resolve(c.name());
      assertThatThrownBy(() -> reload(d)).isInstanceOf(JournalException.class)
          .hasMessageContaining(c.name())
          .hasMessageContaining("at offset " + start)
          .hasMessageContaining("complete record at offset " + c.ends()[2]);
      assertThat(Files.readAllBytes(segment)).as("nothing deleted").isEqualTo(bytes);
    }

    @Test
    @DisplayName("one flipped bit in a large record holding 1 KiB of U+0000, with fsynced records after it, is corruption: the file is not cut and every record stays")
    void flippedBitInNulPayloadKeepsLaterRecords() throws IOException {
      String payload = "x".repeat(3000) + "\u0000".repeat(1024) + "y".repeat(500);
      QueuedEvent big = new QueuedEvent("w", "page.viewed", payload, Priority.LOW, T0, 0, T0,
          null);
      Crashed c = crashAfter(critical("a", 50), big, critical("p1", 900), critical("p2", 900),
          critical("p3", 900), critical("p4", 900), critical("p5", 900), critical("p6", 900));
      byte[] bytes = c.bytes().clone();
      bytes[(int) c.ends()[1] + 100] ^= 0x10;

      Path d = dirWith(c.name(), bytes);
      Path segment = d.resolve(c.name());
      assertThatThrownBy(() -> reload(d)).isInstanceOf(JournalException.class)
          .hasMessageContaining(c.name())
          .hasMessageContaining("at offset " + c.ends()[1]);
      assertThat(Files.readAllBytes(segment)).as("nothing deleted: the six critical events stay")
          .isEqualTo(bytes);
    }

    @Test
    @DisplayName("a flipped bit in the newest complete record, before the zero tail, is corruption naming the file and offset; so is one in an earlier record; a record whose tail did not arrive stays a torn write")
    void checksumBeforeZeros() throws IOException {
      Crashed c = crashAfter(critical("a", 50), critical("b", 60));
      for (int at = (int) c.ends()[1] + 8; at < c.ends()[2]; at++) { // the checksum and record
        byte[] last = c.bytes().clone();
        last[at] ^= 0x04;
        assertThatThrownBy(() -> recoverFrom(last, c.name(), null)).as("byte %d flipped", at)
            .isInstanceOf(JournalException.class)
            .hasMessageContaining(c.name())
            .hasMessageContaining("at offset " + c.ends()[1])
            .hasMessageContaining("checksum mismatch");
      }
      Path untouched = dirWith(c.name(), c.bytes());
      assertThat(reload(untouched)).as("nothing was deleted or cut by the failed opens")
          .isEqualTo(c.states().get(2));

      byte[] first = c.bytes().clone();
      first[(int) c.ends()[1] - 1] ^= 0x01;
      assertThatThrownBy(() -> recoverFrom(first, c.name(), null))
          .isInstanceOf(JournalException.class)
          .hasMessageContaining("at offset " + c.ends()[0])
          .hasMessageContaining("checksum mismatch");

      byte[] torn = c.bytes().clone();
      java.util.Arrays.fill(torn, (int) c.ends()[2] - 5, (int) c.ends()[2], (byte) 0);
      assertThat(recoverAndAppend(torn, c.name())).as("the last 5 bytes never arrived")
          .isEqualTo(c.states().get(1));
    }

    @Test
    @DisplayName("zeros are never a record: a segment of a header and zeros replays empty and takes appends")
    void zerosAreNotARecord() throws IOException {
      Crashed c = crashAfter(critical("a", 50));
      byte[] bytes = c.bytes().clone();
      java.util.Arrays.fill(bytes, (int) c.ends()[0], bytes.length, (byte) 0);
      assertThat(recoverAndAppend(bytes, c.name())).isEqualTo(c.states().get(0));
    }

    @Test
    @DisplayName("a segment is sealed without its zeros; only the newest keeps a tail, and a crash after rolls recovers everything")
    void segmentRoll() throws IOException {
      Path d = newDir();
      FileJournal journal = loaded(FileJournal.builder(d).segmentBytes(48 * 1024));
      int events = 2_000;
      for (int i = 0; i < events; i++) {
        journal.append(event("e" + i, i % 100 == 0 ? Priority.CRITICAL : Priority.NORMAL,
            T0.plusMillis(i)));
      }
      journal.flush();
      List<Path> segs = segments(d);
      assertThat(segs).hasSizeGreaterThan(2);
      long sealed = 0;
      for (Path p : segs.subList(0, segs.size() - 1)) {
        byte[] b = Files.readAllBytes(p);
        assertThat(endOfFrames(b)).as("%s ends with its last record", p).isEqualTo(b.length);
        assertThat(b.length).isLessThan(48 * 1024 + 1024);
        sealed += b.length;
      }
      Path active = segs.get(segs.size() - 1);
      long activeRecords = journal.sizeOnDisk() - sealed;
      assertThat(Files.size(active)).isGreaterThan(activeRecords);
      assertThat(endOfFrames(Files.readAllBytes(active))).isEqualTo(activeRecords);
      journal.crash();

      FileJournal recovered = track(FileJournal.builder(d).segmentBytes(48 * 1024).build());
      assertThat(recovered.load().pending()).hasSize(events);
      assertThat(recovered.sizeOnDisk()).isEqualTo(sealed + activeRecords);
      for (int i = 0; i < events; i++) {
        recovered.append(event("f" + i, Priority.NORMAL, T0.plusMillis(i)));
      }
      recovered.close();
      for (Path p : segments(d)) {
        byte[] b = Files.readAllBytes(p);
        assertThat(endOfFrames(b)).as("%s ends with its last record", p).isEqualTo(b.length);
      }
      assertThat(reload(d).pending())
          .hasSize(2 * events);
    }
  }

  @Nested
  @DisplayName("configuration")
  class Configuration {

    @Test
    @DisplayName("invalid settings are refused naming the field and the value")
    void invalid() throws IOException {
      Path d = newDir();
      assertThatThrownBy(() -> FileJournal.builder(null).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("dir");
      assertThatThrownBy(() -> FileJournal.builder(d).commitInterval(Duration.ZERO).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("commitInterval")
          .hasMessageContaining("PT0S");
      assertThatThrownBy(() -> FileJournal.builder(d).commitRecords(0).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("commitRecords")
          .hasMessageContaining("0");
      assertThatThrownBy(() -> FileJournal.builder(d).segmentBytes(10).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("segmentBytes")
          .hasMessageContaining("10");
      assertThatThrownBy(() -> FileJournal.builder(d).compactionMinBytes(-1).build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("compactionMinBytes").hasMessageContaining("-1");
      assertThatThrownBy(() -> FileJournal.builder(d).compactionGarbageRatio(1.0).build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("compactionGarbageRatio").hasMessageContaining("1.0");
      assertThatThrownBy(() -> FileJournal.builder(d)
          .encryptionKey(new SecretKeySpec(new byte[5], "AES")).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("encryptionKey")
          .hasMessageContaining("40");
      assertThat(segments(d)).as("nothing was created by a refused configuration").isEmpty();
    }

    @Test
    @DisplayName("load is called once")
    void loadOnce() throws IOException {
      FileJournal journal = open(newDir(), null);
      journal.load();
      assertThatThrownBy(journal::load).isInstanceOf(IllegalStateException.class);
    }
  }

  /**
   * Walks an unencrypted segment's record frames (format 2: after a 44-byte header); returns where
   * they stop (zeros or the end).
   */
  private static long endOfFrames(byte[] segment) {
    java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(segment);
    int pos = 44;
    while (pos + 12 <= segment.length && b.getInt(pos) > 0 && b.getInt(pos) == ~b.getInt(pos + 4)
        && pos + 12 + b.getInt(pos) <= segment.length) {
      pos += 12 + b.getInt(pos);
    }
    return pos;
  }

  private static long sizeOf(Path directory) {
    try {
      return Files.size(segments(directory).get(0));
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }
}
