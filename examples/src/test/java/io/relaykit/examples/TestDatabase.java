package io.relaykit.examples;

import static org.junit.jupiter.api.Assertions.fail;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;

/**
 * A database of its own for one test: H2 in memory, or a fresh schema on the local PostgreSQL
 * ({@code RELAYKIT_POSTGRES_URL}, default {@code jdbc:postgresql://127.0.0.1:5432/test?user=postgres})
 * whose JDBC URL sets {@code currentSchema}, so unqualified tables land there and parallel runs
 * never meet. Closing drops the schema. Costs one schema's DDL on PostgreSQL.
 */
final class TestDatabase implements AutoCloseable {
  static final String POSTGRES_DEFAULT_URL = "jdbc:postgresql://127.0.0.1:5432/test?user=postgres";

  /** The JDBC URL to hand to the code under test. */
  final String url;
  private final String adminUrl;
  private final String schema;

  private TestDatabase(String url, String adminUrl, String schema) {
    this.url = url;
    this.adminUrl = adminUrl;
    this.schema = schema;
  }

  /** {@code h2} (in memory) or {@code postgres} (a fresh schema). */
  static TestDatabase open(String kind) {
    String id = UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    switch (kind) {
      case "h2":
        return new TestDatabase("jdbc:h2:mem:rk" + id + ";LOCK_TIMEOUT=10000",
            null, null);
      case "postgres":
        return postgres("rk_examples_" + id);
      default:
        throw new IllegalArgumentException("kind must be h2 or postgres, was '" + kind + "'");
    }
  }

  private static TestDatabase postgres(String schema) {
    String env = System.getenv("RELAYKIT_POSTGRES_URL");
    String admin = env == null || env.isBlank() ? POSTGRES_DEFAULT_URL : env;
    try (Connection c = DriverManager.getConnection(admin); Statement s = c.createStatement()) {
      s.execute("CREATE SCHEMA " + schema);
    } catch (SQLException e) {
      fail("PostgreSQL is not reachable at " + admin + " (" + e.getMessage() + "); start it, or"
          + " point RELAYKIT_POSTGRES_URL at a running server", e);
    }
    String url = admin + (admin.contains("?") ? "&" : "?") + "currentSchema=" + schema;
    return new TestDatabase(url, admin, schema);
  }

  @Override
  public void close() {
    if (schema == null) {
      return;
    }
    try (Connection c = DriverManager.getConnection(adminUrl); Statement s = c.createStatement()) {
      s.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
    } catch (SQLException e) {
      throw new AssertionError("could not drop schema " + schema + ": " + e, e);
    }
  }

  @Override
  public String toString() {
    return schema == null ? "H2" : "PostgreSQL schema " + schema;
  }
}
