package io.relaykit.test.spring.jpa;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.message.Message;
import io.relaykit.test.TestRelayKit;
import io.relaykit.test.spring.RelaykitTest;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;

/** The JPA variant, written with {@link RelaykitTest} only, on the JDBC storage (H2). */
@SpringBootTest(classes = JpaSampleApp.class, properties = {
    "spring.datasource.url=jdbc:h2:mem:jpa-sample-${random.uuid};DB_CLOSE_DELAY=-1",
    "spring.jpa.open-in-view=false", "relaykit.storage=h2",
    "relaykit.h2.table-prefix=rk_jpa_sample_", "relaykit.retry.max-attempts=2",
    "relaykit.retry.initial-backoff=1ms", "relaykit.retry.max-backoff=1ms"})
@RelaykitTest
class JpaSampleAppTest {
  static final Duration WAIT = Duration.ofSeconds(10);

  @Autowired TestRelayKit relaykit;
  @Autowired JpaSampleApp.Shipping shipping;
  @Autowired Shipments shipments;

  @Test
  @DisplayName("a saved shipment publishes one message, handled once after a retry")
  void commitDeliversOnce() {
    String id = "s-" + UUID.randomUUID();
    relaykit.failNext("tracking", 1);
    shipping.ship(id, "1 Main St");

    assertThat(relaykit.awaitHandled("tracking", id, WAIT).attempt()).isEqualTo(2);
    relaykit.awaitOutboxDrained(WAIT);
    assertThat(relaykit.published("shipments")).extracting(Message::id).containsExactly(id);
    assertThat(shipments.existsById(id)).isTrue();
  }

  @Test
  @DisplayName("a failure after save and append publishes nothing and keeps no entity")
  void rollbackDeliversNothing() {
    String id = "s-" + UUID.randomUUID();
    assertThatThrownBy(() -> shipping.shipThenFail(id, "2 Main St"))
        .hasMessageContaining("carrier refused");
    String next = "s-" + UUID.randomUUID();
    shipping.ship(next, "3 Main St");

    relaykit.awaitHandled("tracking", next, WAIT);
    relaykit.awaitOutboxDrained(WAIT);
    assertThat(relaykit.published("shipments")).extracting(Message::id).containsExactly(next);
    assertThat(shipments.existsById(id)).isFalse();
  }

  @Test
  @DisplayName("a delivery failing past the limit is a dead letter of the group")
  void deadLetter() {
    String id = "s-" + UUID.randomUUID();
    relaykit.failNext("tracking", 2);
    shipping.ship(id, "4 Main St");
    assertThat(relaykit.awaitDeadLetters("tracking", 1, WAIT)).singleElement()
        .satisfies(d -> {
          assertThat(d.messageId()).isEqualTo(id);
          assertThat(d.attempts()).isEqualTo(2);
        });
  }
}
