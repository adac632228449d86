package io.relaykit.metrics.micrometer;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import io.relaykit.message.Publisher;
import io.relaykit.message.Subscriber;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.transport.rabbitmq.RabbitMqPublisher;
import io.relaykit.transport.rabbitmq.RabbitMqSubscriber;
import io.relaykit.transport.rabbitmq.RabbitMqTopology;
import io.relaykit.transport.rabbitmq.RabbitMqTransportConfig;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;

@DisplayName("meters after a scripted run on RabbitMQ (127.0.0.1:5672)")
class RabbitMqMetersTest extends ScriptedRunContract {

  private final RabbitMqTransportConfig config = RabbitMqTransportConfig.builder()
      .connectionName("rk-test-meters-" + UUID.randomUUID().toString().substring(0, 8))
      .confirmTimeout(Duration.ofSeconds(20)).closeTimeout(Duration.ofSeconds(10))
      .recoveryInterval(Duration.ofMillis(200))
      .delayLevels(Duration.ofMillis(200), Duration.ofMillis(600), Duration.ofSeconds(30))
      .build();
  private final List<AutoCloseable> open = new ArrayList<>();
  private String destination;

  @AfterEach
  void close() throws Exception {
    for (AutoCloseable c : open) {
      c.close();
    }
    if (destination == null) {
      return;
    }
    ConnectionFactory f = new ConnectionFactory();
    f.setHost("127.0.0.1");
    f.setPort(5672);
    try (Connection admin = f.newConnection("rk-test-meters-cleanup")) {
      RabbitMqTopology topology = RabbitMqTopology.of(config);
      topology.delete(admin, destination, destination + "-g", false);
      try (Channel ch = admin.createChannel()) {
        ch.exchangeDelete(topology.exchange(destination));
      }
    }
  }

  @Override
  String destination() {
    destination = "rk-test-meters-" + UUID.randomUUID().toString().substring(0, 8);
    return destination;
  }

  @Override
  Publisher publisher() {
    RabbitMqPublisher p = RabbitMqPublisher.create(config, binder, InstantSource.system());
    open.add(p);
    return p;
  }

  @Override
  Subscriber subscriber() {
    RabbitMqSubscriber s = RabbitMqSubscriber.create(config, (LifecycleListener) binder,
        InstantSource.system());
    open.add(s);
    return s;
  }
}
