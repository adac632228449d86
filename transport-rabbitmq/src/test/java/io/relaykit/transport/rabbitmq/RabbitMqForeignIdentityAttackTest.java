package io.relaykit.transport.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.impl.LongStringHelper;
import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.message.Delivery;
import io.relaykit.message.InboundMapping;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.ordering.OrderingMode;
import io.relaykit.retry.Backoff;
import io.relaykit.retry.RetryPolicy;
import io.relaykit.tck.Await;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("two different messages from the wire never share one message id")
class RabbitMqForeignIdentityAttackTest {

  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final Instant STAMP = Instant.parse("2026-12-01T08:00:00Z");

  private RabbitMqTransportConfig config;
  private RabbitMqTopology topology;
  private Connection admin;
  private String destination;
  private RabbitMqSubscriber subscriber;
  private RabbitMqDeadLetterStore dlq;

  @BeforeEach
  void setUp() {
    config = TestBroker.config().build();
    topology = RabbitMqTopology.of(config);
    admin = TestBroker.connect(config);
    destination = TestBroker.unique("idattack");
    subscriber = RabbitMqSubscriber.create(config);
  }

  @AfterEach
  void tearDown() throws Exception {
    subscriber.close();
    if (dlq != null) {
      dlq.close();
    }
    topology.delete(admin, destination, "g", false);
    try (Channel ch = admin.createChannel()) {
      ch.exchangeDelete(topology.exchange(destination));
    }
    admin.close();
  }

  private SubscriptionSpec spec(InboundMapping inbound) {
    return SubscriptionSpec.builder(destination, "g").ordering(OrderingMode.UNORDERED)
        .concurrency(2).maxInFlight(16).inbound(inbound)
        .retryPolicy(RetryPolicy.builder().maxAttempts(1)
            .backoff(Backoff.fixed(Duration.ofMillis(200))).build()).build();
  }

  private void publishPlain(Map<String, Object> headers, byte[] body) throws Exception {
    try (Channel ch = admin.createChannel()) {
      ch.confirmSelect();
      ch.basicPublish(topology.exchange(destination), "k", true,
          new AMQP.BasicProperties.Builder().timestamp(Date.from(STAMP)).headers(headers).build(),
          body);
      ch.waitForConfirmsOrDie(10_000);
    }
  }

  private static Map<String, Object> headers(Object... nameValue) {
    Map<String, Object> h = new LinkedHashMap<>();
    for (int i = 0; i < nameValue.length; i += 2) {
      h.put((String) nameValue[i], nameValue[i + 1]);
    }
    return h;
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  @DisplayName("foreign messages without message id whose headers and body run together alike"
      + " (a value holding a newline and '=', a value holding NUL) get distinct ids")
  void concatenatedPartsDoNotCollide() throws Exception {
    List<Delivery> calls = new CopyOnWriteArrayList<>();
    subscriber.subscribe(spec(InboundMapping.standard()), calls::add);
    // "\na=1\nb=2" either way, were the parts joined without their lengths.
    publishPlain(headers("a", LongStringHelper.asLongString("1\nb=2")), utf8("same"));
    publishPlain(headers("a", LongStringHelper.asLongString("1"), "b",
        LongStringHelper.asLongString("2")), utf8("same"));
    // "\na=x" NUL "y" NUL "z" either way: a header's end and the body's start move.
    publishPlain(headers("a", LongStringHelper.asLongString("x\0y")), utf8("z"));
    publishPlain(headers("a", LongStringHelper.asLongString("x")), utf8("y\0z"));

    Await.until(WAIT, "four deliveries", () -> calls.size() >= 4);
    assertThat(calls).extracting(d -> d.message().id()).doesNotHaveDuplicates()
        .allMatch(id -> id.startsWith(destination + "@sha256:"));
  }

  @Test
  @DisplayName("two messages whose relaykit id headers are different non-UTF-8 bytes never share"
      + " one id (read as U+FFFD they did): undecodable with relaykitOnly, two foreign messages"
      + " with distinct ids by default (as on Kafka)")
  void invalidUtf8RelaykitIdNeverMerges() throws Exception {
    for (InboundMapping inbound : List.of(InboundMapping.relaykitOnly(),
        InboundMapping.standard())) {
      List<Delivery> calls = new CopyOnWriteArrayList<>();
      var sub = subscriber.subscribe(spec(inbound), calls::add);
      dlq = RabbitMqDeadLetterStore.create(config, destination, "g");
      for (byte bad : new byte[] {(byte) 0xFF, (byte) 0xFE}) {
        publishPlain(headers("relaykit-id", LongStringHelper.asLongString(new byte[] {'o', bad}),
            "relaykit-type", "t", "relaykit-trace-id", "0123456789abcdef0123456789abcdef",
            "relaykit-schema-version", "1", "relaykit-created-at", STAMP.toString()),
            utf8("p"));
      }
      Await.until(WAIT, "both dead-lettered or handled",
          () -> dlq.count(DeadLetterQuery.all()) + calls.size() >= 2);
      if (inbound.acceptsForeign()) {
        Await.until(WAIT, "both handled", () -> calls.size() == 2);
        assertThat(calls).extracting(d -> d.message().id()).doesNotHaveDuplicates()
            .allMatch(id -> id.startsWith(destination + "@sha256:"));
      } else {
        assertThat(calls).as("handled with %s", inbound).isEmpty();
        List<DeadLetter> dead = dlq.list(DeadLetterQuery.all());
        assertThat(dead).hasSize(2).allSatisfy(d -> assertThat(d.reason())
            .contains("relaykit-id").contains("UTF-8"));
      }
      sub.close(Duration.ofSeconds(5));
      dlq.purge(DeadLetterQuery.all());
      dlq.close();
      dlq = null;
    }
  }
}
