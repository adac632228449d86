package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import io.relaykit.transport.rabbitmq.RabbitMqTopology;
import io.relaykit.transport.rabbitmq.RabbitMqTransportConfig;
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
    List<String> props = RabbitMqTestBroker.properties("200ms,600ms");
    props.add("test.destination=" + AbstractOutboxTransactionTest.unique("rk-test-spring-orders"));
    return props;
  }

  /** Both groups acknowledged the drained message: nothing is left in their queues. */
  @Override
  void afterDrain(Environment env, String id) throws Exception {
    RabbitMqTransportConfig config = RabbitMqTestBroker.config(env);
    RabbitMqTopology topology = RabbitMqTopology.of(config);
    String destination = env.getRequiredProperty("test.destination");
    try (Connection c = RabbitMqTestBroker.admin(config); Channel ch = c.createChannel()) {
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
    RabbitMqTransportConfig config = RabbitMqTestBroker.config(env);
    RabbitMqTopology topology = RabbitMqTopology.of(config);
    String destination = env.getRequiredProperty("test.destination");
    try (Connection c = RabbitMqTestBroker.admin(config)) {
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

}
