package io.relaykit.console;

import static io.relaykit.console.ConsoleTest.actionId;
import static io.relaykit.console.ConsoleTest.get;
import static io.relaykit.console.ConsoleTest.post;
import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.deadletter.DeadLetterReplayer;
import io.relaykit.deadletter.InMemoryDeadLetterStore;
import io.relaykit.message.Message;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.tck.FakeClock;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** Attacks on the console's actions and inputs, each kept as a regression test. */
class ConsoleAttackTest {

  final FakeClock clock = new FakeClock(Instant.parse("2026-12-07T03:00:00Z"));
  final InMemoryDeadLetterStore store = new InMemoryDeadLetterStore(clock);
  final Map<String, AtomicInteger> resent = new ConcurrentHashMap<>();
  final AtomicInteger failAt = new AtomicInteger(-1);
  final AtomicInteger calls = new AtomicInteger();

  Console console() {
    DeadLetterReplayer replayer = new DeadLetterReplayer(store, d -> {
      if (calls.incrementAndGet() == failAt.get()) {
        throw new IllegalStateException("broker down");
      }
      resent.computeIfAbsent(d.messageId(), k -> new AtomicInteger()).incrementAndGet();
    }, LifecycleListener.noop(), clock);
    return Console.builder().clock(clock).readOnly(false).deadLetters(
        new ConsoleDeadLetterSource("relaykit", store, replayer::replay, true, null)).build();
  }

  DeadLetter add(String id, String reason) {
    Message m = Message.builder().id(id).type("order.placed").payload("x").build();
    Instant t = clock.advance(Duration.ofSeconds(1));
    DeadLetter d = new DeadLetter(m, "orders", null, reason, "java.io.IOException", "boom", 3,
        t.minusSeconds(1), t);
    store.add(d);
    return d;
  }

  @Test
  @DisplayName("a set confirmed at 10 replays those 10, not the ones dead-lettered after the"
      + " confirmation")
  void setReplaysWhatWasConfirmed() {
    for (int i = 0; i < 10; i++) {
      add("old" + i, "failed");
    }
    Console c = console();
    ConsoleResponse confirm = c.handle(get("/confirm", "kind", "replay-set", "store", "relaykit",
        "reason", "failed"));
    assertThat(confirm.body()).contains("<strong id=\"count\">10</strong>");
    String id = actionId(confirm);
    for (int i = 0; i < 5; i++) {
      add("new" + i, "failed");
    }
    c.handle(post(id));
    assertThat(resent.keySet()).hasSize(10).allMatch(k -> k.startsWith("old"));
    assertThat(resent.values()).allMatch(n -> n.get() == 1);
    assertThat(store.count(DeadLetterQuery.all())).isEqualTo(5);
    assertThat(c.handle(get("/action", "id", id)).body()).contains("replayed 10 of 10")
        .contains("5 newer than the confirmation left alone");
  }

  @Test
  @DisplayName("a set shrunk between confirmation and run replays what is left and says so")
  void setShrinks() {
    for (int i = 0; i < 10; i++) {
      add("m" + i, "failed");
    }
    Console c = console();
    String id = actionId(c.handle(get("/confirm", "kind", "replay-set", "store", "relaykit")));
    for (int i = 0; i < 3; i++) {
      store.remove(store.list(DeadLetterQuery.all()).get(0).id());
    }
    c.handle(post(id));
    assertThat(resent).hasSize(7);
    assertThat(store.count(DeadLetterQuery.all())).isZero();
    assertThat(c.handle(get("/action", "id", id)).body()).contains("replayed 7 of 7");
  }

  @Test
  @DisplayName("a set that fails halfway: the same id again replays nothing; a new confirmation"
      + " replays the rest once each; nothing is lost")
  void failHalfwayThenRetry() {
    for (int i = 0; i < 10; i++) {
      add("m" + i, "failed");
    }
    failAt.set(5);
    Console c = console();
    String id = actionId(c.handle(get("/confirm", "kind", "replay-set", "store", "relaykit")));
    c.handle(post(id));
    assertThat(c.handle(get("/action", "id", id)).body()).contains("stopped after replayed 4")
        .contains("broker down");
    c.handle(post(id));
    assertThat(resent).hasSize(4);
    String again = actionId(c.handle(get("/confirm", "kind", "replay-set", "store", "relaykit")));
    assertThat(again).isNotEqualTo(id);
    c.handle(post(again));
    assertThat(resent).hasSize(10);
    assertThat(resent.values()).allMatch(n -> n.get() == 1);
    assertThat(store.count(DeadLetterQuery.all())).isZero();
  }

  @Test
  @DisplayName("a forged or garbage keyset cursor is 400 naming the parameter, never 500")
  void forgedCursor() {
    for (int i = 0; i < 3; i++) {
      add("m" + i, "failed");
    }
    Console c = console();
    ConsoleResponse garbage = c.handle(get("/dead-letters", "after", "yesterday", "afterId",
        "x"));
    assertThat(garbage.status()).isEqualTo(400);
    assertThat(garbage.body()).contains("parameter after");
    ConsoleResponse half = c.handle(get("/dead-letters", "afterId", "x"));
    assertThat(half.status()).isEqualTo(400);
    assertThat(half.body()).contains("after and afterId");
    ConsoleResponse forged = c.handle(get("/dead-letters", "after", "2026-12-07T03:00:02Z",
        "afterId", "\"><script>alert(1)</script>"));
    assertThat(forged.status()).isEqualTo(200);
    assertThat(forged.body()).doesNotContain("<script>alert");
    ConsoleResponse blank = c.handle(get("/dead-letters", "after", "2026-12-07T03:00:02Z",
        "afterId", " "));
    assertThat(blank.status()).isEqualTo(400);
    for (String bad : new String[] {"0", "-1", "201", "1e3", "99999999999"}) {
      assertThat(c.handle(get("/dead-letters", "size", bad)).status()).as(bad).isEqualTo(400);
    }
    assertThat(c.handle(get("/dead-letters", "from", "2026-12-07T03:00:05Z", "before",
        "2026-12-07T03:00:01Z")).status()).isEqualTo(400);
  }

