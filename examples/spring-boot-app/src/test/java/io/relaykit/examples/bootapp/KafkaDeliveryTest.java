package io.relaykit.examples.bootapp;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.TopicDescription;
import org.junit.jupiter.api.Test;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * H2, Kafka through Boot's spring.kafka.bootstrap-servers and a consumer group, on Boot's
 * kafka-clients against relaykit's test broker in its own JVM. Nothing creates the topics but the
 * application ({@code relaykit.kafka.topics.*}): the source topic, and its retry and dead-letter
 * topics with the source's partitions; the poison event's dead letter is listed from the
 * dead-letter topic.
 */
class KafkaDeliveryTest extends AbstractDeliveryTest {
  static final String TOPIC = "bootapp-orders-" + RUN;
  static final int PARTITIONS = 2;

  @DynamicPropertySource
  static void props(DynamicPropertyRegistry r) {
    r.add("spring.datasource.url", () -> "jdbc:h2:mem:bootapp_kafka_" + RUN + ";DB_CLOSE_DELAY=-1");
    r.add("relaykit.storage", () -> "jdbc");
    r.add("relaykit.transport", () -> "kafka");
    r.add("spring.kafka.bootstrap-servers", ForkedKafkaBroker::bootstrapServers);
    r.add("relaykit.kafka.topics.create", () -> "true");
    r.add("relaykit.kafka.topics.partitions", () -> PARTITIONS);
    r.add("app.destination", () -> TOPIC);
    r.add("app.group", () -> "bootapp-shipping-" + RUN);
  }

  @Override
  String deadLetterStore() {
    return "kafka:";
  }

  @Test
  void theApplicationCreatedItsTopics() throws Exception {
    try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG,
        ForkedKafkaBroker.bootstrapServers()))) {
      List<String> names = admin.listTopics().names().get(60, TimeUnit.SECONDS).stream()
          .filter(n -> n.startsWith(TOPIC)).toList();
      // The source, the group's retry topic and its dead-letter topic.
      assertThat(names).as("topics").contains(TOPIC).hasSize(3);
      Map<String, TopicDescription> topics = admin.describeTopics(names).allTopicNames()
          .get(60, TimeUnit.SECONDS);
      assertThat(topics.values()).allSatisfy(t ->
          assertThat(t.partitions()).as(t.name()).hasSize(PARTITIONS));
    }
  }
}
