package io.relaykit.transport.kafka;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.message.Publisher;
import io.relaykit.message.Subscriber;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.tck.Await;
import io.relaykit.tck.SubscriberContract;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.DisplayName;

/**
 * The subscriber contract on a real broker. Groups are scoped to the test's topic: Kafka groups
 * are broker-wide, and the kit reuses names like {@code g} across tests.
 */
@DisplayName("KafkaSubscriber keeps the Subscriber contract")
class KafkaSubscriberTest extends SubscriberContract {

  // A member joining mid-run is noticed within a heartbeat (see KafkaClients#subscriber).
  private final KafkaTransportConfig config = KafkaTestSupport.config()
      .closeTimeout(Duration.ofSeconds(5))
      .consumerProperty("heartbeat.interval.ms",
          Integer.toString(KafkaClients.CLASSIC_HEARTBEAT_MS))
      .build();

  @Override
  protected Subscriber createSubscriber() {
    return KafkaSubscriber.create(config);
  }

  @Override
  protected Publisher createPublisher() {
    return KafkaPublisher.create(config);
  }

  @Override
  protected String newDestination() {
    String topic = KafkaTestBroker.uniqueTopic("sub-kit");
    KafkaTestBroker.createTopic(topic, 1);
    return topic;
  }

  @Override
  protected SubscriptionSpec.Builder spec(String destination, String group) {
    return super.spec(destination, scoped(destination, group));
  }

  private static String scoped(String destination, String group) {
    return destination + "-" + group;
  }

  @Override
  protected boolean writesRawRecords() {
    return true;
  }

  @Override
  protected void publishRaw(String destination, String transportKey, byte[] body,
      java.util.Map<String, String> headers) {
    try {
      KafkaRecordLifeTest.send(java.util.List.of(new org.apache.kafka.clients.producer
          .ProducerRecord<>(destination, 0, transportKey, body, KafkaRecords.toHeaders(headers))));
    } catch (Exception e) {
      throw new AssertionError("raw send to " + destination + " failed", e);
    }
  }

  @Override
  protected void afterFirstFailure(String destination, SubscriptionSpec spec) {
    // The retry copy is confirmed when the source is committed past the message.
    Await.until(Duration.ofSeconds(30), "source committed past the failed message", () ->
        Long.valueOf(1).equals(KafkaTestSupport.committedOffsets(spec.group(), destination)
            .get(0)));
  }

  @Override
  protected DeadLetterStore deadLetterStore(String destination, String group) {
    return KafkaDeadLetterStore.forSubscription(config, destination, scoped(destination, group));
  }

  @Override
  protected DeadLetter awaitDeadLetter(String destination, String messageId, Duration timeout) {
    try (KafkaDeadLetterStore store = KafkaDeadLetterStore.forSubscription(config, destination,
        scoped(destination, "g"))) {
      return Await.value(timeout, "dead letter " + messageId,
          () -> store.list(DeadLetterQuery.all().withMessageId(messageId)).stream().findFirst(),
          Optional::isPresent).orElseThrow();
    }
  }
}
