package io.relaykit.docs;

// tag::jdbc-outbox[]
import io.relaykit.message.Message;
import io.relaykit.spring.boot.TransactionalOutbox;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;
// end::jdbc-outbox[]
// tag::listener[]
import io.relaykit.message.Message;
import io.relaykit.spring.boot.RelaykitListener;
import org.springframework.stereotype.Component;
// end::listener[]
// tag::typed[]
import io.relaykit.message.Message;
import io.relaykit.spring.boot.RelaykitListener;
import io.relaykit.spring.boot.TransactionalOutbox;
import org.springframework.transaction.annotation.Transactional;
// end::typed[]

/** docs/spring-boot.md and docs/payloads.md. */
final class SpringBootSnippets {
  private SpringBootSnippets() {}

  sealed interface OrderEvent permits OrderPlaced, OrderCancelled {}

  record OrderPlaced(String orderId, long cents) implements OrderEvent {}

  record OrderCancelled(String orderId) implements OrderEvent {}

  record Order(String id, long cents) {}

  interface OrderRows {
    void save(Order order);
  }

  static class TypedOrders {
    private final OrderRows orders;
    private final TransactionalOutbox outbox;

    TypedOrders(OrderRows orders, TransactionalOutbox outbox) {
      this.orders = orders;
      this.outbox = outbox;
    }

    // tag::typed[]
    @Transactional
    public void place(Order order) {
      orders.save(order);
      outbox.append("orders", order.id(), new OrderPlaced(order.id(), order.cents()));
    }

    @RelaykitListener(destination = "orders", group = "billing")
    void on(OrderPlaced event) {
      System.out.println("bill " + event.orderId() + ": " + event.cents());
    }

    // One method for a family of types: each message arrives as the subtype its type names.
    @RelaykitListener(destination = "orders", group = "audit")
    void on(OrderEvent event, Message message) {
      if (event instanceof OrderPlaced placed) {
        System.out.println("placed " + placed.orderId() + " as message " + message.id());
      } else if (event instanceof OrderCancelled cancelled) {
        System.out.println("cancelled " + cancelled.orderId());
      }
    }
    // end::typed[]
  }
}

/** The application's SMS client. */
interface SmsGateway {
  void send(String text);
}

// tag::jdbc-outbox[]
@Service
class OrderService {
  private final JdbcTemplate jdbc;
  private final TransactionalOutbox outbox;

  OrderService(JdbcTemplate jdbc, TransactionalOutbox outbox) {
    this.jdbc = jdbc;
    this.outbox = outbox;
  }

  @Transactional
  public void place(String orderId, String json) {
    jdbc.update("INSERT INTO orders(id, body) VALUES (?, ?)", orderId, json);
    outbox.append("orders", Message.builder().id(orderId).type("order.placed").key(orderId)
        .payload(json).build());
  }
}
// end::jdbc-outbox[]

// tag::listener[]
@Component
class Sms {
  private final SmsGateway gateway;

  Sms(SmsGateway gateway) {
    this.gateway = gateway;
  }

  @RelaykitListener(destination = "orders", group = "sms", idempotent = true,
      idempotencyKey = "hasKey ? key : id")   // kept per group
  void send(Message order) {
    gateway.send(order.payloadUtf8());   // returns: acked; throws: retried, then dead-lettered
  }
}
// end::listener[]
