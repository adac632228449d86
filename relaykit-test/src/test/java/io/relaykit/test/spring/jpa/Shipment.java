package io.relaykit.test.spring.jpa;

import jakarta.persistence.Entity;
import jakarta.persistence.Id;

/** A shipment, as a JPA entity (the id is assigned by the application). */
@Entity
public class Shipment {
  @Id
  private String id;
  private String address;

  protected Shipment() {}

  public Shipment(String id, String address) {
    this.id = id;
    this.address = address;
  }

  public String getId() {
    return id;
  }

  public String getAddress() {
    return address;
  }
}
