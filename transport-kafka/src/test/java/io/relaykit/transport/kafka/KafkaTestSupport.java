package io.relaykit.transport.kafka;

import io.relaykit.tck.Await;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;

/** Helpers shared by the broker tests: configs on the shared broker and a raw topic reader. */
final class KafkaTestSupport {
  private KafkaTestSupport() {}

  /**
   * A config on the shared test broker with quick commits and a {@value #FETCH_MAX_WAIT_MS} ms
   * {@code fetch.max.wait.ms} (consumers and share consumers): closing a consumer waits for its
   * fetch in flight, which the broker holds up to that long when there is nothing to read (Kafka's
   * 500 ms made every subscription close and every dead-letter read take about half a second).
   * Records that arrive end the wait at once either way; a test that needs the default sets it.
   */
  static KafkaTransportConfig.Builder config() {
    return KafkaTransportConfig.builder()
        .bootstrapServers(KafkaTestBroker.bootstrapServers())
        .commitInterval(Duration.ofMillis(200))
        .pollTimeout(Duration.ofMillis(50))
        .publishTimeout(Duration.ofSeconds(20))
        .consumerProperty("fetch.max.wait.ms", Integer.toString(FETCH_MAX_WAIT_MS))
        .shareConsumerProperty("fetch.max.wait.ms", Integer.toString(FETCH_MAX_WAIT_MS));
  }

  /** The {@code fetch.max.wait.ms} of the test consumers (see {@link #config()}). */
  static final int FETCH_MAX_WAIT_MS = 100;

  /**
   * Reads {@code topic} from the beginning, without a group, until at least {@code expected}
   * records arrived (then a little longer, to catch extras), or fails after 30 s.
   */
  static List<ConsumerRecord<String, byte[]>> readAll(String topic, int expected) {
    try (KafkaConsumer<String, byte[]> c = rawConsumer()) {
      List<TopicPartition> parts = c.partitionsFor(topic, Duration.ofSeconds(10)).stream()
          .map(p -> new TopicPartition(topic, p.partition())).toList();
      c.assign(parts);
      c.seekToBeginning(parts);
      List<ConsumerRecord<String, byte[]>> out = new ArrayList<>();
      Await.until(Duration.ofSeconds(30), expected + " records on " + topic, () -> {
        c.poll(Duration.ofMillis(100)).forEach(out::add);
        return out.size() >= expected;
      });
      // Anything already written beyond what was expected shows up within one more poll.
      Map<TopicPartition, Long> ends = c.endOffsets(parts);
      Await.until(Duration.ofSeconds(10), "end of " + topic, () -> {
        c.poll(Duration.ofMillis(20)).forEach(out::add);
        return parts.stream().allMatch(p -> c.position(p) >= ends.get(p));
      });
      return out;
    }
  }

  /** Publishes {@code messages} to {@code topic} and waits for every confirm. */
  static void publishAll(String topic, List<io.relaykit.message.Message> messages) {
    try (KafkaPublisher p = KafkaPublisher.create(config().build())) {
      List<java.util.concurrent.CompletableFuture<?>> fs = new ArrayList<>();
      for (io.relaykit.message.Message m : messages) {
        fs.add(p.publish(topic, m));
      }
      java.util.concurrent.CompletableFuture.allOf(
          fs.toArray(java.util.concurrent.CompletableFuture[]::new))
          .get(30, java.util.concurrent.TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IllegalStateException("could not publish to " + topic, e);
    }
  }

  /** A new topic on the shared broker, named after {@code prefix}, with {@code partitions}. */
  static String newTopic(String prefix, int partitions) {
    String topic = KafkaTestBroker.uniqueTopic(prefix);
    KafkaTestBroker.createTopic(topic, partitions);
    return topic;
  }

  /** {@code count} {@linkplain #message messages} numbered from 0; the i-th is keyed key(i). */
  static List<io.relaykit.message.Message> numberedMessages(int count,
      java.util.function.IntFunction<String> key) {
    List<io.relaykit.message.Message> out = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      out.add(message(key.apply(i), i));
    }
    return out;
  }

  /** A message of type {@code test} with {@code key} and a payload naming its sequence number. */
  static io.relaykit.message.Message message(String key, int seq) {
    return io.relaykit.message.Message.builder().type("test").key(key)
        .payload(Integer.toString(seq)).build();
  }

  /** The group's committed offset of each partition of {@code topic} (absent ones left out). */
  static Map<Integer, Long> committedOffsets(String group, String topic) {
    try {
      Map<TopicPartition, org.apache.kafka.clients.consumer.OffsetAndMetadata> all =
          KafkaTestBroker.admin().listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata()
              .get(30, java.util.concurrent.TimeUnit.SECONDS);
      Map<Integer, Long> out = new java.util.TreeMap<>();
      all.forEach((tp, o) -> {
        if (tp.topic().equals(topic) && o != null) {
          out.put(tp.partition(), o.offset());
        }
      });
      return out;
    } catch (Exception e) {
      throw new IllegalStateException("could not read offsets of group " + group, e);
    }
  }

  static long endOffset(String topic, int partition) {
    try (KafkaConsumer<String, byte[]> c = rawConsumer()) {
      TopicPartition tp = new TopicPartition(topic, partition);
      return c.endOffsets(List.of(tp)).get(tp);
    }
  }

  static KafkaConsumer<String, byte[]> rawConsumer() {
    return new KafkaConsumer<>(Map.of(
        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, KafkaTestBroker.bootstrapServers(),
        ConsumerConfig.CLIENT_ID_CONFIG, "test-reader-" + UUID.randomUUID(),
        ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false",
        ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, Integer.toString(FETCH_MAX_WAIT_MS)),
        new StringDeserializer(), new ByteArrayDeserializer());
  }
}
