package io.relaykit.opentelemetry;

import io.relaykit.message.Publisher;
import io.relaykit.message.Subscriber;
import io.relaykit.transport.rabbitmq.RabbitMqPublisher;
import io.relaykit.transport.rabbitmq.RabbitMqSubscriber;
import io.relaykit.transport.rabbitmq.RabbitMqTransportConfig;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;

/**
 * The pipeline on the local RabbitMQ (127.0.0.1:5672, guest/guest; start it with {@code
 * systemctl start rabbitmq-server} or {@code docker run -p 5672:5672 rabbitmq}). Names are unique
 * per test and prefixed {@code rk-test-otel-}.
 */
class RabbitMqTracingTest extends TracingPipelineContract {
  private final RabbitMqTransportConfig config = RabbitMqTransportConfig.builder()
      .connectionName("rk-test-otel-" + UUID.randomUUID())
      .confirmTimeout(Duration.ofSeconds(20))
      .closeTimeout(Duration.ofSeconds(10))
      .recoveryInterval(Duration.ofMillis(200))
      .delayLevels(Duration.ofMillis(200), Duration.ofMillis(600), Duration.ofSeconds(30))
      .build();
  private final RabbitMqPublisher publisher = RabbitMqPublisher.create(config);
  private final RabbitMqSubscriber subscriber = RabbitMqSubscriber.create(config);

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
    return "rk-test-otel-" + UUID.randomUUID().toString().substring(0, 8);
  }

  @Override
  protected String system() {
    return "rabbitmq";
  }

  @AfterEach
  void tearDown() {
    closeRelay();
    subscriber.close();
    publisher.close();
    spans.close();
  }
}
