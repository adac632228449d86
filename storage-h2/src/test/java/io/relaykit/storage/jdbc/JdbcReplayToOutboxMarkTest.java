package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.ReplayInProgressException;
import io.relaykit.message.Message;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.DisplayName;

/**
 * The one-transaction replay ({@code replayToOutbox}, the starter endpoint's path on JDBC) and a
 * marked replay ({@code DeadLetterReplayer} with an application's target) of one dead letter at
 * once: the second must stay off while the first's mark is live, so the message is resent once.
 */
@DisplayName("replayToOutbox while another replay holds a live mark")
class JdbcReplayToOutboxMarkTest {

  @ParameterizedTest
  @EnumSource(value = TestDatabase.Kind.class, names = {"H2_MEMORY", "POSTGRESQL"})
  @DisplayName("a live mark: ReplayInProgressException, nothing appended, the mark's holder"
      + " finishes; a lapsed mark: replayToOutbox takes it over")
  void liveMarkKeepsOff(TestDatabase.Kind kind) {
    TestDatabase db = TestDatabase.shared(kind);
    String prefix = TestDatabase.newPrefix();
    JdbcStorage storage = JdbcStorage.open(db.dataSource(), db.dialect(), prefix,
        Duration.ofDays(1), InstantSource.system());
    JdbcDeadLetterStore store = storage.deadLetterStore();
    JdbcOutboxStore outbox = storage.outboxStore();
    Message m = Message.builder().type("order.paid").key("o-1").payload("{}").build();
    Instant t = Instant.now();
    DeadLetter d = DeadLetter.of(m, "orders", "exhausted", new IOException("down"), 5,
        t.minusSeconds(60), t);
    store.add(d);

    assertThat(store.beginReplay(d.id(), "holder", Duration.ofMinutes(1))).contains(d);
    assertThatThrownBy(() -> store.replayToOutbox(d.id(), outbox))
        .isInstanceOf(ReplayInProgressException.class).hasMessageContaining(d.id());
    assertThat(db.count("SELECT COUNT(*) FROM " + prefix + "outbox")).isZero();
    assertThat(store.finishReplay(d.id(), "holder")).isTrue();

    DeadLetter e = DeadLetter.of(m, "orders-2", "exhausted", new IOException("down"), 5,
        t.minusSeconds(60), t);
    store.add(e);
    assertThat(store.beginReplay(e.id(), "crashed", Duration.ofMillis(1))).contains(e);
    io.relaykit.tck.Await.until(Duration.ofSeconds(10), "the 1 ms mark lapses", () -> {
      try {
        return store.replayToOutbox(e.id(), outbox).isPresent();
      } catch (ReplayInProgressException busy) {
        return false;
      }
    });
    assertThat(db.count("SELECT COUNT(*) FROM " + prefix + "outbox")).isEqualTo(1);
    assertThat(store.find(e.id())).isEmpty();
  }
}
