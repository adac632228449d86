package io.relaykit.spring.boot.sample;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The sample's two tables; created at start if missing. The order's {@code idempotency_key} is
 * unique and the shipment's key is the order id: the database is the final guard behind the
 * filter and the idempotent listener.
 */
public class SampleSchema {

  final String orders;
  final String shipments;

  /**
   * Creates the tables.
   *
   * @param jdbc the application's database
   * @param orders the orders table's name
   * @param shipments the shipments table's name
   */
  public SampleSchema(JdbcTemplate jdbc, @Value("${sample.orders-table:sample_orders}") String orders,
      @Value("${sample.shipments-table:sample_shipments}") String shipments) {
    this.orders = orders;
    this.shipments = shipments;
    jdbc.execute("CREATE TABLE IF NOT EXISTS " + orders + " (id VARCHAR(64) PRIMARY KEY,"
        + " idempotency_key VARCHAR(255) NOT NULL UNIQUE, sku VARCHAR(64) NOT NULL,"
        + " qty INTEGER NOT NULL)");
    jdbc.execute("CREATE TABLE IF NOT EXISTS " + shipments + " (order_id VARCHAR(64) PRIMARY KEY,"
        + " message_id VARCHAR(128) NOT NULL)");
  }
}
