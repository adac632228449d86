package io.relaykit.examples.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.tck.Await;
import io.relaykit.tck.FaultProxy;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link LocalKafkaBroker} against itself: a real broker child process, real clients, {@code kill
 * -9} of the process and a restart on the same data directory and port, and a {@link FaultProxy}
 * in front of it. Each test starts its own broker (a few seconds each).
 */
class LocalKafkaBrokerTest {
  private static final Duration WAIT = Duration.ofSeconds(60);

  @Test
  @DisplayName("records produced before a kill -9 are still there after a restart on the same port,"
      + " and close leaves no process")
  void killAndRestartKeepData(@TempDir Path dir) throws Exception {
    long pid;
    int port;
    try (LocalKafkaBroker broker = LocalKafkaBroker.start(dir, 0, 0)) {
      port = broker.port();
      assertThat(broker.bootstrap()).isEqualTo("127.0.0.1:" + port);
      assertThat(broker.dataDir()).isEqualTo(dir.toAbsolutePath().normalize());
      assertThat(broker.logFile()).isEqualTo(broker.dataDir().resolve("broker.log"));
      pid = broker.pid();
      assertThat(ProcessHandle.of(pid)).hasValueSatisfying(h -> assertThat(h.isAlive()).isTrue());
      createTopic(broker.bootstrap(), "orders", 2);
      produce(broker.bootstrap(), "orders", List.of("a", "b", "c"));
      assertThat(consumeAll(broker.bootstrap(), "orders", 3)).containsExactlyInAnyOrder("a", "b",
          "c");

      broker.kill();
      assertThat(alive(pid)).as("pid " + pid + " after kill").isFalse();
      assertThat(broker.isAlive()).isFalse();
      assertThat(KafkaPing.answers("127.0.0.1", port, Duration.ofMillis(500))).isFalse();

      // Something takes the controller's port meanwhile: the restart moves the controller.
      int controller = controllerPort(dir);
      try (ServerSocket taken = new ServerSocket()) {
        taken.bind(new java.net.InetSocketAddress("127.0.0.1", controller));
        broker.restart();
      }
      assertThat(controllerPort(dir)).isNotEqualTo(controller);
      assertThat(broker.port()).isEqualTo(port);
      assertThat(broker.pid()).isNotEqualTo(pid);
      pid = broker.pid();
      produce(broker.bootstrap(), "orders", List.of("d"));
      assertThat(consumeAll(broker.bootstrap(), "orders", 4))
          .containsExactlyInAnyOrder("a", "b", "c", "d");
    }
    assertThat(alive(pid)).as("pid " + pid + " after close").isFalse();
    assertThat(KafkaPing.answers("127.0.0.1", port, Duration.ofMillis(500))).isFalse();
    String log = Files.readString(dir.resolve("broker.log"));
    assertThat(log).contains("Kafka Server started");
    // close() is a controlled shutdown (the kill -9 before it left no such line).
    assertThat(log.split("Transition from SHUTTING_DOWN to SHUTDOWN", -1)).hasSize(2);
  }

