package io.relaykit.examples.bootapp;

import io.relaykit.spring.boot.TransactionalOutbox;
import java.util.UUID;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;
// tag::jpa-outbox[]
import io.relaykit.spring.boot.TransactionalOutbox;
import java.util.UUID;
import org.springframework.transaction.annotation.Transactional;
// end::jpa-outbox[]

/**
 * {@link Orders} written with Spring Data JPA (Hibernate): the saved {@link PlacedOrder} and its
 * {@link OrderPlaced} event commit together, or neither does.
 *
 * <p>Hibernate writes the entity when it flushes, at the latest at commit, after the append: the
 * append runs on the transaction's own connection, so a row the database refuses at the flush
 * rolls the message back with it.
 */
@Service
public class JpaOrders {
  private final PlacedOrders placed;
  private final TransactionalOutbox outbox;
  private final String destination;

  /**
   * The service.
   *
   * @param placed the repository
   * @param outbox relaykit's outbox, joining the caller's transaction
   * @param destination where order messages go
   */
  public JpaOrders(PlacedOrders placed, TransactionalOutbox outbox,
      @Value("${app.destination:orders}") String destination) {
    this.placed = placed;
    this.outbox = outbox;
    this.destination = destination;
  }

  /**
   * Saves an order and appends its message in one transaction (the caller's, if it has one).
   *
   * @param sku the product
   * @return the order's id (the event's key and {@code orderId})
   * @throws org.springframework.dao.DataAccessException when the database refuses the order or
   *     the append (nothing of it is committed)
   */
  // tag::jpa-outbox[]
  @Transactional
  public String place(String sku) {
    String id = UUID.randomUUID().toString();
    placed.save(new PlacedOrder(id, sku));
    outbox.append(destination, id, new OrderPlaced(id, sku));
    return id;
  }
  // end::jpa-outbox[]
}
