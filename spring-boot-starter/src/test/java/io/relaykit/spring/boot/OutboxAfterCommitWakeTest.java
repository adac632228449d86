package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.outbox.OutboxRelay;
import io.relaykit.outbox.OutboxWakeup;
import io.relaykit.storage.jdbc.JdbcStorage;
import io.relaykit.tck.Await;
import java.time.Duration;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The starter wakes its relay from {@code afterCommit}: with a 30 s poll, a committed append is
 * published within seconds, and a rolled-back one fires no wake.
 */
@SpringBootTest(classes = TestApp.class)
@DisplayName("Spring: relays woken after the commit")
class OutboxAfterCommitWakeTest {
  static final String DB = AbstractOutboxTransactionTest.unique("h2");
  static final String PREFIX = AbstractOutboxTransactionTest.unique("rk") + "_";
  static final String ORDERS = AbstractOutboxTransactionTest.unique("orders");

  @DynamicPropertySource
  static void props(DynamicPropertyRegistry r) {
    r.add("spring.datasource.url", () -> "jdbc:h2:mem:" + DB + ";DB_CLOSE_DELAY=-1");
    r.add("relaykit.storage", () -> "jdbc");
    r.add("relaykit.relay.poll-interval", () -> "30s");
    r.add("relaykit.jdbc.table-prefix", () -> PREFIX);
    r.add("test.orders-table", () -> ORDERS);
  }

  @Autowired TestApp.OrderService service;
  @Autowired JdbcTemplate jdbc;
  @Autowired JdbcStorage storage;
  @Autowired OutboxRelay relay;
  @Autowired TransactionalOutbox outbox;
  @Autowired TransactionTemplate tx;

  @BeforeEach
  void table() {
    jdbc.execute("CREATE TABLE IF NOT EXISTS " + ORDERS + " (id VARCHAR(64) PRIMARY KEY)");
  }

  private int sent(String id) {
    return jdbc.queryForObject("SELECT COUNT(*) FROM " + PREFIX + "outbox WHERE message_id = ?"
        + " AND state = 1", Integer.class, id);
  }

  @Test
  @DisplayName("the relay bean shares the storage's wakeup; a commit publishes long before the"
      + " 30 s poll, one wake per transaction")
  void commitWakes() {
    OutboxWakeup wakeup = storage.outboxWakeup();
    assertThat(outbox.store().wakeup()).containsSame(wakeup);
    Await.until(Duration.ofSeconds(10), "the relay subscribed", () -> wakeup.subscribers() >= 1);
    for (int i = 0; i < 3; i++) {
      String id = AbstractOutboxTransactionTest.unique("o");
      long before = wakeup.wakes();
      service.place(id, false);
      assertThat(wakeup.wakes()).isEqualTo(before + 1);
      Await.until(Duration.ofSeconds(10), "order " + id + " published", () -> sent(id) == 1);
    }
    String a = AbstractOutboxTransactionTest.unique("o");
    String b = AbstractOutboxTransactionTest.unique("o");
    long before = wakeup.wakes();
    tx.executeWithoutResult(s -> {
      service.place(a, false);
      service.place(b, false);
    });
    assertThat(wakeup.wakes()).isEqualTo(before + 1);
    Await.until(Duration.ofSeconds(10), "both published", () -> sent(a) + sent(b) == 2);
    assertThat(relay.wokenClaims()).isGreaterThanOrEqualTo(1);
  }

  @Test
  @DisplayName("a rolled-back transaction fires no wake")
  void rollbackDoesNotWake() {
    OutboxWakeup wakeup = storage.outboxWakeup();
    long before = wakeup.wakes();
    String id = AbstractOutboxTransactionTest.unique("o");
    assertThatThrownBy(() -> service.place(id, true)).isInstanceOf(IllegalStateException.class);
    assertThat(wakeup.wakes()).isEqualTo(before);
  }
}
