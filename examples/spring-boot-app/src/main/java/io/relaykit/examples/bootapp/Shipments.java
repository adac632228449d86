package io.relaykit.examples.bootapp;

import io.relaykit.retry.PermanentFailureException;
import io.relaykit.spring.boot.RelaykitListener;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.stereotype.Component;

/**
 * Receives {@link OrderPlaced} events and counts each delivery by order id. An order for a
 * recalled product ({@link #RECALLED}) can never ship: its event fails with a {@link
 * PermanentFailureException}, which relaykit dead-letters at once (no retries), logs as one WARN
 * line and lists in the actuator endpoint {@code /actuator/relaykitdeadletters}.
 */
@Component
public class Shipments {
  /** Products that can no longer be shipped: SKUs with this prefix. */
  public static final String RECALLED = "recalled-";

  private final Map<String, AtomicInteger> deliveries = new ConcurrentHashMap<>();

  /**
   * Ships one order.
   *
   * @param order the event, decoded from the message's JSON
   * @throws PermanentFailureException if the product is recalled (the event is dead-lettered)
   */
  @RelaykitListener(destination = "${app.destination:orders}", group = "${app.group:shipping}")
  public void onOrder(OrderPlaced order) {
    if (order.sku().startsWith(RECALLED)) {
      throw new PermanentFailureException("order " + order.orderId() + ": product " + order.sku()
          + " is recalled and cannot be shipped");
    }
    deliveries.computeIfAbsent(order.orderId(), id -> new AtomicInteger()).incrementAndGet();
  }

  /**
   * How many times the order {@code orderId} was delivered.
   *
   * @param orderId an order id
   * @return the count, 0 when never
   */
  public int deliveries(String orderId) {
    AtomicInteger n = deliveries.get(orderId);
    return n == null ? 0 : n.get();
  }
}
