package io.relaykit.spring.boot;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import org.junit.jupiter.api.BeforeAll;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

@SpringBootTest(classes = TestApp.class)
class PostgresOutboxTransactionTest extends AbstractOutboxTransactionTest {

  static final String URL = "jdbc:postgresql://127.0.0.1:5432/test";

  @BeforeAll
  static void postgresIsUp() {
    try (Connection c = DriverManager.getConnection(URL, "postgres", "")) {
      c.isValid(2);
    } catch (SQLException e) {
      throw new IllegalStateException("PostgreSQL is not reachable at " + URL + " (user postgres):"
          + " start it (e.g. `pg_ctlcluster <ver> main start`) and rerun: " + e.getMessage(), e);
    }
  }

  // Suppliers are read on every lookup: each name is drawn once, here.
  static final String PREFIX = unique("rk") + "_";
  static final String ORDERS = unique("orders");

  @DynamicPropertySource
  static void props(DynamicPropertyRegistry r) {
    r.add("spring.datasource.url", () -> URL);
    r.add("spring.datasource.username", () -> "postgres");
    r.add("relaykit.storage", () -> "postgres");
    // The test claims the rows itself: no relay may take them first.
    r.add("relaykit.spring.relay.enabled", () -> "false");
    r.add("relaykit.jdbc.table-prefix", () -> PREFIX);
    r.add("test.orders-table", () -> ORDERS);
  }
}
