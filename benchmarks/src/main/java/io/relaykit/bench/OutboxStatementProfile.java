package io.relaykit.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.relaykit.message.Message;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.outbox.OutboxStore;
import io.relaykit.storage.jdbc.Dialect;
import io.relaykit.storage.jdbc.JdbcOutboxStore;
import io.relaykit.storage.jdbc.JdbcStorage;
import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.LockSupport;
import javax.sql.DataSource;

/**
 * Where a relay's time goes, statement by statement: drains a backlog of 10 000 unkeyed rows a few
 * times through a data source that counts and times every JDBC execute, commit and connection
 * checkout, and through an {@link OutboxStore} that times each store call, then prints the last
 * round's totals, largest first (calls, milliseconds, microseconds per call, statement). Not a
 * benchmark: the proxies cost time of their own; use it for counts and proportions.
 *
 * <pre>
 * java -cp benchmarks/target/benchmarks.jar io.relaykit.bench.OutboxStatementProfile pg runonce 3
 * java -cp benchmarks/target/benchmarks.jar io.relaykit.bench.OutboxStatementProfile h2 start 2
 * </pre>
 * {@code pg} uses {@code RELAYKIT_POSTGRES_URL} (default {@value
 * PostgresSkipLockedBenchmark#DEFAULT_URL}) and drops its tables at the end; {@code h2} a file
 * database under {@code benchmarks/target/bench-tmp}. {@code runonce}: the backlog in one
 * transaction, {@code runOnce()} at batch 100 until a claim is empty (as {@link
 * PostgresSkipLockedBenchmark}); {@code start}: one transaction per row, the relay's defaults and
 * {@code start()} (as {@link GruelboxOutboxBenchmark}).
 */
public final class OutboxStatementProfile {
  private static final int BACKLOG = 10_000;
  private final Map<String, long[]> totals = new ConcurrentHashMap<>();

  private OutboxStatementProfile() {}

  /**
   * Runs the profile.
   *
   * @param args database ({@code pg} or {@code h2}), mode ({@code runonce} or {@code start}),
   *     rounds (at least 1)
   * @throws Exception whatever the database or the relay throws
   */
  public static void main(String[] args) throws Exception {
    if (args.length != 3) {
      throw new IllegalArgumentException("usage: pg|h2 runonce|start rounds");
    }
    new OutboxStatementProfile().run(args[0], args[1].equals("start"), Integer.parseInt(args[2]));
  }

  private void record(String what, long nanos) {
    long[] t = totals.computeIfAbsent(what, k -> new long[2]);
    synchronized (t) {
      t[0]++;
      t[1] += nanos;
    }
  }

  private static String label(String sql) {
    String s = sql.replaceAll("\\s+", " ").replaceAll("bench_[0-9a-f]{8}_", "");
    return s.length() > 72 ? s.substring(0, 72) : s;
  }

