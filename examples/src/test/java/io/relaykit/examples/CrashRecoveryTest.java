package io.relaykit.examples;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.relaykit.tck.Await;
import java.io.IOException;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Kill -9: the demo runs as a child JVM with {@code --fail-rate 0.05}; 1 000 orders go in while it
 * is killed with SIGKILL three times and restarted on the same data folder. Unanswered requests are
 * resent with the same Idempotency-Key. Each kill lands while orders are still being sent (senders
 * are held below a cap that rises only after the kill), and the demo is restarted only after a
 * sender has found it dead, so every kill provably cuts requests short; nothing rests on timing. At the end every order is SUCCESS (FAILED for the poison
 * SKU), every effect happened exactly once, the injected failures were retried, and the database
 * holds exactly one order per key.
 */
class CrashRecoveryTest {
  private static final int ORDERS = 1_000;
  private static final int SENDERS = 8;
  private static final int KILLS = 3;
  private static final String POISON = "POISON";
  /**
   * Transient consumer failures on top of the kills. Low enough that a good order never exhausts
   * the demo's 6 attempts (0.05^6, about 2e-8 per message), so FAILED still means poison only.
   */
  private static final double FAIL_RATE = 0.05;

  @TempDir
  Path data;
  private final AtomicReference<DemoProcess> current = new AtomicReference<>();
  private final List<DemoProcess> started = new ArrayList<>();

  private DemoProcess start() throws Exception {
    DemoProcess demo = DemoProcess.start(Map.of(), "--data", data.toString(), "--lease", "2",
        "--poison-sku", POISON, "--fail-rate", Double.toString(FAIL_RATE));
    synchronized (started) {
      started.add(demo);
    }
    return demo;
  }

  @AfterEach
  void killLeftovers() throws InterruptedException {
    for (DemoProcess d : started) {
      d.process.destroyForcibly();
    }
    for (DemoProcess d : started) {
      d.kill();
    }
  }

  private static String key(int i) {
    return "crash-" + i;
  }

  private static String sku(int i) {
    return i % 20 == 7 ? POISON : "sku-" + (i % 13);
  }

  /**
   * One attempt to place order {@code i}: true once the demo answered 202; false when the demo is
   * down or restarting (refused, reset) or the key is still claimed by a request the kill cut
   * short (409 until its lease ends), so the caller sends again with the same key.
   */
  private boolean trySend(int i, Map<Integer, String> accepted, AtomicInteger resends,
      AtomicInteger cap) {
    DemoProcess d = current.get();
    if (d == null || accepted.size() >= cap.get()) {
      return false;
    }
    DemoHttp.Answer a;
    try {
      a = d.http.order(key(i), sku(i), 1 + i % 3);
    } catch (IOException e) {
      resends.incrementAndGet();
      return false;
    }
    if (a.status() == 409) {
      resends.incrementAndGet();
      return false;
    }
    assertThat(a.status()).as("order %d: %s", i, a.raw().body()).isEqualTo(202);
    String id = a.json().get("orderId").asText();
    String earlier = accepted.putIfAbsent(i, id);
    assertThat(earlier).as("a key answered twice names one order").isIn(null, id);
    return true;
  }

