package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.message.Message;
import io.relaykit.outbox.OutboxBound;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.outbox.OutboxStore;
import io.relaykit.tck.FakeClock;
import io.relaykit.tck.LostReply;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * A relay on PostgreSQL whose markSent reply is lost after the auto-committed UPDATE ran (the
 * rows are sent, the heads did not move): nothing is published twice, keys keep their order, and
 * the next rows of the keys go out in the next batch (no stall until a purge).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class JdbcOutboxMarkLostReplyAttackTest {

  private static final Duration LEASE = Duration.ofSeconds(30);

  private final FakeClock clock = new FakeClock();
  private TestDatabase db;

  @BeforeAll
  void open(@TempDir Path tempDir) {
    db = TestDatabase.open(TestDatabase.Kind.POSTGRESQL, tempDir);
  }

  @AfterAll
  void close() {
    db.close();
  }

  @Test
  @DisplayName("the reply of the auto-committed mark is lost: the retry finds the rows sent, no row"
      + " is published twice, and the key's next rows follow in order in the next batch")
  void lostMarkReplyPublishesOnceInOrder() throws SQLException {
    JdbcStorage storage = db.storage(clock);
    JdbcOutboxStore outbox = storage.outboxStore(OutboxBound.unbounded(), OutboxOrderScope.KEY);
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      for (int i = 1; i <= 3; i++) {
        outbox.append(c, "orders", Message.builder().type("e").key("k").payload("k" + i).build());
      }
      outbox.append(c, "orders", Message.builder().type("e").payload("u1").build());
      c.commit();
    }
    LostReply<OutboxStore> seam = LostReply.over(OutboxStore.class, outbox);
    RecordingPublisher publisher = new RecordingPublisher();
    OutboxRelay relay = OutboxRelay.builder(seam.store(), publisher, storage.deadLetterStore())
        .owner("r").clock(clock).lease(LEASE).batchSize(2).keyRun(1).build();
    seam.dropNextReplyOf("markSent");
    OutboxRelay.Batch first = relay.runOnce();
    assertThat(seam.dropped()).isEqualTo(1);
    assertThat(first.claimed()).isEqualTo(2);
    assertThat(first.failed()).as("no row's handling failed").isZero();
    // The rows are sent; the relay cannot tell from a retry that found nothing whether it lost
    // the lease or the reply, and counts them as leases lost.
    assertThat(first.sent()).isZero();
    assertThat(first.leaseLost()).isEqualTo(2);
    for (int round = 0; round < 5 && outbox.stats(clock.instant()).unsent() > 0; round++) {
      relay.runOnce();
    }
    assertThat(outbox.stats(clock.instant()).unsent()).isZero();
    assertThat(publisher.publishedPayloads()).as("each once").containsExactlyInAnyOrder(
        "k1", "k2", "k3", "u1");
    assertThat(publisher.publishedPayloads().stream().filter(p -> p.startsWith("k")))
        .containsExactly("k1", "k2", "k3");
  }
}
