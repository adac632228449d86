package io.relaykit.examples;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The demo on {@code --storage postgres}, started as a user would: a child JVM with {@code
 * RELAYKIT_POSTGRES_URL} pointing at the local PostgreSQL, in a schema of this test's own ({@code
 * currentSchema}, dropped afterwards), so parallel runs never share tables. An order and a poison
 * order go through end to end, and the schema holds exactly what they should.
 */
class PostgresDemoTest {
  private static final Duration WAIT = Duration.ofSeconds(60);
  private static final String POISON = "POISON";

  @TempDir
  Path data;

  @Test
  @DisplayName("on PostgreSQL an order ends SUCCESS with one sms and one coupon in its schema, and a"
      + " poison order FAILED with its dead letters")
  void orderEndToEnd() throws Exception {
    try (TestDatabase db = TestDatabase.open("postgres");
        DemoProcess demo = DemoProcess.start(Map.of("RELAYKIT_POSTGRES_URL", db.url),
            "--storage", "postgres", "--data", data.toString(), "--lease", "2",
            "--poison-sku", POISON)) {
      DemoHttp http = demo.http;
      DemoHttp.Answer placed = http.order(DemoHttp.newKey(), "book-1", 2);
      assertThat(placed.status()).as(placed.raw().body()).isEqualTo(202);
      String id = placed.json().get("orderId").asText();
      http.awaitStatus(id, "SUCCESS", WAIT);
      JsonNode order = http.get("/orders/" + id).json();
      assertThat(order.get("effects").get("sms").asInt()).isEqualTo(1);
      assertThat(order.get("effects").get("coupon").asInt()).isEqualTo(1);

      String poison = http.order(DemoHttp.newKey(), POISON, 1).json().get("orderId").asText();
      JsonNode failed = http.awaitStatus(poison, "FAILED", WAIT);
      assertThat(failed.get("error").asText()).contains("SKU " + POISON + " is poison");

      try (Connection c = DriverManager.getConnection(db.url)) {
        assertThat(tablesInSchema(c, "demo_orders", "demo_effects", "relaykit_outbox",
            "relaykit_idempotency", "relaykit_dead_letter")).as("the demo's tables, in the test's"
            + " schema").isEqualTo(5);
        assertThat(count(c, "SELECT COUNT(*) FROM demo_orders WHERE id IN (?, ?)", id, poison))
            .isEqualTo(2);
        assertThat(count(c, "SELECT COUNT(*) FROM demo_effects WHERE order_id = ? AND effect = ?",
            id, "sms")).isEqualTo(1);
        assertThat(count(c, "SELECT COUNT(*) FROM demo_effects WHERE order_id = ? AND effect = ?",
            id, "coupon")).isEqualTo(1);
        assertThat(count(c, "SELECT COUNT(*) FROM demo_effects WHERE order_id = ?", poison))
            .isZero();
        assertThat(count(c, "SELECT COUNT(*) FROM relaykit_idempotency WHERE idem_key IN (?, ?)",
            "sms:" + id, "coupon:" + id)).isEqualTo(2);
        assertThat(count(c,
            "SELECT COUNT(*) FROM relaykit_dead_letter WHERE message_id IN (?, ?)",
            poison + ":sms", poison + ":coupon")).isEqualTo(2);
      }
    }
  }

  /** How many of {@code tables} exist in the connection's current schema. */
  private static long tablesInSchema(Connection c, String... tables) throws SQLException {
    long found = 0;
    for (String table : tables) {
      found += count(c, "SELECT COUNT(*) FROM information_schema.tables "
          + "WHERE table_schema = current_schema() AND table_name = ?", table);
    }
    return found;
  }

  private static long count(Connection c, String sql, String... args) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      for (int i = 0; i < args.length; i++) {
        ps.setString(i + 1, args[i]);
      }
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }
}
