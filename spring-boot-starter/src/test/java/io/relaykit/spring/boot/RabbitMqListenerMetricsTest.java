package io.relaykit.spring.boot;

import com.rabbitmq.client.Connection;
import io.relaykit.transport.rabbitmq.RabbitMqTopology;
import io.relaykit.transport.rabbitmq.RabbitMqTransportConfig;
import java.util.List;
import org.springframework.core.env.Environment;

/**
 * The binder's numbers on RabbitMQ (the local broker, {@code RELAYKIT_RABBITMQ_URI} or
 * 127.0.0.1:5672 guest/guest): the starter's publisher and subscriber report the steps, each
 * subscription its handler timings. Exchanges and queues are deleted when the test ends.
 */
class RabbitMqListenerMetricsTest extends AbstractListenerMetricsTest {

  @Override
  List<String> transportProperties(String... destinations) {
    return RabbitMqTestBroker.properties("50ms,100ms");
  }

  @Override
  void cleanUp(Environment env) throws Exception {
    RabbitMqTransportConfig config = RabbitMqTestBroker.config(env);
    RabbitMqTopology topology = RabbitMqTopology.of(config);
    String group = env.getRequiredProperty("test.group");
    try (Connection c = RabbitMqTestBroker.admin(config)) {
      topology.delete(c, env.getRequiredProperty("test.destination"), group, true);
      topology.delete(c, env.getRequiredProperty("test.fail-destination"), group + "-fail", true);
    }
  }
}
