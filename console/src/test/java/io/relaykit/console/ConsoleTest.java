package io.relaykit.console;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.deadletter.DeadLetterReplayer;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.deadletter.InMemoryDeadLetterStore;
import io.relaykit.message.Message;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.monitor.SubscriptionStatus;
import io.relaykit.outbox.OutboxStats;
import io.relaykit.tck.FakeClock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class ConsoleTest {

  static final Pattern ACTION_ID = Pattern.compile("name=\"action-id\" value=\"([0-9a-f]+)\"");

  final FakeClock clock = new FakeClock(Instant.parse("2026-12-07T03:00:00Z"));
  final InMemoryDeadLetterStore store = new InMemoryDeadLetterStore(clock);
  /** Replays counted per message id: the handler's effects. */
  final Map<String, AtomicInteger> resent = new ConcurrentHashMap<>();

  ConsoleDeadLetterSource source(boolean purge, String note) {
    DeadLetterReplayer replayer = new DeadLetterReplayer(store,
        d -> resent.computeIfAbsent(d.messageId(), k -> new AtomicInteger()).incrementAndGet(),
        LifecycleListener.noop(), clock);
    return new ConsoleDeadLetterSource("relaykit", store, replayer::replay, purge, note);
  }

  Console.Builder console() {
    return Console.builder().clock(clock).deadLetters(source(true, null));
  }

  DeadLetter add(String id, String source, String group, String reason, Map<String, String> h) {
    Message m = Message.builder().id(id).type("order.placed").payload("{\"order\":\"" + id
        + "\"}").headers(h).build();
    Instant t = clock.advance(Duration.ofSeconds(1));
    DeadLetter d = new DeadLetter(m, source, group, reason, "java.io.IOException", "boom", 3,
        t.minusSeconds(1), t);
    store.add(d);
    return d;
  }

  static String actionId(ConsoleResponse r) {
    Matcher m = ACTION_ID.matcher(r.body());
    assertThat(m.find()).as("an action form in\n" + r.body()).isTrue();
    return m.group(1);
  }

  static ConsoleRequest get(String path, String... params) {
    ConsoleRequest r = ConsoleRequest.get(path).withPrincipal("alice");
    for (int i = 0; i < params.length; i += 2) {
      r = r.withParameter(params[i], params[i + 1]);
    }
    return r;
  }

  static ConsoleRequest post(String actionId) {
    return get("/action", "action-id", actionId).withMethod("POST");
  }

  @Nested
  @DisplayName("rendering")
  class Rendering {
    @Test
    @DisplayName("markup in a reason, a header, a destination and the payload renders as text")
    void escapesEverything() {
      DeadLetter d = add("m<1>", "orders<script>", "g\"1", "<script>alert(1)</script>",
          Map.of("x-evil", "<script>alert(2)</script>", "<b>h</b>", "v"));
      Console c = console().payloadView(1000).build();
      ConsoleResponse list = c.handle(get("/dead-letters"));
      assertThat(list.status()).isEqualTo(200);
      assertThat(list.body()).doesNotContain("<script>").doesNotContain("<b>h</b>")
          .contains("&lt;script&gt;alert(1)&lt;/script&gt;").contains("orders&lt;script&gt;");
      ConsoleResponse detail = c.handle(get("/dead-letter", "store", "relaykit", "id", d.id()));
      assertThat(detail.status()).isEqualTo(200);
      assertThat(detail.body()).doesNotContain("<script>").doesNotContain("<b>h</b>")
          .contains("&lt;script&gt;alert(2)&lt;/script&gt;").contains("&lt;b&gt;h&lt;/b&gt;")
          .contains("m&lt;1&gt;");
      ConsoleResponse overview = c.handle(get("/"));
      assertThat(overview.body()).doesNotContain("<script>").contains("orders&lt;script&gt;");
      assertThat(overview.headers().get("Content-Security-Policy")).contains("default-src 'none'");
    }

    @Test
    @DisplayName("the payload is hidden by default, and shown escaped and cut at its cap when on")
    void payloadHiddenByDefault() {
      DeadLetter d = add("m1", "orders", null, "failed", Map.of());
      ConsoleResponse hidden = console().build().handle(get("/dead-letter", "store", "relaykit",
          "id", d.id()));
      assertThat(hidden.body()).contains("payload-hidden").doesNotContain("{&quot;order&quot;");
      ConsoleResponse shown = console().payloadView(5).build().handle(get("/dead-letter", "store",
          "relaykit", "id", d.id()));
      assertThat(shown.body()).contains("<pre id=\"payload\">{&quot;ord</pre>")
          .contains("more bytes not shown");
    }

    @Test
    @DisplayName("the overview says since when, and shows groups with their trend and subscriptions")
    void overview() {
      add("m1", "orders", "billing", "failed", Map.of());
      Console c = console().backlog(now -> new OutboxStats(7, Duration.ofSeconds(2), 0))
          .subscriptions(() -> List.of(new SubscriptionStatus("kafka-group", "orders", "billing",
              12, SubscriptionStatus.UNKNOWN, clock.instant()))).build();
      assertThat(c.history().tick()).isTrue();
      add("m2", "orders", "billing", "failed", Map.of());
      add("m3", "orders", "billing", "failed", Map.of());
      clock.advance(Duration.ofSeconds(3));
      assertThat(c.history().tick()).isTrue();
      ConsoleResponse r = c.handle(get("/"));
      assertThat(r.status()).isEqualTo(200);
      assertThat(r.body()).contains("History since <time>2026-12-07T03:00:01Z</time>")
          .contains("id=\"backlog\">7<").contains("<svg").contains("class=\"backlog\"")
          .contains("<td class=\"num\">3</td><td class=\"num\">+2</td>")
          .contains("<td>kafka-group</td><td>orders</td><td>billing</td><td class=\"num\">12"
              + "</td><td class=\"num\">unknown</td>");
    }

    @Test
    @DisplayName("the list pages newest first by keyset, and the Kafka note is on the page")
    void pagesNewestFirst() {
      for (int i = 0; i < 5; i++) {
        add("m" + i, "orders", null, "failed " + i, Map.of());
      }
      Console c = Console.builder().clock(clock).deadLetters(new ConsoleDeadLetterSource(
          "kafka:orders.dlt", store, id -> Optional.empty(), false,
          "reads its whole topic; retention is the broker's")).build();
      ConsoleResponse first = c.handle(get("/dead-letters", "size", "2"));
      assertThat(first.body()).contains("reads its whole topic").contains("id=\"total\">5<")
          .doesNotContain("purge-set");
      assertThat(reasons(first.body())).containsExactly("failed 4", "failed 3");
      Matcher next = Pattern.compile("id=\"older\" href=\"([^\"]+)\"").matcher(first.body());
      assertThat(next.find()).isTrue();
      ConsoleRequest second = get("/dead-letters");
      for (String kv : next.group(1).replace("&amp;", "&").replaceFirst("^[^?]*\\?", "")
          .split("&")) {
        String[] p = kv.split("=", 2);
        second = second.withParameter(p[0], java.net.URLDecoder.decode(p[1],
            java.nio.charset.StandardCharsets.UTF_8));
      }
      assertThat(reasons(c.handle(second).body())).containsExactly("failed 2", "failed 1");
    }

    @Test
    @DisplayName("filters by destination, group, reason, exception class and time")
    void filters() {
      add("a", "orders", "billing", "timeout talking to bank", Map.of());
      add("b", "orders", "shipping", "timeout", Map.of());
      add("c", "payments", "billing", "schema", Map.of());
      Console c = console().build();
      assertThat(reasons(c.handle(get("/dead-letters", "source", "orders", "group", "billing"))
          .body())).containsExactly("timeout talking to bank");
      assertThat(reasons(c.handle(get("/dead-letters", "reason", "time", "exception",
          "java.io.IOException", "from", "2026-12-07T03:00:02Z", "before", "2026-12-07T03:00"
              + ":03")).body())).containsExactly("timeout");
      assertThat(reasons(c.handle(get("/dead-letters", "exception", "x.Other")).body()))
          .isEmpty();
    }
  }

  static List<String> reasons(String body) {
    Matcher m = Pattern.compile("<td class=\"reason\">([^<]*)</td>").matcher(body);
    List<String> out = new ArrayList<>();
    while (m.find()) {
      out.add(m.group(1));
    }
    return out;
  }

  @Nested
  @DisplayName("actions")
  class Actions {
    @Test
    @DisplayName("a read-only console refuses actions with 403 naming the hint, and shows no forms")
    void readOnly() {
      DeadLetter d = add("m1", "orders", null, "failed", Map.of());
      Console c = console().readOnly(true).readOnlyHint("start it with --allow-actions").build();
      ConsoleResponse detail = c.handle(get("/dead-letter", "store", "relaykit", "id", d.id()));
      assertThat(detail.body()).doesNotContain("action-id").contains("--allow-actions");
      ConsoleResponse r = c.handle(post("00"));
      assertThat(r.status()).isEqualTo(403);
      assertThat(r.body()).contains("read-only").contains("--allow-actions");
      assertThat(c.handle(get("/confirm", "kind", "replay-set", "store", "relaykit")).status())
          .isEqualTo(403);
      assertThat(store.find(d.id())).isPresent();
    }

    @Test
    @DisplayName("replay one: the id is issued by the form, runs once, and a repeat shows the first"
        + " outcome")
    void replayOneOnce() {
      DeadLetter d = add("m1", "orders", null, "failed", Map.of());
      AtomicLong counted = new AtomicLong();
      Console c = console().readOnly(false).metrics(new MetricsListener() {
        @Override
        public void consoleAction(String action, String outcome, long count) {
          assertThat(action).isEqualTo("replay-one");
          counted.addAndGet(count);
        }
      }).build();
      ConsoleRequest form = get("/dead-letter", "store", "relaykit", "id", d.id());
      String id = actionId(c.handle(form));
      ConsoleResponse first = c.handle(post(id));
      assertThat(first.status()).isEqualTo(303);
      assertThat(first.headers().get("Location")).isEqualTo("/action?id=" + id);
      ConsoleResponse again = c.handle(post(id));
      assertThat(again.status()).isEqualTo(303);
      assertThat(resent.get("m1")).hasValue(1);
      assertThat(store.find(d.id())).isEmpty();
      assertThat(counted).hasValue(1);
      assertThat(c.handle(get("/action", "id", id)).body()).contains("replayed dead letter");
    }

    @Test
    @DisplayName("concurrent posts of one action id run it once")
    void concurrentTwins() throws Exception {
      for (int i = 0; i < 50; i++) {
        add("m" + i, "orders", null, "failed", Map.of());
      }
      Console c = console().readOnly(false).build();
      String id = actionId(c.handle(get("/confirm", "kind", "replay-set", "store", "relaykit")));
      ExecutorService pool = Executors.newFixedThreadPool(8);
      CountDownLatch go = new CountDownLatch(1);
      List<Future<ConsoleResponse>> posts = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        posts.add(pool.submit(() -> {
          go.await();
          return c.handle(post(id));
        }));
      }
      go.countDown();
      for (Future<ConsoleResponse> f : posts) {
        assertThat(f.get(60, TimeUnit.SECONDS).status()).isEqualTo(303);
      }
      pool.shutdown();
      assertThat(resent).hasSize(50);
      assertThat(resent.values()).allSatisfy(n -> assertThat(n).hasValue(1));
      assertThat(store.count(DeadLetterQuery.all())).isZero();
      assertThat(c.handle(get("/action", "id", id)).body()).contains("replayed 50 of 50");
    }

    @Test
    @DisplayName("an action id that was never issued is refused and does nothing")
    void unknownId() {
      DeadLetter d = add("m1", "orders", null, "failed", Map.of());
      ConsoleResponse r = console().readOnly(false).build().handle(post("deadbeef"));
      assertThat(r.status()).isEqualTo(409);
      assertThat(r.body()).contains("unknown action id deadbeef").contains("Nothing was done");
      assertThat(store.find(d.id())).isPresent();
      assertThat(resent).isEmpty();
    }

    @Test
    @DisplayName("a full ledger evicts the oldest issued id; its form is then refused, never run")
    void ledgerFull() {
      DeadLetter d = add("m1", "orders", null, "failed", Map.of());
      Console c = console().readOnly(false).ledgerCapacity(2).build();
      ConsoleRequest form = get("/dead-letter", "store", "relaykit", "id", d.id());
      String old = actionId(c.handle(form));
      c.handle(form); // two more ids (replay, purge): the first is evicted
      assertThat(c.handle(post(old)).status()).isEqualTo(409);
      assertThat(store.find(d.id())).isPresent();
    }

    @Test
    @DisplayName("a set over the cap is refused at confirmation, and at run when it grew meanwhile")
    void setCap() {
      for (int i = 0; i < 5; i++) {
        add("m" + i, "orders", null, "failed", Map.of());
      }
      Console c = console().readOnly(false).maxSetSize(5).build();
      String id = actionId(c.handle(get("/confirm", "kind", "replay-set", "store", "relaykit")));
      add("m5", "orders", null, "failed", Map.of());
      ConsoleResponse refused = c.handle(get("/confirm", "kind", "replay-set", "store",
          "relaykit"));
      assertThat(refused.status()).isEqualTo(422);
      assertThat(refused.body()).contains("6 dead letters match; a set action handles at most 5");
      c.handle(post(id));
      assertThat(c.handle(get("/action", "id", id)).body())
          .contains("refused: 6 dead letters match now");
      assertThat(resent).isEmpty();
    }

    @Test
    @DisplayName("a replay that fails mid-set stops there, says how many it replayed, keeps the rest")
    void failsMidSet() {
      for (int i = 0; i < 10; i++) {
        add("m" + i, "orders", null, "failed", Map.of());
      }
      AtomicInteger calls = new AtomicInteger();
      DeadLetterReplayer replayer = new DeadLetterReplayer(store, d -> {
        if (calls.incrementAndGet() == 4) {
          throw new IllegalStateException("broker down");
        }
        resent.computeIfAbsent(d.messageId(), k -> new AtomicInteger()).incrementAndGet();
      }, LifecycleListener.noop(), clock);
      Console c = Console.builder().clock(clock).readOnly(false).deadLetters(
          new ConsoleDeadLetterSource("relaykit", store, replayer::replay, true, null)).build();
      String id = actionId(c.handle(get("/confirm", "kind", "replay-set", "store", "relaykit")));
      c.handle(post(id));
      assertThat(c.handle(get("/action", "id", id)).body()).contains("stopped after replayed 3")
          .contains("broker down");
      assertThat(resent).hasSize(3);
      assertThat(store.count(DeadLetterQuery.all())).isEqualTo(7);
    }

    @Test
    @DisplayName("a store that cannot remove refuses purge with its note")
    void purgeUnsupported() {
      DeadLetter d = add("m1", "orders", null, "failed", Map.of());
      Console c = Console.builder().clock(clock).readOnly(false).deadLetters(
          new ConsoleDeadLetterSource("kafka:dlt", store, id -> Optional.empty(), false,
              "retention is the broker's")).build();
      assertThat(c.handle(get("/dead-letter", "store", "kafka:dlt", "id", d.id())).body())
          .doesNotContain("id=\"purge\"").contains("retention is the broker&#39;s");
      ConsoleResponse r = c.handle(get("/confirm", "kind", "purge-set", "store", "kafka:dlt"));
      assertThat(r.status()).isEqualTo(409);
      assertThat(r.body()).contains("retention is the broker&#39;s");
    }

    @Test
    @DisplayName("purge one removes it; the CSRF token of the request is embedded in the form")
    void purgeOne() {
      DeadLetter d = add("m1", "orders", null, "failed", Map.of());
      Console c = console().readOnly(false).build();
      ConsoleRequest form = new ConsoleRequest("GET", "/ops", "/dead-letter", Map.of("store",
          List.of("relaykit"), "id", List.of(d.id())), "bob", "_csrf", "tok\"en");
      ConsoleResponse page = c.handle(form);
      assertThat(page.body()).contains("name=\"_csrf\" value=\"tok&quot;en\"")
          .contains("action=\"/ops/action\"");
      Matcher m = Pattern.compile("id=\"purge-form\"[^>]*><input type=\"hidden\" name=\"action-id"
          + "\" value=\"([0-9a-f]+)\"").matcher(page.body());
      assertThat(m.find()).isTrue();
      c.handle(post(m.group(1)));
      assertThat(store.find(d.id())).isEmpty();
      assertThat(resent).isEmpty();
    }
  }

  @Nested
  @DisplayName("bad input")
  class BadInput {
    final Console c = console().readOnly(false).build();

    @Test
    @DisplayName("a blank id is 400 naming it")
    void blankId() {
      ConsoleResponse r = c.handle(get("/dead-letter", "store", "relaykit", "id", "  "));
      assertThat(r.status()).isEqualTo(400);
      assertThat(r.body()).contains("parameter id is blank");
      assertThat(c.handle(get("/action", "action-id", " ").withMethod("POST")).body())
          .contains("parameter action-id is blank");
    }

    @Test
    @DisplayName("an oversize, repeated or control-character parameter is 400 naming it")
    void oversize() {
      ConsoleResponse r = c.handle(get("/dead-letters", "reason", "x".repeat(1001)));
      assertThat(r.status()).isEqualTo(400);
      assertThat(r.body()).contains("parameter reason is 1001 characters long; at most 1000");
      assertThat(c.handle(get("/dead-letters", "group", "a", "group", "b")).body())
          .contains("parameter group is given 2 times");
      assertThat(c.handle(get("/dead-letters", "group", "a\u0000b")).body())
          .contains("parameter group holds a control character");
      ConsoleRequest many = get("/dead-letters");
      for (int i = 0; i < 70; i++) {
        many = many.withParameter("p" + i, "v");
      }
      assertThat(c.handle(many).status()).isEqualTo(400);
    }

    @Test
    @DisplayName("a bad time, size, store or kind is 400 naming it; an unknown page 404")
    void badValues() {
      assertThat(c.handle(get("/dead-letters", "from", "yesterday")).body())
          .contains("parameter from is not an ISO-8601 instant");
      assertThat(c.handle(get("/dead-letters", "size", "201")).body())
          .contains("parameter size must be a whole number in 1..200");
      assertThat(c.handle(get("/dead-letters", "store", "nope")).body())
          .contains("parameter store: no store nope");
      assertThat(c.handle(get("/confirm", "kind", "drop", "store", "relaykit")).body())
          .contains("parameter kind must be replay-set or purge-set");
      assertThat(c.handle(get("/dead-letters", "from", "2026-12-07T03:00:00Z", "before",
          "2026-12-07T02:00:00Z")).status()).isEqualTo(400);
      assertThat(c.handle(get("/nothing")).status()).isEqualTo(404);
      assertThat(c.handle(get("/").withMethod("DELETE")).status()).isEqualTo(405);
    }
  }

  @Nested
  @DisplayName("faults")
  class Faults {
    @Test
    @DisplayName("a store that fails shows the error on the overview and 503 on the list")
    void storeFails() {
      FlakyDeadLetterStore broken = new FlakyDeadLetterStore(store);
      broken.failure.set(new IllegalStateException("database <down>"));
      Console c = Console.builder().clock(clock).deadLetters(new ConsoleDeadLetterSource("db",
          broken, id -> Optional.empty(), true, null)).build();
      assertThat(c.handle(get("/")).body()).contains("could not read: database &lt;down&gt;");
      ConsoleResponse list = c.handle(get("/dead-letters"));
      assertThat(list.status()).isEqualTo(503);
      assertThat(list.body()).contains("database &lt;down&gt;");
      assertThat(c.history().tick()).isTrue();
      assertThat(c.history().failedReads()).isEqualTo(1);
      assertThat(c.history().latest().failedParts()).containsExactly("dead letters of db");
    }

    @Test
    @DisplayName("a replay whose reply was lost (resent, then the store call failed) is not"
        + " repeated by a retried request")
    void lostReplyNotRepeated() {
      DeadLetter d = add("m1", "orders", null, "failed", Map.of());
      AtomicInteger effects = new AtomicInteger();
      ConsoleDeadLetterSource lossy = new ConsoleDeadLetterSource("relaykit", store, id -> {
        effects.incrementAndGet();
        store.remove(id);
        throw new IllegalStateException("reply lost");
      }, true, null);
      Console c = Console.builder().clock(clock).readOnly(false).deadLetters(lossy).build();
      String id = actionId(c.handle(get("/dead-letter", "store", "relaykit", "id", d.id())));
      c.handle(post(id));
      c.handle(post(id));
      assertThat(effects).hasValue(1);
      assertThat(c.handle(get("/action", "id", id)).body()).contains("reply lost");
    }

    @Test
    @DisplayName("an interrupt during a set stops it at the next dead letter, saying how many it"
        + " replayed; the rest stay")
    void interruptStopsASet() {
      for (int i = 0; i < 10; i++) {
        add("m" + i, "orders", null, "failed", Map.of());
      }
      AtomicInteger calls = new AtomicInteger();
      DeadLetterReplayer replayer = new DeadLetterReplayer(store, d -> {
        resent.computeIfAbsent(d.messageId(), k -> new AtomicInteger()).incrementAndGet();
        if (calls.incrementAndGet() == 3) {
          Thread.currentThread().interrupt();
        }
      }, LifecycleListener.noop(), clock);
      Console c = Console.builder().clock(clock).readOnly(false).deadLetters(
          new ConsoleDeadLetterSource("relaykit", store, replayer::replay, true, null)).build();
      String id = actionId(c.handle(get("/confirm", "kind", "replay-set", "store", "relaykit")));
      try {
        c.handle(post(id));
      } finally {
        Thread.interrupted();
      }
      assertThat(c.handle(get("/action", "id", id)).body())
          .contains("stopped after replayed 3: interrupted");
      assertThat(resent).hasSize(3);
      assertThat(store.count(DeadLetterQuery.all())).isEqualTo(7);
    }

    @Test
    @DisplayName("a twin request interrupted while it waits for the first run answers 503 and"
        + " runs nothing")
    void interruptedTwinWait() throws Exception {
      DeadLetter d = add("m1", "orders", null, "failed", Map.of());
      CountDownLatch inReplay = new CountDownLatch(1);
      CountDownLatch release = new CountDownLatch(1);
      AtomicInteger effects = new AtomicInteger();
      ConsoleDeadLetterSource slow = new ConsoleDeadLetterSource("relaykit", store, x -> {
        effects.incrementAndGet();
        inReplay.countDown();
        try {
          release.await(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        return store.remove(x);
      }, true, null);
      Console c = Console.builder().clock(clock).readOnly(false).deadLetters(slow).build();
      String id = actionId(c.handle(get("/dead-letter", "store", "relaykit", "id", d.id())));
      ExecutorService pool = Executors.newSingleThreadExecutor();
      Future<ConsoleResponse> first = pool.submit(() -> c.handle(post(id)));
      assertThat(inReplay.await(60, TimeUnit.SECONDS)).isTrue();
      Thread.currentThread().interrupt();
      ConsoleResponse twin;
      try {
        twin = c.handle(post(id));
      } finally {
        Thread.interrupted();
      }
      assertThat(twin.status()).isEqualTo(503);
      assertThat(twin.body()).contains("interrupted while waiting for action");
      release.countDown();
      assertThat(first.get(60, TimeUnit.SECONDS).status()).isEqualTo(303);
      pool.shutdown();
      assertThat(effects).hasValue(1);
    }

    @Test
    @DisplayName("a restart forgets the history and every action id: an old form is refused, never"
        + " run")
    void restartForgets() {
      DeadLetter d = add("m1", "orders", null, "failed", Map.of());
      Console before = console().readOnly(false)
          .backlog(now -> new OutboxStats(1, Duration.ZERO, 0)).build();
      assertThat(before.history().tick()).isTrue();
      String id = actionId(before.handle(get("/dead-letter", "store", "relaykit", "id",
          d.id())));
      before.close();
      clock.advance(Duration.ofMinutes(5));
      Console after = console().readOnly(false).build();
      assertThat(after.history().samples()).isEmpty();
      assertThat(after.history().since()).isEqualTo(clock.instant());
      assertThat(after.handle(post(id)).status()).isEqualTo(409);
      assertThat(store.find(d.id())).isPresent();
      assertThat(resent).isEmpty();
    }

    @Test
    @DisplayName("a clock stepped back leaves a gap in the history, never an exception")
    void clockStepsBack() {
      Console c = console().backlog(now -> new OutboxStats(1, Duration.ZERO, 0)).build();
      assertThat(c.history().tick()).isTrue();
      clock.stepWall(Duration.ofMinutes(-10));
      assertThat(c.history().tick()).isFalse();
      assertThat(c.history().failedReads()).isEqualTo(1);
      assertThat(c.handle(get("/")).status()).isEqualTo(200);
    }

    @Test
    @DisplayName("close stops sampling; pages are still answered from the history so far")
    void close() {
      Console c = console().backlog(now -> new OutboxStats(1, Duration.ZERO, 0)).build();
      c.start();
      c.close();
      c.close();
      assertThat(c.handle(get("/")).status()).isEqualTo(200);
      org.assertj.core.api.Assertions.assertThatThrownBy(c::start)
          .isInstanceOf(IllegalStateException.class);
    }
  }

  static <T> List<T> sync(List<T> l) {
    return Collections.synchronizedList(l);
  }
}
