package io.relaykit.examples.bootapp;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * PostgreSQL (127.0.0.1:5432, database postgres) under {@code relaykit.storage=postgres}, the
 * in-process transport; every table this class creates has its run's prefix and is dropped when
 * the application stops.
 */
@Import(PostgresDeliveryTest.DropTables.class)
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
    // JpaOrders' table is not this test's: no Hibernate DDL in the shared public schema.
    r.add("spring.jpa.hibernate.ddl-auto", () -> "none");
  }

  /**
   * Drops this run's tables when the context is destroyed: after the relay (a lifecycle bean)
   * has stopped polling them, before the DataSource it depends on closes.
   */
  @TestConfiguration
  static class DropTables {
    @Bean
    DisposableBean dropRunTables(DataSource dataSource) {
      return () -> {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
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
      };
    }
  }
}