  @Test
  @DisplayName("values that break attributes, unpaired surrogates, C0 controls and long values"
      + " render inert and capped; filter values are echoed escaped")
  void hostileValues() {
    String hostile = "\"'><svg onload=alert(1)>javascript:alert(2)\uD800\u0001"
        + "x".repeat(50_000);
    Message m = Message.builder().id("m\"1").type("t'<b>").payload("x")
        .headers(Map.of("h\"<i>", hostile)).build();
    Instant t = clock.advance(Duration.ofSeconds(1));
    DeadLetter d = new DeadLetter(m, "src\"<x>", "g'<y>", hostile, "E\"<z>", hostile, 1, t, t);
    store.add(d);
    Console c = console();
    String list = c.handle(get("/dead-letters", "reason", "\"><script>1</script>")).body();
    assertThat(list).contains("value=\"&quot;&gt;&lt;script&gt;1&lt;/script&gt;\"")
        .doesNotContain("<script>");
    String all = c.handle(get("/dead-letters")).body();
    assertThat(all).doesNotContain("<svg").doesNotContain("\u0001").doesNotContain("<x>")
        .doesNotContain("<y>").doesNotContain("<z>").contains("more characters");
    String detail = c.handle(get("/dead-letter", "store", "relaykit", "id", d.id())).body();
    assertThat(detail).doesNotContain("<svg").doesNotContain("<b>").doesNotContain("<i>")
        .doesNotContain("\u0001").contains("&lt;svg onload=alert(1)&gt;");
    assertThat(detail.length()).isLessThan(60_000);
    assertThat(detail).doesNotContainPattern("href=\"javascript:");
  }

  @Test
  @DisplayName("a ledger full of running actions refuses a new form with 503 naming the bound;"
      + " the running action ends once, and forms are issued again")
  void ledgerFullOfRunning() throws Exception {
    DeadLetter d = add("m1", "failed");
    java.util.concurrent.CountDownLatch entered = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
    DeadLetterReplayer replayer = new DeadLetterReplayer(store, x -> {
      entered.countDown();
      try {
        release.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      resent.computeIfAbsent(x.messageId(), k -> new AtomicInteger()).incrementAndGet();
    }, LifecycleListener.noop(), clock);
    Console c = Console.builder().clock(clock).readOnly(false).ledgerCapacity(1).deadLetters(
        new ConsoleDeadLetterSource("relaykit", store, replayer::replay, false, null)).build();
    String id = actionId(c.handle(get("/dead-letter", "store", "relaykit", "id", d.id())));
    java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors
        .newSingleThreadExecutor();
    try {
      java.util.concurrent.Future<ConsoleResponse> run = pool.submit(() -> c.handle(post(id)));
      assertThat(entered.await(30, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
      ConsoleResponse full = c.handle(get("/dead-letter", "store", "relaykit", "id", d.id()));
      assertThat(full.status()).isEqualTo(503);
      assertThat(full.body()).contains("action ledger is full");
      release.countDown();
      assertThat(run.get(30, java.util.concurrent.TimeUnit.SECONDS).status()).isEqualTo(303);
    } finally {
      release.countDown();
      pool.shutdownNow();
    }
    assertThat(resent.get("m1")).hasValue(1);
    assertThat(c.handle(post(id)).status()).isEqualTo(303);
    assertThat(resent.get("m1")).hasValue(1);
  }

  @Test
  @DisplayName("chart labels, titles and data values with markup are escaped; a class, colour or"
      + " data name that would break out of its attribute is refused")
  void chartLabels() {
    String evil = "\"><script>alert(1)</script>";
    String svg = TimeChart.builder("c").panel(evil, new TimeChart.Line("l", "#123", evil,
            java.util.List.of(new TimeChart.Point(0, 1), new TimeChart.Point(1000, 2))))
        .mark(new TimeChart.Mark("m", "red", 500, evil, Map.of("v", evil)))
        .window(new TimeChart.Window("w", "blue", 100, 200, evil, evil))
        .timeRange(0, 1000).timeLabel(t -> evil).build().svg();
    assertThat(svg).doesNotContain("<script>").doesNotContain("\"><script")
        .contains("data-v=\"&quot;&gt;&lt;script&gt;");
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> new TimeChart.Line("a\" x=\"",
        "#123", "l", java.util.List.of())).isInstanceOf(IllegalArgumentException.class);
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> new TimeChart.Line("a",
        "red\" onload=\"x", "l", java.util.List.of()))
        .isInstanceOf(IllegalArgumentException.class);
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> new TimeChart.Mark("m", "red", 0,
        "l", Map.of("x onload", "1"))).isInstanceOf(IllegalArgumentException.class);
  }
}
