package io.relaykit.spring.jpa;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * {@link AbstractJpaOutboxTest} on PostgreSQL, in a schema of its own ({@code currentSchema}),
 * dropped when the context closes (after the class: the relay has stopped by then), so
 * Hibernate's table and relaykit's never meet a parallel run's.
 */
@SpringBootTest(classes = JpaApp.class)
@Import(PostgresJpaOutboxTest.DropSchema.class)
@DirtiesContext
class PostgresJpaOutboxTest extends AbstractJpaOutboxTest {
  static final String ADMIN = "jdbc:postgresql://127.0.0.1:5432/test";
  static final String SCHEMA = unique("rk_jpa");
  static final String PREFIX = unique("rk") + "_";

  @DynamicPropertySource
  static void props(DynamicPropertyRegistry r) {
    try (Connection c = DriverManager.getConnection(ADMIN, "postgres", "");
        Statement s = c.createStatement()) {
      s.execute("CREATE SCHEMA " + SCHEMA);
    } catch (SQLException e) {
      throw new IllegalStateException("PostgreSQL is not reachable at " + ADMIN + " (user"
          + " postgres): start it and rerun: " + e.getMessage(), e);
    }
    r.add("spring.autoconfigure.exclude", () -> EXCLUDE);
    r.add("spring.datasource.url", () -> ADMIN + "?currentSchema=" + SCHEMA);
    r.add("spring.datasource.username", () -> "postgres");
    r.add("spring.jpa.hibernate.ddl-auto", () -> "create");
    r.add("spring.jpa.open-in-view", () -> "false");
    r.add("relaykit.storage", () -> "h2");
    r.add("relaykit.h2.table-prefix", () -> PREFIX);
  }

  /** Drops the schema when the context is destroyed (after the relay and listeners stopped). */
  @Configuration(proxyBeanMethods = false)
  static class DropSchema {
    @Bean
    DisposableBean relaykitTestSchemaDrop() {
      return () -> {
        try (Connection c = DriverManager.getConnection(ADMIN, "postgres", "");
            Statement s = c.createStatement()) {
          s.execute("DROP SCHEMA IF EXISTS " + SCHEMA + " CASCADE");
        }
      };
    }
  }
}
