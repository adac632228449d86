package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.relaykit.tck.Await;
import io.relaykit.transport.kafka.KafkaTestBroker;
import java.util.Collection;
import java.util.List;

/**
 * The binder's numbers on Kafka (the in-JVM KRaft broker from relaykit-kafka's test jar): the
 * starter's Kafka publisher and subscriber report to it through their config, and each
 * subscription's partition lag comes back to 0 once the message is committed.
 */
class KafkaListenerMetricsTest extends AbstractListenerMetricsTest {

  private static final int PARTITIONS = 2;

  @Override
  String messagingSystem() {
    return "kafka";
  }

  @Override
  List<String> transportProperties(String... destinations) {
    for (String d : destinations) {
      KafkaTestBroker.createTopic(d, PARTITIONS);
    }
    return List.of(
        "relaykit.transport=kafka",
        "spring.kafka.bootstrap-servers=" + KafkaTestBroker.bootstrapServers(),
        "relaykit.kafka.client-id-prefix=" + AbstractOutboxTransactionTest.unique("spring"),
        "relaykit.kafka.commit-interval=100ms",
        "relaykit.kafka.poll-timeout=50ms",
        "relaykit.kafka.publish-timeout=20s",
        "relaykit.kafka.close-timeout=5s",
        // A closing consumer waits for its fetch in flight: at most 100 ms, not Kafka's 500.
        "relaykit.kafka.consumer.fetch.max.wait.ms=100");
  }

  /** One lag gauge per partition of the group, each back to 0 once the record is committed. */
  @Override
  void afterAck(MeterRegistry registry, String destination, String group) {
    Await.until(WAIT, "every partition's lag gauge of " + group + " reads 0", () -> {
      Collection<Gauge> lags = registry.find("relaykit.consumer.lag")
          .tags(DESTINATION, destination, GROUP, group).gauges();
      return lags.size() == PARTITIONS && lags.stream().allMatch(g -> g.value() == 0);
    });
    assertThat(registry.find("relaykit.consumer.lag").tags(DESTINATION, destination,
        GROUP, group, PARTITION, "all").gauge()).as("no sum beside the partitions").isNull();
    assertThat(registry.find("relaykit.consumer.in.flight").tags(DESTINATION, destination,
        GROUP, group).gauge()).as("in flight").isNotNull();
  }
}
