package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.relaykit.queue.EnqueueResult;
import io.relaykit.queue.JournalException;
import io.relaykit.queue.JournalFullException;
import io.relaykit.queue.JournalState;
import io.relaykit.queue.Priority;
import io.relaykit.queue.QueueJournal.Removal;
import io.relaykit.queue.QueuedEvent;
import io.relaykit.queue.ReportEvent;
import io.relaykit.queue.ReportQueue;
import io.relaykit.tck.Await;
import io.relaykit.tck.FaultProxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** JdbcQueueJournal when the database fails: a lost commit acknowledgement, an outage. */
@DisplayName("JdbcQueueJournal when the database fails")
class JdbcQueueJournalFaultTest {

  private static final Instant T0 = Instant.parse("2026-01-01T00:00:00.123Z");
  private static final Duration NEVER = Duration.ofHours(1);

  private static QueuedEvent event(String id, Priority priority) {
    return new QueuedEvent(id, "test.event", "{\"id\":\"" + id + "\"}", priority, T0, 0, T0,
        null);
  }

  private static List<String> ids(List<QueuedEvent> events) {
    return events.stream().map(QueuedEvent::eventId).toList();
  }

  /** Rows of {@code journal} by kind (0 seen, 1 pending, 2 dead, 3 commit mark), read directly. */
  private static Map<Integer, Long> rowsByKind(DataSource direct, String table, String journal)
      throws SQLException {
    Map<Integer, Long> rows = new java.util.TreeMap<>();
    try (Connection c = direct.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT kind, COUNT(*) FROM " + table
            + " WHERE journal = ? GROUP BY kind")) {
      ps.setString(1, journal);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          rows.put(rs.getInt(1), rs.getLong(2));
        }
      }
    }
    return rows;
  }

  /**
   * The scenario on any database: the first commit's acknowledgement is lost by {@code loseAck},
   * the next commit must succeed, and the journal must hold everything once.
   */
  private static void lostAckScenario(JdbcStorage storage, CommitHookDataSource hooked,
      DataSource direct, CommitHookDataSource.Hook loseAck) throws SQLException {
    String name = "lost-ack-" + UUID.randomUUID();
    JdbcQueueJournal journal = storage.queueJournal(name, NEVER);
    journal.load();
    journal.append(event("a", Priority.NORMAL));
    journal.append(event("b", Priority.NORMAL));
    hooked.onNextCommit(loseAck);
    assertThatThrownBy(journal::flush).isInstanceOfSatisfying(JournalException.class,
        e -> assertThat(e.outcome()).isEqualTo(JournalException.Outcome.UNKNOWN));

    journal.append(event("c", Priority.NORMAL));
    journal.remove("a", Removal.ACKED);
    journal.flush(); // before: a primary key violation here, and at every commit after it
    journal.append(event("pay", Priority.CRITICAL));
    journal.close();

    JdbcQueueJournal reopened = storage.queueJournal(name, NEVER);
    JournalState state = reopened.load();
    assertThat(ids(state.pending())).containsExactly("b", "c", "pay");
    assertThat(state.seen()).containsOnlyKeys("a", "b", "c", "pay");
    reopened.close();
    String table = storage.tablePrefix() + "journal";
    assertThat(rowsByKind(direct, table, name)).as("every row once, one commit mark")
        .containsExactly(Map.entry(0, 4L), Map.entry(1, 3L), Map.entry(3, 1L));
  }

  @Test
  @DisplayName("on H2, a commit that succeeded but reported a failure does not wedge the next commit; nothing is written twice or lost")
  void lostAckOnH2() throws SQLException {
    TestDatabase db = TestDatabase.shared(TestDatabase.Kind.H2_MEMORY);
    CommitHookDataSource hooked = new CommitHookDataSource(db.dataSource());
    JdbcStorage storage = JdbcStorage.open(hooked, Dialect.H2, TestDatabase.newPrefix(),
        Duration.ofDays(1), InstantSource.system());
    lostAckScenario(storage, hooked, db.dataSource(), commit -> {
      commit.run();
      throw new SQLException("connection reset after the commit reached the database", "08006");
    });
  }

  @Test
  @DisplayName("on PostgreSQL through a TCP fault proxy: the commit reaches the server, the connection is cut before the reply; the next commit succeeds and nothing is duplicated or lost")
  void lostAckOnPostgres() throws Exception {
    TestDatabase db = TestDatabase.shared(TestDatabase.Kind.POSTGRESQL);
    String prefix = TestDatabase.newPrefix();
    try (FaultProxy proxy = FaultProxy.to("127.0.0.1", postgresPort());
        HikariDataSource viaProxy = db.poolVia(proxy.address(), 10)) {
      CommitHookDataSource hooked = new CommitHookDataSource(viaProxy);
      JdbcStorage storage = JdbcStorage.open(hooked, Dialect.POSTGRESQL, prefix,
          Duration.ofDays(1), InstantSource.system());
      DataSource direct = db.dataSource();
      String table = prefix + "journal";
      AtomicReference<Throwable> watcher = new AtomicReference<>();
      lostAckScenario(storage, hooked, direct, commit -> {
        // The COMMIT goes to the server; its answer is dropped; once the server has committed
        // (seen from another connection), the connection is cut: a lost acknowledgement.
        proxy.dropReplies();
        Thread cutter = new Thread(() -> {
          try {
            Await.until(Duration.ofSeconds(10), "the commit to reach PostgreSQL",
                () -> pendingRows(direct, table) == 2);
            proxy.cutConnections();
          } catch (Throwable t) {
            watcher.set(t);
          } finally {
            proxy.heal();
          }
        });
        cutter.start();
        try {
          commit.run();
        } finally {
          try {
            cutter.join(15_000);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
        throw new AssertionError("the commit answered although its reply was dropped");
      });
      assertThat(watcher.get()).isNull();
    }
  }

  /** Pending rows in {@code table} (this test's own prefix), read directly; -1 on failure. */
  private static long pendingRows(DataSource direct, String table) {
    try (Connection c = direct.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT COUNT(*) FROM " + table
            + " WHERE kind = 1");
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      return rs.getLong(1);
    } catch (SQLException e) {
      return -1;
    }
  }

  private static int postgresPort() {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("//[^/:]+:(\\d+)/")
        .matcher(TestDatabase.postgresUrl());
    return m.find() ? Integer.parseInt(m.group(1)) : 5432;
  }

  @Nested
  @DisplayName("while the database is down")
  class Down {

    private final TestDatabase db = TestDatabase.shared(TestDatabase.Kind.H2_MEMORY);
    private final FlakyDataSource flaky = new FlakyDataSource(db.dataSource());
    private final JdbcStorage storage = JdbcStorage.open(flaky, Dialect.H2,
        TestDatabase.newPrefix(), Duration.ofDays(1), InstantSource.system());

    @Test
    @DisplayName("the buffer is bounded: appends past it throw JournalFullException, acks have a reserve, a critical append fails fast; all of it commits once the database is back")
    void bounded() {
      String name = "down-" + UUID.randomUUID();
      JdbcQueueJournal journal = storage.queueJournal(name, Duration.ofMillis(20), 10,
          1_000_000);
      journal.load();
      flaky.down(true);
      journal.append(event("n0", Priority.NORMAL));
      assertThatThrownBy(journal::flush).isInstanceOf(JournalException.class);
      for (int i = 1; i < 5; i++) {
        journal.append(event("n" + i, Priority.NORMAL)); // two statements each
      }
      assertThatThrownBy(() -> journal.append(event("n5", Priority.NORMAL)))
          .isInstanceOf(JournalFullException.class).hasMessageContaining("bound is 10")
          .hasMessageContaining("nothing was recorded");
      journal.remove("n0", Removal.ACKED);
      long failuresBefore = flaky.failures.get();
      assertThatThrownBy(() -> journal.append(event("pay", Priority.CRITICAL)))
          .isInstanceOfSatisfying(JournalException.class, e -> {
            assertThat(e.outcome()).isEqualTo(JournalException.Outcome.NOT_RECORDED);
            assertThat(e).isNotInstanceOf(JournalFullException.class);
          })
          .hasMessageContaining("unreachable").hasMessageContaining("at once");
      assertThat(flaky.failures.get() - failuresBefore).as("no connection attempt: fail fast")
          .isLessThanOrEqualTo(1);

      flaky.down(false);
      Await.until(Duration.ofSeconds(10), "the flusher to commit after the outage", () -> {
        try {
          journal.append(event("pay", Priority.CRITICAL));
          return true;
        } catch (JournalException e) {
          return false;
        }
      });
      journal.close();
      JournalState state = storage.queueJournal(name, NEVER).load();
      assertThat(ids(state.pending())).containsExactly("n1", "n2", "n3", "n4", "pay");
      assertThat(state.seen()).containsOnlyKeys("n0", "n1", "n2", "n3", "n4", "pay");
    }

    @Test
    @DisplayName("a report queue on it answers JOURNAL_FULL for normal events, counted, and throws for critical ones")
    void queueSeesJournalFull() {
      JdbcQueueJournal journal = storage.queueJournal("q-" + UUID.randomUUID(), NEVER, 4,
          1_000_000);
      ReportQueue queue = ReportQueue.builder().journal(journal).build();
      queue.restore();
      flaky.down(true);
      assertThat(queue.enqueue(new ReportEvent("a", "n", "p")).accepted()).isTrue();
      assertThat(queue.enqueue(new ReportEvent("b", "n", "p")).accepted()).isTrue();
      assertThat(queue.enqueue(new ReportEvent("c", "n", "p")).reason())
          .isEqualTo(EnqueueResult.Reason.JOURNAL_FULL);
      assertThat(queue.stats().journalFull()).isEqualTo(1);
      // The refused "c" waited for a commit (backpressure), which found the database down: a
      // critical event is now refused at once, nothing recorded.
      assertThatThrownBy(() -> queue.enqueue(new ReportEvent("pay", "n", "p",
          Priority.CRITICAL, null))).isInstanceOfSatisfying(JournalException.class,
              e -> assertThat(e.outcome()).isEqualTo(JournalException.Outcome.NOT_RECORDED))
          .hasMessageContaining("pay");
      assertThat(queue.pendingIds()).containsExactly("a", "b");
      flaky.down(false);
      journal.close();
    }
  }
}
