package io.relaykit.spring.jpa;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.spring.boot.TransactionalOutbox;
import io.relaykit.tck.Await;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.dao.DataIntegrityViolationException;
import org.springframework.orm.jpa.JpaTransactionManager;
import org.springframework.transaction.PlatformTransactionManager;

/**
 * Spring Data JPA (Hibernate) and the outbox in one {@code @Transactional}: the append runs on the
 * transaction's own connection, so the entity and the message commit or roll back together, and
 * the relay delivers what committed exactly once.
 */
abstract class AbstractJpaOutboxTest {
  static final Duration WAIT = Duration.ofSeconds(20);

  /**
   * The auto-configurations these tests keep off (the starter's test resources also exclude JPA,
   * for every other test application).
   */
  static final String EXCLUDE = "org.springframework.boot.security.autoconfigure"
      + ".SecurityAutoConfiguration,org.springframework.boot.security.autoconfigure"
      + ".UserDetailsServiceAutoConfiguration,org.springframework.boot.security.autoconfigure"
      + ".actuate.web.servlet.ManagementWebSecurityAutoConfiguration,"
      + "org.springframework.boot.security.autoconfigure.web.servlet"
      + ".SecurityFilterAutoConfiguration,org.springframework.boot.security.autoconfigure.web"
      + ".servlet.ServletWebSecurityAutoConfiguration";

  static String unique(String base) {
    return base + "_" + UUID.randomUUID().toString().replace("-", "").substring(0, 10);
  }

  @Autowired JpaApp.Checkout checkout;
  @Autowired JpaApp.Shipping shipping;
  @Autowired JpaOrders orders;
  @Autowired TransactionalOutbox outbox;
  @Autowired PlatformTransactionManager transactions;
  @Value("${relaykit.h2.table-prefix}") String prefix;

  /** Waits until the outbox holds nothing unsent and {@code fence} was handled. */
  private void settle(String fence) {
    Await.until(WAIT, fence + " handled", () -> shipping.handled.contains(fence));
    Await.until(WAIT, "the outbox drained",
        () -> outbox.store().stats(Instant.now()).unsent() == 0);
  }

  private long handled(String id) {
    return shipping.handled.stream().filter(id::equals).count();
  }

  /** A committed order whose handling proves the relay went past everything appended before. */
  private void fence(String id) {
    checkout.placeFlushed(id);
    settle(id);
  }

  @Test
  @DisplayName("the transaction manager is JPA's: the test runs the path it claims")
  void jpaTransactionManager() {
    assertThat(transactions).isInstanceOf(JpaTransactionManager.class);
  }

  @Test
  @DisplayName("saveAndFlush and append commit together: delivered exactly once")
  void commitDeliversOnce() {
    String id = unique("flushed");
    checkout.placeFlushed(id);

    Await.until(WAIT, id + " handled", () -> handled(id) == 1);
    fence(unique("fence"));
    assertThat(handled(id)).as("deliveries of " + id).isEqualTo(1);
    assertThat(orders.existsById(id)).isTrue();
  }

  @Test
  @DisplayName("persist without flush: Hibernate writes the entity at commit, after the outbox"
      + " row; both commit, delivered once")
  void unflushedEntityCommitsWithTheMessage() {
    String id = unique("unflushed");
    checkout.placeUnflushed(id);

    Await.until(WAIT, id + " handled", () -> handled(id) == 1);
    fence(unique("fence"));
    assertThat(handled(id)).isEqualTo(1);
    assertThat(orders.existsById(id)).isTrue();
  }

  @Test
  @DisplayName("an exception after the append rolls back entity and message: nothing delivered")
  void exceptionAfterTheAppendDeliversNothing() {
    String id = unique("failed");
    assertThatThrownBy(() -> checkout.placeThenFail(id))
        .hasMessageContaining("payment declined after the append");

    fence(unique("fence"));
    assertThat(handled(id)).isZero();
    assertThat(orders.existsById(id)).isFalse();
  }

  @Test
  @DisplayName("an entity INSERT that fails at the commit's flush, after the append, rolls the"
      + " message back with it (the flush-mode case JDBC code never meets)")
  void failingFlushAtCommitDeliversNothing() {
    String taken = unique("taken");
    checkout.placeFlushed(taken);
    settle(taken);
    // Same id again, persisted without a flush: the duplicate key only shows at commit, when the
    // outbox row is already written in the transaction.
    assertThatThrownBy(() -> checkout.placeUnflushed(taken))
        .isInstanceOf(DataIntegrityViolationException.class);

    fence(unique("fence"));
    assertThat(handled(taken)).as("the first order's message only").isEqualTo(1);
  }

  @Test
  @DisplayName("the append uses the transaction's connection under Hibernate: the same connection"
      + " object, its row visible inside and invisible outside until the commit")
  void appendUsesHibernatesConnection() {
    String id = unique("look");
    JpaApp.Seen seen = checkout.placeAndLook(id, prefix + "outbox");

    assertThat(seen.spring()).as("DataSourceUtils' connection is Hibernate's")
        .isSameAs(seen.hibernate());
    assertThat(seen.inTransaction()).as("the outbox row, seen through Hibernate").isEqualTo(1);
    assertThat(seen.outside()).as("the outbox row, seen from another connection before commit")
        .isZero();
    Await.until(WAIT, id + " handled", () -> handled(id) == 1);
  }
}
