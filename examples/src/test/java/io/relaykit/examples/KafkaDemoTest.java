package io.relaykit.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.transport.kafka.KafkaTestBroker;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * The demo on {@code --transport kafka}: the real app on H2 in a temp folder, against the in-JVM
 * KRaft broker of transport-kafka's test jar (fresh per test JVM, so topic names need no suffix).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class KafkaDemoTest {
  private static final Duration WAIT = Duration.ofSeconds(60);
  private static final String POISON = "POISON";

  private RunningDemo demo;

  @BeforeAll
  void start(@TempDir Path data) throws Exception {
    DemoOptions options = new DemoOptions("127.0.0.1", 0, data, "h2", "kafka", 0, POISON,
        Duration.ofSeconds(2));
    demo = RunningDemo.start(options,
        Map.of("relaykit.kafka.bootstrap-servers", KafkaTestBroker.bootstrapServers()));
  }

  @AfterAll
  void stop() {
    if (demo != null) {
      demo.close();
    }
  }

  @Test
  @DisplayName("an order travels through Kafka and ends SUCCESS with sms = 1 and coupon = 1")
  void success() throws Exception {
    demo.orderSucceedsWithOneOfEachEffect(WAIT);
    for (Orders.Effect effect : Orders.Effect.values()) {
      assertThat(KafkaTestBroker.topicExists(effect.destination()))
          .as("topic " + effect.destination()).isTrue();
    }
  }

  @Test
  @DisplayName("a poison order ends FAILED with the reason and no effects")
  void poison() throws Exception {
    demo.orderFailsAsPoison(POISON, WAIT);
  }
}
