package io.relaykit.test.spring.sample;

import io.relaykit.message.Message;
import io.relaykit.retry.PermanentFailureException;
import io.relaykit.spring.boot.RelaykitListener;
import io.relaykit.spring.boot.TransactionalOutbox;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/**
 * A small application as a user writes one: an order and its OrderPlaced message in one
 * transaction, and a listener that sends one SMS per order.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
@Import({SampleApp.Orders.class, SampleApp.Sms.class})
public class SampleApp {

  /** Places orders: a row and a message, in one transaction. */
  @Service
  public static class Orders {
    private final JdbcTemplate jdbc;
    private final TransactionalOutbox outbox;

    public Orders(JdbcTemplate jdbc, TransactionalOutbox outbox) {
      this.jdbc = jdbc;
      this.outbox = outbox;
      jdbc.execute("CREATE TABLE IF NOT EXISTS sample_orders (id VARCHAR(64) PRIMARY KEY,"
          + " sku VARCHAR(64))");
    }

    @Transactional
    public void place(String id, String sku) {
      jdbc.update("INSERT INTO sample_orders (id, sku) VALUES (?, ?)", id, sku);
      outbox.append("orders", Message.builder().id(id).type("order.placed").key(id)
          .payload("{\"id\":\"" + id + "\",\"sku\":\"" + sku + "\"}").build());
    }

    @Transactional
    public void placeThenFail(String id, String sku) {
      place(id, sku);
      throw new IllegalStateException("payment declined");
    }

    public int count(String id) {
      return jdbc.queryForObject("SELECT COUNT(*) FROM sample_orders WHERE id = ?",
          Integer.class, id);
    }
  }

  /** Sends one SMS per order; the SKU "POISON" can never be sent. */
  @Component
  public static class Sms {
    public final List<String> sent = new CopyOnWriteArrayList<>();

    @RelaykitListener(destination = "orders", group = "sms")
    public void send(Message order) {
      if (order.payloadUtf8().contains("\"sku\":\"POISON\"")) {
        throw new PermanentFailureException("no SMS for a poison SKU");
      }
      sent.add(order.id());
    }
  }
}
