package io.relaykit.transport.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import io.relaykit.message.CloudEvents;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHeaders;
import io.relaykit.message.MessageRejectedException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * AMQP 0-9-1 short strings (the message-id and type properties, the routing key) hold at most
 * 255 bytes; relaykit ids, types and keys, and CloudEvents identities (source and id, up to 1024
 * characters each), may be longer.
 */
@DisplayName("RabbitMqPublisher with ids, types and keys longer than an AMQP short string")
class RabbitMqShortStringAttackTest {

  private RabbitMqTransportConfig config;
  private RabbitMqTopology topology;
  private Connection admin;
  private String destination;
  private RabbitMqTopology.GroupQueues queues;
  private RabbitMqPublisher publisher;

  @BeforeEach
  void setUp() throws Exception {
    config = TestBroker.config().confirmTimeout(Duration.ofSeconds(5)).build();
    topology = RabbitMqTopology.of(config);
    admin = TestBroker.connect(config);
    destination = TestBroker.unique("shortstr");
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
  @DisplayName("a long id and type are published and confirmed (the headers carry them; the"
      + " properties, which cannot, are left out); the copy a subscriber moves is too")
  void longIdAndTypePublished() throws Exception {
    String id = CloudEvents.identity("s".repeat(300), "1");
    String type = "t".repeat(300);
    publisher.publish(destination, Message.builder().id(id).type(type).payload(new byte[] {1})
        .build()).get(10, TimeUnit.SECONDS);
    publisher.publish(destination, Message.builder().id("short").type("t")
        .payload(new byte[] {2}).build()).get(10, TimeUnit.SECONDS);
    List<GetResponse> got = TestBroker.drain(admin, queues.queue());
    assertThat(got).hasSize(2);
    GetResponse first = got.stream().filter(r -> r.getBody()[0] == 1).findFirst().orElseThrow();
    assertThat(TestBroker.header(first, MessageHeaders.ID)).isEqualTo(id);
    assertThat(TestBroker.header(first, MessageHeaders.TYPE)).isEqualTo(type);
    assertThat(first.getProps().getMessageId()).isNull();
    // the subscriber's move to a delay or dead-letter queue, and a dead-letter replay
    publisher.publishToQueue(queues.deadLetterQueue(), Map.of(MessageHeaders.ID, id,
        MessageHeaders.TYPE, type), new byte[] {3}, id, 0L).get(10, TimeUnit.SECONDS);
    assertThat(TestBroker.drain(admin, queues.deadLetterQueue())).singleElement()
        .satisfies(r -> assertThat(TestBroker.header(r, MessageHeaders.ID)).isEqualTo(id));
  }

  @Test
  @DisplayName("a key (the routing key) or a header name longer than 255 UTF-8 bytes is rejected"
      + " at once, permanent, and the messages beside it are confirmed")
  void longKeyRejected() throws Exception {
    String key = "\u00e9".repeat(128); // 128 chars, 256 bytes
    assertThatThrownBy(() -> publisher.publish(destination, Message.builder().id("k").type("t")
        .key(key).payload(new byte[] {1}).build()).join())
        .isInstanceOf(CompletionException.class).cause()
        .isInstanceOf(MessageRejectedException.class).hasMessageContaining("key")
        .hasMessageContaining("255");
    assertThatThrownBy(() -> publisher.publish(destination, Message.builder().id("h").type("t")
        .headers(Map.of("n".repeat(256), "v")).payload(new byte[] {1}).build()).join())
        .isInstanceOf(CompletionException.class).cause()
        .isInstanceOf(MessageRejectedException.class).hasMessageContaining("255");
    publisher.publish(destination, Message.builder().id("ok").type("t").key("k")
        .payload(new byte[] {2}).build()).get(10, TimeUnit.SECONDS);
    assertThat(TestBroker.drain(admin, queues.queue())).singleElement()
        .satisfies(r -> assertThat(r.getBody()).containsExactly(2));
  }
}
