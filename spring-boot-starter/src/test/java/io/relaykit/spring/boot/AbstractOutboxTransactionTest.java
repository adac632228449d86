package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.outbox.OutboxRecord;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.jdbc.core.JdbcTemplate;

/** The outbox joins the caller's @Transactional: commit publishes, rollback leaves nothing. */
abstract class AbstractOutboxTransactionTest {

  /** A unique name per test class run: tables of parallel runs never meet. */
  static String unique(String base) {
    return base + "_" + UUID.randomUUID().toString().replace("-", "").substring(0, 10);
  }

  @Autowired TestApp.OrderService service;
  @Autowired TransactionalOutbox outbox;
  @Autowired JdbcTemplate jdbc;
  @Value("${test.orders-table}") String orders;
  @Value("${relaykit.jdbc.table-prefix}") String prefix;

  @BeforeEach
  void table() {
    jdbc.execute("CREATE TABLE IF NOT EXISTS " + orders + " (id VARCHAR(64) PRIMARY KEY)");
  }

  private int outboxRows(String id) {
    return jdbc.queryForObject("SELECT COUNT(*) FROM " + prefix + "outbox WHERE message_id = ?",
        Integer.class, id);
  }

  private int orderRows(String id) {
    return jdbc.queryForObject("SELECT COUNT(*) FROM " + orders + " WHERE id = ?",
        Integer.class, id);
  }

  @Test
  void commitPublishesTheMessage() {
    String id = unique("o");
    service.place(id, false);

    assertThat(orderRows(id)).isEqualTo(1);
    assertThat(outboxRows(id)).isEqualTo(1);
    List<OutboxRecord> claimed = outbox.store().claim("relay-" + id, 100, Duration.ofSeconds(30),
        Instant.now());
    assertThat(claimed).extracting(r -> r.message().id()).contains(id);
    assertThat(claimed).filteredOn(r -> r.message().id().equals(id))
        .extracting(OutboxRecord::destination).containsExactly("orders");
  }

  @Test
  void rollbackLeavesNoMessage() {
    String id = unique("o");
    assertThatThrownBy(() -> service.place(id, true)).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("business failure");

    assertThat(orderRows(id)).isZero();
    assertThat(outboxRows(id)).isZero();
  }

  @Test
  void appendOutsideATransactionIsRefusedAndWritesNothing() {
    String id = unique("o");
    assertThatThrownBy(() -> service.placeWithoutTransaction(id))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("outside a Spring transaction")
        .hasMessageContaining("nothing was written");

    assertThat(outboxRows(id)).isZero();
  }
}
