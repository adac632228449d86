package io.relaykit.examples;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.relaykit.tck.Await;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Kill -9: the demo runs as a child JVM; 1 000 orders go in while it is killed with SIGKILL three
 * times and restarted on the same data folder. Unanswered requests are resent with the same
 * Idempotency-Key. At the end every order is SUCCESS (FAILED for the poison SKU), every effect
 * happened exactly once, and the database holds exactly one order per key.
 */
class CrashRecoveryTest {
  private static final int ORDERS = 1_000;
  private static final int SENDERS = 8;
  private static final int KILLS = 3;
  private static final String POISON = "POISON";
  private static final Pattern LISTENING =
      Pattern.compile("relaykit demo listening on http://127\\.0\\.0\\.1:(\\d+)");

  @TempDir
  Path data;
  private final AtomicReference<Demo> current = new AtomicReference<>();
  private final List<Demo> started = new ArrayList<>();

  /** One child JVM and the demo it runs. */
  private static final class Demo {
    final Process process;
    final DemoHttp http;

    Demo(Process process, int port) {
      this.process = process;
      this.http = new DemoHttp(URI.create("http://127.0.0.1:" + port));
    }
  }

  private Demo start() throws Exception {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Process p = new ProcessBuilder(java, "-Xmx256m", "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"),
        CheckoutDemo.class.getName(), "--port", "0", "--data", data.toString(), "--lease", "2",
        "--poison-sku", POISON)
        .redirectErrorStream(true)
        .start();
    CompletableFuture<Integer> port = new CompletableFuture<>();
    StringBuffer log = new StringBuffer();
    Thread reader = new Thread(() -> {
      try (BufferedReader r = new BufferedReader(
          new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line; (line = r.readLine()) != null; ) {
          if (log.length() < 64_000) {
            log.append(line).append('\n');
          }
          Matcher m = LISTENING.matcher(line);
          if (m.find()) {
            port.complete(Integer.parseInt(m.group(1)));
          }
        }
      } catch (IOException e) {
        // the process was killed; the log so far is kept
      }
      port.completeExceptionally(new AssertionError("the demo exited before listening:\n" + log));
    }, "demo-output");
    reader.setDaemon(true);
    reader.start();
    Demo demo = new Demo(p, port.get(60, TimeUnit.SECONDS));
    synchronized (started) {
      started.add(demo);
    }
    return demo;
  }

  @AfterEach
  void killLeftovers() throws InterruptedException {
    for (Demo d : started) {
      d.process.destroyForcibly();
      d.process.waitFor(10, TimeUnit.SECONDS);
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
  private boolean trySend(int i, Map<Integer, String> accepted, AtomicInteger resends) {
    Demo d = current.get();
    if (d == null) {
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
    current.set(start());
    ExecutorService senders = Executors.newFixedThreadPool(SENDERS);
    List<Future<?>> done = new ArrayList<>();
    for (int t = 0; t < SENDERS; t++) {
      int first = t;
      done.add(senders.submit(() -> {
        for (int i = first; i < ORDERS; i += SENDERS) {
          int order = i;
          Await.until(Duration.ofSeconds(60), "order " + order + " accepted",
              () -> trySend(order, accepted, resends));
        }
        return null;
      }));
    }
    try {
      for (int k = 1; k <= KILLS; k++) {
        int threshold = k * ORDERS / (KILLS + 1);
        Await.until(Duration.ofSeconds(60), threshold + " orders accepted before kill " + k,
            () -> accepted.size() >= threshold || done.stream().anyMatch(Future::isDone));
        Demo victim = current.getAndSet(null);
        victim.process.destroyForcibly();
        assertThat(victim.process.waitFor(10, TimeUnit.SECONDS)).isTrue();
        current.set(start());
      }
      for (Future<?> f : done) {
        f.get(90, TimeUnit.SECONDS);
      }
    } finally {
      senders.shutdownNow();
    }
    assertThat(accepted).hasSize(ORDERS);
    assertThat(resends.get()).as("the kills cut requests short").isPositive();

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

    // What the database holds, read directly after one more kill -9.
    Demo last = current.getAndSet(null);
    last.process.destroyForcibly();
    assertThat(last.process.waitFor(10, TimeUnit.SECONDS)).isTrue();
    try (Connection c = DriverManager.getConnection(
        "jdbc:h2:file:" + data.toAbsolutePath().resolve("relaykit") + ";AUTO_SERVER=TRUE");
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
