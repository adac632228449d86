package io.relaykit.examples;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.relaykit.examples.kafka.LocalKafkaBroker;
import io.relaykit.tck.Await;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ./relaykit demo --transport kafka} as a user runs it, as a child process: with no broker
 * configured it runs its own ({@link LocalKafkaBroker}) and stops it when it exits, also when it is
 * killed; with a configured broker that is not there it says so in one line and exits 1.
 */
class KafkaDemoProcessTest {
  private static final Duration WAIT = Duration.ofSeconds(90);

  /** This JVM's environment for the demo, without a configured Kafka. */
  private static Map<String, String> noKafkaConfigured() {
    Map<String, String> env = new HashMap<>();
    env.put(CheckoutApp.KAFKA_BOOTSTRAP_ENV, null);
    return env;
  }

  @Test
  @DisplayName("no bootstrap configured: the demo runs its own broker (one line), orders go through"
      + " it, and it is gone when the demo stops or is killed")
  void ownBroker(@TempDir Path data) throws Exception {
    String[] options = {"--transport", "kafka", "--data", data.toString(), "--poison-sku",
        "POISON", "--lease", "2"};
    List<String> ids = new ArrayList<>();
    long brokerPid;
    try (DemoProcess demo = DemoProcess.start(noKafkaConfigured(), options)) {
      List<String> brokerLines = demo.output().lines()
          .filter(l -> l.contains("Kafka broker")).toList();
      assertThat(brokerLines).hasSize(1);
      assertThat(brokerLines.get(0)).startsWith("relaykit demo: RELAYKIT_KAFKA_BOOTSTRAP_SERVERS"
          + " is not set, so the demo runs its own Kafka broker (Kafka 4.3.1, KRaft) on"
          + " 127.0.0.1:").contains(data.resolve("kafka").toAbsolutePath().toString());
      assertThat(demo.output()).doesNotContain("AdminClientConfig values", "ProducerConfig values",
          "UnknownTopicOrPartitionException");
      brokerPid = Long.parseLong(Files.readString(data.resolve("kafka/broker.pid")).trim());
      assertThat(alive(brokerPid)).isTrue();

      for (int i = 0; i < 5; i++) {
        ids.add(demo.http.order(DemoHttp.newKey(), "book-" + i, 1).json().get("orderId")
            .asText());
      }
      String poison = demo.http.order(DemoHttp.newKey(), "POISON", 1).json().get("orderId")
          .asText();
      for (String id : ids) {
        demo.http.awaitStatus(id, "SUCCESS", WAIT);
        JsonNode order = demo.http.get("/orders/" + id).json();
        assertThat(order.get("effects").get("sms").asInt()).isEqualTo(1);
        assertThat(order.get("effects").get("coupon").asInt()).isEqualTo(1);
      }
      demo.http.awaitStatus(poison, "FAILED", WAIT);
      // The broker really holds the demo's topics, in the demo's data directory.
      for (Orders.Effect effect : Orders.Effect.values()) {
        assertThat(data.resolve("kafka/log/" + effect.destination() + "-0")).isDirectory();
      }

      demo.stop();
      Await.until(Duration.ofSeconds(30), "the broker (pid " + brokerPid + ") stops with the demo",
          () -> !alive(brokerPid));
      // A controlled shutdown, not a kill: the demo closes its clients, then the broker.
      assertThat(Files.readString(data.resolve("kafka/broker.log")))
          .contains("Transition from SHUTTING_DOWN to SHUTDOWN");
    }

    // Again on the same data directory: the broker keeps what it had; then kill -9 of the demo.
    try (DemoProcess demo = DemoProcess.start(noKafkaConfigured(), options)) {
      long second = Long.parseLong(Files.readString(data.resolve("kafka/broker.pid")).trim());
      assertThat(second).isNotEqualTo(brokerPid);
      String id = demo.http.order(DemoHttp.newKey(), "book-after-restart", 1).json()
          .get("orderId").asText();
      demo.http.awaitStatus(id, "SUCCESS", WAIT);
      assertThat(demo.http.get("/orders/" + ids.get(0) + "/status").json().get("status")
          .asText()).isEqualTo("SUCCESS");

      demo.kill();
      Await.until(Duration.ofSeconds(30), "the broker (pid " + second + ") exits after its demo's"
          + " kill -9", () -> !alive(second));
    }
  }

  @Test
  @DisplayName("a configured bootstrap that nothing answers: one line with the address and how to"
      + " start a broker, exit code 1, no client log, no stack trace")
  void unreachableBootstrap(@TempDir Path data) throws Exception {
    String address = "127.0.0.1:" + LocalKafkaBroker.freePort();
    DemoProcess.Exited run = DemoProcess.runToExit(
        Map.of(CheckoutApp.KAFKA_BOOTSTRAP_ENV, address), Duration.ofSeconds(60),
        "--transport", "kafka", "--data", data.toString());
    assertThat(run.exitCode()).as(run.output()).isEqualTo(1);
    assertThat(run.output().strip()).isEqualTo("relaykit demo: no Kafka broker answers at "
        + address + " (RELAYKIT_KAFKA_BOOTSTRAP_SERVERS); start one there, or unset"
        + " RELAYKIT_KAFKA_BOOTSTRAP_SERVERS and the demo runs a local broker itself");
    assertThat(data.resolve("kafka")).doesNotExist();
  }

  @Test
  @DisplayName("PostgreSQL, Redis and RabbitMQ that do not answer: one line each, exit code 1")
  void unreachableServices(@TempDir Path data) throws Exception {
    int port = LocalKafkaBroker.freePort();
    record Case(String variable, String value, String[] options, String line) {}
    List<Case> cases = List.of(
        new Case("RELAYKIT_POSTGRES_URL", "jdbc:postgresql://127.0.0.1:" + port + "/test",
            new String[] {"--storage", "postgres"}, "relaykit demo: PostgreSQL does not answer at"
            + " 127.0.0.1:" + port + " (RELAYKIT_POSTGRES_URL); start it"),
        new Case("RELAYKIT_REDIS_URI", "redis://127.0.0.1:" + port,
            new String[] {"--storage", "redis"}, "relaykit demo: Redis does not answer at"
            + " 127.0.0.1:" + port + " (RELAYKIT_REDIS_URI); start it"),
        new Case("RELAYKIT_RABBITMQ_URI", "amqp://guest:guest@127.0.0.1:" + port,
            new String[] {"--transport", "rabbitmq"}, "relaykit demo: RabbitMQ does not answer at"
            + " 127.0.0.1:" + port + " (RELAYKIT_RABBITMQ_URI); start it"));
    for (Case c : cases) {
      List<String> options = new ArrayList<>(List.of(c.options()));
      options.addAll(List.of("--data", data.resolve(c.variable()).toString()));
      DemoProcess.Exited run = DemoProcess.runToExit(Map.of(c.variable(), c.value()),
          Duration.ofSeconds(60), options.toArray(String[]::new));
      assertThat(run.exitCode()).as(run.output()).isEqualTo(1);
      assertThat(run.output().strip().lines()).as(run.output()).hasSize(1);
      assertThat(run.output()).startsWith(c.line()).contains("or point " + c.variable());
    }
  }

  private static boolean alive(long pid) {
    return ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
  }
}
