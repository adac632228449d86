// tag::hello-outbox[]
package quickstart;

import io.relaykit.inprocess.InProcessTransport;
import io.relaykit.message.Message;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.storage.jdbc.JdbcStorage;
import io.relaykit.storage.jdbc.JdbcStorageConfig;
import java.sql.Connection;
import java.sql.Statement;
import java.time.InstantSource;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

public final class HelloOutbox {
  public static void main(String[] args) throws Exception {
    CountDownLatch shipped = new CountDownLatch(1);
    try (JdbcStorage storage = JdbcStorage.open(JdbcStorageConfig.builder()
            .jdbcUrl("jdbc:h2:mem:shop")   // or jdbc:postgresql://127.0.0.1:5432/shop
            .build(), InstantSource.system());
        InProcessTransport transport = InProcessTransport.create()) {   // or Kafka, RabbitMQ

      // A consumer: returning acknowledges, throwing retries and then dead-letters.
      transport.subscribe(SubscriptionSpec.builder("orders", "shipping").build(), delivery -> {
        Message order = delivery.message();
        System.out.println("shipping " + order.key().orElseThrow() + ": " + order.payloadUtf8());
        shipped.countDown();
      });

      // Your business write and the message commit in one transaction, or neither does.
      try (Connection tx = storage.dataSource().getConnection()) {
        tx.setAutoCommit(false);
        try (Statement sql = tx.createStatement()) {
          sql.execute("CREATE TABLE IF NOT EXISTS orders (id VARCHAR(64) PRIMARY KEY)");
          sql.execute("INSERT INTO orders (id) VALUES ('order-42')");
        }
        storage.outboxStore().append(tx, "orders", Message.builder()
            .type("order.placed").key("order-42").payload("{\"id\":42}").build());
        tx.commit();
      }

      // The relay publishes committed rows and marks them sent after the transport's confirm.
      try (OutboxRelay relay = OutboxRelay.builder(storage.outboxStore(), transport,
          storage.deadLetterStore()).build()) {
        relay.start();
        if (!shipped.await(10, TimeUnit.SECONDS)) {
          throw new IllegalStateException("order-42 was not delivered within 10 s");
        }
      }
    }
  }
}
// end::hello-outbox[]
