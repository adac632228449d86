package io.relaykit.examples.bootapp;

import io.relaykit.spring.boot.TransactionalOutbox;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/**
 * Places orders: the order row and its {@link OrderPlaced} event (keyed by the order id, so the
 * events of one order keep their order) commit together.
 */
@Service
public class Orders {
  private final JdbcTemplate jdbc;
  private final TransactionalOutbox outbox;
  private final String table;
  private final String destination;

  /**
   * Creates the orders table if it is missing.
   *
   * @param jdbc the application's database
   * @param outbox relaykit's outbox, joining the caller's transaction
   * @param table the orders table's name
   * @param destination where order messages go
   */
  public Orders(JdbcTemplate jdbc, TransactionalOutbox outbox,
      @Value("${app.orders-table:orders}") String table,
      @Value("${app.destination:orders}") String destination) {
    this.jdbc = jdbc;
    this.outbox = outbox;
    this.table = table;
    this.destination = destination;
    jdbc.execute("CREATE TABLE IF NOT EXISTS " + table
        + " (id VARCHAR(64) PRIMARY KEY, sku VARCHAR(64) NOT NULL)");
  }

  /**
   * Writes an order and appends its message in one transaction.
   *
   * @param sku the product
   * @return the order's id (the event's key and {@code orderId})
   */
  @Transactional
  public String place(String sku) {
    String id = UUID.randomUUID().toString();
    jdbc.update("INSERT INTO " + table + " (id, sku) VALUES (?, ?)", id, sku);
    outbox.append(destination, id, new OrderPlaced(id, sku));
    return id;
  }

  /**
   * Places several orders in one transaction: all of them and their messages commit, or none. A
   * SKU the database refuses (longer than 64 characters) fails the whole batch, after the earlier
   * orders' messages were appended, and none of them is delivered.
   *
   * @param skus the products, one order each
   * @return the orders' ids, in the order of {@code skus}
   * @throws org.springframework.dao.DataAccessException when the database refuses an order (the
   *     transaction rolls back)
   */
  @Transactional
  public List<String> placeAll(List<String> skus) {
    List<String> ids = new ArrayList<>();
    for (String sku : skus) {
      ids.add(place(sku));
    }
    return ids;
  }

  /**
   * How many orders have {@code id}: 0 or 1.
   *
   * @param id an order id
   * @return the row count
   */
  public int count(String id) {
    Integer n = jdbc.queryForObject("SELECT COUNT(*) FROM " + table + " WHERE id = ?",
        Integer.class, id);
    return n == null ? 0 : n;
  }
}
