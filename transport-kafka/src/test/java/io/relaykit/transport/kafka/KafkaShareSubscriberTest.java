package io.relaykit.transport.kafka;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.message.Publisher;
import io.relaykit.message.Subscriber;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.tck.Await;
import io.relaykit.tck.SubscriberContract;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.DisplayName;

/**
 * The subscriber contract on share groups, with the same dead-letter store and replay as the
 * consumer-group subscriber. Share groups cannot keep PARTITION order (capability), and a retry
 * leaves its key's order.
 */
@DisplayName("KafkaShareSubscriber keeps the Subscriber contract")
class KafkaShareSubscriberTest extends SubscriberContract {

  private final KafkaTransportConfig config = KafkaTestSupport.config()
      .groupType(KafkaTransportConfig.GroupType.SHARE)
      .closeTimeout(Duration.ofSeconds(5)).build();

  @Override
  protected Subscriber createSubscriber() {
    return KafkaShareSubscriber.create(config);
  }

  @Override
  protected Publisher createPublisher() {
    return KafkaPublisher.create(config);
  }

  @Override
  protected String newDestination() {
    String topic = KafkaTestBroker.uniqueTopic("share-kit");
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
  protected boolean supportsPartitionOrder() {
    return false;
  }

  @Override
  protected boolean holdsKeyBehindRetry() {
    return false;
  }

  private volatile KafkaShareSubscription last;

  @Override
  protected io.relaykit.message.Subscription subscribe(SubscriptionSpec spec,
      io.relaykit.message.MessageHandler handler) {
    io.relaykit.message.Subscription s = super.subscribe(spec, handler);
    last = (KafkaShareSubscription) s;
    return s;
  }

  @Override
  protected void afterFirstFailure(String destination, SubscriptionSpec spec) {
    // The retry copy is confirmed when the broker confirmed the original's ACCEPT.
    Await.until(Duration.ofSeconds(30), "the failed message's ACCEPT confirmed",
        () -> last.accepted() >= 1);
  }

  /** The share group's start offset of partition 0 of {@code topic}; -1 before it has one. */
  static long shareStartOffset(String group, String topic) {
    try {
      TopicPartition tp = new TopicPartition(topic, 0);
      Map<TopicPartition, SharePartitionOffsetInfo> info = KafkaTestBroker.admin()
          .listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec()
              .topicPartitions(java.util.List.of(tp))))
          .partitionsToOffsetInfo(group).get(30, java.util.concurrent.TimeUnit.SECONDS);
      SharePartitionOffsetInfo i = info.get(tp);
      return i == null ? -1 : i.startOffset();
    } catch (Exception e) {
      throw new IllegalStateException("could not read share group offsets of " + group, e);
    }
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
}
