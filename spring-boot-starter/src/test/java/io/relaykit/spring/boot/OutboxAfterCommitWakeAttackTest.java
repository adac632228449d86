package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.outbox.OutboxWakeup;
import io.relaykit.storage.jdbc.JdbcStorage;
import io.relaykit.tck.Await;
import java.time.Duration;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Transaction shapes around the starter's afterCommit wake: a REQUIRES_NEW transaction inside one
 * that already appended, and an outer transaction marked rollback-only.
 */
@SpringBootTest(classes = TestApp.class)
@DisplayName("Spring: afterCommit wakes under nested and rollback-only transactions")
class OutboxAfterCommitWakeAttackTest {
  static final String DB = AbstractOutboxTransactionTest.unique("h2");
  static final String PREFIX = AbstractOutboxTransactionTest.unique("rk") + "_";
  static final String DEST = "orders";

  @DynamicPropertySource
  static void props(DynamicPropertyRegistry r) {
    r.add("spring.datasource.url", () -> "jdbc:h2:mem:" + DB + ";DB_CLOSE_DELAY=-1");
    r.add("relaykit.storage", () -> "jdbc");
    r.add("relaykit.relay.poll-interval", () -> "30s");
    r.add("relaykit.jdbc.table-prefix", () -> PREFIX);
    r.add("test.orders-table", () -> AbstractOutboxTransactionTest.unique("orders"));
  }

  @Autowired JdbcTemplate jdbc;
  @Autowired JdbcStorage storage;
  @Autowired TransactionalOutbox outbox;
  @Autowired PlatformTransactionManager txManager;

  private int sent(String key) {
    return jdbc.queryForObject("SELECT COUNT(*) FROM " + PREFIX + "outbox WHERE msg_key = ?"
        + " AND state = 1", Integer.class, key);
  }

  @Test
  @DisplayName("a REQUIRES_NEW transaction that commits inside one that already appended wakes"
      + " the relay at its own commit, while the outer one is still open")
  void requiresNewInsideAppendingTransaction() {
    OutboxWakeup wakeup = storage.outboxWakeup();
    Await.until(Duration.ofSeconds(10), "the relay subscribed", () -> wakeup.subscribers() >= 1);
    TransactionTemplate outer = new TransactionTemplate(txManager);
    TransactionTemplate inner = new TransactionTemplate(txManager);
    inner.setPropagationBehavior(TransactionDefinition.PROPAGATION_REQUIRES_NEW);
    String innerKey = AbstractOutboxTransactionTest.unique("inner");
    String outerKey = AbstractOutboxTransactionTest.unique("outer");
    long before = wakeup.wakes();
    outer.executeWithoutResult(s -> {
      outbox.append(DEST, outerKey, "o");
      inner.executeWithoutResult(s2 -> outbox.append(DEST, innerKey, "i"));
      assertThat(wakeup.wakes()).as("wakes after the inner commit").isEqualTo(before + 1);
      Await.until(Duration.ofSeconds(10), "the inner row published", () -> sent(innerKey) == 1);
    });
    assertThat(wakeup.wakes()).isEqualTo(before + 2);
    Await.until(Duration.ofSeconds(10), "the outer row published", () -> sent(outerKey) == 1);
  }

  @Test
  @DisplayName("an outer transaction marked rollback-only fires no wake and publishes nothing")
  void rollbackOnlyDoesNotWake() {
    OutboxWakeup wakeup = storage.outboxWakeup();
    long before = wakeup.wakes();
    String key = AbstractOutboxTransactionTest.unique("ro");
    new TransactionTemplate(txManager).executeWithoutResult(s -> {
      outbox.append(DEST, key, "x");
      s.setRollbackOnly();
    });
    assertThat(wakeup.wakes()).isEqualTo(before);
    assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM " + PREFIX + "outbox WHERE msg_key = ?",
        Integer.class, key)).isZero();
  }
}
