package io.relaykit.transport.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import io.relaykit.message.Message;
import io.relaykit.message.MessageRejectedException;
import java.util.Map;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * An unpaired surrogate has no UTF-8 form: amqp-client writes it as '?', so two ids, keys or
 * header values that differ only there would reach every consumer as one.
 */
@DisplayName("RabbitMqPublisher refuses text that cannot reach the wire unchanged")
class RabbitMqSurrogateAttackTest {

  private RabbitMqTransportConfig config;
  private RabbitMqTopology topology;
  private Connection admin;
  private String destination;
  private RabbitMqTopology.GroupQueues queues;
  private RabbitMqPublisher publisher;

  @BeforeEach
  void setUp() throws Exception {
    config = TestBroker.config().build();
    topology = RabbitMqTopology.of(config);
    admin = TestBroker.connect(config);
    destination = TestBroker.unique("surrogate");
    queues = topology.declare(admin, destination, "g");
    publisher = RabbitMqPublisher.create(config);
  }

  @AfterEach
  void tearDown() throws Exception {
    publisher.close();
    topology.delete(admin, destination, "g", false);
    try (Channel ch = admin.createChannel()) {
      ch.exchangeDelete(topology.exchange(destination));
    }
    admin.close();
  }

  @Test
  @DisplayName("an id, key, type or header with an unpaired surrogate is rejected (permanent),"
      + " naming the field; nothing reaches the queue; a surrogate pair is fine")
  void unpairedSurrogatesRejected() {
    Message.Builder ok = Message.builder().id("m-1").type("t").key("k").payload("p".getBytes(
        java.nio.charset.StandardCharsets.UTF_8));
    Map<String, Message> bad = Map.of(
        "relaykit-id", ok.id("s\uD800").build(),
        "relaykit-key", ok.id("m-2").key("k\uDC00").build(),
        "relaykit-type", ok.key("k").type("t\uDBFF").build(),
        "tenant", Message.builder().id("m-4").type("t").payload(new byte[] {1})
            .headers(Map.of("tenant", "a\uD800b")).build());
    bad.forEach((field, m) -> assertThatThrownBy(() -> publisher.publish(destination, m).join())
        .as(field).isInstanceOf(CompletionException.class)
        .cause().isInstanceOf(MessageRejectedException.class)
        .hasMessageContaining(field).hasMessageContaining("surrogate"));
    assertThat(TestBroker.depth(admin, queues.queue())).isZero();
    publisher.publish(destination, Message.builder().id("emoji-\uD83D\uDE00").type("t")
        .payload(new byte[] {1}).build()).join();
    assertThat(TestBroker.drain(admin, queues.queue())).singleElement()
        .satisfies(r -> assertThat(r.getProps().getMessageId()).isEqualTo("emoji-\uD83D\uDE00"));
  }
}
