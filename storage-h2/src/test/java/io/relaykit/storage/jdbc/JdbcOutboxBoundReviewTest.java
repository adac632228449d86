package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.message.Message;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.outbox.OutboxBound;
import io.relaykit.tck.FakeClock;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Logger;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The REFUSE bound's recount and request-id appends under the fault classes: an interrupt while
 * another append's recount holds the database, and a request-id twin at the bound. On H2 (memory,
 * file) and PostgreSQL.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class JdbcOutboxBoundReviewTest {

  private final FakeClock clock = new FakeClock();
  private final List<TestDatabase> databases = new ArrayList<>();

  @BeforeAll
  void open(@TempDir Path tempDir) {
    for (TestDatabase.Kind kind : TestDatabase.Kind.values()) {
      databases.add(TestDatabase.open(kind, tempDir));
    }
  }

  @AfterAll
  void close() {
    databases.forEach(TestDatabase::close);
  }

  Stream<TestDatabase> databases() {
    return databases.stream();
  }

  private static Message message(String key, String body) {
    return Message.builder().type("order.event").key(key).payload(body).build();
  }

  /** The test database's pool, whose getConnection holds one chosen thread until opened. */
  private static final class GatedDataSource implements DataSource {
    final DataSource pool;
    volatile Thread held;
    final CountDownLatch entered = new CountDownLatch(1);
    final CountDownLatch gate = new CountDownLatch(1);

    GatedDataSource(DataSource pool) {
      this.pool = pool;
    }

    @Override
    public Connection getConnection() throws SQLException {
      if (Thread.currentThread() == held) {
        entered.countDown();
        try {
          if (!gate.await(30, TimeUnit.SECONDS)) {
            throw new SQLException("gate never opened");
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new SQLException("interrupted", e);
        }
      }
      return pool.getConnection();
    }

    @Override
    public Connection getConnection(String user, String password) throws SQLException {
      return getConnection();
    }

    @Override
    public PrintWriter getLogWriter() throws SQLException {
      return pool.getLogWriter();
    }

    @Override
    public void setLogWriter(PrintWriter out) throws SQLException {
      pool.setLogWriter(out);
    }

    @Override
    public void setLoginTimeout(int seconds) throws SQLException {
      pool.setLoginTimeout(seconds);
    }

    @Override
    public int getLoginTimeout() throws SQLException {
      return pool.getLoginTimeout();
    }

    @Override
    public Logger getParentLogger() {
      return Logger.getGlobal();
    }

    @Override
    public <T> T unwrap(Class<T> iface) throws SQLException {
      return pool.unwrap(iface);
    }

    @Override
    public boolean isWrapperFor(Class<?> iface) throws SQLException {
      return pool.isWrapperFor(iface);
    }
  }

  private static long appendOn(DataSource pool, JdbcOutboxStore outbox, String body)
      throws SQLException {
    try (Connection c = pool.getConnection()) {
      c.setAutoCommit(true);
      return outbox.append(c, "orders", message(null, body));
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("an append waiting for another append's recount (its database call hangs) answers"
      + " an interrupt at once: it fails, writes nothing and keeps the interrupt; the other"
      + " append then goes through")
  void interruptWhileWaitingForARecount(TestDatabase db) throws Exception {
    String prefix = TestDatabase.newPrefix();
    GatedDataSource gated = new GatedDataSource(db.dataSource());
    JdbcStorage storage = JdbcStorage.open(gated, db.dialect(), prefix, Duration.ofDays(7), clock,
        DatabaseClock.of(clock), LifecycleListener.noop(), true);
    JdbcOutboxStore outbox = storage.outboxStore(OutboxBound.refuseAbove(10));
    CompletableFuture<Long> first = new CompletableFuture<>();
    Thread a = new Thread(() -> {
      try {
        first.complete(appendOn(db.dataSource(), outbox, "a"));
      } catch (Throwable t) {
        first.completeExceptionally(t);
      }
    }, "append-a");
    gated.held = a;
    a.start();
    assertThat(gated.entered.await(10, TimeUnit.SECONDS)).as("a's recount started").isTrue();

    AtomicReference<Throwable> failure = new AtomicReference<>();
    AtomicBoolean keptInterrupt = new AtomicBoolean();
    CountDownLatch done = new CountDownLatch(1);
    Thread b = new Thread(() -> {
      try {
        appendOn(db.dataSource(), outbox, "b");
      } catch (Throwable t) {
        failure.set(t);
        keptInterrupt.set(Thread.currentThread().isInterrupted());
      } finally {
        done.countDown();
      }
    }, "append-b");
    b.start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (b.getState() != Thread.State.BLOCKED && b.getState() != Thread.State.WAITING
        && System.nanoTime() < deadline) {
      Thread.onSpinWait();
    }
    assertThat(b.getState()).as("b waits for a's recount")
        .isIn(Thread.State.BLOCKED, Thread.State.WAITING);
    b.interrupt();
    boolean answered = done.await(5, TimeUnit.SECONDS);
    gated.gate.countDown();
    assertThat(answered).as("b answered the interrupt while a's recount still hung").isTrue();
    assertThat(failure.get()).isInstanceOf(SQLException.class)
        .hasMessageContaining("interrupted");
    assertThat(keptInterrupt).isTrue();
    assertThat(first.get(10, TimeUnit.SECONDS)).isPositive();
    assertThat(db.count("SELECT COUNT(*) FROM " + prefix + "outbox")).isEqualTo(1);
  }

  /** Whether a session of {@code db} waits for a row lock. */
  private static boolean someoneWaitsForALock(TestDatabase db, String prefix) {
    if (db.dialect() == Dialect.POSTGRESQL) {
      return db.count("SELECT COUNT(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
          + " AND query LIKE '%" + prefix + "%'") > 0;
    }
    // H2 waits for a unique-index twin inside the insert, without a BLOCKER_ID.
    return db.count("SELECT COUNT(*) FROM INFORMATION_SCHEMA.SESSIONS"
        + " WHERE SESSION_ID <> SESSION_ID() AND (BLOCKER_ID IS NOT NULL"
        + " OR UPPER(EXECUTING_STATEMENT) LIKE 'INSERT INTO " + prefix.toUpperCase() + "OUTBOX%')")
        > 0;
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("REFUSE bound 2, one row and an open append with request id X: a twin with X (a"
      + " retry whose first try is still open) is not refused as over the bound; it waits for"
      + " the first and answers its row")
  void requestIdTwinAtTheBoundAnswersTheFirstRow(TestDatabase db) throws Exception {
    String prefix = TestDatabase.newPrefix();
    JdbcStorage storage = db.storage(prefix, Duration.ofDays(7), clock);
    JdbcOutboxStore outbox = storage.outboxStore(OutboxBound.refuseAbove(2));
    appendOn(db.dataSource(), outbox, "existing");
    Message m = message(null, "x");
    try (Connection first = db.dataSource().getConnection()) {
      first.setAutoCommit(false);
      long seq = outbox.append(first, "orders", m, "req-x");
      CompletableFuture<Long> twin = CompletableFuture.supplyAsync(() -> {
        try (Connection c = db.dataSource().getConnection()) {
          c.setAutoCommit(true);
          return outbox.append(c, "orders", m, "req-x");
        } catch (SQLException e) {
          throw new IllegalStateException(e);
        }
      });
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (!twin.isDone() && !someoneWaitsForALock(db, prefix)
          && System.nanoTime() < deadline) {
        Thread.onSpinWait();
      }
      first.commit();
      assertThat(twin.handle((v, e) -> e == null ? v : e).get(20, TimeUnit.SECONDS))
          .as("the twin's answer").isEqualTo(seq);
    }
    assertThat(outbox.refusedAppends()).isZero();
    assertThat(db.count("SELECT COUNT(*) FROM " + prefix + "outbox")).isEqualTo(2);
  }
}
