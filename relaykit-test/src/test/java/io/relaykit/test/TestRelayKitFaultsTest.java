package io.relaykit.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.message.Delivery;
import io.relaykit.message.Message;
import io.relaykit.message.PublishException;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.ordering.OrderingMode;
import java.time.Duration;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The harness when things go wrong: refusals, interrupts, bounds and concurrent deliveries. */
class TestRelayKitFaultsTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  @RegisterExtension
  final RelayKitExtension relaykit = RelayKitExtension.builder().relay(false).build();

  private static Message message(String id) {
    return Message.builder().id(id).type("t").key(id).payload("x").build();
  }

  @Test
  @DisplayName("a publish the transport refuses fails to the caller and is not recorded")
  void refusedPublishIsNotRecorded() {
    TestRelayKit kit = relaykit.kit();
    kit.transport().close();
    assertThatThrownBy(() -> kit.publisher().publish("orders", message("m1")).join())
        .isInstanceOf(CompletionException.class).hasCauseInstanceOf(PublishException.class);
    assertThat(kit.published("orders")).isEmpty();
  }

  @Test
  @DisplayName("an interrupted wait fails at once, says so, and keeps the interrupt flag")
  void interruptedWait() {
    TestRelayKit kit = relaykit.kit();
    Thread.currentThread().interrupt();
    try {
      assertThatThrownBy(() -> kit.awaitHandled("sms", "never", WAIT))
          .isInstanceOf(AssertionError.class).hasMessageContaining("interrupted");
      assertThat(Thread.currentThread().isInterrupted()).isTrue();
    } finally {
      Thread.interrupted();
    }
  }

  @Test
  @DisplayName("recordings are bounded: past 10 000 per destination they are counted, and a wait"
      + " that may have missed one says so")
  void boundedRecordings() {
    TestRelayKit kit = relaykit.kit();
    for (int i = 0; i <= TestRelayKit.MAX_RECORDS; i++) {
      kit.publisher().publish("burst", message("b" + i)).join();
    }
    assertThat(kit.published("burst")).hasSize(TestRelayKit.MAX_RECORDS);
    assertThatThrownBy(() -> kit.awaitPublished("burst",
        m -> m.id().equals("b" + TestRelayKit.MAX_RECORDS), Duration.ofMillis(20)))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("(1 more not kept: over 10000)");
  }

  @Test
  @DisplayName("failNext under four concurrent handlers fails exactly that many deliveries")
  void failNextUnderConcurrency() {
    TestRelayKit kit = relaykit.kit();
    kit.subscribe(SubscriptionSpec.builder("orders", "sms").ordering(OrderingMode.UNORDERED)
        .concurrency(4).maxInFlight(16).retryPolicy(TestRelayKit.fastRetries(10)).build(),
        d -> { });
    kit.failNext("sms", 7);
    for (int i = 0; i < 40; i++) {
      kit.publisher().publish("orders", message("c" + i)).join();
    }
    for (int i = 0; i < 40; i++) {
      kit.awaitHandled("sms", "c" + i, WAIT);
    }
    assertThat(kit.handled("sms")).hasSize(40);
    assertThat(kit.handled("sms").stream().mapToInt(Delivery::attempt).map(a -> a - 1).sum())
        .as("failed attempts").isEqualTo(7);
    assertThat(kit.deadLetters("sms")).isEmpty();
  }

  @Test
  @DisplayName("clear() forgets recordings, pending failures and dead letters")
  void clear() {
    TestRelayKit kit = relaykit.kit();
    kit.subscribe(SubscriptionSpec.builder("orders", "sms")
        .retryPolicy(TestRelayKit.fastRetries(1)).build(), d -> { });
    kit.failNext("sms", 1);
    kit.publisher().publish("orders", message("d1")).join();
    kit.awaitDeadLetters("sms", 1, WAIT);
    kit.failNext("sms", 5);
    kit.clear();
    assertThat(kit.published("orders")).isEmpty();
    assertThat(kit.deadLetters("sms")).isEmpty();
    kit.publisher().publish("orders", message("d2")).join();
    assertThat(kit.awaitHandled("sms", "d2", WAIT).attempt()).as("no failure left").isEqualTo(1);
  }
}
