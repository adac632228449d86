package io.relaykit.transport.kafka;

import static io.relaykit.transport.kafka.KafkaRecordLifeTest.foreign;
import static io.relaykit.transport.kafka.KafkaRecordLifeTest.quick;
import static io.relaykit.transport.kafka.KafkaRecordLifeTest.send;
import static io.relaykit.transport.kafka.KafkaTestSupport.newTopic;
import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.message.InboundMapping;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHeaders;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.ordering.OrderingMode;
import io.relaykit.tck.Await;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Adversarial records on both Kafka runtimes: relaykit headers that name another topic or a
 * position outside the subscription, and header bytes that are not UTF-8 where ordering reads
 * them. Each ends with the identity and key every other view of the record has.
 */
@DisplayName("Kafka record life: forged and binary relaykit headers")
class KafkaRecordLifeReviewTest {

  private static final Duration WAIT = Duration.ofSeconds(60);

  @RegisterExtension
  final KafkaClients clients = new KafkaClients();

  @Test
  @DisplayName("a retry-topic record naming another topic as its source is handled and"
      + " dead-lettered as a record of the subscription's topic: the dead letter's source, id and"
      + " position (its replay target) cannot be forged")
  void forgedSourceOnRetryRecordIsIgnored() throws Exception {
    String topic = newTopic("forged-source", 1);
    String victim = newTopic("forged-victim", 1);
    String group = topic + "-g";
    List<String> sources = new CopyOnWriteArrayList<>();
    clients.subscriber().subscribe(SubscriptionSpec.builder(topic, group)
        .retryPolicy(quick(2)).build(), d -> {
          sources.add(d.source());
          throw new IllegalStateException("fails");
        });
    String retryTopic = KafkaTestSupport.config().build().retryTopic(topic, group);
    Message message = KafkaTestSupport.message("k", 0);
    Map<String, String> wire = new LinkedHashMap<>(MessageHeaders.toWire(message));
    Instant now = Instant.now();
    wire.put(MessageHeaders.ATTEMPT, "1");
    wire.put(MessageHeaders.FIRST_FAILURE_AT, now.toString());
    wire.put(MessageHeaders.LAST_FAILURE_AT, now.toString());
    wire.put(MessageHeaders.RETRY_AT, now.toString());
    wire.put(MessageHeaders.SOURCE, victim);
    wire.put(MessageHeaders.SOURCE_POSITION, victim + "-0@0");
    send(List.of(new ProducerRecord<>(retryTopic, 0, "k", message.payload(),
        KafkaRecords.toHeaders(wire))));

    KafkaDeadLetterStore dlt = clients.deadLetterStore(topic, group);
    Await.until(WAIT, "dead-lettered", () -> dlt.count(DeadLetterQuery.all()) == 1);
    assertThat(sources).containsOnly(topic);
    DeadLetter dead = dlt.list(DeadLetterQuery.all()).get(0);
    assertThat(dead.source()).isEqualTo(topic);
    assertThat(dead.id()).isEqualTo(DeadLetter.idOf(message.id(), topic, group));
    assertThat(dead.message().id()).isEqualTo(message.id());
    // The position the copy names (a reference entry's replay reads it) is in the retry topic,
    // where this record is, never in the topic the header named.
    List<String> positions = new CopyOnWriteArrayList<>();
    try (var reader = new org.apache.kafka.clients.consumer.KafkaConsumer<String, byte[]>(Map.of(
        "bootstrap.servers", KafkaTestBroker.bootstrapServers(), "group.id", topic + "-reader",
        "auto.offset.reset", "earliest"),
        new org.apache.kafka.common.serialization.StringDeserializer(),
        new org.apache.kafka.common.serialization.ByteArrayDeserializer())) {
      reader.subscribe(List.of(KafkaTestSupport.config().build().deadLetterTopic(topic, group)));
      Await.until(WAIT, "the dead-letter copy read", () -> {
        reader.poll(Duration.ofMillis(100)).forEach(r -> positions.add(
            KafkaRecords.fromHeaders(r.headers()).get(MessageHeaders.SOURCE_POSITION)));
        return !positions.isEmpty();
      });
    }
    assertThat(positions).singleElement().asString().startsWith(retryTopic + "-0@");
  }

  @Test
  @DisplayName("consumer group: a foreign record whose relaykit-id header is not UTF-8 is"
      + " ordered by its mapped key, the key its handler sees")
  void binaryIdHeaderOrdersByMappedKeyConsumerGroup() throws Exception {
    String topic = newTopic("binary-id-key", 1);
    KafkaSubscriber subscriber = clients.subscriber();
    assertOrderedByMappedKey(topic, () -> {
      KafkaSubscription s = subscriber.subscribe(KafkaRecordLifeTest.mappedKeySpec(topic),
          this::handle);
      return () -> s.close(Duration.ofSeconds(5));
    });
  }

  @Test
  @DisplayName("share group: a foreign record whose relaykit-id header is not UTF-8 is"
      + " ordered by its mapped key, the key its handler sees")
  void binaryIdHeaderOrdersByMappedKeyShareGroup() throws Exception {
    String topic = newTopic("binary-id-key-share", 1);
    try (KafkaShareSubscriber subscriber = KafkaShareSubscriber.create(
        KafkaRecordLifeTest.shareConfig().build())) {
      assertOrderedByMappedKey(topic, () -> {
        KafkaShareSubscription s = subscriber.subscribe(
            KafkaRecordLifeTest.mappedKeySpec(topic), this::handle);
        return () -> s.close(Duration.ofSeconds(5));
      });
    }
  }

  private final CountDownLatch letGo = new CountDownLatch(1);
  private final List<String> started = new CopyOnWriteArrayList<>();
  private final List<String> keys = new CopyOnWriteArrayList<>();

  private void handle(io.relaykit.message.Delivery d) throws Exception {
    started.add(d.message().payloadUtf8());
    keys.add(d.message().key().orElse(null));
    if (d.message().payloadUtf8().equals("first")) {
      letGo.await(60, TimeUnit.SECONDS);
    }
  }

  private void assertOrderedByMappedKey(String topic,
      java.util.concurrent.Callable<AutoCloseable> subscribe) throws Exception {
    ProducerRecord<String, byte[]> second = foreign(topic, "raw-b", "second", "order-id", "o-1");
    second.headers().add(MessageHeaders.ID, new byte[] {(byte) 0xff, (byte) 0xfe});
    send(List.of(foreign(topic, "raw-a", "first", "order-id", "o-1"), second));
    try (AutoCloseable sub = subscribe.call()) {
      Await.until(WAIT, "the first record running", () -> started.contains("first"));
      Await.holds(Duration.ofMillis(1500), "the second waits for the first (same mapped key)",
          () -> started.size() == 1);
      letGo.countDown();
      Await.until(WAIT, "both handled", () -> started.size() == 2);
      assertThat(started).containsExactly("first", "second");
      assertThat(keys).containsOnly("o-1");
    }
  }
}
