package io.relaykit.examples.bootapp;

import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * H2, RabbitMQ (127.0.0.1:5672, guest) through Boot's spring.rabbitmq.* settings; the poison
 * event's dead letter is listed from the group's dead-letter queue.
 */
class RabbitMqDeliveryTest extends AbstractDeliveryTest {
  @DynamicPropertySource
  static void props(DynamicPropertyRegistry r) {
    r.add("spring.datasource.url", () -> "jdbc:h2:mem:bootapp_rmq_" + RUN + ";DB_CLOSE_DELAY=-1");
    r.add("relaykit.storage", () -> "jdbc");
    r.add("relaykit.transport", () -> "rabbitmq");
    r.add("spring.rabbitmq.host", () -> "127.0.0.1");
    r.add("spring.rabbitmq.port", () -> "5672");
    r.add("spring.rabbitmq.username", () -> "guest");
    r.add("spring.rabbitmq.password", () -> "guest");
    r.add("app.destination", () -> "bootapp-orders-" + RUN);
    r.add("app.group", () -> "bootapp-shipping-" + RUN);
  }

  @Override
  String deadLetterStore() {
    return "rabbitmq:";
  }
}
