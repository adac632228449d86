package io.relaykit.transport.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.message.Message;
import io.relaykit.message.MessageHeaders;
import io.relaykit.message.MessageRejectedException;
import io.relaykit.message.PublishReceipt;
import io.relaykit.message.Publisher;
import io.relaykit.tck.PublisherContract;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("KafkaPublisher on a real broker")
class KafkaPublisherTest extends PublisherContract {

  private KafkaPublisher publisher;

  @Override
  protected Publisher createPublisher() {
    return KafkaPublisher.create(KafkaTestSupport.config().build());
  }

  @Override
  protected String newDestination() {
    String topic = KafkaTestBroker.uniqueTopic("pub-kit");
    KafkaTestBroker.createTopic(topic, 3);
    return topic;
  }

  @Override
  protected List<Message> readBack(String destination, int expected, Duration timeout) {
    List<Message> out = new ArrayList<>();
    // Partition by partition: each partition in offset order, so per key in publish order.
    KafkaTestSupport.readAll(destination, expected).stream()
        .sorted(java.util.Comparator.comparingInt(ConsumerRecord<String, byte[]>::partition)
            .thenComparingLong(ConsumerRecord::offset))
        .forEach(r -> out.add(MessageHeaders.fromWire(KafkaRecords.fromHeaders(r.headers()),
            r.key(), r.value())));
    return out;
  }

  @BeforeEach
  void start() {
    publisher = (KafkaPublisher) publisher();
  }

  @Test
  @DisplayName("a confirmed message is on the broker with its key, payload and envelope headers")
  void confirmedMessageIsOnTheBroker() throws Exception {
    String topic = KafkaTestBroker.uniqueTopic("pub");
    KafkaTestBroker.createTopic(topic, 3);
    Message message = Message.builder().type("order.placed").key("order-7").payload("hello")
        .header("tenant", "acme").build();

    PublishReceipt receipt = publisher.publish(topic, message).get(30, TimeUnit.SECONDS);

    List<ConsumerRecord<String, byte[]>> records = KafkaTestSupport.readAll(topic, 1);
    assertThat(records).hasSize(1);
    ConsumerRecord<String, byte[]> r = records.get(0);
    assertThat(receipt.position())
        .isEqualTo(KafkaRecords.position(topic, r.partition(), r.offset()));
    assertThat(receipt.messageId()).isEqualTo(message.id());
    assertThat(r.key()).isEqualTo("order-7");
    Message decoded = MessageHeaders.fromWire(KafkaRecords.fromHeaders(r.headers()), r.key(),
        r.value());
    assertThat(decoded).isEqualTo(message);
  }

  @Test
  @DisplayName("messages of one key land on one partition in publish order, batched sends each confirmed")
  void batchedSendsOfOneKeyKeepOrder() throws Exception {
    String topic = KafkaTestBroker.uniqueTopic("pub-order");
    KafkaTestBroker.createTopic(topic, 4);
    List<CompletableFuture<PublishReceipt>> futures = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      futures.add(publisher.publish(topic, Message.builder().type("t").key("k-" + (i % 5))
          .payload("m" + i).build()));
    }
    CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);

    List<ConsumerRecord<String, byte[]>> records = KafkaTestSupport.readAll(topic, 50);
    assertThat(records).hasSize(50);
    for (int k = 0; k < 5; k++) {
      String key = "k-" + k;
      List<ConsumerRecord<String, byte[]>> ofKey =
          records.stream().filter(r -> r.key().equals(key)).toList();
      assertThat(ofKey.stream().map(ConsumerRecord::partition).distinct()).hasSize(1);
      List<Integer> seq = ofKey.stream()
          .map(r -> Integer.parseInt(new String(r.value()).substring(1))).toList();
      assertThat(seq).isSorted();
    }
  }

  @Test
  @DisplayName("an oversize message fails at once with MessageRejectedException naming size and limit")
  void oversizeIsRejected() {
    KafkaPublisher small = KafkaPublisher.create(
        KafkaTestSupport.config().maxRecordBytes(1000).build());
    try {
      String topic = KafkaTestBroker.uniqueTopic("pub-big");
      Message big = Message.builder().type("t").payload(new byte[2000]).build();
      CompletableFuture<PublishReceipt> f = small.publish(topic, big);
      assertThatThrownBy(() -> f.get(10, TimeUnit.SECONDS))
          .isInstanceOf(ExecutionException.class)
          .cause().isInstanceOf(MessageRejectedException.class)
          .hasMessageContaining(big.id())
          .hasMessageContaining("over the limit of 1000 bytes");
      assertThat(KafkaTestBroker.topicExists(topic)).isFalse();
    } finally {
      small.close();
    }
  }

  @Test
  @DisplayName("a record the broker refuses as too large fails with MessageRejectedException")
  void brokerSizeLimitIsRejected() throws Exception {
    String topic = KafkaTestBroker.uniqueTopic("pub-broker-big");
    // Set at creation: a config altered afterwards reaches the broker's log a moment later.
    KafkaTestBroker.createTopic(topic, 1, java.util.Map.of("max.message.bytes", "2000"));
    Message big = Message.builder().type("t").payload(new byte[10_000]).build();

    CompletableFuture<PublishReceipt> f = publisher.publish(topic, big);

    assertThatThrownBy(() -> f.get(30, TimeUnit.SECONDS))
        .cause().isInstanceOf(MessageRejectedException.class)
        .hasMessageContaining("too large for topic " + topic);
    assertThat(KafkaTestSupport.endOffset(topic, 0)).isZero();
  }

  @Test
  @DisplayName("an illegal topic name is a permanent rejection; a blank one an IllegalArgumentException")
  void badDestinations() {
    Message m = Message.builder().type("t").payload("x").build();
    assertThat(publisher.publish("no spaces allowed", m))
        .failsWithin(Duration.ofSeconds(5))
        .withThrowableOfType(ExecutionException.class)
        .withCauseInstanceOf(MessageRejectedException.class)
        .withMessageContaining("not a legal Kafka topic name");
    assertThatThrownBy(() -> publisher.publish(" ", m))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("destination");
    assertThatThrownBy(() -> publisher.publish("t", null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("message");
  }
}
