package io.relaykit.test.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.message.Message;
import io.relaykit.message.Publisher;
import io.relaykit.message.Subscriber;
import io.relaykit.spring.boot.RelaykitListener;
import io.relaykit.spring.boot.TransactionalOutbox;
import io.relaykit.tck.FakeClock;
import io.relaykit.test.TestRelayKit;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Import;
import org.springframework.core.env.Environment;
import org.springframework.stereotype.Component;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * What {@link RelaykitTest} itself guarantees, on a minimal application: the context's publisher,
 * subscriber and clock are the harness's, the transport is the in-process one whatever the
 * properties say, listener deliveries and dead letters are recorded, and the recordings are
 * cleared before each test. The application-level tests written with it (publish, handle, retry,
 * dead letter, JDBC and JPA) are the Spring Boot example's (examples/spring-boot-app).
 */
@SpringBootTest(classes = RelaykitTestWiringTest.App.class, properties = {
    "spring.datasource.url=jdbc:h2:mem:rk-wiring-${random.uuid};DB_CLOSE_DELAY=-1",
    "relaykit.retry.max-attempts=2", "relaykit.retry.initial-backoff=1ms",
    "relaykit.retry.max-backoff=1ms",
    // Whatever the application says, @RelaykitTest runs the in-process transport.
    "relaykit.transport=kafka"})
@RelaykitTest
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class RelaykitTestWiringTest {
  static final Duration WAIT = Duration.ofSeconds(10);

  @Autowired TestRelayKit relaykit;
  @Autowired TransactionalOutbox outbox;
  @Autowired TransactionTemplate tx;
  @Autowired Pongs pongs;

  void append(String id) {
    tx.executeWithoutResult(status -> outbox.append("pings",
        Message.builder().id(id).type("ping").key(id).payload("{}").build()));
  }

  @Test
  @Order(1)
  void listenerDeliveriesAndDeadLettersAreRecorded() {
    relaykit.failNext("pong", 1);
    append("ping-1");
    assertThat(relaykit.awaitHandled("pong", "ping-1", WAIT).attempt()).isEqualTo(2);
    relaykit.awaitOutboxDrained(WAIT);
    assertThat(relaykit.published("pings")).extracting(Message::id).containsExactly("ping-1");

    relaykit.failNext("pong", 2);
    append("ping-2");
    assertThat(relaykit.awaitDeadLetters("pong", 1, WAIT)).singleElement()
        .satisfies(d -> assertThat(d.messageId()).isEqualTo("ping-2"));
    assertThat(pongs.received).containsExactly("ping-1");
  }

  @Test
  @Order(2)
  void wiringAndClearedBeforeEachTest(@Autowired Publisher publisher,
      @Autowired Subscriber subscriber, @Autowired FakeClock clock, @Autowired Environment env) {
    assertThat(publisher).isSameAs(relaykit.publisher());
    assertThat(subscriber).isSameAs(relaykit.subscriber());
    assertThat(clock).isSameAs(relaykit.clock());
    assertThat(env.getProperty("relaykit.transport")).isEqualTo("memory");
    assertThat(relaykit.published("pings")).as("cleared before each test").isEmpty();
    assertThat(relaykit.handled("pong")).as("cleared before each test").isEmpty();
    assertThat(relaykit.deadLetters("pong")).as("cleared before each test").isEmpty();
  }

  /** The application: a listener; the starter's outbox, relay and storage (in memory). */
  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import(Pongs.class)
  static class App {}

  /** Records what it received. */
  @Component
  static class Pongs {
    final List<String> received = new CopyOnWriteArrayList<>();

    @RelaykitListener(destination = "pings", group = "pong")
    public void on(Message ping) {
      received.add(ping.id());
    }
  }
}
