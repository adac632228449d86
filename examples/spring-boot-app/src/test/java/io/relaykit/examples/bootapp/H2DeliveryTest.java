package io.relaykit.examples.bootapp;

import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** H2 in memory, the in-process transport. */
class H2DeliveryTest extends AbstractDeliveryTest {
  @DynamicPropertySource
  static void props(DynamicPropertyRegistry r) {
    r.add("spring.datasource.url", () -> "jdbc:h2:mem:bootapp_" + RUN + ";DB_CLOSE_DELAY=-1");
    r.add("relaykit.storage", () -> "jdbc");
    r.add("relaykit.transport", () -> "memory");
  }
}
