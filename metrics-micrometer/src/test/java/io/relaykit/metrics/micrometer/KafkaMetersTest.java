package io.relaykit.metrics.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.TimeGauge;
import io.relaykit.message.Publisher;
import io.relaykit.message.Subscriber;
import io.relaykit.tck.Await;
import io.relaykit.transport.kafka.KafkaPublisher;
import io.relaykit.transport.kafka.KafkaSubscriber;
import io.relaykit.transport.kafka.KafkaTestBroker;
import io.relaykit.transport.kafka.KafkaTransportConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;

@DisplayName("meters after a scripted run on Kafka (the in-JVM broker)")
class KafkaMetersTest extends ScriptedRunContract {

  final KafkaTransportConfig config = configure(KafkaTransportConfig.builder()
      .bootstrapServers(KafkaTestBroker.bootstrapServers())
      .commitInterval(Duration.ofMillis(200)).pollTimeout(Duration.ofMillis(50))
      .publishTimeout(Duration.ofSeconds(20)).listener(binder).metrics(binder)).build();
  final List<AutoCloseable> open = new ArrayList<>();

  /** The transport settings past the common ones (called while constructing). */
  KafkaTransportConfig.Builder configure(KafkaTransportConfig.Builder builder) {
    return builder;
  }

  @AfterEach
  void close() throws Exception {
    for (AutoCloseable c : open) {
      c.close();
    }
  }

  @Override
  String destination() {
    String topic = KafkaTestBroker.uniqueTopic("meters");
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
    KafkaSubscriber s = KafkaSubscriber.create(config);
    open.add(s);
    return s;
  }

  private List<Gauge> lag(String destination, String group) {
    return registry.find("relaykit.consumer.lag").tags(DESTINATION, destination, GROUP, group)
        .gauges().stream().toList();
  }

  @Override
  void settle(String destination, String group) {
    Await.until(WAIT, "lag of both partitions back to 0", () -> {
      List<Gauge> gauges = lag(destination, group);
      return gauges.size() == 2 && gauges.stream().allMatch(g -> g.value() == 0);
    });
  }

  @Override
  void afterRun(String destination, String group) {
    assertThat(lag(destination, group)).extracting(g -> g.getId().getTag(PARTITION))
        .containsExactlyInAnyOrder("0", "1");
    Await.until(WAIT, "in-flight back to 0", () -> registry.find("relaykit.consumer.in.flight")
        .tags(DESTINATION, destination, GROUP, group).gauge() != null
        && registry.get("relaykit.consumer.in.flight")
            .tags(DESTINATION, destination, GROUP, group).gauge().value() == 0);
    Await.until(WAIT, "oldest in-flight age back to 0", () -> {
      TimeGauge age = registry.find("relaykit.consumer.in.flight.oldest.age")
          .tags(DESTINATION, destination, GROUP, group).timeGauge();
      return age != null && age.value() == 0;
    });
    // A consumer's lag is relaykit.consumer.lag; it never lands in the outbox's meters.
    assertThat(registry.find("relaykit.outbox.backlog").meters()).as("outbox backlog").isEmpty();
    assertThat(registry.find("relaykit.outbox.oldest.age").meters()).as("outbox age").isEmpty();
  }
}
