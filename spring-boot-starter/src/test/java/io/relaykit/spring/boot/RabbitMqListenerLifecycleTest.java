package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import io.relaykit.transport.rabbitmq.RabbitMqTopology;
import io.relaykit.transport.rabbitmq.RabbitMqTransportConfig;
import java.util.ArrayList;
import java.util.List;
import org.springframework.core.env.Environment;

/**
 * The listener lifecycle on RabbitMQ (the local broker, {@code RELAYKIT_RABBITMQ_URI} or
 * 127.0.0.1:5672 guest/guest) and H2: the starter's RabbitMQ publisher and subscriber, connected
 * through Spring Boot's own {@code spring.rabbitmq.*}. Each context gets its own destination, whose
 * exchange and queues are deleted when the test ends.
 */
class RabbitMqListenerLifecycleTest extends AbstractListenerLifecycleTest {

  @Override
  List<String> transportProperties() {
    List<String> props = new ArrayList<>(List.of(
        "relaykit.transport=rabbitmq",
        "relaykit.rabbitmq.connection-name=" + AbstractOutboxTransactionTest.unique("spring"),
        "relaykit.rabbitmq.delay-levels=200ms,600ms",
        "relaykit.rabbitmq.confirm-timeout=20s",
        "relaykit.rabbitmq.close-timeout=10s",
        "test.destination=" + AbstractOutboxTransactionTest.unique("rk-test-spring-orders")));
    String uri = System.getenv(RabbitMqTransportConfig.URI_ENV);
    if (uri != null && !uri.isBlank()) {
      props.add("spring.rabbitmq.addresses=" + uri);
    } else {
      props.addAll(List.of("spring.rabbitmq.host=127.0.0.1", "spring.rabbitmq.port=5672",
          "spring.rabbitmq.username=guest", "spring.rabbitmq.password=guest"));
    }
    return props;
  }

  /** Both groups acknowledged the drained message: nothing is left in their queues. */
  @Override
  void afterDrain(Environment env, String id) throws Exception {
    RabbitMqTransportConfig config =
        RabbitMqTransportConfig.from(RelaykitEnvironment.settings(env));
    RabbitMqTopology topology = RabbitMqTopology.of(config);
    String destination = env.getRequiredProperty("test.destination");
    try (Connection c = connect(config); Channel ch = c.createChannel()) {
      for (String group : groups(env)) {
        for (String queue : topology.queues(destination, group).allQueues()) {
          assertThat(ch.queueDeclarePassive(queue).getMessageCount())
              .as("messages left in %s after the drain of %s", queue, id).isZero();
        }
      }
    }
  }

  @Override
  void cleanUp(Environment env) throws Exception {
    RabbitMqTransportConfig config =
        RabbitMqTransportConfig.from(RelaykitEnvironment.settings(env));
    RabbitMqTopology topology = RabbitMqTopology.of(config);
    String destination = env.getRequiredProperty("test.destination");
    try (Connection c = connect(config)) {
      List<String> groups = groups(env);
      for (int i = 0; i < groups.size(); i++) {
        topology.delete(c, destination, groups.get(i), i == groups.size() - 1);
      }
    }
  }

  private static List<String> groups(Environment env) {
    String group = env.getRequiredProperty("test.group");
    return List.of(group, group + "-once");
  }

  private static Connection connect(RabbitMqTransportConfig config) throws Exception {
    ConnectionFactory f = new ConnectionFactory();
    f.setUri(config.uri());
    return f.newConnection("spring-starter-test-admin");
  }
}
