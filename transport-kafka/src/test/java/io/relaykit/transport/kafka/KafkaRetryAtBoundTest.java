package io.relaykit.transport.kafka;

import static io.relaykit.transport.kafka.KafkaRecordLifeTest.quick;
import static io.relaykit.transport.kafka.KafkaRecordLifeTest.send;
import static io.relaykit.transport.kafka.KafkaTestSupport.newTopic;
import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHandler;
import io.relaykit.message.MessageHeaders;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.tck.Await;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A retry copy whose {@code relaykit-retry-at} lies beyond anything the subscription's retry
 * policy could have written (forged, or written by a clock far ahead) is bad input: it is
 * dead-lettered at once, naming the header, and the retry partition behind it keeps flowing. On
 * both runtimes (a share subscription's retries are read by its retry reader).
 */
@DisplayName("Kafka retry-at bound: a retry-at far in the future stalls no retry partition")
class KafkaRetryAtBoundTest {

  private static final Duration WAIT = Duration.ofSeconds(60);

  @RegisterExtension
  final KafkaClients clients = new KafkaClients();

  private static ProducerRecord<String, byte[]> retryCopy(String retryTopic, Message message,
      Instant retryAt) {
    Map<String, String> wire = new LinkedHashMap<>(MessageHeaders.toWire(message));
    Instant now = Instant.now();
    wire.put(MessageHeaders.ATTEMPT, "1");
    wire.put(MessageHeaders.FIRST_FAILURE_AT, now.toString());
    wire.put(MessageHeaders.LAST_FAILURE_AT, now.toString());
    wire.put(MessageHeaders.RETRY_AT, retryAt.toString());
    return new ProducerRecord<>(retryTopic, 0, message.key().orElse(null), message.payload(),
        KafkaRecords.toHeaders(wire));
  }

  private void assertFarRetryAtDeadLettered(String topic, String group,
      Function<MessageHandler, AutoCloseable> subscribe) throws Exception {
    Set<String> handled = ConcurrentHashMap.newKeySet();
    subscribe.apply(d -> handled.add(d.message().id()));
    String retryTopic = KafkaTestSupport.config().build().retryTopic(topic, group);
    Message forged = KafkaTestSupport.message("k", 0);
    Message behind = KafkaTestSupport.message("k2", 1);
    send(List.of(retryCopy(retryTopic, forged, Instant.now().plus(Duration.ofDays(3650))),
        retryCopy(retryTopic, behind, Instant.now())));
    Await.until(WAIT, "the record behind the forged one handled",
        () -> handled.contains(behind.id()));
    KafkaDeadLetterStore dlt = clients.deadLetterStore(topic, group);
    Await.until(WAIT, "the forged one dead-lettered", () -> dlt.count(DeadLetterQuery.all()) == 1);
    DeadLetter dead = dlt.list(DeadLetterQuery.all()).get(0);
    assertThat(dead.messageId()).isEqualTo(forged.id());
    assertThat(dead.reason()).contains(MessageHeaders.RETRY_AT);
    assertThat(handled).doesNotContain(forged.id());
  }

  @Test
  @DisplayName("consumer group: dead-lettered naming the header; the partition flows on")
  void farRetryAtConsumerGroup() throws Exception {
    String topic = newTopic("retry-at-far", 1);
    String group = topic + "-g";
    KafkaSubscriber subscriber = clients.subscriber();
    assertFarRetryAtDeadLettered(topic, group, h -> {
      KafkaSubscription s = subscriber.subscribe(SubscriptionSpec.builder(topic, group)
          .retryPolicy(quick(3)).build(), h);
      return () -> s.close(Duration.ofSeconds(5));
    });
  }

  @Test
  @DisplayName("share group: dead-lettered naming the header; the partition flows on")
  void farRetryAtShareGroup() throws Exception {
    String topic = newTopic("retry-at-far-share", 1);
    String group = topic + "-g";
    try (KafkaShareSubscriber subscriber = KafkaShareSubscriber.create(
        KafkaRecordLifeTest.shareConfig().build())) {
      assertFarRetryAtDeadLettered(topic, group, h -> {
        KafkaShareSubscription s = subscriber.subscribe(SubscriptionSpec.builder(topic, group)
            .retryPolicy(quick(3)).build(), h);
        return () -> s.close(Duration.ofSeconds(5));
      });
    }
  }
}
