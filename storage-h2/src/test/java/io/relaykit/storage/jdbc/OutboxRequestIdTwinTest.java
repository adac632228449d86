package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.message.Message;
import io.relaykit.tck.Await;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.InstantSource;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Two appends with one request id at once (a retry racing the original): the second waits for the
 * first's transaction and then answers clearly, on every JDBC backend. Before the fix H2 refused
 * the second with an SQLException "try again" while the first was uncommitted.
 */
@DisplayName("outbox appends with one request id at once (concurrent twins)")
class OutboxRequestIdTwinTest {

  private final ExecutorService pool = Executors.newSingleThreadExecutor();

  @AfterEach
  void stop() throws InterruptedException {
    // Not shutdownNow: an interrupt inside H2's file I/O would close the shared test database.
    pool.shutdown();
    assertThat(pool.awaitTermination(60, TimeUnit.SECONDS)).isTrue();
  }

  private static Message message() {
    return Message.builder().type("order.paid").payload("{\"n\":1}").build();
  }

  private static Message keyed() {
    return Message.builder().type("order.paid").key("k-1").payload("{\"n\":1}").build();
  }

  private static long rows(JdbcStorage storage, String prefix, String requestId) throws Exception {
    try (Connection c = storage.dataSource().getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT COUNT(*) FROM " + prefix
            + "outbox WHERE request_id = ?")) {
      ps.setString(1, requestId);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  @ParameterizedTest
  @EnumSource(TestDatabase.Kind.class)
  @DisplayName("the twin waits for the first append's commit and returns its sequence; one row")
  void twinAfterCommit(TestDatabase.Kind kind) throws Exception {
    String prefix = TestDatabase.newPrefix();
    JdbcStorage storage = TestDatabase.shared(kind).emptied(prefix, Duration.ofDays(7),
        InstantSource.system());
    JdbcOutboxStore outbox = storage.outboxStore();
    try (Connection first = storage.dataSource().getConnection()) {
      first.setAutoCommit(false);
      long seq = outbox.append(first, "orders", message(), "req-commit");
      Thread[] twinThread = new Thread[1];
      CompletableFuture<Long> twin = CompletableFuture.supplyAsync(() -> {
        twinThread[0] = Thread.currentThread();
        try (Connection c = storage.dataSource().getConnection()) {
          return outbox.append(c, "orders", message(), "req-commit");
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      }, pool);
      awaitBlockedOrDone(twinThread, twin);
      first.commit();
      assertThat(twin.get(30, TimeUnit.SECONDS)).isEqualTo(seq);
    }
    assertThat(rows(storage, prefix, "req-commit")).isEqualTo(1);
  }

  @ParameterizedTest
  @EnumSource(TestDatabase.Kind.class)
  @DisplayName("the twin waits for the first append's rollback and then writes the row itself")
  void twinAfterRollback(TestDatabase.Kind kind) throws Exception {
    String prefix = TestDatabase.newPrefix();
    JdbcStorage storage = TestDatabase.shared(kind).emptied(prefix, Duration.ofDays(7),
        InstantSource.system());
    JdbcOutboxStore outbox = storage.outboxStore();
    CompletableFuture<Long> twin;
    try (Connection first = storage.dataSource().getConnection()) {
      first.setAutoCommit(false);
      outbox.append(first, "orders", message(), "req-rollback");
      Thread[] twinThread = new Thread[1];
      twin = CompletableFuture.supplyAsync(() -> {
        twinThread[0] = Thread.currentThread();
        try (Connection c = storage.dataSource().getConnection()) {
          return outbox.append(c, "orders", message(), "req-rollback");
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      }, pool);
      awaitBlockedOrDone(twinThread, twin);
      first.rollback();
    }
    long seq = twin.get(30, TimeUnit.SECONDS);
    assertThat(rows(storage, prefix, "req-rollback")).isEqualTo(1);
    try (Connection c = storage.dataSource().getConnection()) {
      assertThat(outbox.append(c, "orders", message(), "req-rollback")).isEqualTo(seq);
    }
  }

  @ParameterizedTest
  @EnumSource(TestDatabase.Kind.class)
  @DisplayName("keyed: the twin with the same key and request id returns the first's sequence")
  void keyedTwinAfterCommit(TestDatabase.Kind kind) throws Exception {
    String prefix = TestDatabase.newPrefix();
    JdbcStorage storage = TestDatabase.shared(kind).emptied(prefix, Duration.ofDays(7),
        InstantSource.system());
    JdbcOutboxStore outbox = storage.outboxStore();
    try (Connection first = storage.dataSource().getConnection()) {
      first.setAutoCommit(false);
      long seq = outbox.append(first, "orders", keyed(), "req-keyed");
      Thread[] twinThread = new Thread[1];
      CompletableFuture<Long> twin = CompletableFuture.supplyAsync(() -> {
        twinThread[0] = Thread.currentThread();
        try (Connection c = storage.dataSource().getConnection()) {
          return outbox.append(c, "orders", keyed(), "req-keyed");
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      }, pool);
      awaitBlockedOrDone(twinThread, twin);
      first.commit();
      assertThat(twin.get(30, TimeUnit.SECONDS)).isEqualTo(seq);
    }
    assertThat(rows(storage, prefix, "req-keyed")).isEqualTo(1);
  }

  @ParameterizedTest
  @EnumSource(TestDatabase.Kind.class)
  @DisplayName("keyed, no request id: an append waiting on another's new key head appends after it")
  void keyedAppendWaitsForNewHead(TestDatabase.Kind kind) throws Exception {
    String prefix = TestDatabase.newPrefix();
    JdbcStorage storage = TestDatabase.shared(kind).emptied(prefix, Duration.ofDays(7),
        InstantSource.system());
    JdbcOutboxStore outbox = storage.outboxStore();
    try (Connection first = storage.dataSource().getConnection()) {
      first.setAutoCommit(false);
      long seq = outbox.append(first, "orders", keyed());
      Thread[] twinThread = new Thread[1];
      CompletableFuture<Long> twin = CompletableFuture.supplyAsync(() -> {
        twinThread[0] = Thread.currentThread();
        try (Connection c = storage.dataSource().getConnection()) {
          return outbox.append(c, "orders", keyed());
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      }, pool);
      awaitBlockedOrDone(twinThread, twin);
      first.commit();
      assertThat(twin.get(30, TimeUnit.SECONDS)).isGreaterThan(seq);
    }
  }

  @ParameterizedTest
  @EnumSource(TestDatabase.Kind.class)
  @DisplayName("a twin whose first append stays open past the lock timeout gets a clear"
      + " IllegalStateException naming the id, writes nothing, and its repeat after the commit"
      + " returns the first's sequence")
  void twinOfAnOpenAppendGetsAClearAnswer(TestDatabase.Kind kind) throws Exception {
    String prefix = TestDatabase.newPrefix();
    JdbcStorage storage = TestDatabase.shared(kind).emptied(prefix, Duration.ofDays(7),
        InstantSource.system());
    JdbcOutboxStore outbox = storage.outboxStore();
    try (Connection first = storage.dataSource().getConnection();
        Connection twin = storage.dataSource().getConnection()) {
      first.setAutoCommit(false);
      long seq = outbox.append(first, "orders", message(), "req-open");
      String shortWait = kind == TestDatabase.Kind.POSTGRESQL
          ? "SET lock_timeout = '300ms'" : "SET LOCK_TIMEOUT 300";
      String restore = kind == TestDatabase.Kind.POSTGRESQL
          ? "SET lock_timeout = 0" : "SET LOCK_TIMEOUT 10000";
      try (java.sql.Statement st = twin.createStatement()) {
        st.execute(shortWait);
      }
      try {
        org.assertj.core.api.Assertions.assertThatThrownBy(
            () -> outbox.append(twin, "orders", message(), "req-open"))
            .isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("req-open").hasMessageContaining("wrote nothing");
        first.commit();
        assertThat(outbox.append(twin, "orders", message(), "req-open")).isEqualTo(seq);
      } finally {
        try (java.sql.Statement st = twin.createStatement()) {
          st.execute(restore);
        }
      }
    }
    assertThat(rows(storage, prefix, "req-open")).isEqualTo(1);
  }

  /** Waits until the twin blocks inside the database (or already finished: then it failed fast). */
  private static void awaitBlockedOrDone(Thread[] twinThread, CompletableFuture<Long> twin) {
    Await.until(Duration.ofSeconds(20), "the twin append blocks or finishes", () -> {
      if (twin.isDone()) {
        return true;
      }
      Thread t = twinThread[0];
      if (t == null) {
        return false;
      }
      boolean inH2 = false;
      boolean onSocket = false;
      for (StackTraceElement e : t.getStackTrace()) {
        // H2 retries a statement that met an uncommitted unique row until its lock timeout.
        inH2 |= e.getClassName().equals("org.h2.command.Command")
            && e.getMethodName().startsWith("executeUpdate");
        onSocket |= e.getClassName().startsWith("sun.nio.ch.NioSocketImpl")
            && e.getMethodName().startsWith("read");
      }
      // H2 waits on a lock in the database; PostgreSQL's driver waits for the server's answer.
      if (inH2 || onSocket) {
        return true;
      }
      return false;
    });
  }
}
