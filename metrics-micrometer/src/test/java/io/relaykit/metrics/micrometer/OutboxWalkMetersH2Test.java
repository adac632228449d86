package io.relaykit.metrics.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.relaykit.deadletter.DeadLetter;
import io.relaykit.inprocess.InProcessTransport;
import io.relaykit.message.Message;
import io.relaykit.outbox.OutboxRecord;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.storage.jdbc.DatabaseClock;
import io.relaykit.storage.jdbc.JdbcDeadLetterStore;
import io.relaykit.storage.jdbc.JdbcOutboxStore;
import io.relaykit.storage.jdbc.JdbcStorage;
import io.relaykit.storage.jdbc.JdbcStorageConfig;
import io.relaykit.tck.FakeClock;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The binder exports what real claims walked and what the relay's dead-letter retention removed,
 * with the values of real calls on an H2 outbox.
 */
class OutboxWalkMetersH2Test {

  private final FakeClock clock = new FakeClock();
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final RelayKitMeterBinder binder = RelayKitMeterBinder.builder()
      .messagingSystem("relaykit-inprocess").build();
  private JdbcStorage storage;

  @BeforeEach
  void open() {
    binder.bindTo(registry);
    storage = JdbcStorage.open(JdbcStorageConfig.builder()
        .jdbcUrl("jdbc:h2:mem:walk-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1")
        .databaseClock(DatabaseClock.of(clock))
        .outboxMetrics(binder)
        .build(), clock);
  }

  @AfterEach
  void close() {
    storage.close();
  }

  private void append(JdbcOutboxStore outbox, List<Message> messages) throws SQLException {
    try (Connection c = storage.dataSource().getConnection()) {
      c.setAutoCommit(false);
      outbox.appendAll(c, "orders", messages);
      c.commit();
    }
  }

  private static Message message(String key) {
    return Message.builder().type("order.placed").key(key).payload("x").build();
  }

  @Test
  @DisplayName("5 keys and 3 unkeyed rows: the first claim walks 5 heads and reads 8 rows; the"
      + " second (all leased) walks the 5 heads again and reads their 5 rows")
  void claimsReportHeadsAndRowsWalked() throws SQLException {
    JdbcOutboxStore outbox = storage.outboxStore();
    append(outbox, List.of(message("a"), message("b"), message("c"), message("d"), message("e"),
        message(null), message(null), message(null)));

    List<OutboxRecord> first = outbox.claim("relay", 100, Duration.ofMinutes(1), clock.instant());
    List<OutboxRecord> second = outbox.claim("relay", 100, Duration.ofMinutes(1),
        clock.instant());

    assertThat(first).hasSize(8);
    assertThat(second).isEmpty();
    String store = storage.tablePrefix() + "outbox";
    DistributionSummary heads = registry.get("relaykit.outbox.claim.heads.walked")
        .tag("store", store).tag("messaging.system", "relaykit-inprocess").summary();
    DistributionSummary rows = registry.get("relaykit.outbox.claim.rows.walked")
        .tag("store", store).summary();
    assertThat(heads.count()).isEqualTo(2);
    assertThat(heads.totalAmount()).isEqualTo(10.0);
    assertThat(heads.max()).isEqualTo(5.0);
    assertThat(rows.count()).isEqualTo(2);
    assertThat(rows.totalAmount()).isEqualTo(13.0);
    assertThat(rows.max()).isEqualTo(8.0);
  }

  @Test
  @DisplayName("two dead letters 10 days old under a 7-day retention, one fresh: the relay's purge"
      + " counts 2 in relaykit.messages.dropped{all, dead-letter-retention}")
  void retentionPurgeIsCounted() {
    JdbcDeadLetterStore deadLetters = storage.deadLetterStore();
    for (int i = 0; i < 2; i++) {
      deadLetters.add(deadLetter("old-" + i));
    }
    clock.advance(Duration.ofDays(10));
    deadLetters.add(deadLetter("fresh"));
    try (InProcessTransport transport = InProcessTransport.create()) {
      OutboxRelay relay = OutboxRelay.builder(storage.outboxStore(), transport, deadLetters)
          .clock(clock).metrics(binder).deadLetterRetention(Duration.ofDays(7), 100_000)
          .build();
      relay.runOnce();
      relay.close();
    }

    Counter purged = registry.get("relaykit.messages.dropped")
        .tag("messaging.destination.name", OutboxRelay.DEAD_LETTERS_METRICS_NAME)
        .tag("reason", OutboxRelay.DEAD_LETTER_RETENTION_REASON).counter();
    assertThat(purged.count()).isEqualTo(2.0);
    assertThat(deadLetters.count(io.relaykit.deadletter.DeadLetterQuery.all())).isEqualTo(1);
  }

  private DeadLetter deadLetter(String id) {
    Message m = Message.builder().id(id).type("order.placed").payload("x").build();
    return new DeadLetter(m, "orders", "gave up", "java.io.IOException", "down", 3,
        clock.instant(), clock.instant());
  }
}
