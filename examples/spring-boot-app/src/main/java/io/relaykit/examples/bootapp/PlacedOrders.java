package io.relaykit.examples.bootapp;

import org.springframework.data.jpa.repository.JpaRepository;

/** Spring Data JPA's repository of {@link PlacedOrder}s. */
public interface PlacedOrders extends JpaRepository<PlacedOrder, String> {}
