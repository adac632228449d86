package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.Connection;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.relaykit.tck.Await;
import io.relaykit.transport.rabbitmq.RabbitMqTopology;
import io.relaykit.transport.rabbitmq.RabbitMqTransportConfig;
import java.util.ArrayList;
import java.util.List;
import org.springframework.core.env.Environment;

/**
 * The binder's numbers on RabbitMQ (the local broker, {@code RELAYKIT_RABBITMQ_URI} or
 * 127.0.0.1:5672 guest/guest): the starter's publisher and subscriber report the steps, each
 * subscription its handler timings, lag and in-flight (sampled every 50 ms here). Exchanges and queues are deleted when the test ends.
 */
class RabbitMqListenerMetricsTest extends AbstractListenerMetricsTest {

  @Override
  String messagingSystem() {
    return "rabbitmq";
  }

  @Override
  List<String> transportProperties(String... destinations) {
    List<String> props = new ArrayList<>(RabbitMqTestBroker.properties("50ms,100ms"));
    props.add("relaykit.rabbitmq.metrics-interval=50ms");
    return props;
  }

  /** The group queue's lag (one series, partition "all") and in-flight gauges, both at 0. */
  @Override
  void afterAck(MeterRegistry registry, String destination, String group) {
    Await.until(WAIT, "the lag and in-flight gauges of " + group + " sampled at 0", () -> {
      Gauge lag = registry.find("relaykit.consumer.lag").tags(DESTINATION, destination,
          GROUP, group, PARTITION, "all").gauge();
      Gauge inFlight = registry.find("relaykit.consumer.in.flight").tags(DESTINATION,
          destination, GROUP, group).gauge();
      return lag != null && lag.value() == 0 && inFlight != null && inFlight.value() == 0;
    });
    assertThat(registry.find("relaykit.consumer.lag").tags(DESTINATION, destination,
        GROUP, group).gauges()).as("one lag series: RabbitMQ has no partitions").hasSize(1);
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
