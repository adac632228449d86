package io.relaykit.opentelemetry;

import io.relaykit.message.Publisher;
import io.relaykit.message.Subscriber;
import io.relaykit.transport.kafka.KafkaPublisher;
import io.relaykit.transport.kafka.KafkaSubscriber;
import io.relaykit.transport.kafka.KafkaTestBroker;
import io.relaykit.transport.kafka.KafkaTransportConfig;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;

/** The pipeline on Kafka: the in-JVM KRaft broker from relaykit-kafka's test jar. */
class KafkaTracingTest extends TracingPipelineContract {
  private final KafkaTransportConfig config = KafkaTransportConfig.builder()
      .bootstrapServers(KafkaTestBroker.bootstrapServers())
      .commitInterval(Duration.ofMillis(200))
      .pollTimeout(Duration.ofMillis(50))
      .publishTimeout(Duration.ofSeconds(20))
      .closeTimeout(Duration.ofSeconds(5))
      .build();
  private final KafkaPublisher publisher = KafkaPublisher.create(config);
  private final KafkaSubscriber subscriber = KafkaSubscriber.create(config);

  @Override
  protected Publisher publisher() {
    return publisher;
  }

  @Override
  protected Subscriber subscriber() {
    return subscriber;
  }

  @Override
  protected String newDestination() {
    String topic = KafkaTestBroker.uniqueTopic("otel");
    KafkaTestBroker.createTopic(topic, 1);
    return topic;
  }

  @Override
  protected String group(String destination, String group) {
    return destination + "-" + group;
  }

  @Override
  protected String system() {
    return "kafka";
  }

  @AfterEach
  void tearDown() {
    closeRelay();
    subscriber.close();
    publisher.close();
    spans.close();
  }
}
