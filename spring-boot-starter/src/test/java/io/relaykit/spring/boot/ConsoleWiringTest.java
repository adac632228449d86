package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.config.Settings;
import io.relaykit.console.ConsoleDeadLetterSource;
import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.deadletter.InMemoryDeadLetterStore;
import io.relaykit.deadletter.ReplayInProgressException;
import java.time.InstantSource;
import java.util.HashSet;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.mock.web.MockHttpServletRequest;
import org.springframework.mock.web.MockHttpServletResponse;

/** How the starter hands its stores to the console: names, notes, opening on use, one replay. */
@DisplayName("The console's view of the application's stores")
class ConsoleWiringTest {

  private static final ConsoleName NAMES = RelaykitConsoleAutoConfiguration.ServletConsole
      ::consoleName;

  @FunctionalInterface
  interface ConsoleName {
    String of(String name);
  }

  @Test
  @DisplayName("relaykit's store is purged through the store and has no note; a Kafka topic says"
      + " retention is the broker's and refuses purge")
  void sources() {
    InMemoryDeadLetterStore store = new InMemoryDeadLetterStore(InstantSource.system());
    ConsoleDeadLetterSource relaykit = RelaykitConsoleAutoConfiguration.ServletConsole
        .consoleSource(DeadLetterSource.shared("relaykit", store, id -> Optional.empty()));
    assertThat(relaykit.name()).isEqualTo("relaykit");
    assertThat(relaykit.purgeSupported()).isTrue();
    assertThat(relaykit.note()).isNull();

    ConsoleDeadLetterSource kafka = RelaykitConsoleAutoConfiguration.ServletConsole
        .consoleSource(DeadLetterSource.owned("kafka:orders.billing.dlt", () -> store,
            (s, id) -> Optional.empty(), "cannot remove a single dead letter",
            "the broker's: retention.ms or retention.bytes on topic orders.billing.dlt"));
    assertThat(kafka.purgeSupported()).isFalse();
    assertThat(kafka.note()).contains("whole topic").contains("retention.ms");
  }

  @Test
  @DisplayName("a store name the console would refuse (a RabbitMQ queue with a space or a slash,"
      + " a long one) becomes a fitting one, distinct for distinct names")
  void names() {
    assertThat(NAMES.of("kafka:orders.billing.dlt")).isEqualTo("kafka:orders.billing.dlt");
    Set<String> seen = new HashSet<>();
    for (String raw : new String[] {"rabbitmq:orders billing", "rabbitmq:orders/billing",
        "rabbitmq:orders_billing_", "rabbitmq:" + "q".repeat(300), "rabbitmq:" + "q".repeat(301),
        "rabbitmq:<script>"}) {
      String n = NAMES.of(raw);
      assertThat(n).matches("[A-Za-z0-9._:-]{1,100}");
      assertThat(seen.add(n)).as("%s is distinct", n).isTrue();
    }
  }

  @Test
  @DisplayName("the subscriptions' kind follows the transport and the Kafka group type")
  void kinds() {
    assertThat(kind()).isEqualTo("in-process");
    assertThat(kind("relaykit.transport", "kafka")).isEqualTo("kafka-group");
    assertThat(kind("relaykit.transport", "kafka", "relaykit.kafka.group-type", "share"))
        .isEqualTo("kafka-share-group");
    assertThat(kind("relaykit.transport", "rabbitmq")).isEqualTo("rabbitmq-queue");
  }

  private static String kind(String... pairs) {
    Settings.Builder b = Settings.builder();
    for (int i = 0; i < pairs.length; i += 2) {
      b.set(pairs[i], pairs[i + 1]);
    }
    return RelaykitConsoleAutoConfiguration.ServletConsole.subscriptionKind(b.build());
  }

  @Test
  @DisplayName("the console's store opens on use: a broker down at the first call fails that"
      + " call only, the next one opens it")
  void opensOnUse() {
    InMemoryDeadLetterStore store = new InMemoryDeadLetterStore(InstantSource.system());
    DeadLetter d = ConsoleSecurityTest.seed(store, "boom");
    AtomicInteger opens = new AtomicInteger();
    DeadLetterSource source = DeadLetterSource.owned("rabbitmq:q", () -> {
      if (opens.incrementAndGet() == 1) {
        throw new IllegalStateException("broker unreachable");
      }
      return store;
    }, (s, id) -> Optional.empty(), null, null);
    DeadLetterStore view = source.opensOnUse();
    assertThat(opens).hasValue(0);
    assertThatThrownBy(() -> view.count(DeadLetterQuery.all()))
        .hasMessageContaining("broker unreachable");
    assertThat(view.count(DeadLetterQuery.all())).isEqualTo(1);
    assertThat(view.find(d.id())).contains(d);
    assertThat(view.countBySource(10)).hasSize(1);
    assertThat(view.marksReplays()).isEqualTo(store.marksReplays());
    assertThat(view.remove(d.id())).contains(d);
    assertThat(store.find(d.id())).isEmpty();
    assertThat(opens).hasValue(2);
  }

  @Test
  @DisplayName("two replays of one broker dead letter at once (console and endpoint, or two"
      + " console actions): the second is refused and resends nothing")
  void oneReplayAtATime() throws Exception {
    InMemoryDeadLetterStore store = new InMemoryDeadLetterStore(InstantSource.system());
    CountDownLatch inside = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    AtomicInteger resends = new AtomicInteger();
    DeadLetterSource source = DeadLetterSource.owned("kafka:t", () -> store, (s, id) -> {
      resends.incrementAndGet();
      inside.countDown();
      try {
        release.await(30, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return Optional.empty();
    }, "no purge", "the broker's");
    CompletableFuture<Optional<DeadLetter>> first = CompletableFuture.supplyAsync(
        () -> source.replay("dl-1"));
    assertThat(inside.await(30, TimeUnit.SECONDS)).isTrue();
    assertThatThrownBy(() -> source.replay("dl-1"))
        .isInstanceOf(ReplayInProgressException.class).hasMessageContaining("dl-1");
    release.countDown();
    assertThat(first.get(30, TimeUnit.SECONDS)).isEmpty();
    assertThat(resends).hasValue(1);
    assertThat(source.replay("dl-1")).as("free again once the first ended").isEmpty();
    assertThat(resends).hasValue(2);
  }

  @Test
  @DisplayName("a request that reaches the console without a signed-in user (the application's"
      + " chain lets everyone through) is refused with 403 and never reaches the console")
  void anonymousIsRefusedByTheConsoleItself() throws Exception {
    AtomicInteger built = new AtomicInteger();
    RelaykitConsoleHandler handler = new RelaykitConsoleHandler(() -> {
      built.incrementAndGet();
      throw new AssertionError("the console must not be asked");
    }, "/relaykit/console");
    MockHttpServletRequest request = new MockHttpServletRequest("GET",
        "/relaykit/console/dead-letters");
    MockHttpServletResponse response = new MockHttpServletResponse();
    handler.handleRequest(request, response);
    assertThat(response.getStatus()).isEqualTo(403);
    assertThat(response.getContentAsString()).contains("Sign-in required");
    assertThat(built).hasValue(0);
  }
}
