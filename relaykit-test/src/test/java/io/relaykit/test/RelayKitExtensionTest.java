package io.relaykit.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.message.Delivery;
import io.relaykit.message.Message;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.tck.FakeClock;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIf;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Events;

/** The extension and its harness, as an application's test uses them. */
class RelayKitExtensionTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  private static Message order(String id) {
    return Message.builder().id(id).type("order.placed").key(id)
        .payload("{\"id\":\"" + id + "\"}").build();
  }

  @Nested
  @DisplayName("in memory")
  class InMemory {
    @RegisterExtension
    final RelayKitExtension relaykit = RelayKitExtension.inMemory();

    @Test
    @DisplayName("an appended message is published once, handled once, and the outbox drains")
    void publishAndHandle(TestRelayKit kit) {
      List<String> sms = new CopyOnWriteArrayList<>();
      relaykit.subscribe(SubscriptionSpec.builder("orders", "sms").build(),
          d -> sms.add(d.message().key().orElseThrow()));
      relaykit.append("orders", order("o-1"));

      Delivery handled = kit.awaitHandled("sms", "o-1", WAIT);
      assertThat(handled.attempt()).isEqualTo(1);
      kit.awaitOutboxDrained(WAIT);
      assertThat(kit.published("orders")).extracting(Message::id).containsExactly("o-1");
      assertThat(kit.published("orders", m -> new String(m.payload(), StandardCharsets.UTF_8)))
          .containsExactly("{\"id\":\"o-1\"}");
      assertThat(sms).containsExactly("o-1");
      assertThat(kit.published("elsewhere")).isEmpty();
      assertThat(kit.backlog().unsent()).isZero();
    }

    @Test
    @DisplayName("failingFirst(2) under three attempts: handled on the third, no dead letter")
    void retriesThenSucceeds() {
      TestRelayKit kit = relaykit.kit();
      List<Integer> attempts = new CopyOnWriteArrayList<>();
      kit.subscribe(SubscriptionSpec.builder("orders", "sms")
              .retryPolicy(TestRelayKit.fastRetries(3)).build(),
          TestRelayKit.failingFirst(2, d -> attempts.add(d.attempt())));
      kit.publisher().publish("orders", order("o-2")).join();

      assertThat(kit.awaitHandled("sms", "o-2", WAIT).attempt()).isEqualTo(3);
      assertThat(attempts).containsExactly(3);
      assertThat(kit.deadLetters("sms")).isEmpty();
    }

    @Test
    @DisplayName("failing more often than the policy allows dead-letters in the group, with the"
        + " injected reason; other groups are not affected")
    void deadLetters() {
      TestRelayKit kit = relaykit.kit();
      kit.subscribe(SubscriptionSpec.builder("orders", "sms")
          .retryPolicy(TestRelayKit.fastRetries(2)).build(), d -> { });
      kit.subscribe(SubscriptionSpec.builder("orders", "coupon").build(), d -> { });
      kit.failNext("sms", 2);
      relaykit.append("orders", order("o-3"));

      List<DeadLetter> dead = kit.awaitDeadLetters("sms", 1, WAIT);
      assertThat(dead).singleElement().satisfies(d -> {
        assertThat(d.messageId()).isEqualTo("o-3");
        assertThat(d.attempts()).isEqualTo(2);
        assertThat(d.group()).isEqualTo("sms");
      });
      kit.awaitHandled("coupon", "o-3", WAIT);
      assertThat(kit.handled("sms")).isEmpty();
      assertThat(kit.deadLetters("coupon")).isEmpty();
    }

    @Test
    @DisplayName("failNext counts deliveries: the next message is handled normally")
    void failNextIsCounted() {
      TestRelayKit kit = relaykit.kit();
      kit.subscribe(SubscriptionSpec.builder("orders", "sms")
          .retryPolicy(TestRelayKit.fastRetries(3)).build(), d -> { });
      kit.failNext("sms", 1);
      relaykit.append("orders", order("o-4"));
      assertThat(kit.awaitHandled("sms", "o-4", WAIT).attempt()).isEqualTo(2);
      relaykit.append("orders", order("o-5"));
      assertThat(kit.awaitHandled("sms", "o-5", WAIT).attempt()).isEqualTo(1);
    }

    @Test
    @DisplayName("the clock is relaykit's: a message expiring before the clock's time is never"
        + " handled")
    void clockDecidesExpiry() {
      TestRelayKit kit = relaykit.kit();
      FakeClock clock = relaykit.clock();
      assertThat(clock.instant()).isEqualTo(FakeClock.EPOCH);
      List<String> handled = new CopyOnWriteArrayList<>();
      kit.subscribe(SubscriptionSpec.builder("codes", "sms").build(),
          d -> handled.add(d.message().id()));
      clock.advance(Duration.ofMinutes(10));
      kit.publisher().publish("codes", Message.builder().id("stale").type("code")
          .payload("1").createdAt(FakeClock.EPOCH).expiresAt(FakeClock.EPOCH.plus(Duration.ofMinutes(5))).build()).join();
      kit.publisher().publish("codes", Message.builder().id("fresh").type("code")
          .payload("2").createdAt(clock.instant()).expiresAt(clock.instant().plus(Duration.ofMinutes(5))).build()).join();
      kit.awaitHandled("sms", "fresh", WAIT);
      assertThat(handled).containsExactly("fresh");
    }

    @Test
    @DisplayName("a wait that times out says what it waited for and what it saw")
    void timeoutsExplain() {
      TestRelayKit kit = relaykit.kit();
      kit.subscribe(SubscriptionSpec.builder("orders", "sms").build(), d -> { });
      relaykit.append("orders", order("seen"));
      kit.awaitHandled("sms", "seen", WAIT);
      assertThatThrownBy(() -> kit.awaitHandled("sms", "missing", Duration.ofMillis(50)))
          .isInstanceOf(AssertionError.class)
          .hasMessageContaining("message missing handled by sms")
          .hasMessageContaining("seen 1: [seen]");
      assertThatThrownBy(() -> kit.awaitDeadLetters("sms", 1, Duration.ofMillis(50)))
          .isInstanceOf(AssertionError.class).hasMessageContaining("it has 0");
      assertThatThrownBy(() -> kit.failNext("sms", 0))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("was 0");
      assertThatThrownBy(() -> TestRelayKit.failingFirst(-1, d -> { }))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("was -1");
    }
  }

  @Nested
  @DisplayName("on H2, the relay run by the test")
  class OnH2 {
    @RegisterExtension
    final RelayKitExtension relaykit = RelayKitExtension.builder().storage(TestStorage.H2)
        .relay(false).build();

    @Test
    @DisplayName("an append in a rolled-back transaction publishes nothing; a committed one, once")
    void appendJoinsTheTransaction() throws Exception {
      TestRelayKit kit = relaykit.kit();
      kit.subscribe(SubscriptionSpec.builder("orders", "sms").build(), d -> { });
      try (Connection c = relaykit.dataSource().getConnection(); Statement s = c.createStatement()) {
        s.execute("CREATE TABLE orders (id VARCHAR(20) PRIMARY KEY)");
        c.setAutoCommit(false);
        s.execute("INSERT INTO orders VALUES ('o-rolled')");
        relaykit.jdbcOutbox().append(c, "orders",
            order("o-rolled"));
        c.rollback();
        s.execute("INSERT INTO orders VALUES ('o-kept')");
        relaykit.jdbcOutbox().append(c, "orders",
            order("o-kept"));
        c.commit();
      }
      OutboxRelay.Batch batch = relaykit.relayOnce();
      assertThat(batch.sent()).isEqualTo(1);
      assertThat(relaykit.relayOnce().claimed()).isZero();
      assertThat(kit.published("orders")).extracting(Message::id).containsExactly("o-kept");
      kit.awaitHandled("sms", "o-kept", WAIT);
      kit.awaitOutboxDrained(WAIT);
    }

    @Test
    @DisplayName("each test gets a fresh database: the previous test's table is not there")
    void freshDatabase() throws Exception {
      try (Connection c = relaykit.dataSource().getConnection(); Statement s = c.createStatement()) {
        s.execute("CREATE TABLE orders (id VARCHAR(20) PRIMARY KEY)");
      }
      assertThat(relaykit.kit().backlog().unsent()).isZero();
    }
  }

  @Test
  @DisplayName("outside a test, and with in-memory storage, the extension refuses with the reason")
  void misuse() {
    RelayKitExtension idle = RelayKitExtension.inMemory();
    assertThatThrownBy(idle::kit).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("only during a test");
    Events events = fixtures(MemoryDataSource.class);
    events.assertStatistics(s -> s.started(1).failed(1));
    assertThat(events.failed().stream().map(e -> e.getPayload(
        org.junit.platform.engine.TestExecutionResult.class).orElseThrow().getThrowable()
        .orElseThrow().getMessage()))
        .singleElement().asString().contains("dataSource() needs TestStorage.H2");
    assertThatThrownBy(() -> RelayKitExtension.builder().pollInterval(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("pollInterval");
  }

  @Test
  @DisplayName("a static extension still gives each test its own relaykit; it is closed after")
  void staticRegistration() {
    Events events = fixtures(StaticShared.class);
    events.assertStatistics(s -> s.started(2).succeeded(2));
    assertThat(StaticShared.seen).hasSize(2).doesNotHaveDuplicates();
    assertThatThrownBy(StaticShared.relaykit::kit).isInstanceOf(IllegalStateException.class);
  }

  private static volatile boolean runningFixtures;

  /** Whether a fixture class runs now: only inside {@link #fixtures}, never on its own. */
  static boolean runningFixtures() {
    return runningFixtures;
  }

  /** Runs a fixture class through JUnit's test kit. */
  private static Events fixtures(Class<?> fixture) {
    runningFixtures = true;
    try {
      return EngineTestKit.engine("junit-jupiter").selectors(selectClass(fixture)).execute()
          .testEvents();
    } finally {
      runningFixtures = false;
    }
  }

  /** Run by {@link #misuse()} through the test kit only. */
  @EnabledIf("io.relaykit.test.RelayKitExtensionTest#runningFixtures")
  static class MemoryDataSource {
    @RegisterExtension
    final RelayKitExtension relaykit = RelayKitExtension.inMemory();

    @Test
    void asksForADataSource() {
      relaykit.dataSource();
    }
  }

  /** Run by {@link #staticRegistration()} through the test kit only. */
  @EnabledIf("io.relaykit.test.RelayKitExtensionTest#runningFixtures")
  static class StaticShared {
    @RegisterExtension
    static final RelayKitExtension relaykit = RelayKitExtension.inMemory();
    static final List<TestRelayKit> seen = new CopyOnWriteArrayList<>();

    @Test
    void first() {
      check();
    }

    @Test
    void second() {
      check();
    }

    private void check() {
      seen.add(relaykit.kit());
      relaykit.append("orders", order("only-" + seen.size()));
      relaykit.kit().awaitOutboxDrained(WAIT);
      assertThat(relaykit.kit().published("orders")).hasSize(1);
    }
  }
}
