package io.relaykit.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.examples.kafka.LocalKafkaBroker;
import io.relaykit.tck.Await;
import io.relaykit.tck.FaultProxy;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The demo on Kafka through a network partition: a {@link FaultProxy} sits between the app and a
 * {@link LocalKafkaBroker} that advertises the proxy's port, so every client connection (bootstrap
 * and after metadata) goes through it. The proxy cuts every connection and refuses new ones until
 * the outbox shows the orders placed meanwhile waiting; after it heals, every order ends SUCCESS
 * with each effect once.
 */
class KafkaDemoPartitionTest {
  private static final Duration WAIT = Duration.ofSeconds(120);

  @Test
  @DisplayName("orders placed while the broker is unreachable wait in the outbox, then all end"
      + " SUCCESS once the partition heals")
  void partition(@TempDir Path data) throws Exception {
    int brokerPort = LocalKafkaBroker.freePort();
    try (FaultProxy proxy = FaultProxy.to("127.0.0.1", brokerPort);
        LocalKafkaBroker broker = LocalKafkaBroker.start(data.resolve("kafka"), brokerPort,
            proxy.port())) {
      DemoOptions options = new DemoOptions("127.0.0.1", 0, data.resolve("demo"), "h2", "kafka",
          0, null, Duration.ofSeconds(2));
      try (RunningDemo demo = RunningDemo.start(options,
          Map.of(CheckoutApp.KAFKA_BOOTSTRAP, broker.bootstrap()))) {
        List<String> ids = new ArrayList<>(demo.http().placeOrders("before", 5));
        for (String id : ids) {
          demo.http().awaitStatus(id, "SUCCESS", WAIT);
        }
        long accepted = proxy.acceptedConnections();
        assertThat(accepted).as("the clients connect through the proxy").isPositive();

        proxy.refuseConnections();
        proxy.cutConnections();
        ids.addAll(demo.http().placeOrders("during", 5));
        Await.until(WAIT, "the orders placed during the partition wait in the outbox",
            () -> demo.http().getJson("/metrics").path("outboxBacklog").asLong() >= 1);
        proxy.heal();

        for (String id : ids) {
          demo.http().awaitStatus(id, "SUCCESS", WAIT);
          assertThat(demo.app().orders.effectCount(id, Orders.Effect.SMS)).as(id).isEqualTo(1);
          assertThat(demo.app().orders.effectCount(id, Orders.Effect.COUPON)).as(id)
              .isEqualTo(1);
        }
        assertThat(proxy.acceptedConnections()).as("the clients reconnected through the proxy")
            .isGreaterThan(accepted);
      }
    }
  }
}
