package quickstart;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.rabbitmq.client.ConnectionFactory;
import io.relaykit.message.Message;
import io.relaykit.transport.kafka.KafkaTestBroker;
import io.relaykit.transport.rabbitmq.RabbitMqTopology;
import io.relaykit.transport.rabbitmq.RabbitMqTransportConfig;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * Runs README's plain-Java quick start on real backends, with Guice absent: H2 in memory always;
 * PostgreSQL (5432), Redis (6379) and RabbitMQ (5672) on loopback, failing with the service's
 * name when one is down; Kafka on the in-JVM KRaft broker of relaykit-kafka's tests jar.
 */
class QuickStartTest {

  private static final String RUN = UUID.randomUUID().toString().replace("-", "").substring(0, 8);

  @AfterAll
  static void stopKafka() {
    KafkaTestBroker.stop();
  }

  @Test
  void guiceIsNotOnTheClassPathNorInTheDependencyTree() throws IOException {
    assertThrows(ClassNotFoundException.class, () -> Class.forName("com.google.inject.Guice"),
        "com.google.inject.Guice must not be loadable");
    assertFalse(System.getProperty("java.class.path").contains("com/google/inject"),
        "class path: " + System.getProperty("java.class.path"));
    Path tree = Path.of(System.getProperty("quickstart.dependencyTree", "target/dependency-tree.txt"));
    String text = Files.readString(tree, StandardCharsets.UTF_8);
    assertTrue(text.contains("io.relaykit:relaykit-jdbc:jar:"), "dependency tree:\n" + text);
    assertTrue(text.contains("io.relaykit:relaykit-core:jar:"), "dependency tree:\n" + text);
    assertFalse(text.contains("com.google.inject"), "Guice in the dependency tree:\n" + text);
    assertFalse(text.contains("relaykit-guice"), "relaykit-guice in the dependency tree:\n" + text);
  }

  @Test
  void helloOutboxDeliversTheOrderItCommitted() throws Exception {
    HelloOutbox.main(new String[0]);   // throws when order-42 is not delivered within 10 s
  }

  @Test
  void outboxOnH2() throws Exception {
    Message m = new QuickStart().outbox("jdbc:h2:mem:orders-" + RUN, null, "relaykit_");
    assertEquals("order.placed", m.type());
    assertEquals("{\"id\":42}", m.payloadUtf8());
    assertEquals("order-42", m.key().orElseThrow());
  }

  @Test
  void outboxOnPostgreSql() throws Exception {
    requireUp("PostgreSQL", 5432);
    String url = "jdbc:postgresql://127.0.0.1:5432/test";
    String prefix = "quickstart_" + RUN + "_";
    try {
      Message m = new QuickStart().outbox(url, "postgres", prefix);
      assertEquals("order.placed", m.type());
      assertEquals("order-42", m.key().orElseThrow());
    } finally {
      dropTables(url, prefix);
    }
  }

  @Test
  void idempotencyOnRedisInFrontOfH2() throws Exception {
    requireUp("Redis", 6379);
    int sent = new QuickStart().idempotency("redis://127.0.0.1:6379", "quickstart:" + RUN + ":",
        "jdbc:h2:mem:idempotency-" + RUN, "relaykit_");
    assertEquals(1, sent, "SMS sent for one message delivered twice");
  }

  @Test
  void kafka() throws Exception {
    String topic = KafkaTestBroker.uniqueTopic("quickstart-orders");
    KafkaTestBroker.createTopic(topic, 1);
    Message m = new QuickStart().kafka(KafkaTestBroker.bootstrapServers(), topic);
    assertEquals("order.placed", m.type());
    assertEquals("order-42", m.key().orElseThrow());
  }

  @Test
  void rabbitMq() throws Exception {
    requireUp("RabbitMQ", 5672);
    String uri = "amqp://guest:guest@127.0.0.1:5672";
    String prefix = "quickstart." + RUN + ".";
    try {
      Message m = new QuickStart().rabbitMq(uri, prefix);
      assertEquals("order.placed", m.type());
      assertEquals("order-42", m.key().orElseThrow());
    } finally {
      RabbitMqTransportConfig config = RabbitMqTransportConfig.builder().uri(uri)
          .namePrefix(prefix).build();
      ConnectionFactory factory = new ConnectionFactory();
      factory.setUri(uri);
      try (com.rabbitmq.client.Connection connection = factory.newConnection("quickstart-cleanup")) {
        RabbitMqTopology.of(config).delete(connection, "orders", "billing", true);
      }
    }
  }

  private static void requireUp(String service, int port) {
    try (Socket socket = new Socket()) {
      socket.connect(new InetSocketAddress("127.0.0.1", port), 2_000);
    } catch (IOException e) {
      throw new AssertionError(service + " is not reachable at 127.0.0.1:" + port
          + " (" + e.getMessage() + "); start it (./relaykit test starts the test services)", e);
    }
  }

  private static void dropTables(String url, String prefix) throws Exception {
    try (Connection c = DriverManager.getConnection(url, "postgres", null);
         Statement s = c.createStatement()) {
      List<String> tables = new ArrayList<>();
      try (ResultSet rs = s.executeQuery("SELECT table_name FROM information_schema.tables"
          + " WHERE table_schema = current_schema() AND table_name LIKE '" + prefix + "%'")) {
        while (rs.next()) {
          tables.add(rs.getString(1));
        }
      }
      for (String table : tables) {
        s.execute("DROP TABLE IF EXISTS " + table + " CASCADE");
      }
    }
  }
}
