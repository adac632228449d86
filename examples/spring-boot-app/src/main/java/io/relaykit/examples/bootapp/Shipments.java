package io.relaykit.examples.bootapp;

import io.relaykit.message.Message;
import io.relaykit.spring.boot.RelaykitListener;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.stereotype.Component;

/** Receives order messages and counts each delivery by message id. */
@Component
public class Shipments {
  private final Map<String, AtomicInteger> deliveries = new ConcurrentHashMap<>();

  /**
   * Records one delivery.
   *
   * @param m an order message
   */
  @RelaykitListener(destination = "${app.destination:orders}", group = "${app.group:shipping}")
  public void onOrder(Message m) {
    deliveries.computeIfAbsent(m.id(), id -> new AtomicInteger()).incrementAndGet();
  }

  /**
   * How many times the message {@code id} was delivered.
   *
   * @param id a message id
   * @return the count, 0 when never
   */
  public int deliveries(String id) {
    AtomicInteger n = deliveries.get(id);
    return n == null ? 0 : n.get();
  }
}
