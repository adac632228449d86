package io.relaykit.examples.bootapp;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

/** An order as a JPA entity, written by {@link JpaOrders} (its id is assigned by the application). */
@Entity
@Table(name = "placed_orders")
public class PlacedOrder {
  @Id
  @Column(length = 64)
  private String id;

  @Column(length = 64, nullable = false)
  private String sku;

  /** For JPA. */
  protected PlacedOrder() {}

  /**
   * A new order.
   *
   * @param id the order's id, also its message's id
   * @param sku the product (at most 64 characters: the database refuses longer ones)
   */
  public PlacedOrder(String id, String sku) {
    this.id = id;
    this.sku = sku;
  }

  /**
   * The order's id.
   *
   * @return the id
   */
  public String getId() {
    return id;
  }

  /**
   * The product.
   *
   * @return the SKU
   */
  public String getSku() {
    return sku;
  }
}
