package io.relaykit.bench;

import io.relaykit.queue.FileJournal;
import io.relaykit.queue.Priority;
import io.relaykit.queue.QueueJournal.Removal;
import io.relaykit.queue.QueuedEvent;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
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
 * Producers while a {@link FileJournal} compacts: four threads append CRITICAL events to a
 * journal of about 100 MB (100 000 events of 1 KB, half of them acked), with {@code compaction}
 * {@code RUNNING} (a thread compacts it again and again for the whole trial: each writes the
 * ~55 MB live state as a base and fsyncs it) or {@code NONE}. The ratio RUNNING / NONE is what a
 * compaction costs the producers; before compaction did its I/O off the write lock, every
 * producer stopped while it synced and rolled segments. The journal's fsyncs are counted as in
 * {@link JournalBenchmark.Fsyncs}.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(jvmArgsAppend = {"-Xms3g", "-Xmx3g"})
public class JournalCompactionBenchmark {

  static final int EVENTS = 100_000;
  static final String BIG = "x".repeat(1_000);

  /** A ~100 MB journal, compacting or not. */
  @State(Scope.Benchmark)
  public static class Journal {
    /**
     * Whether a compaction runs while the producers append; {@code SAME_IO_ELSEWHERE} is the
     * control: a thread writes and fsyncs a file of the base's size again and again, beside the
     * journal, without touching it, so RUNNING / SAME_IO_ELSEWHERE is what compaction costs the
     * producers beyond sharing the disk.
     */
    public enum Compaction { NONE, RUNNING, SAME_IO_ELSEWHERE }

    @Param
    Compaction compaction;

    final AtomicLong sequence = new AtomicLong();
    final AtomicLong claimedSyncs = new AtomicLong();
    final AtomicLong compactions = new AtomicLong();
    Path dir;
    FileJournal journal;
    Thread compactor;
    volatile boolean stop;

    @Setup(Level.Trial)
    public void open() throws IOException {
      dir = BenchDirs.create("journal-compaction");
      journal = FileJournal.builder(dir).compactionMinBytes(Long.MAX_VALUE / 2).build();
      journal.load();
      Instant t = Instant.ofEpochMilli(1_700_000_000_000L);
      for (int i = 0; i < EVENTS; i++) {
        String id = "preload-" + i;
        journal.append(new QueuedEvent(id, "order.paid", BIG, Priority.NORMAL, t, 0, t, null));
        if (i % 2 == 1) {
          journal.remove(id, Removal.ACKED);
        }
      }
      journal.flush();
      if (compaction == Compaction.RUNNING) {
        compactor = new Thread(() -> {
          while (!stop) {
            journal.compact();
            compactions.incrementAndGet();
          }
        }, "bench-compactor");
        compactor.setDaemon(true);
        compactor.start();
      } else if (compaction == Compaction.SAME_IO_ELSEWHERE) {
        journal.compact();
        long baseBytes;
        try (var files = java.nio.file.Files.list(dir)) {
          baseBytes = java.nio.file.Files.size(files.filter(
              p -> p.toString().endsWith(".base")).findFirst().orElseThrow());
        }
        compactor = new Thread(() -> writeAgainAndAgain(dir.resolve("elsewhere.bin"), baseBytes),
            "bench-disk-load");
        compactor.setDaemon(true);
        compactor.start();
      }
    }

    private void writeAgainAndAgain(Path file, long bytes) {
      java.nio.ByteBuffer chunk = java.nio.ByteBuffer.allocate(64 * 1024);
      while (!stop) {
        try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(file,
            java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.WRITE,
            java.nio.file.StandardOpenOption.TRUNCATE_EXISTING)) {
          for (long at = 0; at < bytes && !stop; at += chunk.capacity()) {
            chunk.clear();
            ch.write(chunk, at);
          }
          ch.force(true);
          compactions.incrementAndGet();
        } catch (IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      }
    }

    @TearDown(Level.Trial)
    public void close() throws Exception {
      stop = true;
      if (compactor != null) {
        compactor.join(60_000);
        System.out.println("\ncompactions during the trial: " + compactions.get()
            + ", files " + journal.sizeOnDisk() / (1024 * 1024) + " MiB");
      }
      journal.close();
      BenchDirs.delete(dir);
    }
  }

  @Benchmark
  @Threads(4)
  public long produce(Journal j, JournalBenchmark.Fsyncs fsyncs) {
    long seq = j.sequence.getAndIncrement();
    j.journal.append(JournalBenchmark.event(seq, Priority.CRITICAL));
    fsyncs.claim(j.journal.syncCount(), j.claimedSyncs);
    return seq;
  }
}
