package io.relaykit.spring.boot;

import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import io.relaykit.transport.rabbitmq.RabbitMqTransportConfig;
import java.util.ArrayList;
import java.util.List;
import org.springframework.core.env.Environment;

/**
 * The local RabbitMQ broker for the starter's tests: {@code RELAYKIT_RABBITMQ_URI} when set, else
 * 127.0.0.1:5672 guest/guest, handed to the starter through Spring Boot's own
 * {@code spring.rabbitmq.*}; and an admin connection to delete what a test declared.
 */
final class RabbitMqTestBroker {
  private RabbitMqTestBroker() {}

  /**
   * The properties of a context on the RabbitMQ transport, a connection name of its own.
   *
   * @param delayLevels the retry delay levels, as {@code relaykit.rabbitmq.delay-levels}
   * @return a mutable list, for the test's own properties
   */
  static List<String> properties(String delayLevels) {
    List<String> props = new ArrayList<>(List.of(
        "relaykit.transport=rabbitmq",
        "relaykit.rabbitmq.connection-name=" + AbstractOutboxTransactionTest.unique("spring"),
        "relaykit.rabbitmq.delay-levels=" + delayLevels,
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

  /** The transport config the context {@code env} runs with. */
  static RabbitMqTransportConfig config(Environment env) {
    return RabbitMqTransportConfig.from(RelaykitEnvironment.settings(env));
  }

  /** A connection to the broker of {@code config}, for checks and clean-up; close it. */
  static Connection admin(RabbitMqTransportConfig config) throws Exception {
    ConnectionFactory f = new ConnectionFactory();
    f.setUri(config.uri());
    return f.newConnection("spring-starter-test-admin");
  }
}
