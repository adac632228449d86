package io.relaykit.spring.boot;

import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

@SpringBootTest(classes = TestApp.class)
class H2OutboxTransactionTest extends AbstractOutboxTransactionTest {

  // Suppliers are read on every lookup: each name is drawn once, here.
  static final String DB = unique("h2");
  static final String PREFIX = unique("rk") + "_";
  static final String ORDERS = unique("orders");

  @DynamicPropertySource
  static void props(DynamicPropertyRegistry r) {
    r.add("spring.datasource.url", () -> "jdbc:h2:mem:" + DB + ";DB_CLOSE_DELAY=-1");
    r.add("relaykit.storage", () -> "jdbc");
    // The test claims the rows itself: no relay may take them first.
    r.add("relaykit.spring.relay.enabled", () -> "false");
    r.add("relaykit.jdbc.table-prefix", () -> PREFIX);
    r.add("test.orders-table", () -> ORDERS);
  }
}
