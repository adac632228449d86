package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.transport.kafka.KafkaTestBroker;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.springframework.core.env.Environment;

/**
 * The listener lifecycle on Kafka (the in-JVM KRaft broker from relaykit-kafka's test jar, one per
 * JVM) and H2: the starter's Kafka publisher and subscriber, connected through Spring Boot's own
 * {@code spring.kafka.bootstrap-servers}. Each context gets its own topic.
 */
class KafkaListenerLifecycleTest extends AbstractListenerLifecycleTest {

  private static final int PARTITIONS = 2;

  @Override
  List<String> transportProperties() {
    String topic = KafkaTestBroker.uniqueTopic("spring-orders");
    KafkaTestBroker.createTopic(topic, PARTITIONS);
    return List.of(
        "relaykit.transport=kafka",
        "spring.kafka.bootstrap-servers=" + KafkaTestBroker.bootstrapServers(),
        "relaykit.kafka.client-id-prefix=" + AbstractOutboxTransactionTest.unique("spring"),
        "relaykit.kafka.commit-interval=200ms",
        "relaykit.kafka.poll-timeout=50ms",
        "relaykit.kafka.publish-timeout=20s",
        "relaykit.kafka.close-timeout=5s",
        // A closing consumer waits for its fetch in flight: at most 100 ms, not Kafka's 500.
        "relaykit.kafka.consumer.fetch.max.wait.ms=100",
        "test.destination=" + topic);
  }

  /** Both groups committed everything on the topic, the drained message included. */
  @Override
  void afterDrain(Environment env, String id) throws Exception {
    assertCommitted(env, id, 0);
  }

  /**
   * The plain group did not commit the stuck record: its committed offsets are one short of the
   * topic's end (the group's next consumer gets it again); the idempotent group committed all.
   */
  @Override
  void afterStuckClose(Environment env, String id, ListenerApp.Events events) throws Exception {
    assertCommitted(env, id, 1);
  }

  private static void assertCommitted(Environment env, String id, long plainGroupShort)
      throws Exception {
    String topic = env.getRequiredProperty("test.destination");
    Admin admin = KafkaTestBroker.admin();
    Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
    for (int p = 0; p < PARTITIONS; p++) {
      latest.put(new TopicPartition(topic, p), OffsetSpec.latest());
    }
    Map<TopicPartition, Long> ends = new HashMap<>();
    admin.listOffsets(latest).all().get(30, TimeUnit.SECONDS)
        .forEach((tp, info) -> ends.put(tp, info.offset()));
    assertThat(ends.values().stream().mapToLong(Long::longValue).sum())
        .as("records on %s", topic).isEqualTo(1);
    String plain = env.getRequiredProperty("test.group");
    for (String group : List.of(plain, plain + "-once")) {
      Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
          .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
      Map<TopicPartition, Long> positions = new HashMap<>();
      ends.keySet().forEach(tp -> {
        OffsetAndMetadata o = committed.get(tp);
        positions.put(tp, o == null ? 0L : o.offset());
      });
      long behind = ends.entrySet().stream()
          .mapToLong(e -> e.getValue() - positions.get(e.getKey())).sum();
      assertThat(behind).as("records of %s not committed by group %s after the close (%s of %s)",
          topic, group, positions, ends).isEqualTo(group.equals(plain) ? plainGroupShort : 0);
    }
  }
}
