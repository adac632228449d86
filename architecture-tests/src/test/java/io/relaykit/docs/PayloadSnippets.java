package io.relaykit.docs;

// tag::plain-java[]
import io.relaykit.codec.PayloadCodec;
import io.relaykit.codec.PayloadTypes;
import io.relaykit.codec.Payloads;
import io.relaykit.jackson.JacksonJsonCodec;
import io.relaykit.message.MessageHandler;
import io.relaykit.outbox.InMemoryOutboxStore;
import io.relaykit.outbox.TypedOutbox;
import io.relaykit.storage.jdbc.JdbcOutboxStore;
import java.sql.Connection;
// end::plain-java[]
import java.sql.SQLException;

/** docs/payloads.md. */
final class PayloadSnippets {
  private PayloadSnippets() {}

  /** An event family: a listener of {@code OrderEvent} receives each subtype. */
  sealed interface OrderEvent permits OrderPlaced, OrderCancelled {}

  record OrderPlaced(String orderId, long cents) implements OrderEvent {}

  record OrderCancelled(String orderId) implements OrderEvent {}

  record Order(String id, long cents) {}

  static MessageHandler plainJava(PayloadCodec avroCodec, InMemoryOutboxStore inMemoryOutboxStore,
      JdbcOutboxStore jdbcOutboxStore, Connection connection, Order order) throws SQLException {
    // tag::plain-java[]
    Payloads payloads = Payloads.builder()
        .defaultCodec(new JacksonJsonCodec())
        .destination("audit", avroCodec)                   // optional: a codec per destination
        .types(new PayloadTypes().register("order.placed", OrderPlaced.class)) // optional
        .build();

    // Appending: an in-memory outbox, or any store whose append takes (destination, message).
    TypedOutbox outbox = TypedOutbox.of(inMemoryOutboxStore, payloads);
    outbox.append("orders", order.id(), new OrderPlaced(order.id(), 1250));

    // JDBC outbox, in your transaction:
    jdbcOutboxStore.append(connection, "orders",
        payloads.message("orders", order.id(), new OrderPlaced(order.id(), 1250)));

    // Handling:
    MessageHandler handler = delivery -> {
      OrderEvent event = payloads.decode(delivery.message(), "orders", OrderEvent.class);
      System.out.println("received " + event);
    };
    // end::plain-java[]
    return handler;
  }
}
