package io.relaykit.spring.boot.sample;

import io.relaykit.message.Message;
import io.relaykit.spring.boot.RelaykitListener;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Ships each placed order once. The listener is idempotent by the business key {@code
 * ship:<order id>} (the message may be delivered twice, or republished with another id); the
 * shipment's primary key is the order id, so even a takeover after a lapsed lease cannot write a
 * second row ({@code ON CONFLICT DO NOTHING}). Messages of other types are noted, not shipped;
 * each has its own business key.
 */
public class ShipmentListener {

  private final JdbcTemplate jdbc;
  private final SampleSchema schema;
  final List<String> noted = new CopyOnWriteArrayList<>();
  /** Every run of the shipping effect, by order id: what the idempotent listener keeps at one. */
  final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();

  /**
   * The listener.
   *
   * @param jdbc the application's database
   * @param schema the table names
   */
  public ShipmentListener(JdbcTemplate jdbc, SampleSchema schema) {
    this.jdbc = jdbc;
    this.schema = schema;
  }

  /**
   * Writes the order's shipment.
   *
   * @param m an order event
   */
  @RelaykitListener(destination = "${sample.destination:sample-orders}",
      group = "${sample.group:shipping}", idempotent = true,
      idempotencyKey = "type == 'order.placed' ? 'ship:' + key : 'note:' + id")
  public void ship(Message m) {
    if (!m.type().equals("order.placed")) {
      noted.add(m.id());
      return;
    }
    String orderId = m.key().orElseThrow(() -> new IllegalArgumentException("order.placed "
        + m.id() + " has no key"));
    runs.computeIfAbsent(orderId, k -> new AtomicInteger()).incrementAndGet();
    jdbc.update("INSERT INTO " + schema.shipments + " (order_id, message_id) VALUES (?, ?)"
        + " ON CONFLICT DO NOTHING", orderId, m.id());
  }
}
