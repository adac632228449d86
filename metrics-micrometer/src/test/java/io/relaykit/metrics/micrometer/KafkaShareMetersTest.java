package io.relaykit.metrics.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.message.Subscriber;
import io.relaykit.transport.kafka.KafkaShareSubscriber;
import io.relaykit.transport.kafka.KafkaTransportConfig;
import java.time.Duration;
import org.junit.jupiter.api.DisplayName;

/**
 * The scripted run on a Kafka share group: the share runtime reports delivered, acked and expired
 * steps and the handler timer like the consumer-group runtime, and its retry reader counts under
 * the destination too. A share group has no consumer lag per partition to settle or check.
 */
@DisplayName("meters after a scripted run on a Kafka share group (the in-JVM broker)")
class KafkaShareMetersTest extends KafkaMetersTest {

  @Override
  KafkaTransportConfig.Builder configure(KafkaTransportConfig.Builder builder) {
    return builder.groupType(KafkaTransportConfig.GroupType.SHARE)
        .closeTimeout(Duration.ofSeconds(5));
  }

  @Override
  Subscriber subscriber() {
    KafkaShareSubscriber s = KafkaShareSubscriber.create(config);
    open.add(s);
    return s;
  }

  @Override
  void settle(String destination, String group) {}

  @Override
  void afterRun(String destination, String group) {
    assertThat(registry.find("relaykit.outbox.backlog").meters()).as("outbox backlog").isEmpty();
  }
}