  @Test
  @DisplayName("the broker of a JVM killed with -9 halts by itself, and a new start on its data"
      + " directory and port succeeds at once, with the data")
  void orphanHaltsWithItsParent(@TempDir Path dir) throws Exception {
    String javaBin = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Process parent = new ProcessBuilder(javaBin, "-Xmx64m", "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"),
        BrokerParent.class.getName(), dir.toString()).redirectErrorStream(true).start();
    long orphan;
    int port;
    try (BufferedReader out = new BufferedReader(new InputStreamReader(parent.getInputStream(),
        StandardCharsets.UTF_8))) {
      Matcher m = null;
      for (String line; (line = out.readLine()) != null; ) {
        m = Pattern.compile("pid=(\\d+) port=(\\d+)").matcher(line);
        if (m.find()) {
          break;
        }
        m = null;
      }
      assertThat(m).as("the child JVM printed its broker's pid").isNotNull();
      orphan = Long.parseLong(m.group(1));
      port = Integer.parseInt(m.group(2));
      createTopic("127.0.0.1:" + port, "kept", 1);
      produce("127.0.0.1:" + port, "kept", List.of("k"));

      parent.destroyForcibly();
      assertThat(parent.waitFor(30, TimeUnit.SECONDS)).isTrue();
    } finally {
      parent.destroyForcibly();
    }
    try (LocalKafkaBroker broker = LocalKafkaBroker.start(dir, port, 0)) {
      assertThat(alive(orphan)).as("the orphaned broker, pid " + orphan).isFalse();
      assertThat(consumeAll(broker.bootstrap(), "kept", 1)).containsExactly("k");
    }
  }

  @Test
  @DisplayName("a broker that cannot start fails with the reason and its log's path")
  void failedStart(@TempDir Path dir) throws Exception {
    Files.writeString(dir.resolve("log"), "a file where the log directory should be");
    assertThatThrownBy(() -> LocalKafkaBroker.start(dir, 0, 0))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("formatting the Kafka data directory " + dir.toAbsolutePath())
        .hasMessageContaining("(log: " + dir.toAbsolutePath().resolve("broker.log") + ")");
  }

  @Test
  @DisplayName("behind a FaultProxy the broker advertises the proxy's port: clients bootstrap and"
      + " reconnect through it")
  void advertisesTheProxy(@TempDir Path dir) throws Exception {
    int brokerPort = LocalKafkaBroker.freePort();
    try (FaultProxy proxy = FaultProxy.to("127.0.0.1", brokerPort);
        LocalKafkaBroker broker = LocalKafkaBroker.start(dir, brokerPort, proxy.port())) {
      assertThat(broker.port()).isEqualTo(brokerPort);
      assertThat(broker.bootstrap()).isEqualTo(proxy.address());
      try (Admin admin = admin(broker.bootstrap())) {
        Collection<Node> nodes = admin.describeCluster().nodes().get(30, TimeUnit.SECONDS);
        assertThat(nodes).extracting(Node::port).containsExactly(proxy.port());
      }
      createTopic(broker.bootstrap(), "through-proxy", 1);
      produce(broker.bootstrap(), "through-proxy", List.of("x"));
      long accepted = proxy.acceptedConnections();
      assertThat(accepted).isPositive();
      assertThat(proxy.bytesToServer()).isPositive();

      proxy.cutConnections();
      produce(broker.bootstrap(), "through-proxy", List.of("y"));
      assertThat(consumeAll(broker.bootstrap(), "through-proxy", 2)).containsExactlyInAnyOrder(
          "x", "y");
      assertThat(proxy.acceptedConnections()).isGreaterThan(accepted);
    }
  }

  @Test
  @DisplayName("a taken port fails the start with a message naming it; bad ports are refused")
  void takenPort(@TempDir Path dir) throws Exception {
    try (ServerSocket taken = new ServerSocket(0, 1, java.net.InetAddress.getByName("127.0.0.1"))) {
      assertThatThrownBy(() -> LocalKafkaBroker.start(dir, taken.getLocalPort(), 0))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("port " + taken.getLocalPort() + " on 127.0.0.1 is in use");
    }
    assertThatThrownBy(() -> LocalKafkaBroker.start(dir, 70_000, 0))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("70000");
    assertThatThrownBy(() -> LocalKafkaBroker.start(dir, 0, -1))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("advertisedPort");
  }

  static int controllerPort(Path dir) throws Exception {
    java.util.Properties p = new java.util.Properties();
    try (java.io.Reader r = Files.newBufferedReader(dir.resolve("server.properties"))) {
      p.load(r);
    }
    String voters = p.getProperty("controller.quorum.voters");
    return Integer.parseInt(voters.substring(voters.lastIndexOf(':') + 1));
  }

  static boolean alive(long pid) {
    return ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
  }

  static Admin admin(String bootstrap) {
    return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
        AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000"));
  }

  static void createTopic(String bootstrap, String topic, int partitions) throws Exception {
    try (Admin admin = admin(bootstrap)) {
      admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1)))
          .all().get(30, TimeUnit.SECONDS);
    }
  }

  static void produce(String bootstrap, String topic, List<String> values) throws Exception {
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(Map.of(
        ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
        ProducerConfig.ACKS_CONFIG, "all",
        ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "60000",
        ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000"),
        new StringSerializer(), new StringSerializer())) {
      for (String v : values) {
        producer.send(new ProducerRecord<>(topic, v, v)).get(60, TimeUnit.SECONDS);
      }
    }
  }

  /** Reads the topic from the beginning until {@code expected} records are seen. */
  static List<String> consumeAll(String bootstrap, String topic, int expected) {
    List<String> seen = new ArrayList<>();
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Map.of(
        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
        ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
        ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false"),
        new StringDeserializer(), new StringDeserializer())) {
      List<TopicPartition> partitions = consumer.partitionsFor(topic, Duration.ofSeconds(30))
          .stream().map(i -> new TopicPartition(topic, i.partition())).toList();
      consumer.assign(partitions);
      consumer.seekToBeginning(partitions);
      Await.until(WAIT, expected + " records in " + topic, () -> {
        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
          seen.add(r.value());
        }
        return seen.size() >= expected;
      });
    }
    return seen;
  }
}