  private <T> T timed(T target, Class<T> type, String sql) {
    Object proxy = Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type},
        (p, m, a) -> {
          String name = m.getName();
          long started = System.nanoTime();
          try {
            Object r = m.invoke(target, a);
            if (r instanceof PreparedStatement ps && name.startsWith("prepare")) {
              return timed(ps, PreparedStatement.class, (String) a[0]);
            }
            if (r instanceof Statement st && name.equals("createStatement")) {
              return timed(st, Statement.class, null);
            }
            return r;
          } catch (InvocationTargetException e) {
            throw e.getCause();
          } finally {
            long took = System.nanoTime() - started;
            if (name.startsWith("execute")) {
              record(label(sql != null ? sql : String.valueOf(a == null ? "" : a[0])) + " ["
                  + name + "]", took);
            } else if (type == Connection.class && (name.equals("commit")
                || name.equals("rollback"))) {
              record("connection." + name, took);
            }
          }
        });
    return type.cast(proxy);
  }

  private void run(String db, boolean started, int rounds) throws SQLException, IOException {
    String prefix = "bench_" + UUID.randomUUID().toString().substring(0, 8) + "_";
    HikariConfig hc = new HikariConfig();
    Dialect dialect;
    Path dir = null;
    if (db.equals("pg")) {
      String env = System.getenv("RELAYKIT_POSTGRES_URL");
      hc.setJdbcUrl(env == null || env.isBlank() ? PostgresSkipLockedBenchmark.DEFAULT_URL : env);
      dialect = Dialect.POSTGRESQL;
    } else {
      dir = BenchDirs.create("outbox-profile");
      hc.setJdbcUrl("jdbc:h2:file:" + dir.toAbsolutePath().resolve("outbox") + ";WRITE_DELAY=0");
      dialect = Dialect.H2;
    }
    try (HikariDataSource pool = new HikariDataSource(hc)) {
      DataSource counted = (DataSource) Proxy.newProxyInstance(
          DataSource.class.getClassLoader(), new Class<?>[] {DataSource.class}, (p, m, a) -> {
            try {
              Object r = m.invoke(pool, a);
              return m.getName().equals("getConnection")
                  ? timed((Connection) r, Connection.class, null) : r;
            } catch (InvocationTargetException e) {
              throw e.getCause();
            }
          });
      JdbcStorage storage = JdbcStorage.open(counted, dialect, prefix, Duration.ofDays(7),
          InstantSource.system());
      try {
        drain(storage, pool, started, rounds);
      } finally {
        if (dialect == Dialect.POSTGRESQL) {
          dropTables(pool, prefix);
        }
        storage.close();
      }
    } finally {
      if (dir != null) {
        BenchDirs.delete(dir);
      }
    }
    List<Map.Entry<String, long[]>> rows = new ArrayList<>(totals.entrySet());
    rows.sort((x, y) -> Long.compare(y.getValue()[1], x.getValue()[1]));
    for (Map.Entry<String, long[]> e : rows) {
      long[] t = e.getValue();
      System.out.printf("%8d calls %10.1f ms %9.1f us/call  %s%n", t[0], t[1] / 1e6,
          t[1] / 1e3 / t[0], e.getKey());
    }
  }

  private void drain(JdbcStorage storage, DataSource plain, boolean started, int rounds)
      throws SQLException {
    JdbcOutboxStore outbox = storage.outboxStore();
    OutboxStore store = (OutboxStore) Proxy.newProxyInstance(OutboxStore.class.getClassLoader(),
        new Class<?>[] {OutboxStore.class}, (p, m, a) -> {
          long t0 = System.nanoTime();
          try {
            return m.invoke(outbox, a);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          } finally {
            record("OutboxStore." + m.getName(), System.nanoTime() - t0);
          }
        });
    CountingPublisher publisher = new CountingPublisher();
    for (int round = 1; round <= rounds; round++) {
      append(outbox, plain, started);
      totals.clear(); // the last round's figures are printed
      publisher.reset();
      long t0 = System.nanoTime();
      if (started) {
        OutboxRelay relay = OutboxRelay.builder(store, publisher, storage.deadLetterStore())
            .build();
        relay.start();
        while (publisher.count() < BACKLOG) {
          LockSupport.parkNanos(50_000);
        }
        relay.close();
      } else {
        try (OutboxRelay relay = OutboxRelay.builder(store, publisher,
            storage.deadLetterStore()).batchSize(100).build()) {
          while (relay.runOnce().claimed() > 0) {
            // claim, publish, await the confirms, mark sent
          }
        }
      }
      double secs = (System.nanoTime() - t0) / 1e9;
      System.out.printf("round %d: %d rows in %.2f s, %.0f rows/s%n", round, publisher.count(),
          secs, publisher.count() / secs);
      try (Connection c = plain.getConnection(); Statement s = c.createStatement()) {
        s.executeUpdate("DELETE FROM " + storage.tablePrefix() + "outbox");
      }
    }
  }

  private static void append(JdbcOutboxStore outbox, DataSource ds, boolean oneTxEach)
      throws SQLException {
    List<Message> all = new ArrayList<>(BACKLOG);
    for (int i = 0; i < BACKLOG; i++) {
      all.add(Message.builder().type("order.placed").payload(JournalBenchmark.PAYLOAD).build());
    }
    int step = oneTxEach ? 1 : BACKLOG;
    for (int i = 0; i < BACKLOG; i += step) {
      try (Connection tx = ds.getConnection()) {
        tx.setAutoCommit(false);
        outbox.appendAll(tx, "orders", all.subList(i, i + step));
        tx.commit();
      }
    }
  }

  private static void dropTables(DataSource ds, String prefix) throws SQLException {
    try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
      List<String> tables = new ArrayList<>();
      try (ResultSet rs = s.executeQuery("SELECT table_name FROM information_schema.tables"
          + " WHERE table_schema = current_schema() AND starts_with(table_name, '" + prefix
          + "')")) {
        while (rs.next()) {
          tables.add(rs.getString(1));
        }
      }
      for (String t : tables) {
        s.execute("DROP TABLE IF EXISTS " + t + " CASCADE");
      }
    }
  }
}
