package io.relaykit.spring.jpa;

import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

/** An order, as a JPA entity (the id is assigned by the application). */
@Entity
@Table(name = "jpa_orders")
public class JpaOrder {
  @Id
  private String id;
  private String sku;

  protected JpaOrder() {}

  public JpaOrder(String id, String sku) {
    this.id = id;
    this.sku = sku;
  }

  public String getId() {
    return id;
  }

  public String getSku() {
    return sku;
  }
}
