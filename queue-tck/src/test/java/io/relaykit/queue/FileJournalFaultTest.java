package io.relaykit.queue;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.queue.FaultyFileIo.Op;
import io.relaykit.queue.QueueJournal.Removal;
import io.relaykit.tck.Await;
import io.relaykit.tck.FakeClock;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import javax.crypto.SecretKey;
import javax.crypto.spec.SecretKeySpec;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * FileJournal under injected faults (through {@link FaultyFileIo}, the CI path) and against
 * damaged or tampered files: each case names what the caller sees and what the directory holds
 * afterwards.
 */
class FileJournalFaultTest {

  static final Instant T0 = Instant.parse("2026-01-01T00:00:00.123Z");
  static final SecretKey KEY = new SecretKeySpec(new byte[] {
      1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, "AES");

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

  private Path newDir() throws IOException {
    Path d = Files.createTempDirectory("relaykit-faults-");
    dirs.add(d);
    return d;
  }

  private FileJournal loaded(FileJournal.Builder b) {
    FileJournal j = b.build();
    journals.add(j);
    j.load();
    return j;
  }

  private JournalState reload(Path d, SecretKey key) {
    FileJournal.Builder b = FileJournal.builder(d);
    if (key != null) {
      b.encryptionKey(key);
    }
    FileJournal j = b.build();
    journals.add(j);
    try {
      return j.load();
    } finally {
      j.crash(); // releases the directory's lock, writing nothing
    }
  }

  static QueuedEvent event(String id, Priority priority) {
    return new QueuedEvent(id, "fault.test", "{\"id\":\"" + id + "\",\"pad\":\"" + "x".repeat(40)
        + "\"}", priority, T0, 0, T0, null);
  }

  static List<Path> segments(Path d) throws IOException {
    try (Stream<Path> files = Files.list(d)) {
      return files.filter(p -> p.getFileName().toString().endsWith(".seg")).sorted().toList();
    }
  }

  static List<String> files(Path d) throws IOException {
    try (Stream<Path> files = Files.list(d)) {
      return files.map(p -> p.getFileName().toString()).sorted().toList();
    }
  }

  static List<String> ids(List<QueuedEvent> events) {
    return events.stream().map(QueuedEvent::eventId).toList();
  }

  @Nested
  @DisplayName("a full disk at a segment roll")
  class FailedRoll {

    @Test
    @DisplayName("leaves no file behind and refuses only the append that needed the new segment; once space is freed, rolls and writes work, and the refused append never comes back")
    void rollFailsThenRecovers() throws IOException {
      Path d = newDir();
      FaultyFileIo io = new FaultyFileIo();
      FileJournal journal = loaded(FileJournal.builder(d).segmentBytes(1024)
          .commitInterval(Duration.ofHours(1)).fileIo(io));
      io.newFilesFull(true);
      List<String> accepted = new ArrayList<>();
      String refused = null;
      for (int i = 0; i < 50 && refused == null; i++) {
        try {
          journal.append(event("a" + i, Priority.CRITICAL));
          accepted.add("a" + i);
        } catch (JournalException e) {
          assertThat(e).hasMessageContaining("No space left on device");
          refused = "a" + i;
        }
      }
      assertThat(refused).as("an append needed a new segment").isNotNull();
      assertThat(segments(d)).as("the segment that could not be written is gone").hasSize(1);
      String stillRefused = "b0";
      assertThatThrownBy(() -> journal.append(event(stillRefused, Priority.CRITICAL)))
          .isInstanceOf(JournalException.class);
      assertThat(segments(d)).hasSize(1);

      io.newFilesFull(false);
      for (int i = 0; i < 40; i++) {
        journal.append(event("c" + i, Priority.CRITICAL));
        accepted.add("c" + i);
      }
      assertThat(segments(d).size()).as("later rolls work").isGreaterThan(3);
      journal.crash();

      assertThat(ids(reload(d, null).pending())).containsExactlyElementsOf(accepted)
          .doesNotContain(refused, stillRefused);
    }
  }

  @Nested
  @DisplayName("opening after a segment roll failed on a full disk")
  class OpenAfterFailedRoll {

    @Test
    @DisplayName("succeeds while the disk is still full: every durable event loads, and a queue restores and drains them; a change is refused (NOT_RECORDED) until space is freed, then the next change creates the next segment")
    void opensWithoutRoom() throws IOException {
      Path d = newDir();
      FaultyFileIo io = new FaultyFileIo();
      FileJournal journal = loaded(FileJournal.builder(d).segmentBytes(4096)
          .commitInterval(Duration.ofHours(1)).fileIo(io));
      io.newFilesFull(true);
      List<String> accepted = new ArrayList<>();
      for (int i = 0; i < 200; i++) {
        try {
          journal.append(event("a" + i, Priority.CRITICAL));
          accepted.add("a" + i);
        } catch (JournalException e) {
          break;
        }
      }
      assertThat(accepted).as("the roll failed after some durable events").hasSizeGreaterThan(10);
      journal.crash();

      FileJournal reopened = FileJournal.builder(d).segmentBytes(4096).fileIo(io).build();
      journals.add(reopened);
      ReportQueue queue = ReportQueue.builder().journal(reopened).capacity(1000).batchSize(1000)
          .build();
      assertThat(queue.restore()).isEqualTo(accepted.size());
      assertThat(ids(queue.drainBatch())).containsExactlyElementsOf(accepted);
      assertThat(segments(d)).as("nothing new on a full disk").hasSize(1);
      assertThatThrownBy(() -> queue.ack(List.of(accepted.get(0))))
          .isInstanceOfSatisfying(JournalException.class, e ->
              assertThat(e.outcome()).isEqualTo(JournalException.Outcome.NOT_RECORDED))
          .hasMessageContaining("No space left on device");
      assertThat(queue.inflightIds()).hasSize(accepted.size());

      io.newFilesFull(false);
      assertThat(queue.ack(accepted.subList(0, 5))).isEqualTo(5);
      assertThat(segments(d)).as("the next change created the next segment").hasSize(2);
      reopened.close();
      assertThat(ids(reload(d, null).pending()))
          .containsExactlyElementsOf(accepted.subList(5, accepted.size()));
    }
  }

  @Nested
  @DisplayName("a failed fsync")
  class FailedForce {

    @Test
    @DisplayName("fails closed: the append that waited for it fails, and so does every later change, until the journal is reopened")
    void failsClosed() throws IOException {
      Path d = newDir();
      FaultyFileIo io = new FaultyFileIo();
      FileJournal journal = loaded(FileJournal.builder(d).commitInterval(Duration.ofHours(1))
          .fileIo(io));
      journal.append(event("a", Priority.CRITICAL));
      io.failNext(Op.FORCE);
      assertThatThrownBy(() -> journal.append(event("b", Priority.CRITICAL)))
          .isInstanceOf(JournalException.class)
          .hasMessageContaining("Input/output error");
      int forces = io.calls(Op.FORCE);
      // The next fsync would succeed: it must not be taken as proof that "b" is on disk.
      assertThatThrownBy(() -> journal.append(event("c", Priority.CRITICAL)))
          .isInstanceOf(JournalException.class)
          .hasMessageContaining(d.toString())
          .hasMessageContaining("reopen");
      assertThatThrownBy(() -> journal.append(event("n", Priority.NORMAL)))
          .isInstanceOf(JournalException.class).hasMessageContaining("reopen");
      assertThatThrownBy(() -> journal.remove("a", Removal.ACKED))
          .isInstanceOf(JournalException.class);
      assertThatThrownBy(journal::flush).isInstanceOf(JournalException.class);
      assertThat(io.calls(Op.FORCE)).as("no fsync after the failed one").isEqualTo(forces);
      journal.crash();

      FileJournal reopened = FileJournal.builder(d).build();
      journals.add(reopened);
      JournalState state = reopened.load();
      assertThat(ids(state.pending())).startsWith("a").doesNotContain("c", "n");
      reopened.append(event("d", Priority.CRITICAL));
      reopened.close();
      assertThat(ids(reload(d, null).pending())).contains("a", "d");
    }

    @Test
    @DisplayName("of the background commit fails closed too: later changes are refused")
    void backgroundCommitFailsClosed() throws IOException {
      Path d = newDir();
      FaultyFileIo io = new FaultyFileIo();
      FileJournal journal = loaded(FileJournal.builder(d).commitInterval(Duration.ofMillis(5))
          .fileIo(io));
      io.failNext(Op.FORCE);
      journal.append(event("n", Priority.NORMAL));
      Await.until(Duration.ofSeconds(10), "the flusher's fsync fails",
          () -> io.failures(Op.FORCE) == 1);
      assertThatThrownBy(() -> journal.append(event("c", Priority.CRITICAL)))
          .isInstanceOf(JournalException.class).hasMessageContaining("reopen");
      journal.crash();
      assertThat(ids(reload(d, null).pending())).doesNotContain("c");
    }
  }

  @Nested
  @DisplayName("damaged segment headers")
  class Headers {

    private List<Path> written(Path d, SecretKey key) throws IOException {
      FileJournal.Builder b = FileJournal.builder(d).segmentBytes(1024);
      if (key != null) {
        b.encryptionKey(key);
      }
      FileJournal j = loaded(b);
      for (int i = 0; i < 40; i++) {
        j.append(event("e" + i, Priority.NORMAL));
      }
      j.close();
      List<Path> segs = segments(d);
      assertThat(segs).hasSizeGreaterThan(2);
      return segs;
    }

    @Test
    @DisplayName("setting the base flag on the newest segment is an error naming it, and deletes nothing")
    void baseFlagFlipped() throws IOException {
      Path d = newDir();
      List<Path> segs = written(d, null);
      List<String> before = files(d);
      Path newest = segs.get(segs.size() - 1);
      byte[] bytes = Files.readAllBytes(newest);
      bytes[5] |= 2;
      Files.write(newest, bytes);
      assertThatThrownBy(() -> reload(d, null))
          .isInstanceOf(JournalException.class)
          .hasMessageContaining(newest.getFileName().toString());
      assertThat(files(d)).isEqualTo(before);
    }

    @Test
    @DisplayName("any flipped bit in the first 8 bytes of any segment header is an error naming the file")
    void everyHeaderBit() throws IOException {
      Path d = newDir();
      List<Path> segs = written(d, null);
      for (Path seg : segs) {
        byte[] good = Files.readAllBytes(seg);
        for (int bit = 0; bit < 64; bit++) {
          byte[] bad = good.clone();
          bad[bit / 8] ^= (byte) (1 << (bit % 8));
          Files.write(seg, bad);
          assertThatThrownBy(() -> reload(d, null)).as("%s bit %d", seg.getFileName(), bit)
              .isInstanceOf(JournalException.class)
              .hasMessageContaining(seg.getFileName().toString());
        }
        Files.write(seg, good);
      }
      assertThat(reload(d, null).pending()).hasSize(40);
    }
  }

  /** The record frames of a segment: [start, end) of each, after its header. */
  static List<int[]> frames(byte[] seg) {
    ByteBuffer b = ByteBuffer.wrap(seg);
    boolean encrypted = (seg[5] & 1) != 0;
    int pos = seg[4] == 1 ? 8 + (encrypted ? 44 : 0) : (encrypted ? 72 : 44);
    List<int[]> out = new ArrayList<>();
    while (pos + 12 <= seg.length && b.getInt(pos) > 0 && b.getInt(pos) == ~b.getInt(pos + 4)
        && pos + 12 + b.getInt(pos) <= seg.length) {
      out.add(new int[] {pos, pos + 12 + b.getInt(pos)});
      pos += 12 + b.getInt(pos);
    }
    return out;
  }

  static byte[] cut(byte[] bytes, int from, int to) {
    byte[] out = new byte[bytes.length - (to - from)];
    System.arraycopy(bytes, 0, out, 0, from);
    System.arraycopy(bytes, to, out, from, bytes.length - to);
    return out;
  }

  @Nested
  @DisplayName("tampered segments")
  class Tampering {

    private List<Path> written(Path d, SecretKey key) throws IOException {
      FileJournal.Builder b = FileJournal.builder(d).segmentBytes(1024);
      if (key != null) {
        b.encryptionKey(key);
      }
      FileJournal j = loaded(b);
      for (int i = 0; i < 40; i++) {
        j.append(event("e" + i, Priority.NORMAL));
        if (i % 2 == 1) {
          j.remove("e" + (i - 1), Removal.ACKED);
        }
      }
      j.close();
      List<Path> segs = segments(d);
      assertThat(segs).hasSizeGreaterThan(3);
      return segs;
    }

    @Test
    @DisplayName("with a key, two records swapped in a segment are detected")
    void swapped() throws IOException {
      Path d = newDir();
      Path seg = written(d, KEY).get(1);
      byte[] bytes = Files.readAllBytes(seg);
      List<int[]> f = frames(bytes);
      byte[] first = Arrays.copyOfRange(bytes, f.get(0)[0], f.get(0)[1]);
      byte[] second = Arrays.copyOfRange(bytes, f.get(1)[0], f.get(1)[1]);
      ByteBuffer out = ByteBuffer.wrap(bytes.clone());
      out.position(f.get(0)[0]);
      out.put(second).put(first);
      Files.write(seg, out.array());
      assertThatThrownBy(() -> reload(d, KEY)).isInstanceOf(JournalException.class)
          .hasMessageContaining(seg.getFileName().toString());
    }

    @Test
    @DisplayName("with a key, a record cut out of a sealed segment is detected")
    void recordRemoved() throws IOException {
      Path d = newDir();
      Path seg = written(d, KEY).get(1);
      byte[] bytes = Files.readAllBytes(seg);
      List<int[]> f = frames(bytes);
      Files.write(seg, cut(bytes, f.get(1)[0], f.get(1)[1]));
      assertThatThrownBy(() -> reload(d, KEY)).isInstanceOf(JournalException.class)
          .hasMessageContaining(seg.getFileName().toString());
    }

    @Test
    @DisplayName("with or without a key, a sealed segment cut at a record boundary is detected")
    void sealedCutAtBoundary() throws IOException {
      for (SecretKey key : new SecretKey[] {null, KEY}) {
        Path d = newDir();
        Path seg = written(d, key).get(1);
        byte[] bytes = Files.readAllBytes(seg);
        List<int[]> f = frames(bytes);
        Files.write(seg, Arrays.copyOf(bytes, f.get(f.size() - 2)[0]));
        assertThatThrownBy(() -> reload(d, key)).as("key %s", key)
            .isInstanceOf(JournalException.class)
            .hasMessageContaining(seg.getFileName().toString());
      }
    }

    @Test
    @DisplayName("with or without a key, a deleted sealed segment is detected, in the middle or the oldest")
    void sealedDeleted() throws IOException {
      for (SecretKey key : new SecretKey[] {null, KEY}) {
        for (int victim : new int[] {0, 1}) {
          Path d = newDir();
          List<Path> segs = written(d, key);
          Files.delete(segs.get(victim));
          assertThatThrownBy(() -> reload(d, key)).as("key %s, segment %d", key, victim)
              .isInstanceOf(JournalException.class)
              .hasMessageContaining("missing");
        }
      }
    }

    @Test
    @DisplayName("with a key, a segment from another journal under the same key is detected")
    void foreignSegment() throws IOException {
      Path a = newDir();
      Path b = newDir();
      List<Path> segsA = written(a, KEY);
      written(b, KEY);
      Path victim = b.resolve(segsA.get(1).getFileName());
      Files.copy(segsA.get(1), victim, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
      assertThatThrownBy(() -> reload(b, KEY)).isInstanceOf(JournalException.class)
          .hasMessageContaining(victim.getFileName().toString());
    }
  }

  @Nested
  @DisplayName("compaction")
  class Compaction {

    @Test
    @DisplayName("counts the live state exactly, dead reasons and the cipher's bytes included: after a compaction it is the base's size")
    void liveBytesExact() throws IOException {
      for (SecretKey key : new SecretKey[] {null, KEY}) {
        Path d = newDir();
        FileJournal.Builder b = FileJournal.builder(d).segmentBytes(4096)
            .compactionMinBytes(Long.MAX_VALUE / 2);
        if (key != null) {
          b.encryptionKey(key);
        }
        FileJournal j = loaded(b);
        for (int i = 0; i < 60; i++) {
          j.append(event("e" + i, Priority.values()[i % 3]));
          if (i % 3 == 0) {
            j.remove("e" + i, Removal.ACKED);
          } else if (i % 3 == 1) {
            j.deadLetter("e" + i, 2, "reason " + "r".repeat(i * 10));
          }
          if (i % 5 == 0) {
            j.reschedule("e" + (i - 1), 3, T0.plusSeconds(i));
          }
        }
        j.compact();
        assertThat(j.liveBytes()).as("key %s", key).isEqualTo(Files.size(baseOf(d)));
        j.close();
      }
    }

    @Test
    @DisplayName("an idle journal whose live state is mostly long dead reasons compacts at most once")
    void noCompactionLoop() throws IOException {
      Path d = newDir();
      InMemoryJournal model = new InMemoryJournal();
      FileJournal j = loaded(FileJournal.builder(d).segmentBytes(4096)
          .commitInterval(Duration.ofMillis(2)).compactionMinBytes(8 * 1024));
      for (int i = 0; i < 40; i++) {
        QueuedEvent e = event("e" + i, Priority.NORMAL);
        j.append(e);
        model.append(e);
        j.deadLetter("e" + i, 5, "r".repeat(1000));
        model.deadLetter("e" + i, 5, "r".repeat(1000));
      }
      j.flush();
      long rounds = j.flusherRounds();
      Await.until(Duration.ofSeconds(20), "50 flusher rounds",
          () -> j.flusherRounds() > rounds + 50);
      assertThat(j.compactions()).isLessThanOrEqualTo(1);
      j.close();
      assertThat(reload(d, null)).isEqualTo(model.load());
    }

    @Test
    @DisplayName("a failing compaction backs off exponentially on the injected clock instead of retrying every round")
    void backoff() throws IOException {
      Path d = newDir();
      FaultyFileIo io = new FaultyFileIo().failAlways(Op.MOVE, true);
      FakeClock clock = new FakeClock();
      InMemoryJournal model = new InMemoryJournal();
      FileJournal j = loaded(FileJournal.builder(d).segmentBytes(1024).fileIo(io)
          .clock(clock).commitInterval(Duration.ofMillis(2)).compactionMinBytes(1));
      for (int i = 0; i < 100; i++) {
        QueuedEvent e = event("e" + i, Priority.NORMAL);
        j.append(e);
        model.append(e);
        j.remove("e" + i, Removal.ACKED);
        model.remove("e" + i, Removal.ACKED);
      }
      Await.until(Duration.ofSeconds(10), "a compaction fails", () -> io.failures(Op.MOVE) >= 1);
      assertAttemptsFor(j, io, 1);
      clock.stepWall(Duration.ofDays(2));
      assertAttemptsFor(j, io, 1); // a wall-clock step forward is no elapsed time
      clock.stepWall(Duration.ofDays(-4));
      clock.advanceMonotonic(Duration.ofSeconds(1));
      Await.until(Duration.ofSeconds(10), "retried after 1 s", () -> io.failures(Op.MOVE) >= 2);
      assertAttemptsFor(j, io, 2);
      clock.advanceMonotonic(Duration.ofSeconds(1));
      assertAttemptsFor(j, io, 2);
      clock.advanceMonotonic(Duration.ofSeconds(1));
      Await.until(Duration.ofSeconds(10), "retried after 2 s more", () -> io.failures(Op.MOVE) >= 3);
      io.failAlways(Op.MOVE, false);
      clock.advanceMonotonic(Duration.ofMinutes(10));
      Await.until(Duration.ofSeconds(10), "a compaction succeeds", () -> j.compactions() >= 1);
      assertThat(files(d)).noneMatch(name -> name.endsWith(".tmp"));
      j.close();
      assertThat(reload(d, null)).isEqualTo(model.load());
    }

    private void assertAttemptsFor(FileJournal j, FaultyFileIo io, int attempts) {
      long rounds = j.flusherRounds();
      Await.until(Duration.ofSeconds(10), "20 flusher rounds", () -> j.flusherRounds() > rounds + 20);
      assertThat(io.failures(Op.MOVE)).isEqualTo(attempts);
    }

    @Test
    @DisplayName("critical producers keep going while a compaction's own file I/O is stuck")
    void producersNotStalled() throws Exception {
      Path d = newDir();
      FaultyFileIo io = new FaultyFileIo();
      InMemoryJournal model = new InMemoryJournal();
      FileJournal j = loaded(FileJournal.builder(d).segmentBytes(2048).fileIo(io)
          .compactionMinBytes(Long.MAX_VALUE / 2));
      for (int i = 0; i < 100; i++) {
        QueuedEvent e = event("e" + i, Priority.NORMAL);
        j.append(e);
        model.append(e);
        if (i % 4 != 0) {
          j.remove("e" + i, Removal.ACKED);
          model.remove("e" + i, Removal.ACKED);
        }
      }
      j.flush();
      Set<Path> existing = new HashSet<>(segments(d));
      Thread[] compactor = new Thread[1];
      // compact() hands the compaction to the journal's compaction thread and waits for it.
      io.blockWhen(c -> c.thread().getName().equals("relaykit-file-journal-compactor")
          && (c.op() == Op.DELETE || c.op() == Op.MOVE
          || c.op() == Op.SYNC_DIRECTORY || !existing.contains(c.path())));
      CompletableFuture<Void> compaction = new CompletableFuture<>();
      compactor[0] = new Thread(() -> {
        try {
          j.compact();
          compaction.complete(null);
        } catch (Throwable e) {
          compaction.completeExceptionally(e);
        }
      });
      compactor[0].start();
      Await.until(Duration.ofSeconds(10), "the compaction is stuck in its I/O",
          () -> io.blockedCalls() > 0);
      CompletableFuture<Void> producer = CompletableFuture.runAsync(() -> {
        for (int i = 0; i < 20; i++) {
          QueuedEvent e = event("p" + i, Priority.CRITICAL);
          j.append(e);
        }
      });
      try {
        producer.get(10, TimeUnit.SECONDS);
      } finally {
        io.release();
      }
      compaction.get(30, TimeUnit.SECONDS);
      for (int i = 0; i < 20; i++) {
        model.append(event("p" + i, Priority.CRITICAL));
      }
      j.crash();
      assertThat(reload(d, null)).isEqualTo(model.load());
    }

    @Test
    @DisplayName("a compaction the journal started, stuck writing its base, stalls neither critical appends nor flush")
    void flusherCompactionDoesNotStallGroupCommit() throws Exception {
      Path d = newDir();
      FaultyFileIo io = new FaultyFileIo();
      // Writes of the compaction's base (its .base.tmp file) block on the compaction thread.
      io.blockWhen(c -> c.thread().getName().equals("relaykit-file-journal-compactor")
          && c.path() != null && c.path().getFileName().toString().contains(SegmentFormat.BASE)
          && (c.op() == Op.WRITE || c.op() == Op.FORCE || c.op() == Op.CREATE));
      InMemoryJournal model = new InMemoryJournal();
      FileJournal j = loaded(FileJournal.builder(d).segmentBytes(16 * 1024).fileIo(io)
          .commitInterval(Duration.ofMillis(2)).compactionMinBytes(32 * 1024));
      int n = 0;
      try {
        for (; io.blockedCalls() == 0 && n < 5_000; n++) {
          QueuedEvent e = event("g" + n, Priority.NORMAL);
          j.append(e);
          model.append(e);
          if (n % 8 != 0) {
            j.remove("g" + n, Removal.ACKED);
            model.remove("g" + n, Removal.ACKED);
          }
        }
        Await.until(Duration.ofSeconds(10), "the compaction is stuck writing its base"
            + " (after " + n + " appends)", () -> io.blockedCalls() > 0);
        CompletableFuture<Void> producer = CompletableFuture.runAsync(() -> {
          for (int i = 0; i < 20; i++) {
            QueuedEvent e = event("p" + i, Priority.CRITICAL);
            j.append(e);
          }
          j.append(event("q", Priority.NORMAL));
          j.flush();
        });
        producer.get(10, TimeUnit.SECONDS);
        assertThat(io.blockedCalls()).as("the compaction is still stuck").isPositive();
      } finally {
        io.release();
      }
      for (int i = 0; i < 20; i++) {
        model.append(event("p" + i, Priority.CRITICAL));
      }
      model.append(event("q", Priority.NORMAL));
      // Crash wherever the released compaction is: recovery gives the same state either way.
      j.crash();
      assertThat(reload(d, null)).isEqualTo(model.load());
    }

    @Test
    @DisplayName("an append racing close() is either durable after it or refused with a clear exception, never accepted and dropped")
    void appendRacingClose() throws Exception {
      Path d = newDir();
      FaultyFileIo io = new FaultyFileIo();
      FileJournal j = loaded(FileJournal.builder(d).fileIo(io)
          .commitInterval(Duration.ofHours(1)).commitRecords(Integer.MAX_VALUE));
      j.append(event("before", Priority.NORMAL));
      Thread[] closer = new Thread[1];
      java.util.concurrent.atomic.AtomicBoolean closing =
          new java.util.concurrent.atomic.AtomicBoolean();
      // The close's final sync (on the journal's I/O thread: the interval is an hour, so nothing
      // else forces) blocks in its fsync until the racing appends were made.
      io.blockWhen(c -> closing.get() && c.op() == Op.FORCE
          && c.thread().getName().equals("relaykit-file-journal-io"));
      CompletableFuture<Void> closed = new CompletableFuture<>();
      closer[0] = new Thread(() -> {
        try {
          closing.set(true);
          j.close();
          closed.complete(null);
        } catch (Throwable e) {
          closed.completeExceptionally(e);
        }
      });
      closer[0].start();
      Await.until(Duration.ofSeconds(10), "the close is in its final fsync",
          () -> io.blockedCalls() > 0);
      Throwable normal = null;
      Throwable critical = null;
      try {
        j.append(event("racing-normal", Priority.NORMAL));
      } catch (RuntimeException e) {
        normal = e;
      }
      CompletableFuture<Void> criticalAppend = CompletableFuture.runAsync(
          () -> j.append(event("racing-critical", Priority.CRITICAL)));
      io.release();
      closed.get(10, TimeUnit.SECONDS);
      try {
        criticalAppend.get(10, TimeUnit.SECONDS);
      } catch (java.util.concurrent.ExecutionException e) {
        critical = e.getCause();
      }
      List<String> kept = reload(d, null).pending().stream().map(QueuedEvent::eventId).toList();
      assertThat(kept).contains("before");
      for (Object[] c : new Object[][] {{"racing-normal", normal}, {"racing-critical", critical}}) {
        Throwable failure = (Throwable) c[1];
        if (failure == null) {
          assertThat(kept).as("%s was accepted, so it is durable after the close", c[0])
              .contains((String) c[0]);
        } else {
          assertThat(failure).as("%s was refused", c[0]).isInstanceOf(JournalException.class)
              .hasMessageContaining("closed");
          assertThat(((JournalException) failure).outcome())
              .isEqualTo(JournalException.Outcome.NOT_RECORDED);
          assertThat(kept).doesNotContain((String) c[0]);
        }
      }
    }
  }

  /** The compacted base: a {@code .base} file, or (format 1) the segment flagged as base. */
  static Path baseOf(Path d) throws IOException {
    try (Stream<Path> files = Files.list(d)) {
      List<Path> bases = files.filter(p -> p.getFileName().toString().endsWith(".base")).toList();
      if (!bases.isEmpty()) {
        assertThat(bases).hasSize(1);
        return bases.get(0);
      }
    }
    for (Path p : segments(d)) {
      if ((Files.readAllBytes(p)[5] & 2) != 0) {
        return p;
      }
    }
    throw new AssertionError("no base in " + files(d));
  }
}
