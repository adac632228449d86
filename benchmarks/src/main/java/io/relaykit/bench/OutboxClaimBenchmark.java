package io.relaykit.bench;

import io.relaykit.message.Message;
import io.relaykit.outbox.OutboxRecord;
import io.relaykit.storage.jdbc.JdbcOutboxStore;
import io.relaykit.storage.jdbc.JdbcStorage;
import io.relaykit.storage.jdbc.JdbcStorageConfig;
import java.io.IOException;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
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
 * One claim of a batch of 100 over an outbox that holds {@value #READY} ready keyless rows and
 * {@code backedOff} keyless rows rescheduled far into the future (a destination that is down),
 * then the release of what it leased, so every invocation claims the same rows. Claims cost
 * O(batch + ready rows) whatever the backlog's shape: the README's row compares 100 000 backed-off
 * rows with none (target at least 0.5×). {@code database} as in {@link OutboxRelayBenchmark}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class OutboxClaimBenchmark {

  static final int READY = 10;
  static final int BATCH = 100;
  static final Duration LEASE = Duration.ofMinutes(5);

  @Param({"H2", "POSTGRESQL"})
  OutboxRelayBenchmark.Database database;

  /** Keyless rows rescheduled far into the future, kept through the trial. */
  @Param({"0", "100000"})
  int backedOff;

  private Path dir;
  private JdbcStorage storage;
  private JdbcOutboxStore outbox;

  @Setup(Level.Trial)
  public void fill() throws IOException, SQLException {
    String url;
    if (database == OutboxRelayBenchmark.Database.H2) {
      dir = BenchDirs.create("h2-outbox-claim");
      url = "jdbc:h2:file:" + dir.toAbsolutePath().resolve("db");
    } else {
      String env = System.getenv("RELAYKIT_POSTGRES_URL");
      url = env == null || env.isBlank() ? OutboxRelayBenchmark.POSTGRES_DEFAULT_URL : env;
    }
    storage = JdbcStorage.open(JdbcStorageConfig.builder()
        .jdbcUrl(url)
        .tablePrefix("bench_" + UUID.randomUUID().toString().substring(0, 8) + "_")
        .build(), InstantSource.system());
    outbox = storage.outboxStore();
    String table = storage.tablePrefix() + "outbox";
    try (Connection tx = storage.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      if (backedOff > 0) {
        outbox.appendAll(tx, OutboxRelayBenchmark.DESTINATION, rows(backedOff, "later"));
        try (Statement s = tx.createStatement()) {
          // As reschedule leaves them: one attempt made, due in the year 2255.
          s.executeUpdate("UPDATE " + table + " SET attempts = 1, ready_at = 9000000000000000000");
        }
      }
      outbox.appendAll(tx, OutboxRelayBenchmark.DESTINATION, rows(READY, "now"));
      tx.commit();
    }
    if (database == OutboxRelayBenchmark.Database.POSTGRESQL) {
      try (Connection c = storage.dataSource().getConnection();
          Statement s = c.createStatement()) {
        s.execute("ANALYZE " + table);
      }
    }
  }

  private static List<Message> rows(int n, String prefix) {
    List<Message> rows = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      rows.add(Message.builder().type("order.placed").payload(prefix + "-" + i).build());
    }
    return rows;
  }

  @TearDown(Level.Trial)
  public void close() throws SQLException {
    if (database == OutboxRelayBenchmark.Database.POSTGRESQL) {
      try (Connection c = storage.dataSource().getConnection();
          Statement s = c.createStatement()) {
        for (String table : new String[] {"outbox", "outbox_head", "dead_letter", "idempotency",
            "version_guard", "journal", "schema_version"}) {
          s.execute("DROP TABLE IF EXISTS " + storage.tablePrefix() + table);
        }
      }
    }
    storage.close();
    BenchDirs.delete(dir);
  }

  /** Claims the ready rows and releases them again; returns how many were claimed. */
  @Benchmark
  public int claim() {
    List<OutboxRecord> got = outbox.claim("bench", BATCH, LEASE, Instant.now());
    if (got.size() != READY) {
      throw new IllegalStateException("claimed " + got.size() + " rows, expected " + READY);
    }
    List<Long> seqs = new ArrayList<>(got.size());
    for (OutboxRecord r : got) {
      seqs.add(r.sequence());
    }
    outbox.release("bench", seqs);
    return got.size();
  }
}
