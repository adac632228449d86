package io.relaykit.docs;

// tag::kafka-keyed[]
import io.relaykit.message.Message;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.ordering.OrderingMode;
import io.relaykit.retry.RetryPolicy;
import io.relaykit.transport.kafka.KafkaPublisher;
import io.relaykit.transport.kafka.KafkaSubscriber;
import io.relaykit.transport.kafka.KafkaTransportConfig;
// end::kafka-keyed[]
// tag::share-group[]
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.ordering.OrderingMode;
import io.relaykit.retry.RetryPolicy;
import io.relaykit.transport.kafka.KafkaShareSubscriber;
import io.relaykit.transport.kafka.KafkaTransportConfig;
// end::share-group[]

/** docs/consumers.md and docs/share-groups.md. */
final class ConsumerSnippets {
  private ConsumerSnippets() {}

  static void bill(Message message) {}

  static void send(Message message) {}

  static KafkaSubscriber keyed(KafkaTransportConfig config, Message order) throws Exception {
    // tag::kafka-keyed[]
    try (KafkaPublisher publisher = KafkaPublisher.create(config)) {   // acks=all, idempotent
      publisher.publish("orders", order).get();                        // completes on the broker's confirm
    }

    KafkaSubscriber subscriber = KafkaSubscriber.create(config);
    subscriber.subscribe(SubscriptionSpec.builder("orders", "billing")
            .ordering(OrderingMode.KEY).concurrency(64).maxInFlight(1_000)
            .retryPolicy(RetryPolicy.builder().maxAttempts(5).build())
            .build(),
        delivery -> bill(delivery.message()));            // return = done; throw = retry topic, then DLT
    // end::kafka-keyed[]
    return subscriber;
  }

  static KafkaShareSubscriber share() {
    // tag::share-group[]
    KafkaTransportConfig config = KafkaTransportConfig.builder()
        .bootstrapServers("localhost:9092")
        .groupType(KafkaTransportConfig.GroupType.SHARE)
        .shareAutoOffsetReset("earliest")                  // written to the group's share.auto.offset.reset
        .shareConsumerProperty("fetch.max.wait.ms", "100") // the share consumer's own passthrough
        .build();
    KafkaShareSubscriber subscriber = KafkaShareSubscriber.create(config);
    subscriber.subscribe(SubscriptionSpec.builder("emails", "mailer")   // any number of members, 1 partition
            .ordering(OrderingMode.UNORDERED).concurrency(64).maxInFlight(128)
            .retryPolicy(RetryPolicy.builder().maxAttempts(5).build())
            .build(),
        delivery -> send(delivery.message()));    // return = ACCEPT; throw = retry copy, then ACCEPT
    // end::share-group[]
    return subscriber;
  }
}
