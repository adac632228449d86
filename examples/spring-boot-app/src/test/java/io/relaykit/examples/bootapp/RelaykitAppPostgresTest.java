package io.relaykit.examples.bootapp;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * {@link RelaykitAppTest} on PostgreSQL (127.0.0.1:5432, database postgres) under {@code
 * relaykit.storage=postgres}, in a schema of this run ({@code currentSchema}) where Hibernate
 * creates {@code placed_orders} and relaykit its tables; the schema is dropped when the context
 * closes (after the relay and the listeners stopped).
 */
@Import(RelaykitAppPostgresTest.DropSchema.class)
class RelaykitAppPostgresTest extends RelaykitAppTest {
  static final String URL = "jdbc:postgresql://127.0.0.1:5432/postgres";
  static final String SCHEMA = "bootapp_relaykit_" + AbstractDeliveryTest.RUN;

  @DynamicPropertySource
  static void props(DynamicPropertyRegistry r) {
    try (Connection c = DriverManager.getConnection(URL, "postgres", "");
        Statement s = c.createStatement()) {
      s.execute("CREATE SCHEMA IF NOT EXISTS " + SCHEMA);
    } catch (SQLException e) {
      throw new IllegalStateException("PostgreSQL is not reachable at " + URL
          + " (user postgres): start it and rerun: " + e.getMessage(), e);
    }
    r.add("spring.datasource.url", () -> URL + "?currentSchema=" + SCHEMA);
    r.add("spring.datasource.username", () -> "postgres");
    r.add("spring.jpa.hibernate.ddl-auto", () -> "create");
    r.add("relaykit.storage", () -> "postgres");
  }

  /** Drops this run's schema when the context is destroyed. */
  @TestConfiguration(proxyBeanMethods = false)
  static class DropSchema {
    @Bean
    DisposableBean dropRunSchema() {
      return () -> {
        try (Connection c = DriverManager.getConnection(URL, "postgres", "");
            Statement s = c.createStatement()) {
          s.execute("DROP SCHEMA IF EXISTS " + SCHEMA + " CASCADE");
        }
      };
    }
  }
}
