package io.relaykit.bench;

import io.relaykit.queue.Priority;
import io.relaykit.queue.QueuedEvent;
import io.relaykit.storage.jdbc.JdbcStorageConfig;
import io.relaykit.storage.jdbc.JdbcQueueJournal;
import io.relaykit.storage.jdbc.JdbcStorage;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;
import java.time.InstantSource;
import java.util.concurrent.TimeUnit;
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

/**
 * The JDBC queue journal on an H2 file database with the crash-safe {@code WRITE_DELAY=0}, beside
 * a raw JDBC batch insert of the same rows (an event's pending row and its seen row) into the same
 * table of the same database, in the same run. Reported as appends (events) per second.
 *
 * <ul>
 *   <li>{@code GROUP_COMMIT}: NORMAL events, committed by the journal's thread every 50 ms (and
 *       early every 10 000 statements); the raw baseline adds both rows to a batch and executes
 *       and commits every {@value #RAW_GROUP} events. A producer faster than the database waits
 *       at the journal's buffer bound for its commits (the journal's backpressure), as an
 *       application's producer does, instead of being refused.
 *   <li>{@code SYNC}: CRITICAL events, committed before {@code append} returns; the raw baseline
 *       executes and commits each event's two-row batch.
 * </ul>
 * A fresh database file per trial under {@code target/}, a fresh journal name per iteration.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class H2JournalBenchmark {

  /** What writes the rows. */
  public enum Impl { RELAYKIT, RAW_JDBC_BATCH }

  /** When rows become durable. */
  public enum Durability { GROUP_COMMIT, SYNC }

  static final int RAW_GROUP = 1_000;
  static final String PREFIX = "bench_";
  private static final String INSERT = "INSERT INTO " + PREFIX + "journal (journal, event_id, kind,"
      + " seq, seen_at, name, payload, priority, enqueued_at, attempts, next_attempt_at,"
      + " expires_at, dead_reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";

  @Param
  Impl impl;

  @Param
  Durability durability;

  private Path dir;
  private JdbcStorage storage;
  private int iteration;
  private long sequence;
  private Priority priority;
  private JdbcQueueJournal journal;
  private String journalName;
  private Connection raw;
  private PreparedStatement insert;
  private long rawSeq;
  private int rawBatched;

  @Setup(Level.Trial)
  public void openDatabase() throws IOException {
    dir = BenchDirs.create("h2-journal");
    storage = JdbcStorage.open(JdbcStorageConfig.builder()
        .jdbcUrl("jdbc:h2:file:" + dir.toAbsolutePath().resolve("db"))
        .tablePrefix(PREFIX)
        .build(), InstantSource.system());
    priority = durability == Durability.SYNC ? Priority.CRITICAL : Priority.NORMAL;
  }

  @TearDown(Level.Trial)
  public void closeDatabase() {
    storage.close();
    BenchDirs.delete(dir);
  }

  @Setup(Level.Iteration)
  public void open() throws SQLException {
    journalName = impl + "-" + (iteration++);
    if (impl == Impl.RELAYKIT) {
      journal = storage.queueJournal(journalName);
      journal.load();
    } else {
      raw = storage.dataSource().getConnection();
      raw.setAutoCommit(false);
      insert = raw.prepareStatement(INSERT);
      rawBatched = 0;
    }
  }

  @TearDown(Level.Iteration)
  public void close() throws SQLException {
    if (journal != null) {
      journal.close();
      journal = null;
    }
    if (raw != null) {
      if (rawBatched > 0) {
        insert.executeBatch();
      }
      raw.commit();
      insert.close();
      raw.close();
      raw = null;
    }
  }

  @Benchmark
  public long append() throws SQLException {
    long seq = sequence++;
    QueuedEvent event = JournalBenchmark.event(seq, priority);
    if (journal != null) {
      journal.append(event);
      return seq;
    }
    long enqueued = nanos(event);
    byte[] payload = event.payload().getBytes(StandardCharsets.UTF_8);
    bind(insert, event.eventId(), 1, ++rawSeq);
    insert.setNull(5, Types.BIGINT);
    insert.setString(6, event.name());
    insert.setBytes(7, payload);
    insert.setInt(8, event.priority().ordinal());
    insert.setLong(9, enqueued);
    insert.setInt(10, event.attempts());
    insert.setLong(11, enqueued);
    insert.setNull(12, Types.BIGINT);
    insert.setNull(13, Types.VARCHAR);
    insert.addBatch();
    bind(insert, event.eventId(), 0, ++rawSeq);
    insert.setLong(5, enqueued);
    insert.setNull(6, Types.VARCHAR);
    insert.setNull(7, Types.VARBINARY);
    insert.setNull(8, Types.INTEGER);
    insert.setNull(9, Types.BIGINT);
    insert.setNull(10, Types.INTEGER);
    insert.setNull(11, Types.BIGINT);
    insert.setNull(12, Types.BIGINT);
    insert.setNull(13, Types.VARCHAR);
    insert.addBatch();
    if (durability == Durability.SYNC || ++rawBatched == RAW_GROUP) {
      insert.executeBatch();
      raw.commit();
      rawBatched = 0;
    }
    return seq;
  }

  private void bind(PreparedStatement ps, String eventId, int kind, long seq)
      throws SQLException {
    ps.setString(1, journalName);
    ps.setString(2, eventId);
    ps.setInt(3, kind);
    ps.setLong(4, seq);
  }

  private static long nanos(QueuedEvent e) {
    return e.enqueuedAt().getEpochSecond() * 1_000_000_000L + e.enqueuedAt().getNano();
  }
}
