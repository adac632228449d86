package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.ReplayInProgressException;
import io.relaykit.idempotency.Claim;
import io.relaykit.message.Message;
import io.relaykit.outbox.OutboxRecord;
import io.relaykit.tck.FaultProxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.InstantSource;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The lost-reply fault on the wire for PostgreSQL: a {@link FaultProxy} forwards each write (and
 * its commit) and discards the server's answers, so the write commits and the caller times out.
 * The caller retries on a new connection; the test checks by what the database holds that the
 * outcome is the documented one.
 */
@DisplayName("PostgreSQL writes whose replies are dropped on the wire (FaultProxy)")
class PostgresLostReplyTest {

  private final TestDatabase db = TestDatabase.shared(TestDatabase.Kind.POSTGRESQL);
  private final String prefix = TestDatabase.newPrefix();
  private FaultProxy proxy;
  private HikariDataSource viaProxy;
  private JdbcStorage lossy;
  private JdbcStorage direct;

  @BeforeEach
  void open() {
    direct = db.storage(prefix, Duration.ofDays(7), InstantSource.system());
    proxy = FaultProxy.to("127.0.0.1", 5432);
    viaProxy = db.poolVia("127.0.0.1:" + proxy.port(), 2);
    lossy = JdbcStorage.open(viaProxy, Dialect.POSTGRESQL, prefix, Duration.ofDays(7),
        InstantSource.system());
  }

  @AfterEach
  void close() {
    viaProxy.close();
    proxy.close();
  }

  /** A read through the proxy (so a live connection waits in the pool), then the dropped write. */
  private void lose(Runnable write) {
    lossy.versionGuard().current("warm-up");
    proxy.dropReplies();
    assertThatThrownBy(write::run).isInstanceOf(Exception.class);
    proxy.heal();
    proxy.cutConnections();
  }

  private static Message message() {
    return Message.builder().type("order.paid").key("o-" + UUID.randomUUID()).payload("{}")
        .build();
  }

  @Test
  @DisplayName("an auto-commit append with a request id whose replies are lost (committed or not):"
      + " the retry returns the one row's sequence and the outbox holds one row")
  void appendWithRequestId() throws Exception {
    Message m = message();
    String requestId = "req-" + UUID.randomUUID();

    lose(() -> {
      try (Connection c = lossy.dataSource().getConnection()) {
        lossy.outboxStore().append(c, "orders", m, requestId);
      } catch (SQLException e) {
        throw new IllegalStateException(e);
      }
    });

    long seq;
    try (Connection c = direct.dataSource().getConnection()) {
      seq = direct.outboxStore().append(c, "orders", m, requestId);
    }
    List<OutboxRecord> rows = direct.outboxStore().claim("relay", 10, Duration.ofMinutes(1),
        InstantSource.system().instant());
    assertThat(rows).extracting(OutboxRecord::sequence).containsExactly(seq);
    assertThat(rows.get(0).message().id()).isEqualTo(m.id());
  }

  @Test
  @DisplayName("dead-letter beginReplay and finishReplay, idempotency complete and version advance"
      + " committed, replies lost: each retry converges")
  void storeWrites() {
    DeadLetter d = DeadLetter.of(message(), "orders", "gave up", null, 3,
        InstantSource.system().instant(), InstantSource.system().instant());
    direct.deadLetterStore().add(d);

    // A transaction of several statements: the first answer is dropped, so it may never commit
    // (not done); either way the retry with the same token is safe and takes the mark.
    lose(() -> lossy.deadLetterStore().beginReplay(d.id(), "t-1", Duration.ofMinutes(1)));
    assertThat(direct.deadLetterStore().find(d.id())).contains(d);
    assertThat(direct.deadLetterStore().beginReplay(d.id(), "t-1", Duration.ofMinutes(1)))
        .contains(d);
    assertThatThrownBy(() -> direct.deadLetterStore().beginReplay(d.id(), "t-2",
        Duration.ofMinutes(1))).isInstanceOf(ReplayInProgressException.class);

    // Done or not done (which statement's answer is dropped decides); the retry converges.
    lose(() -> lossy.deadLetterStore().finishReplay(d.id(), "t-1"));
    direct.deadLetterStore().finishReplay(d.id(), "t-1");
    assertThat(direct.deadLetterStore().find(d.id())).isEmpty();

    String key = "k-" + UUID.randomUUID();
    Claim c = direct.idempotencyStore().claim(key, Duration.ofMinutes(1));
    lose(() -> lossy.idempotencyStore().complete(c));
    boolean again = direct.idempotencyStore().complete(c);
    assertThat(direct.idempotencyStore().status(key)).as("retry answered " + again)
        .contains(Claim.Status.DONE);

    String entity = "e-" + UUID.randomUUID();
    lose(() -> lossy.versionGuard().advance(entity, 4));
    boolean advanced = direct.versionGuard().advance(entity, 4);
    assertThat(direct.versionGuard().current(entity)).as("retry answered " + advanced)
        .hasValue(4);
  }
}
