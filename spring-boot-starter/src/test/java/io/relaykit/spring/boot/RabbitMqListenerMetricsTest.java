package io.relaykit.spring.boot;

import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import io.relaykit.transport.rabbitmq.RabbitMqTopology;
import io.relaykit.transport.rabbitmq.RabbitMqTransportConfig;
import java.util.ArrayList;
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
    List<String> props = new ArrayList<>(List.of(
        "relaykit.transport=rabbitmq",
        "relaykit.rabbitmq.connection-name=" + AbstractOutboxTransactionTest.unique("spring"),
        "relaykit.rabbitmq.delay-levels=50ms,100ms",
        "relaykit.rabbitmq.confirm-timeout=20s",
        "relaykit.rabbitmq.close-timeout=10s"));
    String uri = System.getenv(RabbitMqTransportConfig.URI_ENV);
    if (uri != null && !uri.isBlank()) {
      props.add("spring.rabbitmq.addresses=" + uri);
    } else {
      props.addAll(List.of("spring.rabbitmq.host=127.0.0.1", "spring.rabbitmq.port=5672",
          "spring.rabbitmq.username=guest", "spring.rabbitmq.password=guest"));
    }
    return props;
  }

  @Override
  void cleanUp(Environment env) throws Exception {
    RabbitMqTransportConfig config =
        RabbitMqTransportConfig.from(RelaykitEnvironment.settings(env));
    RabbitMqTopology topology = RabbitMqTopology.of(config);
    String group = env.getRequiredProperty("test.group");
    ConnectionFactory f = new ConnectionFactory();
    f.setUri(config.uri());
    try (Connection c = f.newConnection("spring-starter-test-admin")) {
      topology.delete(c, env.getRequiredProperty("test.destination"), group, true);
      topology.delete(c, env.getRequiredProperty("test.fail-destination"), group + "-fail", true);
    }
  }
}
