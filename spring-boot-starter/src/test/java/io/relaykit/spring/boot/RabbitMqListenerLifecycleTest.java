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
    assertLeft(env, id, 0);
  }

  /**
   * The plain group did not acknowledge the stuck message: it is back in the group's queues, once
   * (not also as a retry copy); the idempotent group's queues are empty.
   */
  @Override
  void afterStuckClose(Environment env, String id, ListenerApp.Events events) throws Exception {
    assertLeft(env, id, 1);
  }

  private static void assertLeft(Environment env, String id, int inPlainGroup) throws Exception {
    RabbitMqTransportConfig config = RabbitMqTestBroker.config(env);
    RabbitMqTopology topology = RabbitMqTopology.of(config);
    String destination = env.getRequiredProperty("test.destination");
    try (Connection c = RabbitMqTestBroker.admin(config); Channel ch = c.createChannel()) {
      String plain = env.getRequiredProperty("test.group");
      for (String group : List.of(plain, plain + "-once")) {
        long left = 0;
        for (String queue : topology.queues(destination, group).allQueues()) {
          left += ch.queueDeclarePassive(queue).getMessageCount();
        }
        assertThat(left).as("messages left in the queues of %s after closing with %s", group, id)
            .isEqualTo(group.equals(plain) ? inPlainGroup : 0);
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
    return List.of(group, group + "-once", group + "-late");
  }

}
