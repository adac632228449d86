package io.relaykit.bench;

import io.relaykit.message.Message;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.storage.jdbc.JdbcStorageConfig;
import io.relaykit.storage.jdbc.JdbcOutboxStore;
import io.relaykit.storage.jdbc.JdbcStorage;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
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
 * Issue 15 (c): relaykit's relay draining an unkeyed backlog of {@value #BACKLOG} rows on
 * PostgreSQL against the floor for this database, a minimal hand-written loop on the same table
 * and the same rows. Both publish to one {@link CountingPublisher} (confirms at once).
 * <ul>
 *   <li>{@code RELAYKIT}: {@code OutboxRelay.runOnce()} until a claim comes back empty, batch
 *       {@code batchSize} (claim with lease, decode, publish, await confirms, mark sent).
 *   <li>{@code HAND_WRITTEN}: per batch, one autocommit {@code UPDATE ... SET lease_owner,
 *       lease_until WHERE seq IN (SELECT seq ... WHERE state = 0 ... ORDER BY seq LIMIT n FOR
 *       UPDATE SKIP LOCKED) RETURNING seq, message_id, headers, payload}, a publish of each row
 *       (id and payload; headers are read but not decoded), then one {@code UPDATE ... SET state =
 *       1, sent_at WHERE seq = ANY(?) AND lease_owner = ?}. No retries, dead letters, key order
 *       or metrics: that is what makes it a floor.
 * </ul>
 * The table is relaykit's own (created by {@link JdbcStorage} with a random {@code bench_<id>_}
 * prefix per trial, all of its tables dropped at the end), so both sides see the same indexes.
 * The backlog is written before each invocation (one transaction, relaykit's {@code appendAll})
 * and deleted after it; neither is measured. PostgreSQL at {@code RELAYKIT_POSTGRES_URL} (default
 * {@value #DEFAULT_URL}); if it is down the trial fails naming it.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class PostgresSkipLockedBenchmark {

  static final int BACKLOG = 10_000;
  static final String DESTINATION = "orders";
  static final String DEFAULT_URL = "jdbc:postgresql://127.0.0.1:5432/test?user=postgres";
  private static final String OWNER = "hand-written";

  /** Which drain runs. */
  public enum Impl { RELAYKIT, HAND_WRITTEN }

  @Param({"RELAYKIT", "HAND_WRITTEN"})
  Impl impl;

  /** Rows per claim for both sides; 100 is the relay's default. */
  @Param({"100"})
  int batchSize;

  private JdbcStorage storage;
  private JdbcOutboxStore outbox;
  private String table;
  private final CountingPublisher publisher = new CountingPublisher();

  @Setup(Level.Trial)
  public void open() {
    String env = System.getenv("RELAYKIT_POSTGRES_URL");
    String url = env == null || env.isBlank() ? DEFAULT_URL : env;
    try {
      storage = JdbcStorage.open(JdbcStorageConfig.builder()
          .jdbcUrl(url)
          .tablePrefix("bench_" + UUID.randomUUID().toString().substring(0, 8) + "_")
          .build(), InstantSource.system());
    } catch (RuntimeException e) {
      throw new IllegalStateException("PostgreSQL is not reachable at " + url + " (" + e
          + "); start it with ./relaykit test's services, or set RELAYKIT_POSTGRES_URL", e);
    }
    outbox = storage.outboxStore();
    table = storage.tablePrefix() + "outbox";
  }

  @TearDown(Level.Trial)
  public void close() throws SQLException {
    try (Connection c = storage.dataSource().getConnection();
        Statement s = c.createStatement()) {
      List<String> tables = new ArrayList<>();
      try (ResultSet rs = s.executeQuery("SELECT table_name FROM information_schema.tables"
          + " WHERE table_schema = current_schema() AND starts_with(table_name, '"
          + storage.tablePrefix() + "')")) {
        while (rs.next()) {
          tables.add(rs.getString(1));
        }
      }
      for (String t : tables) {
        s.execute("DROP TABLE IF EXISTS " + t + " CASCADE");
      }
    } finally {
      storage.close();
    }
  }

  @Setup(Level.Invocation)
  public void fillBacklog() throws SQLException {
    List<Message> backlog = new ArrayList<>(BACKLOG);
    for (int i = 0; i < BACKLOG; i++) {
      backlog.add(Message.builder().type("order.placed").payload(JournalBenchmark.PAYLOAD).build());
    }
    try (Connection tx = storage.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      outbox.appendAll(tx, DESTINATION, backlog);
      tx.commit();
    }
    publisher.reset();
  }

  @TearDown(Level.Invocation)
  public void clear() throws SQLException {
    try (Connection c = storage.dataSource().getConnection();
        Statement s = c.createStatement()) {
      s.executeUpdate("DELETE FROM " + table);
    }
  }

  @Benchmark
  @OperationsPerInvocation(BACKLOG)
  public long drain() throws SQLException {
    if (impl == Impl.RELAYKIT) {
      drainWithRelay();
    } else {
      drainByHand();
    }
    long sent = publisher.count();
    if (sent != BACKLOG) {
      throw new IllegalStateException(impl + " published " + sent + " of " + BACKLOG);
    }
    return sent;
  }

  private void drainWithRelay() {
    try (OutboxRelay relay = OutboxRelay.builder(outbox, publisher, storage.deadLetterStore())
        .batchSize(batchSize)
        .build()) {
      while (relay.runOnce().claimed() > 0) {
        // runOnce claims, publishes, awaits the confirms and marks sent
      }
    }
  }

  private void drainByHand() throws SQLException {
    String claim = "UPDATE " + table + " SET lease_owner = ?, lease_until = ?,"
        + " attempts = attempts + 1 WHERE seq IN (SELECT seq FROM " + table
        + " WHERE state = 0 AND destination = ? AND ready_at <= ?"
        + " AND (lease_until IS NULL OR lease_until < ?)"
        + " ORDER BY seq LIMIT ? FOR UPDATE SKIP LOCKED)"
        + " RETURNING seq, message_id, headers, payload";
    String mark = "UPDATE " + table + " SET state = 1, sent_at = ?, lease_owner = NULL,"
        + " lease_until = NULL WHERE seq = ANY(?) AND lease_owner = ?";
    try (Connection c = storage.dataSource().getConnection();
        PreparedStatement claimPs = c.prepareStatement(claim);
        PreparedStatement markPs = c.prepareStatement(mark)) {
      c.setAutoCommit(true);
      while (true) {
        long now = System.currentTimeMillis() * 1_000_000L;
        claimPs.setString(1, OWNER);
        claimPs.setLong(2, now + 30_000_000_000L);
        claimPs.setString(3, DESTINATION);
        claimPs.setLong(4, now);
        claimPs.setLong(5, now);
        claimPs.setInt(6, batchSize);
        List<Long> sent = new ArrayList<>(batchSize);
        try (ResultSet rs = claimPs.executeQuery()) {
          while (rs.next()) {
            long seq = rs.getLong(1);
            String id = rs.getString(2);
            rs.getString(3);
            byte[] payload = rs.getBytes(4);
            publisher.publish(DESTINATION, Message.builder().id(id).type("order.placed")
                .payload(payload).build()).join();
            sent.add(seq);
          }
        }
        if (sent.isEmpty()) {
          return;
        }
        Array seqs = c.createArrayOf("bigint", sent.toArray());
        markPs.setLong(1, System.currentTimeMillis() * 1_000_000L);
        markPs.setArray(2, seqs);
        markPs.setString(3, OWNER);
        markPs.executeUpdate();
        seqs.free();
      }
    }
  }
}
