package io.relaykit.bench;

import com.squareup.tape2.QueueFile;
import io.relaykit.queue.FileJournal;
import io.relaykit.queue.Priority;
import io.relaykit.queue.QueuedEvent;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;

/**
 * The file journal's append cost beside a raw {@link FileChannel} writing the same number of bytes
 * per record, in the same run. Reported as appends per second.
 *
 * <ul>
 *   <li>{@code append}, mode {@code GROUP_COMMIT}: NORMAL events, fsynced by the journal's flusher
 *       (every 20 ms or 1 000 records); the raw baseline writes each record and forces every 100.
 *   <li>{@code append}, mode {@code SYNC}: CRITICAL events, fsynced before {@code append}
 *       returns; the raw baseline writes and forces each record.
 *   <li>{@code critical1}, {@code critical4}, {@code critical16}: 1, 4 or 16 threads append
 *       CRITICAL events to one journal, each waiting for its own record, sharing fsyncs; the
 *       baseline is Square's Tape ({@code com.squareup.tape2.QueueFile}, the real library), whose
 *       add writes synchronously ({@code "rwd"}), shared by the threads under a lock. The
 *       journal's fsyncs are an auxiliary counter ({@link Fsyncs}).
 * </ul>
 * With 16 producers, records per fsync are the primary score over the {@code :fsyncs} rate; each
 * producer has one CRITICAL append outstanding, so 16 is the ceiling and {@value
 * #TARGET_RECORDS_PER_FSYNC_16} the target. The journal's producers never write or force its files
 * themselves: its I/O thread drains and fsyncs for them and hands each a completion, so these
 * rows measure that hand-off too.
 *
 * <p>Targets (the ratios {@link Ratios} reports): 4 CRITICAL producers at least {@value
 * #TARGET_CRITICAL4_VS_TAPE}x Tape's add; NORMAL group commit at least {@value
 * #TARGET_GROUP_COMMIT_VS_RAW}x a raw FileChannel forcing every 100 records; producers while a
 * ~100 MB journal compacts at least {@value #TARGET_COMPACTING_VS_NOT} of not compacting ({@link
 * JournalCompactionBenchmark}); the H2 journal's CRITICAL append at least {@value
 * #TARGET_H2_SYNC_VS_RAW} of a raw insert + commit per event ({@link H2JournalBenchmark}). A
 * target missed is reported with its profile.
 *
 * <p>Each iteration starts from an empty directory under {@code target/} (or {@code
 * -Drelaykit.bench.dir}), deleted at the iteration's end. Appends only: the journal's live state
 * grows for one iteration, as a queue filling up does.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class JournalBenchmark {

  /** 4 CRITICAL producers vs Tape's add. */
  static final double TARGET_CRITICAL4_VS_TAPE = 6.0;
  /** Records per fsync with 16 CRITICAL producers (16 is the ceiling). */
  static final int TARGET_RECORDS_PER_FSYNC_16 = 14;
  /** NORMAL group commit vs a raw FileChannel forcing every {@link #RAW_GROUP} records. */
  static final double TARGET_GROUP_COMMIT_VS_RAW = 2.0;
  /** 4 CRITICAL producers while a ~100 MB journal compacts vs not compacting. */
  static final double TARGET_COMPACTING_VS_NOT = 0.8;
  /** The H2 journal's CRITICAL append vs a raw insert + commit per event. */
  static final double TARGET_H2_SYNC_VS_RAW = 0.9;

  /** Forces per record of the raw group-commit baseline. */
  static final int RAW_GROUP = 100;
  static final String PAYLOAD = "{\"sku\":\"A-1\",\"qty\":1,\"amount\":1999}";
  /** Ids of one width, so every record has the same size as the probe's. */
  private static final long ID_BASE = 1_000_000_000_000L;

  /** One appender: the journal or the raw channel, group-committed or synced. */
  @State(Scope.Benchmark)
  public static class Single {
    /** What writes the records. */
    public enum Impl { RELAYKIT, RAW_FILE_CHANNEL }

    /** When records become durable; the ratio compares like with like. */
    public enum Durability { GROUP_COMMIT, SYNC }

    @Param
    Impl impl;

    @Param
    Durability durability;

    final AtomicLong sequence = new AtomicLong();
    Path dir;
    FileJournal journal;
    FileChannel raw;
    ByteBuffer record;
    long rawCount;
    Priority priority;

    @Setup(Level.Iteration)
    public void open() throws IOException {
      priority = durability == Durability.SYNC ? Priority.CRITICAL : Priority.NORMAL;
      dir = BenchDirs.create("journal");
      if (impl == Impl.RELAYKIT) {
        journal = FileJournal.builder(dir).build();
      } else {
        record = ByteBuffer.wrap(recordBytes(priority));
        raw = FileChannel.open(dir.resolve("raw.log"), StandardOpenOption.CREATE_NEW,
            StandardOpenOption.WRITE, StandardOpenOption.APPEND);
        rawCount = 0;
      }
    }

    @TearDown(Level.Iteration)
    public void close() throws IOException {
      if (journal != null) {
        journal.close();
        journal = null;
      }
      if (raw != null) {
        raw.force(false);
        raw.close();
        raw = null;
      }
      BenchDirs.delete(dir);
    }
  }

  @Benchmark
  public long append(Single s) throws IOException {
    long seq = s.sequence.getAndIncrement();
    if (s.journal != null) {
      s.journal.append(event(seq, s.priority));
      return seq;
    }
    s.record.rewind();
    s.raw.write(s.record);
    if (s.durability == Single.Durability.SYNC || ++s.rawCount % RAW_GROUP == 0) {
      s.raw.force(false);
    }
    return seq;
  }

  /** Producers of CRITICAL events on one journal, or on one Tape queue file. */
  @State(Scope.Benchmark)
  public static class Shared {
    /** The file queue under test. */
    public enum Impl { RELAYKIT, TAPE }

    @Param
    Impl impl;

    final AtomicLong sequence = new AtomicLong();
    /** The journal's sync count already claimed by some producer's {@link Fsyncs}. */
    final AtomicLong claimedSyncs = new AtomicLong();
    Path dir;
    FileJournal journal;
    QueueFile tape;

    @Setup(Level.Iteration)
    public void open() throws IOException {
      dir = BenchDirs.create("journal-concurrent");
      claimedSyncs.set(0);
      if (impl == Impl.RELAYKIT) {
        journal = FileJournal.builder(dir).build();
      } else {
        tape = new QueueFile.Builder(dir.resolve("queue.file").toFile()).build();
      }
    }

    @TearDown(Level.Iteration)
    public void close() throws IOException {
      if (journal != null) {
        journal.close();
        journal = null;
      }
      if (tape != null) {
        tape.close();
        tape = null;
      }
      BenchDirs.delete(dir);
    }

    /** One CRITICAL append: durable on return, on either side. */
    long appendCritical(Fsyncs fsyncs) throws IOException {
      long seq = sequence.getAndIncrement();
      QueuedEvent event = event(seq, Priority.CRITICAL);
      if (journal != null) {
        journal.append(event);
        fsyncs.claim(journal.syncCount(), claimedSyncs);
      } else {
        byte[] bytes = recordBytesOf(event);
        // QueueFile is not thread-safe; Tape's own FileObjectQueue is used from one thread.
        synchronized (tape) {
          tape.add(bytes);
        }
      }
      return seq;
    }
  }

  /**
   * The journal's fsyncs, reported beside the throughput as an auxiliary rate
   * ({@code :fsyncs}): records per fsync = the primary score / this one. Each producer claims the
   * syncs that happened since any producer last looked, so the sum over threads is the total.
   * Always 0 for Tape, whose adds are synchronous writes (three per add).
   */
  @State(Scope.Thread)
  @AuxCounters(AuxCounters.Type.OPERATIONS)
  public static class Fsyncs {
    public long fsyncs;

    @Setup(Level.Iteration)
    public void reset() {
      fsyncs = 0;
    }

    /** Claims the syncs up to {@code syncs} that no producer claimed yet. */
    public void claim(long syncs, AtomicLong claimed) {
      long before = claimed.getAndAccumulate(syncs, Math::max);
      if (syncs > before) {
        fsyncs += syncs - before;
      }
    }
  }

  @Benchmark
  @Threads(1)
  public long critical1(Shared shared, Fsyncs fsyncs) throws IOException {
    return shared.appendCritical(fsyncs);
  }

  @Benchmark
  @Threads(4)
  public long critical4(Shared shared, Fsyncs fsyncs) throws IOException {
    return shared.appendCritical(fsyncs);
  }

  @Benchmark
  @Threads(16)
  public long critical16(Shared shared, Fsyncs fsyncs) throws IOException {
    return shared.appendCritical(fsyncs);
  }

  static QueuedEvent event(long seq, Priority priority) {
    Instant now = Instant.ofEpochMilli(1_700_000_000_000L + seq);
    return new QueuedEvent("evt-" + (ID_BASE + seq), "order.paid", PAYLOAD, priority, now, 0,
        now, null);
  }

  /**
   * A record of exactly the size the journal writes for one append of {@link #event}: measured
   * on a probe journal (its size on disk grows by the framed record), filled with the event's
   * text, so the raw baseline writes as many bytes per append as the journal does.
   */
  static byte[] recordBytes(Priority priority) throws IOException {
    Path probeDir = BenchDirs.create("journal-probe");
    try {
      FileJournal probe = FileJournal.builder(probeDir).build();
      try {
        probe.append(event(0, priority));
        long before = probe.sizeOnDisk();
        probe.append(event(1, priority));
        int size = Math.toIntExact(probe.sizeOnDisk() - before);
        byte[] text = recordBytesOf(event(1, priority));
        byte[] bytes = new byte[size];
        for (int i = 0; i < size; i++) {
          bytes[i] = text[i % text.length];
        }
        return bytes;
      } finally {
        probe.close();
      }
    } finally {
      BenchDirs.delete(probeDir);
    }
  }

  /** The event as text: what the Tape queue file stores per add. */
  static byte[] recordBytesOf(QueuedEvent e) {
    return (e.eventId() + '\n' + e.name() + '\n' + e.priority() + '\n'
        + e.enqueuedAt().toEpochMilli() + '\n' + e.payload()).getBytes(StandardCharsets.UTF_8);
  }
}
