package io.relaykit.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.examples.kafka.LocalKafkaBroker;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The demo on Kafka through a {@code kill -9} of the broker: orders placed before, during and after
 * the outage all end SUCCESS with exactly one SMS and one coupon, once the broker is back on the
 * same port and data. The broker is a {@link LocalKafkaBroker} child process; the app runs in this
 * JVM.
 */
class KafkaDemoBrokerKillTest {
  private static final Duration WAIT = Duration.ofSeconds(120);

  @Test
  @DisplayName("orders placed around a broker kill -9 and restart all end SUCCESS, each effect once")
  void brokerKill(@TempDir Path data) throws Exception {
    try (LocalKafkaBroker broker = LocalKafkaBroker.start(data.resolve("kafka"), 0, 0)) {
      DemoOptions options = new DemoOptions("127.0.0.1", 0, data.resolve("demo"), "h2", "kafka",
          0, null, Duration.ofSeconds(2));
      try (RunningDemo demo = RunningDemo.start(options,
          Map.of(CheckoutApp.KAFKA_BOOTSTRAP, broker.bootstrap()))) {
        assertThat(demo.app().localKafka).as("a configured broker: the demo starts none").isNull();
        List<String> ids = new ArrayList<>();
        ids.addAll(demo.http().placeOrders("before", 5));
        for (String id : ids) {
          demo.http().awaitStatus(id, "SUCCESS", WAIT);
        }

        broker.kill();
        // The API takes orders while the broker is down: they wait in the outbox.
        ids.addAll(demo.http().placeOrders("during", 5));
        broker.restart();
        ids.addAll(demo.http().placeOrders("after", 5));

        for (String id : ids) {
          demo.http().awaitStatus(id, "SUCCESS", WAIT);
          assertThat(demo.app().orders.effectCount(id, Orders.Effect.SMS)).as(id).isEqualTo(1);
          assertThat(demo.app().orders.effectCount(id, Orders.Effect.COUPON)).as(id)
              .isEqualTo(1);
        }
      }
    }
  }
}
