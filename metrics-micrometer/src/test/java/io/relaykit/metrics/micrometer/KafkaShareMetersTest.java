package io.relaykit.metrics.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.message.Publisher;
import io.relaykit.message.Subscriber;
import io.relaykit.transport.kafka.KafkaPublisher;
import io.relaykit.transport.kafka.KafkaShareSubscriber;
import io.relaykit.transport.kafka.KafkaTestBroker;
import io.relaykit.transport.kafka.KafkaTransportConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;

/**
 * The scripted run on a Kafka share group: the share runtime reports delivered, acked and expired
 * steps and the handler timer like the consumer-group runtime, and its retry reader counts under
 * the destination too.
 */
@DisplayName("meters after a scripted run on a Kafka share group (the in-JVM broker)")
class KafkaShareMetersTest extends ScriptedRunContract {

  private final KafkaTransportConfig config = KafkaTransportConfig.builder()
      .bootstrapServers(KafkaTestBroker.bootstrapServers())
      .groupType(KafkaTransportConfig.GroupType.SHARE)
      .commitInterval(Duration.ofMillis(200)).pollTimeout(Duration.ofMillis(50))
      .closeTimeout(Duration.ofSeconds(5))
      .publishTimeout(Duration.ofSeconds(20)).listener(binder).metrics(binder).build();
  private final List<AutoCloseable> open = new ArrayList<>();

  @AfterEach
  void close() throws Exception {
    for (AutoCloseable c : open) {
      c.close();
    }
  }

  @Override
  String destination() {
    String topic = KafkaTestBroker.uniqueTopic("share-meters");
    KafkaTestBroker.createTopic(topic, 2);
    return topic;
  }

  @Override
  Publisher publisher() {
    KafkaPublisher p = KafkaPublisher.create(config);
    open.add(p);
    return p;
  }

  @Override
  Subscriber subscriber() {
    KafkaShareSubscriber s = KafkaShareSubscriber.create(config);
    open.add(s);
    return s;
  }

  @Override
  void afterRun(String destination, String group) {
    // A share group's work is its in-flight records; it never lands in the outbox's meters.
    assertThat(registry.find("relaykit.outbox.backlog").meters()).as("outbox backlog").isEmpty();
  }
}
