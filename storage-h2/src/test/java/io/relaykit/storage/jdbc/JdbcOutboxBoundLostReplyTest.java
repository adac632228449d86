package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.message.Message;
import io.relaykit.outbox.OutboxBound;
import io.relaykit.outbox.OutboxFullException;
import io.relaykit.outbox.OutboxRecord;
import io.relaykit.tck.FakeClock;
import io.relaykit.tck.LostReply;
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
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The REFUSE bound when the reply to an auto-commit append's commit is lost ({@link LostReply}
 * over the caller's {@link Connection}: the commit runs on the database, the caller sees an
 * error): the row exists, so its room must stay taken until a recount has seen it. And appends
 * with a request id give their room back once their transactions ended. On H2 (memory, file) and
 * PostgreSQL; the storage's clock never moves, so no recount happens for staleness.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class JdbcOutboxBoundLostReplyTest {

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

  private interface Append {
    void to(Connection c) throws SQLException;
  }

  private static void autoCommit(JdbcStorage storage, Append append) {
    try (Connection c = storage.dataSource().getConnection()) {
      c.setAutoCommit(true);
      append.to(c);
    } catch (SQLException e) {
      throw new AssertionError(e);
    }
  }

  /** Runs {@code append} on an auto-commit connection whose next commit's reply is lost. */
  private static void commitReplyLost(JdbcStorage storage, Append append) {
    try (Connection c = storage.dataSource().getConnection()) {
      c.setAutoCommit(true);
      LostReply<Connection> seam = LostReply.over(Connection.class, c).dropNextReplyOf("commit");
      assertThatThrownBy(() -> append.to(seam.store()))
          .isInstanceOf(LostReply.LostReplyException.class);
      assertThat(seam.dropped()).isEqualTo(1);
    } catch (SQLException e) {
      throw new AssertionError(e);
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("bound 10: 8 appends, then 2 whose commit reply is lost (both rows committed): the"
      + " 11th append is refused and the outbox holds 10 rows")
  void lostCommitReplyKeepsItsRoom(TestDatabase db) {
    String prefix = TestDatabase.newPrefix();
    JdbcStorage storage = db.storage(prefix, Duration.ofDays(7), clock);
    JdbcOutboxStore outbox = storage.outboxStore(OutboxBound.refuseAbove(10));
    for (int i = 0; i < 8; i++) {
      int n = i;
      autoCommit(storage, c -> outbox.append(c, "orders", message("k" + n, "a")));
    }
    commitReplyLost(storage, c -> outbox.append(c, "orders", message("k8", "lost")));
    commitReplyLost(storage, c -> outbox.appendAll(c, "orders", List.of(message(null, "lost"))));
    assertThat(db.count("SELECT COUNT(*) FROM " + prefix + "outbox")).isEqualTo(10);

    assertThatThrownBy(() -> autoCommit(storage,
        c -> outbox.append(c, "orders", message("k10", "over"))))
        .isInstanceOf(OutboxFullException.class);
    assertThatThrownBy(() -> autoCommit(storage,
        c -> outbox.appendAll(c, "orders", List.of(message(null, "over")))))
        .isInstanceOf(OutboxFullException.class);
    assertThat(db.count("SELECT COUNT(*) FROM " + prefix + "outbox")).isEqualTo(10);
    assertThat(outbox.refusedAppends()).isEqualTo(2);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  @DisplayName("bound 3: three appends with request ids, sent: their room comes back, so three"
      + " more are taken, and a fourth is refused")
  void requestIdAppendsGiveTheirRoomBack(TestDatabase db) {
    String prefix = TestDatabase.newPrefix();
    JdbcStorage storage = db.storage(prefix, Duration.ofDays(7), clock);
    JdbcOutboxStore outbox = storage.outboxStore(OutboxBound.refuseAbove(3));
    for (int i = 0; i < 3; i++) {
      int n = i;
      autoCommit(storage, c -> outbox.append(c, "orders", message(null, "r" + n), "req-" + n));
    }
    // A repeat writes nothing and takes no room.
    autoCommit(storage, c -> outbox.append(c, "orders", message(null, "r0"), "req-0"));
    List<OutboxRecord> claimed = outbox.claim("relay", 10, Duration.ofMinutes(1), clock.instant());
    assertThat(claimed).hasSize(3);
    assertThat(outbox.markSent("relay", claimed.stream().map(OutboxRecord::sequence).toList(),
        clock.instant())).isEqualTo(3);

    for (int i = 3; i < 6; i++) {
      int n = i;
      autoCommit(storage, c -> outbox.append(c, "orders", message(null, "r" + n), "req-" + n));
    }
    assertThatThrownBy(() -> autoCommit(storage,
        c -> outbox.append(c, "orders", message(null, "r6"), "req-6")))
        .isInstanceOf(OutboxFullException.class);
    assertThat(db.count("SELECT COUNT(*) FROM " + prefix + "outbox WHERE state = "
        + JdbcOutboxStore.UNSENT)).isEqualTo(3);
  }
}