  @Test
  @DisplayName("after three kill -9 restarts every order ends, each effect exactly once")
  void survivesKillNine() throws Exception {
    Map<Integer, String> accepted = new ConcurrentHashMap<>();
    AtomicInteger resends = new AtomicInteger();
    // Orders beyond the cap wait, so the senders cannot finish before the last kill.
    int step = ORDERS / (KILLS + 1);
    AtomicInteger cap = new AtomicInteger(step + step / 2);
    current.set(start());
    ExecutorService senders = Executors.newFixedThreadPool(SENDERS);
    List<Future<?>> done = new ArrayList<>();
    for (int t = 0; t < SENDERS; t++) {
      int first = t;
      done.add(senders.submit(() -> {
        for (int i = first; i < ORDERS; i += SENDERS) {
          int order = i;
          Await.until(Duration.ofSeconds(60), "order " + order + " accepted",
              () -> trySend(order, accepted, resends, cap));
        }
        return null;
      }));
    }
    try {
      for (int k = 1; k <= KILLS; k++) {
        int threshold = k * step;
        Await.until(Duration.ofSeconds(60), threshold + " orders accepted before kill " + k,
            () -> accepted.size() >= threshold || done.stream().anyMatch(Future::isDone));
        // Killed while still current: senders keep sending to it and are refused.
        current.get().kill();
        cap.set(k == KILLS ? ORDERS : (k + 1) * step + step / 2);
        int before = resends.get();
        Await.until(Duration.ofSeconds(60), "a sender found the demo dead after kill " + k,
            () -> resends.get() > before || done.stream().anyMatch(Future::isDone));
        current.set(start());
      }
      for (Future<?> f : done) {
        f.get(90, TimeUnit.SECONDS);
      }
    } finally {
      senders.shutdownNow();
    }
    assertThat(accepted).hasSize(ORDERS);
    assertThat(resends.get()).as("the kills cut requests short").isGreaterThanOrEqualTo(KILLS);

    // Every order must end: SUCCESS with each effect exactly once, or FAILED for the poison SKU.
    // Checked over HTTP, in parallel, until none is left unfinished.
    DemoHttp http = current.get().http;
    Map<String, Integer> unfinished = new ConcurrentHashMap<>();
    accepted.forEach((i, id) -> unfinished.put(id, i));
    AtomicInteger poisoned = new AtomicInteger();
    ExecutorService checkers = Executors.newFixedThreadPool(SENDERS);
    try {
      Await.until(Duration.ofSeconds(60), "every order SUCCESS or FAILED", () -> {
        List<Future<?>> checks = new ArrayList<>();
        for (Map.Entry<String, Integer> e : unfinished.entrySet()) {
          checks.add(checkers.submit(() -> {
            if (ended(http.getJson("/orders/" + e.getKey()), e.getValue(), poisoned)) {
              unfinished.remove(e.getKey());
            }
            return null;
          }));
        }
        for (Future<?> f : checks) {
          try {
            f.get();
          } catch (Exception ex) {
            throw new AssertionError(ex.getCause() != null ? ex.getCause() : ex);
          }
        }
        return unfinished.isEmpty();
      });
    } finally {
      checkers.shutdownNow();
    }
    assertThat(poisoned.get()).isEqualTo(50);

    // The injected failures were retried (counted by the last demo alone, since its restart).
    assertThat(http.getJson("/metrics").get("retried").asLong()).as("retried").isPositive();

    // What the database holds, read directly after one more kill -9.
    current.getAndSet(null).kill();
    try (Connection c = DriverManager.getConnection(
        "jdbc:h2:file:" + data.toAbsolutePath().resolve("relaykit") + DemoStore.H2_OPTIONS);
        Statement s = c.createStatement()) {
      assertThat(longOf(s, "SELECT COUNT(*) FROM demo_orders")).isEqualTo(ORDERS);
      assertThat(longOf(s, "SELECT COUNT(DISTINCT idem_key) FROM demo_orders"))
          .isEqualTo(ORDERS);
      assertThat(longOf(s, "SELECT COUNT(*) FROM demo_effects"))
          .isEqualTo(2L * (ORDERS - poisoned.get()));
      assertThat(longOf(s, "SELECT COUNT(*) FROM (SELECT order_id, effect FROM demo_effects "
          + "GROUP BY order_id, effect HAVING COUNT(*) > 1) t")).isZero();
    }
  }

  /**
   * Whether order {@code i} ended; fails at once if it ended wrong (a poison order that succeeded,
   * an effect done twice).
   */
  private static boolean ended(JsonNode order, int i, AtomicInteger poisoned) {
    String status = order.get("status").asText();
    String what = "order " + i + " " + order;
    if (sku(i).equals(POISON)) {
      assertThat(status).as(what).isNotEqualTo("SUCCESS");
      if (!status.equals("FAILED")) {
        return false;
      }
      assertThat(order.get("error").asText()).as(what).contains("is poison");
      poisoned.incrementAndGet();
      return true;
    }
    assertThat(status).as(what).isNotEqualTo("FAILED");
    assertThat(order.get("effects").get("sms").asInt()).as(what).isLessThanOrEqualTo(1);
    assertThat(order.get("effects").get("coupon").asInt()).as(what).isLessThanOrEqualTo(1);
    if (!status.equals("SUCCESS")) {
      return false;
    }
    assertThat(order.get("effects").get("sms").asInt()).as(what).isEqualTo(1);
    assertThat(order.get("effects").get("coupon").asInt()).as(what).isEqualTo(1);
    return true;
  }

  private static long longOf(Statement s, String sql) throws Exception {
    try (ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
