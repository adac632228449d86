package io.relaykit.bench;

import com.gruelbox.transactionoutbox.Dialect;
import com.gruelbox.transactionoutbox.Instantiator;
import com.gruelbox.transactionoutbox.Persistor;
import com.gruelbox.transactionoutbox.Submitter;
import com.gruelbox.transactionoutbox.ThreadLocalContextTransactionManager;
import com.gruelbox.transactionoutbox.TransactionManager;
import com.gruelbox.transactionoutbox.TransactionOutbox;
import com.gruelbox.transactionoutbox.TransactionOutboxEntry;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.relaykit.message.Message;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.storage.jdbc.JdbcStorageConfig;
import io.relaykit.storage.jdbc.JdbcOutboxStore;
import io.relaykit.storage.jdbc.JdbcStorage;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.InstantSource;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
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
 * Issue 15 (a): draining a backlog of {@value #BACKLOG} rows, each appended in its own
 * transaction, on an H2 file database ({@code WRITE_DELAY=0}, the same effective URL settings and
 * HikariCP pool size on both sides, each side its own file), relaykit against gruelbox
 * transaction-outbox 4.2.268. Both publish to a counter; the appends run in the untimed setup.
 * <ul>
 *   <li>{@code RELAYKIT}: {@code OutboxRelay.builder(...).build()} with its defaults (nothing
 *       set), {@code start()}, timed until the {@link CountingPublisher} has seen every row and
 *       {@code close()} has let the cycle in progress finish (so the last batch is marked sent);
 *       the invocation's teardown checks that no unsent row is left.
 *   <li>{@code GRUELBOX}: {@code TransactionOutbox.builder()} over {@code
 *       TransactionManager.fromDataSource}, {@code Persistor.forDialect(Dialect.H2)}, an {@code
 *       Instantiator} returning the counting {@link Sink}; each append is {@code
 *       inTransaction(() -> outbox.schedule(Sink.class).publish(id, payload))}. During the appends
 *       the submitter holds (drops) the post-commit submission, so the rows stay as a backlog;
 *       timed: {@code flush()} in a loop until it returns false, with a submitter that runs each
 *       entry on the flushing thread (gruelbox's own processing: lock, invoke, mark processed,
 *       one transaction per entry). Its other defaults are kept except {@code attemptFrequency}
 *       ({@value #GRUELBOX_ATTEMPT_MILLIS} ms instead of minutes: a held entry becomes due that
 *       long after its append; gruelbox refuses a next attempt time that is not in the future),
 *       and the untimed setup waits until the newest entry is due, so the timed flushes see the
 *       whole backlog.
 * </ul>
 * The ratio is RELAYKIT / GRUELBOX in the same run (target 2.8×).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class GruelboxOutboxBenchmark {

  static final int BACKLOG = 10_000;
  static final String DESTINATION = "orders";
  static final String PAYLOAD = JournalBenchmark.PAYLOAD;
  private static final long DRAIN_TIMEOUT_NANOS = TimeUnit.MINUTES.toNanos(5);
  static final long GRUELBOX_ATTEMPT_MILLIS = 1_000;

  /** Which outbox drains. */
  public enum Impl { RELAYKIT, GRUELBOX }

  @Param({"RELAYKIT", "GRUELBOX"})
  Impl impl;

  private Path dir;
  // relaykit
  private JdbcStorage storage;
  private JdbcOutboxStore outbox;
  private final CountingPublisher publisher = new CountingPublisher();
  // gruelbox
  private HikariDataSource gruelboxPool;
  private ThreadLocalContextTransactionManager transactions;
  private TransactionOutbox gruelbox;
  private final HeldSubmitter submitter = new HeldSubmitter();
  private final Sink sink = new Sink();

  /**
   * The gruelbox side's target: counts each call. Public and not final, so gruelbox can proxy it
   * for {@code schedule}.
   */
  public static class Sink {
    final AtomicLong published = new AtomicLong();

    /** Records one delivered message. */
    public void publish(String id, String payload) {
      published.incrementAndGet();
    }
  }

  /** Drops submissions while held (the entry stays due in the table), else runs them inline. */
  static final class HeldSubmitter implements Submitter {
    volatile boolean hold = true;
    private final Submitter inline = Submitter.withExecutor(Runnable::run);

    @Override
    public void submit(TransactionOutboxEntry entry, Consumer<TransactionOutboxEntry> processor) {
      if (!hold) {
        inline.submit(entry, processor);
      }
    }
  }

  @Setup(Level.Trial)
  public void open() throws IOException {
    dir = BenchDirs.create("gruelbox-outbox");
    JdbcStorageConfig config = JdbcStorageConfig.builder()
        .jdbcUrl("jdbc:h2:file:" + dir.toAbsolutePath().resolve(impl.name().toLowerCase()))
        .build();
    if (impl == Impl.RELAYKIT) {
      storage = JdbcStorage.open(config, InstantSource.system());
      outbox = storage.outboxStore();
      return;
    }
    HikariConfig hc = new HikariConfig();
    hc.setJdbcUrl(config.effectiveJdbcUrl());
    hc.setMaximumPoolSize(config.poolSize());
    hc.setPoolName("gruelbox-bench");
    gruelboxPool = new HikariDataSource(hc);
    transactions = TransactionManager.fromDataSource(gruelboxPool);
    gruelbox = TransactionOutbox.builder()
        .transactionManager(transactions)
        .persistor(Persistor.forDialect(Dialect.H2))
        .instantiator(Instantiator.using(type -> sink))
        .submitter(submitter)
        .attemptFrequency(Duration.ofMillis(GRUELBOX_ATTEMPT_MILLIS))
        .build();
  }

  @TearDown(Level.Trial)
  public void close() {
    if (storage != null) {
      storage.close();
    }
    if (gruelboxPool != null) {
      gruelboxPool.close();
    }
    BenchDirs.delete(dir);
  }

  /** Appends the backlog, one transaction per row (not timed). */
  @Setup(Level.Invocation)
  public void fillBacklog() throws SQLException {
    if (impl == Impl.RELAYKIT) {
      publisher.reset();
      for (int i = 0; i < BACKLOG; i++) {
        try (Connection tx = storage.dataSource().getConnection()) {
          tx.setAutoCommit(false);
          outbox.appendAll(tx, DESTINATION, List.of(Message.builder().type("order.placed")
              .payload(PAYLOAD.getBytes(StandardCharsets.UTF_8)).build()));
          tx.commit();
        }
      }
    } else {
      sink.published.set(0);
      submitter.hold = true;
      for (int i = 0; i < BACKLOG; i++) {
        String id = "m-" + i;
        transactions.inTransaction(() -> gruelbox.schedule(Sink.class).publish(id, PAYLOAD));
      }
      // The newest entry is due GRUELBOX_ATTEMPT_MILLIS after its commit; wait twice that.
      long due = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(2 * GRUELBOX_ATTEMPT_MILLIS);
      while (System.nanoTime() - due < 0) {
        LockSupport.parkNanos(due - System.nanoTime());
      }
      submitter.hold = false;
    }
  }

  /** Checks that everything was drained, then empties the table (not timed). */
  @TearDown(Level.Invocation)
  public void checkAndClear() throws SQLException {
    if (impl == Impl.RELAYKIT) {
      try (Connection c = storage.dataSource().getConnection();
          Statement s = c.createStatement()) {
        try (ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM " + storage.tablePrefix()
            + "outbox WHERE state = 0")) {
          rs.next();
          if (rs.getLong(1) != 0) {
            throw new IllegalStateException(rs.getLong(1) + " rows left unsent");
          }
        }
        s.executeUpdate("DELETE FROM " + storage.tablePrefix() + "outbox");
      }
    } else {
      try (Connection c = gruelboxPool.getConnection();
          Statement s = c.createStatement()) {
        s.executeUpdate("DELETE FROM TXNO_OUTBOX");
      }
    }
  }

  @Benchmark
  @OperationsPerInvocation(BACKLOG)
  public long drain() {
    long sent;
    if (impl == Impl.RELAYKIT) {
      OutboxRelay relay = OutboxRelay.builder(outbox, publisher, storage.deadLetterStore()).build();
      long deadline = System.nanoTime() + DRAIN_TIMEOUT_NANOS;
      relay.start();
      try {
        while (publisher.count() < BACKLOG) {
          if (System.nanoTime() - deadline > 0) {
            throw new IllegalStateException("the relay published " + publisher.count() + " of "
                + BACKLOG + " in 5 minutes");
          }
          LockSupport.parkNanos(50_000);
        }
      } finally {
        relay.close();
      }
      sent = publisher.count();
    } else {
      while (gruelbox.flush()) {
        // each flush takes up to flushBatchSize due entries and processes them inline
      }
      sent = sink.published.get();
    }
    if (sent != BACKLOG) {
      throw new IllegalStateException(impl + " published " + sent + " of " + BACKLOG);
    }
    return sent;
  }
}
