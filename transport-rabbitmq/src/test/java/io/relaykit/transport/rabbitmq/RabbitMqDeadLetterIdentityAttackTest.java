package io.relaykit.transport.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.message.InboundMapping;
import io.relaykit.monitor.LifecycleListener;
import java.nio.charset.StandardCharsets;
import java.time.InstantSource;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * What RabbitMQ dead-letters itself (delivery limit, TTL) arrives without relaykit's envelope;
 * when the group's mapping cannot read it either, the dead letter still needs an id that is the
 * same in every read, or a remove or replay by an id listed earlier hits another message.
 */
@DisplayName("RabbitMqDeadLetterStore: an unreadable dead letter keeps its id across reads")
class RabbitMqDeadLetterIdentityAttackTest {

  private RabbitMqTransportConfig config;
  private RabbitMqTopology topology;
  private Connection admin;
  private String destination;
  private RabbitMqTopology.GroupQueues queues;
  private RabbitMqDeadLetterStore dlq;

  @BeforeEach
  void setUp() throws Exception {
    config = TestBroker.config().build();
    topology = RabbitMqTopology.of(config);
    admin = TestBroker.connect(config);
    destination = TestBroker.unique("dlid");
    queues = topology.declare(admin, destination, "g");
  }

  @AfterEach
  void tearDown() throws Exception {
    if (dlq != null) {
      dlq.close();
    }
    topology.delete(admin, destination, "g", false);
    try (Channel ch = admin.createChannel()) {
      ch.exchangeDelete(topology.exchange(destination));
    }
    admin.close();
  }

  private void deadLetteredByBroker(String body) throws Exception {
    try (Channel ch = admin.createChannel()) {
      ch.confirmSelect();
      ch.basicPublish("", queues.deadLetterQueue(), true, new AMQP.BasicProperties.Builder()
          .headers(Map.of("x-first-death-reason", "delivery_limit",
              "x-first-death-queue", queues.queue())).build(),
          body.getBytes(StandardCharsets.UTF_8));
      ch.waitForConfirmsOrDie(10_000);
    }
  }

  @Test
  @DisplayName("a dead letter with a forged header-order header and a table header but no"
      + " relaykit id is listed, found and removed (it never makes the queue unreadable)")
  void forgedEnvelopeListed() throws Exception {
    dlq = RabbitMqDeadLetterStore.create(config, destination, "g");
    try (Channel ch = admin.createChannel()) {
      ch.confirmSelect();
      ch.basicPublish("", queues.deadLetterQueue(), true, new AMQP.BasicProperties.Builder()
          .headers(Map.of(AmqpHeaders.HEADER_ORDER, "a\nb", "a", Map.of("t", 1), "b", "x"))
          .build(), "forged".getBytes(StandardCharsets.UTF_8));
      ch.waitForConfirmsOrDie(10_000);
    }
    Map<String, String> ids = idsByBody();
    assertThat(ids).containsOnlyKeys("forged");
    assertThat(idsByBody()).isEqualTo(ids);
    assertThat(dlq.find(ids.get("forged"))).isPresent();
    assertThat(dlq.remove(ids.get("forged"))).isPresent();
    assertThat(dlq.count(DeadLetterQuery.all())).isZero();
  }

  private Map<String, String> idsByBody() {
    return dlq.list(DeadLetterQuery.all()).stream().collect(Collectors.toMap(
        d -> d.message().payloadUtf8(), DeadLetter::id));
  }

  @Test
  @DisplayName("with relaykitOnly, plain messages without message id keep their ids after another"
      + " is removed, one that arrives later takes none of theirs, and remove and find by an"
      + " earlier id hit the same message")
  void idsStableAcrossReads() throws Exception {
    dlq = RabbitMqDeadLetterStore.create(config, destination, "g", InboundMapping.relaykitOnly(),
        LifecycleListener.noop(), InstantSource.system());
    deadLetteredByBroker("a");
    deadLetteredByBroker("b");
    deadLetteredByBroker("c");
    Map<String, String> before = idsByBody();
    assertThat(before).containsOnlyKeys("a", "b", "c");
    assertThat(before.values()).doesNotHaveDuplicates();
    assertThat(idsByBody()).isEqualTo(before);

    assertThat(dlq.remove(before.get("a"))).hasValueSatisfying(
        d -> assertThat(d.message().payloadUtf8()).isEqualTo("a"));
    assertThat(idsByBody()).containsOnlyKeys("b", "c")
        .containsEntry("b", before.get("b")).containsEntry("c", before.get("c"));
    // A later one must not take the id of one listed before (nor of one since removed).
    deadLetteredByBroker("d");
    Map<String, String> withD = idsByBody();
    assertThat(withD).containsOnlyKeys("b", "c", "d");
    assertThat(withD.values()).doesNotHaveDuplicates().doesNotContain(before.get("a"));
    assertThat(dlq.remove(before.get("c"))).hasValueSatisfying(
        d -> assertThat(d.message().payloadUtf8()).isEqualTo("c"));
    assertThat(idsByBody()).containsOnlyKeys("b", "d").containsEntry("d", withD.get("d"));
    assertThat(dlq.find(before.get("b"))).hasValueSatisfying(
        d -> assertThat(d.message().payloadUtf8()).isEqualTo("b"));
    assertThat(dlq.remove(before.get("b"))).hasValueSatisfying(
        d -> assertThat(d.message().payloadUtf8()).isEqualTo("b"));
    assertThat(idsByBody()).containsOnlyKeys("d").containsEntry("d", withD.get("d"));
  }
}
