package io.relaykit.spring.boot.sample;

import io.relaykit.message.Message;
import io.relaykit.spring.boot.TransactionalOutbox;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.function.Predicate;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.annotation.Transactional;

/**
 * Places an order: the order row and its {@code order.placed} outbox message in one transaction,
 * so either both commit (and the relay publishes the message) or neither does.
 */
public class CheckoutService {

  /** A test hook: a predicate on the sku that makes the placement fail after both writes. */
  public interface Fault extends Predicate<String> {}

  private final JdbcTemplate jdbc;
  private final TransactionalOutbox outbox;
  private final SampleSchema schema;
  private final String destination;
  private final Predicate<String> fault;

  /**
   * The service.
   *
   * @param jdbc the application's database
   * @param outbox relaykit's outbox, joining this service's transactions
   * @param schema the table names
   * @param destination where order events go
   * @param fault an optional fault to inject (tests)
   */
  public CheckoutService(JdbcTemplate jdbc, TransactionalOutbox outbox, SampleSchema schema,
      @Value("${sample.destination:sample-orders}") String destination,
      ObjectProvider<Fault> fault) {
    this.jdbc = jdbc;
    this.outbox = outbox;
    this.schema = schema;
    this.destination = destination;
    this.fault = fault.getIfAvailable(() -> sku -> false)::test;
  }

  /**
   * The id of the message announcing {@code orderId}: derived, so a republish has the same id.
   *
   * @param orderId the order
   * @return the message id
   */
  public static String messageId(String orderId) {
    return "placed-" + orderId;
  }

  /**
   * Writes the order and appends its message, in the caller's or a new transaction.
   *
   * @param idempotencyKey the client's key (unique per order: the final guard)
   * @param sku the product
   * @param qty how many
   * @return the new order's id
   * @throws IllegalStateException when the injected fault fires (after both writes: they roll
   *     back)
   */
  @Transactional
  public String place(String idempotencyKey, String sku, int qty) {
    String id = UUID.randomUUID().toString();
    jdbc.update("INSERT INTO " + schema.orders + " (id, idempotency_key, sku, qty) VALUES (?, ?, ?,"
        + " ?)", id, idempotencyKey, sku, qty);
    outbox.append(destination, placed(id, sku, qty));
    if (fault.test(sku)) {
      throw new IllegalStateException("injected failure placing " + sku);
    }
    return id;
  }

  /**
   * The {@code order.placed} message of an order.
   *
   * @param orderId the order
   * @param sku the product
   * @param qty how many
   * @return the message, keyed by the order id
   */
  public static Message placed(String orderId, String sku, int qty) {
    return Message.builder().id(messageId(orderId)).type("order.placed").key(orderId)
        .payload("{\"orderId\":\"" + orderId + "\",\"sku\":\"" + sku + "\",\"qty\":" + qty + "}")
        .build();
  }

  /**
   * An order and whether it shipped.
   *
   * @param id the order id
   * @return {@code orderId, sku, qty, shipped}, or empty if there is no such order
   */
  public Optional<Map<String, Object>> find(String id) {
    return jdbc.query("SELECT o.id, o.sku, o.qty, s.order_id FROM " + schema.orders + " o LEFT JOIN "
        + schema.shipments + " s ON s.order_id = o.id WHERE o.id = ?",
        rs -> rs.next() ? Optional.of(Map.<String, Object>of("orderId", rs.getString(1),
            "sku", rs.getString(2), "qty", rs.getInt(3), "shipped", rs.getString(4) != null))
            : Optional.<Map<String, Object>>empty(), id);
  }
}
