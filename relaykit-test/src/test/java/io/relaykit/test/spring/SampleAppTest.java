package io.relaykit.test.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.message.Message;
import io.relaykit.message.Publisher;
import io.relaykit.message.Subscriber;
import io.relaykit.tck.FakeClock;
import io.relaykit.test.TestRelayKit;
import io.relaykit.test.spring.sample.SampleApp;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;

/**
 * An application's tests written with {@link RelaykitTest} only: publish, handle, retry, dead
 * letter. In memory here; {@link SampleAppH2Test} runs the same on the JDBC storage.
 */
@SpringBootTest(classes = SampleApp.class, properties = {
    "spring.datasource.url=jdbc:h2:mem:sample-${random.uuid};DB_CLOSE_DELAY=-1",
    "relaykit.retry.max-attempts=3", "relaykit.retry.initial-backoff=1ms",
    "relaykit.retry.max-backoff=1ms",
    // Whatever the application says, @RelaykitTest runs the in-process transport.
    "relaykit.transport=kafka"})
@RelaykitTest
class SampleAppTest {
  static final Duration WAIT = Duration.ofSeconds(10);

  @Autowired TestRelayKit relaykit;
  @Autowired SampleApp.Orders orders;
  @Autowired SampleApp.Sms sms;

  static String id() {
    return "o-" + UUID.randomUUID();
  }

  @Test
  @DisplayName("placing an order publishes one OrderPlaced and the listener sends one SMS")
  void publishAndHandle() {
    String id = id();
    orders.place(id, "book");

    assertThat(relaykit.awaitHandled("sms", id, WAIT).attempt()).isEqualTo(1);
    relaykit.awaitOutboxDrained(WAIT);
    assertThat(relaykit.published("orders")).extracting(Message::id).containsExactly(id);
    assertThat(relaykit.published("orders", Message::type)).containsExactly("order.placed");
    assertThat(sms.sent).containsOnlyOnce(id);
  }

  @Test
  @DisplayName("two failed attempts are retried (relaykit.retry.*), the third sends the SMS")
  void retries() {
    String id = id();
    relaykit.failNext("sms", 2);
    orders.place(id, "book");

    assertThat(relaykit.awaitHandled("sms", id, WAIT).attempt()).isEqualTo(3);
    assertThat(relaykit.deadLetters("sms")).isEmpty();
    assertThat(sms.sent).containsOnlyOnce(id);
  }

  @Test
  @DisplayName("a poison order is dead-lettered at once; failures past the limit after three")
  void deadLetters() {
    String poison = id();
    orders.place(poison, "POISON");
    DeadLetter dead = relaykit.awaitDeadLetters("sms", 1, WAIT).get(0);
    assertThat(dead.messageId()).isEqualTo(poison);
    assertThat(dead.attempts()).isEqualTo(1);
    assertThat(dead.reason()).contains("no SMS for a poison SKU");

    String unlucky = id();
    relaykit.failNext("sms", 3);
    orders.place(unlucky, "book");
    assertThat(relaykit.awaitDeadLetters("sms", 2, WAIT))
        .filteredOn(d -> d.messageId().equals(unlucky)).singleElement()
        .satisfies(d -> assertThat(d.attempts()).isEqualTo(3));
    assertThat(sms.sent).doesNotContain(poison, unlucky);
  }

  @Test
  @DisplayName("a transaction that fails after the append publishes nothing")
  void rollback() {
    String id = id();
    assertThatThrownBy(() -> orders.placeThenFail(id, "book"))
        .hasMessageContaining("payment declined");
    String after = id();
    orders.place(after, "book");
    relaykit.awaitHandled("sms", after, WAIT);
    assertThat(orders.count(id)).isZero();
    assertThat(relaykit.published("orders")).extracting(Message::id).containsExactly(after);
    assertThat(sms.sent).doesNotContain(id);
  }

  @Test
  @DisplayName("the context's publisher, subscriber and clock are the harness's")
  void wiring(@Autowired Publisher publisher, @Autowired Subscriber subscriber,
      @Autowired FakeClock clock) {
    assertThat(publisher).isSameAs(relaykit.publisher());
    assertThat(subscriber).isSameAs(relaykit.subscriber());
    assertThat(clock).isSameAs(relaykit.clock());
    assertThat(relaykit.handled("sms")).as("cleared before each test").isEmpty();
  }
}
