package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.message.Message;
import io.relaykit.outbox.OutboxRecord;
import io.relaykit.tck.FakeClock;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * markSent and the claim's lease work on runs of consecutive sequences with one range statement
 * each (H2) and markSent auto-commits its UPDATE (PostgreSQL): they change exactly the rows a
 * statement per row would, on H2 (memory and file) and PostgreSQL.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class JdbcOutboxRangeStatementTest {
  private static final Duration LEASE = Duration.ofSeconds(30);

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

  private static void append(JdbcStorage storage, JdbcOutboxStore outbox, List<Message> ms) {
    try (Connection c = storage.dataSource().getConnection()) {
      c.setAutoCommit(false);
      outbox.appendAll(c, "orders", ms);
      c.commit();
    } catch (SQLException e) {
      throw new AssertionError(e);
    }
  }

  private static List<Long> seqs(List<OutboxRecord> rs) {
    return rs.stream().map(OutboxRecord::sequence).toList();
  }

  @Test
  @DisplayName("runs of consecutive sequences: sorted, repeats merged, never bridging a gap or"
      + " wrapping around at the ends of long")
  void consecutiveRuns() {
    assertThat(OutboxStatements.consecutiveRuns(new Long[] {9L, 3L, 4L, 4L, 5L, 7L}))
        .containsExactly(new long[] {3, 5}, new long[] {7, 7}, new long[] {9, 9});
    assertThat(OutboxStatements.consecutiveRuns(new Long[] {Long.MAX_VALUE, Long.MIN_VALUE}))
        .containsExactly(new long[] {Long.MIN_VALUE, Long.MIN_VALUE},
            new long[] {Long.MAX_VALUE, Long.MAX_VALUE});
    assertThat(OutboxStatements.consecutiveRuns(new Long[0])).isEmpty();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("markSent of a set with gaps marks exactly that set, and only the rows its owner"
      + " holds; the gaps stay unsent under their lease")
  void markSentWithGaps(TestDatabase db) {
    JdbcStorage storage = db.storage(clock);
    JdbcOutboxStore outbox = storage.outboxStore();
    List<Message> ms = new ArrayList<>();
    for (int i = 0; i < 12; i++) {
      ms.add(Message.builder().type("t").payload("m" + i).build());
    }
    append(storage, outbox, ms);
    List<OutboxRecord> mine = outbox.claim("a", 10, LEASE, clock.instant());
    List<OutboxRecord> theirs = outbox.claim("b", 10, LEASE, clock.instant());
    assertThat(mine).hasSize(10);
    assertThat(theirs).hasSize(2);
    List<Long> s = seqs(mine);
    // Rows 0..4, 6, 8, 9 of a's claim, and b's two rows inside the range asked for.
    List<Long> asked = new ArrayList<>(List.of(s.get(0), s.get(1), s.get(2), s.get(3), s.get(4),
        s.get(6), s.get(8), s.get(9)));
    asked.addAll(seqs(theirs));
    assertThat(outbox.markSent("a", asked, clock.instant())).isEqualTo(8);
    // The rows left out are still a's (b cannot claim them) and b's rows are still b's.
    assertThat(outbox.claim("c", 10, LEASE, clock.instant())).isEmpty();
    assertThat(outbox.markSent("b", seqs(theirs), clock.instant())).isEqualTo(2);
    assertThat(outbox.markSent("a", List.of(s.get(5), s.get(7)), clock.instant())).isEqualTo(2);
    assertThat(outbox.markSent("a", s, clock.instant())).isZero();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("a claim over rows of which some were rescheduled (other attempts) leases every"
      + " claimable row once, oldest first")
  void claimMixedAttempts(TestDatabase db) {
    JdbcStorage storage = db.storage(clock);
    JdbcOutboxStore outbox = storage.outboxStore();
    List<Message> ms = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      ms.add(Message.builder().type("t").payload("m" + i).build());
    }
    append(storage, outbox, ms);
    List<OutboxRecord> first = outbox.claim("a", 20, LEASE, clock.instant());
    assertThat(first).hasSize(20);
    List<Long> all = seqs(first);
    // Rows 5..9 fail once and are due again at once; the rest are released unpublished.
    for (int i = 5; i < 10; i++) {
      assertThat(outbox.reschedule("a", all.get(i), 1, clock.instant(), clock.instant(), "boom"))
          .isTrue();
    }
    List<Long> rest = new ArrayList<>(all.subList(0, 5));
    rest.addAll(all.subList(10, 20));
    assertThat(outbox.release("a", rest)).isEqualTo(15);
    clock.advance(Duration.ofMillis(1));
    List<OutboxRecord> again = outbox.claim("b", 20, LEASE, clock.instant());
    assertThat(seqs(again)).containsExactlyElementsOf(all);
    assertThat(again.stream().filter(r -> r.attempts() == 1).map(OutboxRecord::sequence))
        .containsExactlyElementsOf(all.subList(5, 10));
    assertThat(outbox.claim("c", 20, LEASE, clock.instant())).isEmpty();
    assertThat(outbox.markSent("b", all, clock.instant())).isEqualTo(20);
  }
}
