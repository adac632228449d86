package io.relaykit.spring.jpa;

import org.springframework.data.jpa.repository.JpaRepository;

/** Spring Data's repository of {@link JpaOrder}. */
public interface JpaOrders extends JpaRepository<JpaOrder, String> {}
