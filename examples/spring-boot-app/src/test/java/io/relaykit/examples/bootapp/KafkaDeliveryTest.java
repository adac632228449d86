package io.relaykit.examples.bootapp;

import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * H2, Kafka through Boot's spring.kafka.bootstrap-servers and a consumer group, on Boot's
 * kafka-clients against relaykit's test broker in its own JVM.
 */
class KafkaDeliveryTest extends AbstractDeliveryTest {
  static final String TOPIC = "bootapp-orders-" + RUN;

  @DynamicPropertySource
  static void props(DynamicPropertyRegistry r) {
    r.add("spring.datasource.url", () -> "jdbc:h2:mem:bootapp_kafka_" + RUN + ";DB_CLOSE_DELAY=-1");
    r.add("relaykit.storage", () -> "jdbc");
    r.add("relaykit.transport", () -> "kafka");
    r.add("spring.kafka.bootstrap-servers", () -> ForkedKafkaBroker.bootstrapServers(TOPIC));
    r.add("app.destination", () -> TOPIC);
    r.add("app.group", () -> "bootapp-shipping-" + RUN);
  }
}
