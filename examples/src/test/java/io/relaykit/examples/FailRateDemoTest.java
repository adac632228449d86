package io.relaykit.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.guice.RelayKitConfig;
import io.relaykit.idempotency.Claim;
import io.relaykit.tck.Await;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The README's promise for {@code --fail-rate}: with a third of all consumer attempts failing
 * transiently (half of them after the effect, as if the ack were lost), every order still ends
 * SUCCESS with each effect exactly once (FAILED for the poison SKU), retries really happened,
 * redeliveries of done effects were deduplicated, and only the poison orders are dead letters. Checked in the
 * database: the effect rows, the dedupe rows and the dead letters. In-process transport, H2 in a
 * temp folder.
 */
class FailRateDemoTest {
  private static final double FAIL_RATE = 0.3;
  private static final int ORDERS = 40;
  private static final int SENDERS = 8;
  private static final String POISON = "POISON";
  private static final Duration WAIT = Duration.ofSeconds(60);
  /**
   * The demo gives up on a message after 6 attempts, so at a 0.3 fail rate one message in about
   * 1 400 would be dead-lettered for bad luck alone (0.3^6) and the "only poison is dead" check
   * would be flaky. 30 attempts make that 0.3^30, about 2e-16; backoff stays capped at 1 s.
   */
  private static final Map<String, String> PATIENT_RETRIES =
      Map.of(RelayKitConfig.RETRY_MAX_ATTEMPTS, "30");

  @TempDir
  Path data;

  private static boolean poison(int i) {
    return i % 8 == 3;
  }

  @Test
  @DisplayName("at --fail-rate 0.3, 40 concurrent orders end with each effect exactly once, after "
      + "retries and deduplicated redeliveries, and only the poison orders dead-lettered")
  void exactlyOnceDespiteTransientFailures() throws Exception {
    DemoOptions options = new DemoOptions("127.0.0.1", 0, data, "h2", "memory", FAIL_RATE, POISON,
        Duration.ofSeconds(2));
    try (RunningDemo demo = RunningDemo.start(options, PATIENT_RETRIES)) {
      Map<String, Boolean> poisonById = placeConcurrently(demo.http());
      Set<String> poisonIds = poisonById.entrySet().stream().filter(Map.Entry::getValue)
          .map(Map.Entry::getKey).collect(Collectors.toSet());
      assertThat(poisonIds).hasSize(5);

      // Every order reaches its final status: SUCCESS, or FAILED for the poison ones.
      Map<String, String> unfinished = new ConcurrentHashMap<>();
      poisonById.forEach((id, isPoison) -> unfinished.put(id, isPoison ? "FAILED" : "SUCCESS"));
      Await.until(WAIT, "every order reaches SUCCESS (FAILED for poison)", () -> {
        unfinished.entrySet().removeIf(e -> {
          String status = demo.http().getJson("/orders/" + e.getKey() + "/status")
              .path("status").asText();
          String other = e.getValue().equals("SUCCESS") ? "FAILED" : "SUCCESS";
          assertThat(status).as("order %s (expected %s)", e.getKey(), e.getValue())
              .isNotEqualTo(other);
          return status.equals(e.getValue());
        });
        return unfinished.isEmpty();
      });

      CheckoutApp app = demo.app();
      // Half the injected failures strike after the effect (a lost ack): their redeliveries must
      // meet the dedupe guard. They may still be on their way when the orders show SUCCESS.
      // A broken guard shows as a repeated effect instead, so either ends the wait.
      Await.until(WAIT, "a redelivery of a done effect was deduplicated, or repeated",
          () -> (Long) app.metrics().get("deduplicated") > 0
              || effectCounts(app).values().stream().anyMatch(n -> n > 1));
      // The effects, from the database: exactly one sms and one coupon per good order, none for
      // poison, and nothing for an order that does not exist.
      Map<String, Integer> effects = effectCounts(app);
      Map<String, Integer> expected = new HashMap<>();
      for (String id : poisonById.keySet()) {
        if (!poisonIds.contains(id)) {
          expected.put(id + "/sms", 1);
          expected.put(id + "/coupon", 1);
        }
      }
      assertThat(effects).isEqualTo(expected);
      assertThat((Long) app.metrics().get("deduplicated")).as("deduplicated redeliveries")
          .isPositive();

      // The dedupe rows that guard them: one DONE row per effect performed, none for poison.
      for (String id : poisonById.keySet()) {
        for (Orders.Effect effect : Orders.Effect.values()) {
          String key = effect.id() + ":" + id;
          if (poisonIds.contains(id)) {
            assertThat(dedupeRows(app, key)).as(key).isZero();
          } else {
            assertThat(dedupeRows(app, key)).as(key).isEqualTo(1);
            assertThat(app.storage.idempotencyStore().status(key)).as(key)
                .contains(Claim.Status.DONE);
          }
        }
      }

      // Failures really happened and were retried, and nothing but poison is a dead letter.
      assertThat((Long) app.metrics().get("retried")).as("RETRIED lifecycle events").isPositive();
      List<DeadLetter> dead = app.deadLetters(1_000);
      assertThat(dead).extracting(DeadLetter::messageId).containsExactlyInAnyOrderElementsOf(
          poisonIds.stream().flatMap(id -> java.util.Arrays.stream(Orders.Effect.values())
              .map(e -> e.messageId(id))).toList());
      assertThat(dead).allSatisfy(d -> assertThat(d.reason()).contains("is poison"));
    }
  }

  /** Places {@link #ORDERS} orders from {@link #SENDERS} threads; answers id → poison?. */
  private static Map<String, Boolean> placeConcurrently(DemoHttp http) throws Exception {
    Map<String, Boolean> ids = new ConcurrentHashMap<>();
    ExecutorService senders = Executors.newFixedThreadPool(SENDERS);
    try {
      List<Future<?>> sent = new ArrayList<>();
      for (int i = 0; i < ORDERS; i++) {
        int n = i;
        sent.add(senders.submit(() -> {
          DemoHttp.Answer a = http.order(DemoHttp.newKey(), poison(n) ? POISON : "sku-" + n, 1);
          assertThat(a.status()).as("order %d: %s", n, a.raw().body()).isEqualTo(202);
          ids.put(a.json().get("orderId").asText(), poison(n));
          return null;
        }));
      }
      for (Future<?> f : sent) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      senders.shutdownNow();
    }
    assertThat(ids).hasSize(ORDERS);
    return ids;
  }

  /** "orderId/effect" → how many effect rows the database holds for it. */
  private static Map<String, Integer> effectCounts(CheckoutApp app) {
    Map<String, Integer> counts = new HashMap<>();
    try (Connection c = app.storage.dataSource().getConnection();
        PreparedStatement ps = c.prepareStatement(
            "SELECT order_id, effect, COUNT(*) FROM demo_effects GROUP BY order_id, effect");
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        counts.put(rs.getString(1) + "/" + rs.getString(2), rs.getInt(3));
      }
    } catch (SQLException e) {
      throw new AssertionError("could not count the effects: " + e, e);
    }
    return counts;
  }

  /** How many rows the JDBC idempotency table holds for {@code key}. */
  private static int dedupeRows(CheckoutApp app, String key) throws SQLException {
    try (Connection c = app.storage.dataSource().getConnection();
        PreparedStatement ps = c.prepareStatement(
            "SELECT COUNT(*) FROM " + app.storage.tablePrefix() + "idempotency WHERE idem_key = ?")) {
      ps.setString(1, key);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    }
  }
}
