package io.relaykit.bench;

import io.relaykit.inprocess.InProcessTransport;
import io.relaykit.message.Message;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.storage.jdbc.JdbcStorageConfig;
import io.relaykit.storage.jdbc.JdbcOutboxStore;
import io.relaykit.storage.jdbc.JdbcStorage;
import java.io.IOException;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * The outbox relay draining a backlog of {@value #BACKLOG} rows into the in-process transport,
 * which confirms at once: claim with lease, publish, await confirms, mark sent, until nothing is
 * left. Reported as messages per second; the README compares it with a fixed goal of 10 000
 * messages/s (there is no library baseline in the JVM to run beside it). {@code database} H2: an
 * H2 file database with the crash-safe {@code WRITE_DELAY=0}; POSTGRESQL: the server at {@code
 * RELAYKIT_POSTGRES_URL} (default {@value #POSTGRES_DEFAULT_URL}), fresh tables with a random
 * prefix per trial, dropped at the end. {@code keys} 0: keyless messages; 10, 1 000: messages
 * over that many keys, where the per-key order rule lets a claim take only each key's oldest
 * unsent row. {@code parkedRows} above 0: a key whose head is not ready (rescheduled far out) with
 * that many unsent rows behind it sits in the table for the whole trial, so every claim meets it
 * (issue 15 item 10: claims must cost O(batch) whatever the backlog's shape).
 *
 * <p>The backlog is written before each invocation (one transaction, batches of 1 000) and is not
 * measured.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class OutboxRelayBenchmark {

  static final int BACKLOG = 10_000;
  static final String DESTINATION = "orders";
  static final String POSTGRES_DEFAULT_URL =
      "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres";

  /** Where the outbox lives; both dialects share the relay and the transport. */
  public enum Database { H2, POSTGRESQL }

  @Param({"H2", "POSTGRESQL"})
  Database database;

  /** Rows per claim, fixed; 0 for the relay's defaults (adaptive batch size, key runs). */
  @Param({"500"})
  int batchSize;

  /** Keys over the backlog; 0 for keyless. The quick run keeps 0; add {@code -p keys=0,100}. */
  @Param({"0"})
  int keys;

  /** Unsent rows of one parked key kept in the table through the trial; 0 for none. */
  @Param({"0"})
  int parkedRows;

  private Path dir;
  private JdbcStorage storage;
  private JdbcOutboxStore outbox;
  private InProcessTransport transport;
  private List<Message> backlog;

  @Setup(Level.Trial)
  public void openDatabase() throws IOException {
    String url;
    if (database == Database.H2) {
      dir = BenchDirs.create("h2-outbox");
      url = "jdbc:h2:file:" + dir.toAbsolutePath().resolve("db");
    } else {
      String env = System.getenv("RELAYKIT_POSTGRES_URL");
      url = env == null || env.isBlank() ? POSTGRES_DEFAULT_URL : env;
    }
    try {
      storage = JdbcStorage.open(JdbcStorageConfig.builder()
          .jdbcUrl(url)
          .tablePrefix("bench_" + UUID.randomUUID().toString().substring(0, 8) + "_")
          .build(), InstantSource.system());
    } catch (RuntimeException e) {
      throw new IllegalStateException(database + " is not reachable at " + url + " (" + e
          + "); start it with ./relaykit test's services, or set RELAYKIT_POSTGRES_URL", e);
    }
    outbox = storage.outboxStore();
    if (parkedRows > 0) {
      park();
    }
  }

  /** Appends the parked key's rows and makes its head not ready for centuries. */
  private void park() throws IOException {
    List<Message> rows = new ArrayList<>(parkedRows);
    for (int i = 0; i < parkedRows; i++) {
      rows.add(Message.builder().type("order.placed").key("parked")
          .payload(JournalBenchmark.PAYLOAD).build());
    }
    try (Connection tx = storage.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      outbox.appendAll(tx, DESTINATION, rows);
      try (Statement s = tx.createStatement()) {
        // Ready in the year 2255: ready_at is epoch nanoseconds.
        s.executeUpdate("UPDATE " + storage.tablePrefix() + "outbox SET ready_at ="
            + " 9000000000000000000 WHERE seq = (SELECT MIN(seq) FROM "
            + storage.tablePrefix() + "outbox WHERE msg_key = 'parked')");
      }
      tx.commit();
    } catch (SQLException e) {
      throw new IOException("could not park a key", e);
    }
  }

  @TearDown(Level.Trial)
  public void closeDatabase() throws SQLException {
    if (database == Database.POSTGRESQL) {
      try (Connection c = storage.dataSource().getConnection();
          Statement s = c.createStatement()) {
        for (String table : new String[] {"outbox", "outbox_head", "dead_letter", "idempotency",
            "version_guard", "journal", "schema_version"}) {
          s.execute("DROP TABLE IF EXISTS " + storage.tablePrefix() + table);
        }
        // Write the trial's dirty pages out now: PostgreSQL would otherwise spread them over the
        // next minutes, onto the disk the next benchmark (the RabbitMQ publisher's quorum queue
        // fsyncs) is measured on, charging whichever of its trials runs first.
        try {
          s.execute("CHECKPOINT");
        } catch (SQLException e) {
          System.err.println("[bench] CHECKPOINT refused (" + e.getMessage() + "); the next"
              + " benchmark may share the disk with PostgreSQL's background writes");
        }
      }
    }
    storage.close();
    BenchDirs.delete(dir);
  }

  @Setup(Level.Invocation)
  public void fillBacklog() throws SQLException {
    backlog = new ArrayList<>(BACKLOG);
    for (int i = 0; i < BACKLOG; i++) {
      Message.Builder m = Message.builder().type("order.placed").payload(JournalBenchmark.PAYLOAD);
      if (keys > 0) {
        m.key("order-" + (i % keys));
      }
      backlog.add(m.build());
    }
    try (Connection tx = storage.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      outbox.appendAll(tx, DESTINATION, backlog);
      tx.commit();
    }
    // A new transport per invocation: with no subscriber it holds what it is given.
    transport = InProcessTransport.create();
  }

  @TearDown(Level.Invocation)
  public void purge() {
    transport.close();
    outbox.purgeSent(java.time.Instant.now().plusSeconds(1));
  }

  @Benchmark
  @OperationsPerInvocation(BACKLOG)
  public int drain() {
    OutboxRelay.Builder b = OutboxRelay.builder(outbox, transport, storage.deadLetterStore());
    if (batchSize > 0) {
      b.batchSize(batchSize);
    }
    OutboxRelay relay = b.build();
    int sent = 0;
    try {
      while (true) {
        OutboxRelay.Batch batch = relay.runOnce();
        if (batch.claimed() == 0) {
          break;
        }
        sent += batch.sent();
      }
    } finally {
      relay.close();
    }
    if (sent != BACKLOG) {
      throw new IllegalStateException("the relay sent " + sent + " of " + BACKLOG + " messages");
    }
    return sent;
  }
}
