package io.relaykit.test.spring.jpa;

import org.springframework.data.jpa.repository.JpaRepository;

/** Spring Data's repository of shipments. */
public interface Shipments extends JpaRepository<Shipment, String> {}
