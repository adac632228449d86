package quickstart;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.relaykit.message.Message;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.test.RelayKitExtension;
import io.relaykit.test.TestRelayKit;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
// tag::test[]
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.relaykit.message.Message;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.test.RelayKitExtension;
import io.relaykit.test.TestRelayKit;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
// end::test[]

/**
 * The quick start's outbox, tested as an application would test it: with relaykit-test (docs/testing.md),
 * on H2, the relay and the in-process transport run by the extension.
 */
class OutboxWithRelayKitTest {
  // tag::test[]
  @RegisterExtension
  final RelayKitExtension relaykit = RelayKitExtension.h2();

  @Test
  void aCommittedOrderIsBilledOnceEvenAfterAFailure() throws Exception {
    List<String> billed = new CopyOnWriteArrayList<>();
    relaykit.subscribe(SubscriptionSpec.builder("orders", "billing")
            .retryPolicy(TestRelayKit.fastRetries(3)).build(),
        TestRelayKit.failingFirst(1, delivery -> billed.add(delivery.message().id())));

    try (Connection tx = relaykit.dataSource().getConnection();
        Statement sql = tx.createStatement()) {
      sql.execute("CREATE TABLE orders (id VARCHAR(64) PRIMARY KEY)");
      tx.setAutoCommit(false);
      sql.execute("INSERT INTO orders VALUES ('order-42')");
      relaykit.jdbcOutbox().append(tx, "orders", Message.builder().id("order-42")
          .type("order.placed").key("order-42").payload("{\"id\":42}").build());
      tx.commit();
    }

    TestRelayKit kit = relaykit.kit();
    assertEquals(2, kit.awaitHandled("billing", "order-42", Duration.ofSeconds(10)).attempt());
    kit.awaitOutboxDrained(Duration.ofSeconds(10));
    assertEquals(List.of("order-42"), billed);
    assertEquals(1, kit.published("orders").size());
    assertTrue(kit.deadLetters("billing").isEmpty());
  }
  // end::test[]
}
