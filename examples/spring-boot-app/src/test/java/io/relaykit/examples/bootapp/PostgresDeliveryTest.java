package io.relaykit.examples.bootapp;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * PostgreSQL (127.0.0.1:5432, database postgres) under {@code relaykit.storage=postgres}, the
 * in-process transport; every table this class creates has its run's prefix and is dropped after.
 */
class PostgresDeliveryTest extends AbstractDeliveryTest {
  static final String URL = "jdbc:postgresql://127.0.0.1:5432/postgres";
  static final String PREFIX = "bootapp_" + RUN + "_";

  @DynamicPropertySource
  static void props(DynamicPropertyRegistry r) {
    r.add("spring.datasource.url", () -> URL);
    r.add("spring.datasource.username", () -> "postgres");
    r.add("relaykit.storage", () -> "postgres");
    r.add("relaykit.jdbc.table-prefix", () -> PREFIX);
    r.add("app.orders-table", () -> PREFIX + "orders");
    r.add("relaykit.transport", () -> "memory");
  }

  /** Stops the application first (its relay polls these tables), then drops them. */
  @AfterAll
  static void dropTables(@Autowired ConfigurableApplicationContext context) throws Exception {
    context.close();
    try (Connection c = DriverManager.getConnection(URL, "postgres", "");
        Statement st = c.createStatement()) {
      List<String> tables = new ArrayList<>();
      try (ResultSet rs = c.getMetaData().getTables(null, null, PREFIX + "%",
          new String[] {"TABLE"})) {
        while (rs.next()) {
          tables.add(rs.getString("TABLE_NAME"));
        }
      }
      for (String t : tables) {
        st.execute("DROP TABLE IF EXISTS " + t + " CASCADE");
      }
    }
  }
}
