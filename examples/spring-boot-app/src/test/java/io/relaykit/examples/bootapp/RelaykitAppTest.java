package io.relaykit.examples.bootapp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.message.Message;
import io.relaykit.test.TestRelayKit;
import io.relaykit.test.spring.RelaykitTest;
import java.time.Duration;
import java.util.List;
import java.util.function.Predicate;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.dao.DataAccessException;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.transaction.support.TransactionTemplate;
// tag::relaykit-test[]
import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.message.Message;
import io.relaykit.test.TestRelayKit;
import io.relaykit.test.spring.RelaykitTest;
import java.time.Duration;
import java.util.function.Predicate;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.transaction.support.TransactionTemplate;
// end::relaykit-test[]

/**
 * The application's tests, written with relaykit's test support only ({@code @RelaykitTest} and
 * {@link TestRelayKit}; see docs/testing.md): placing an order publishes one {@code order.placed}
 * ({@link OrderPlaced}, keyed by the order id) and {@link Shipments} handles it once; a listener failing twice is retried; one failing past
 * {@code relaykit.retry.max-attempts} is a dead letter; a transaction that rolls back, or fails
 * after its append, delivers nothing. Each runs through {@link Orders} (JdbcTemplate) and
 * {@link JpaOrders} (Spring Data JPA). The subclasses pick the database; the tests of a subclass
 * share one application context, closed after the class.
 */
// tag::relaykit-test[]
@SpringBootTest(classes = BootApp.class, webEnvironment = SpringBootTest.WebEnvironment.NONE,
    properties = {"relaykit.retry.max-attempts=3", "relaykit.retry.initial-backoff=1ms",
        "relaykit.retry.max-backoff=1ms",
        // spring-boot-starter-opentelemetry (test scope) would push metrics to localhost:4318.
        "management.otlp.metrics.export.enabled=false"})
@RelaykitTest
@DirtiesContext(classMode = DirtiesContext.ClassMode.AFTER_CLASS)
abstract class RelaykitAppTest {
  static final Duration WAIT = Duration.ofSeconds(20);
  /** A SKU the orders tables refuse (their column holds 64 characters). */
  static final String TOO_LONG = "x".repeat(65);

  @Autowired TestRelayKit relaykit;
  @Autowired Orders orders;
  @Autowired JpaOrders jpaOrders;
  @Autowired PlacedOrders placedOrders;
  @Autowired Shipments shipments;
  @Autowired TransactionTemplate tx;

  /** The order's event: its key is the order id. */
  static Predicate<Message> byKey(String orderId) {
    return m -> m.key().filter(orderId::equals).isPresent();
  }

  @Test
  @DisplayName("placing an order publishes one order.placed and Shipments handles it once")
  void publishAndHandle() {
    String id = orders.place("book");

    assertThat(relaykit.awaitHandled("shipping", byKey(id), WAIT).attempt()).isEqualTo(1);
    relaykit.awaitOutboxDrained(WAIT);
    assertThat(relaykit.published("orders")).extracting(m -> m.key().orElse(null)).containsExactly(id);
    assertThat(relaykit.published("orders", Message::type)).containsExactly("order.placed");
    assertThat(orders.count(id)).isEqualTo(1);
    assertThat(shipments.deliveries(id)).isEqualTo(1);
  }

  @Test
  @DisplayName("a listener failing twice is retried (relaykit.retry.*); the third attempt handles")
  void retry() {
    relaykit.failNext("shipping", 2);
    String id = orders.place("book");

    assertThat(relaykit.awaitHandled("shipping", byKey(id), WAIT).attempt()).isEqualTo(3);
    assertThat(relaykit.deadLetters("shipping")).isEmpty();
    assertThat(shipments.deliveries(id)).isEqualTo(1);
  }
  // end::relaykit-test[]

  @Test
  @DisplayName("a listener failing past relaykit.retry.max-attempts is a dead letter of its group")
  void deadLetter() {
    relaykit.failNext("shipping", 3);
    String id = orders.place("book");

    DeadLetter dead = relaykit.awaitDeadLetters("shipping", 1, WAIT).get(0);
    assertThat(dead.message().key()).contains(id);
    assertThat(dead.attempts()).isEqualTo(3);
    assertThat(relaykit.handled("shipping")).isEmpty();
    assertThat(shipments.deliveries(id)).isZero();
  }

  @Test
  @DisplayName("a batch the database refuses after appending its first order delivers nothing")
  void failureAfterAppendDeliversNothing() {
    assertThatThrownBy(() -> orders.placeAll(List.of("book", TOO_LONG)))
        .isInstanceOf(DataAccessException.class);
    String next = orders.place("pen");

    relaykit.awaitHandled("shipping", byKey(next), WAIT);
    relaykit.awaitOutboxDrained(WAIT);
    assertThat(relaykit.published("orders")).extracting(m -> m.key().orElse(null)).containsExactly(next);
    assertThat(relaykit.handled("shipping")).hasSize(1);
  }

  @Test
  @DisplayName("JPA: a saved entity and its message commit together and are delivered once")
  void jpaCommitDeliversOnce() {
    String id = jpaOrders.place("book");

    assertThat(relaykit.awaitHandled("shipping", byKey(id), WAIT).attempt()).isEqualTo(1);
    relaykit.awaitOutboxDrained(WAIT);
    assertThat(relaykit.published("orders")).extracting(m -> m.key().orElse(null)).containsExactly(id);
    assertThat(placedOrders.findById(id)).get().extracting(PlacedOrder::getSku)
        .isEqualTo("book");
    assertThat(shipments.deliveries(id)).isEqualTo(1);
  }

  @Test
  @DisplayName("JPA: a transaction rolled back after save and append keeps and delivers nothing")
  void jpaRollbackDeliversNothing() {
    String rolledBack = tx.execute(status -> {
      String id = jpaOrders.place("book");
      status.setRollbackOnly();
      return id;
    });
    String next = jpaOrders.place("pen");

    relaykit.awaitHandled("shipping", byKey(next), WAIT);
    relaykit.awaitOutboxDrained(WAIT);
    assertThat(relaykit.published("orders")).extracting(m -> m.key().orElse(null)).containsExactly(next);
    assertThat(placedOrders.existsById(rolledBack)).isFalse();
    assertThat(shipments.deliveries(rolledBack)).isZero();
  }

  @Test
  @DisplayName("JPA: an entity the database refuses at the commit's flush, after the append,"
      + " takes the appended message with it")
  void jpaFlushFailureAfterAppendDeliversNothing() {
    // Hibernate writes the entity when it flushes at commit: after the append, which ran on the
    // same connection, so the refused row rolls the message back too.
    assertThatThrownBy(() -> jpaOrders.place(TOO_LONG)).isInstanceOf(DataAccessException.class);
    String next = jpaOrders.place("pen");

    relaykit.awaitHandled("shipping", byKey(next), WAIT);
    relaykit.awaitOutboxDrained(WAIT);
    assertThat(relaykit.published("orders")).extracting(m -> m.key().orElse(null)).containsExactly(next);
    assertThat(relaykit.handled("shipping")).hasSize(1);
  }
}
