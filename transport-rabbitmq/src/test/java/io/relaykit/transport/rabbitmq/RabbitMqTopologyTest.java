package io.relaykit.transport.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("RabbitMqTopology on the real broker")
class RabbitMqTopologyTest {

  private final RabbitMqTransportConfig config = TestBroker.config().namePrefix("pfx.").build();
  private final RabbitMqTopology topology = RabbitMqTopology.of(config);
  private Connection admin;
  private String destination;

  @BeforeEach
  void connect() {
    admin = TestBroker.connect(config);
    destination = TestBroker.unique("topo");
  }

  @AfterEach
  void cleanUp() throws Exception {
    topology.delete(admin, destination, "g", true);
    admin.close();
  }

  @Test
  @DisplayName("names: prefixed exchange, group queue, one delay queue per level, dead-letter queue")
  void names() {
    RabbitMqTopology.GroupQueues q = topology.queues(destination, "g");
    assertThat(q.exchange()).isEqualTo("pfx." + destination);
    assertThat(q.queue()).isEqualTo("pfx." + destination + ".g");
    assertThat(q.retryQueues()).containsExactly(
        Map.entry(Duration.ofMillis(200), "pfx." + destination + ".g.retry-200ms"),
        Map.entry(Duration.ofMillis(600), "pfx." + destination + ".g.retry-600ms"),
        Map.entry(Duration.ofSeconds(30), "pfx." + destination + ".g.retry-30000ms"));
    assertThat(q.deadLetterQueue()).isEqualTo("pfx." + destination + ".g.dead");
    assertThat(topology.levelFor(Duration.ZERO)).isEqualTo(Duration.ofMillis(200));
    assertThat(topology.levelFor(Duration.ofMillis(200))).isEqualTo(Duration.ofMillis(200));
    assertThat(topology.levelFor(Duration.ofMillis(201))).isEqualTo(Duration.ofMillis(600));
    assertThat(topology.levelFor(Duration.ofHours(2))).isEqualTo(Duration.ofSeconds(30));
  }

  @Test
  @DisplayName("invalid names fail with IllegalArgumentException naming the value")
  void invalidNames() {
    assertThatThrownBy(() -> topology.exchange("has space"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("has space");
    assertThatThrownBy(() -> topology.exchange("amq.direct"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("amq.");
    assertThatThrownBy(() -> topology.queues(destination, "a.b"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("a.b");
    assertThatThrownBy(() -> topology.exchange("x".repeat(300)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("255");
  }

  @Test
  @DisplayName("declaring twice is harmless; queues are quorum queues and the delay queues"
      + " dead-letter back to the group queue")
  void idempotent() throws Exception {
    RabbitMqTopology.GroupQueues q = topology.declare(admin, destination, "g");
    topology.declare(admin, destination, "g");
    String types = TestBroker.rabbitmqctl("list_queues", "name", "type", "arguments");
    for (String queue : q.allQueues()) {
      assertThat(types).containsPattern(java.util.regex.Pattern.quote(queue) + "\\squorum");
      assertThat(TestBroker.depth(admin, queue)).isZero();
    }
    String retryLine = types.lines().filter(l -> l.startsWith(q.retryQueues()
        .get(Duration.ofMillis(200)) + "\t")).findFirst().orElseThrow();
    assertThat(retryLine).contains("x-dead-letter-routing-key").contains(q.queue())
        .contains("x-message-ttl").contains("200");
  }

  @Test
  @DisplayName("an existing classic queue with the group queue's name is a clear conflict naming"
      + " the queue and the mismatch; the broker keeps the classic queue")
  void conflict() throws Exception {
    String queue = topology.queues(destination, "g").queue();
    try (Channel ch = admin.createChannel()) {
      ch.queueDeclare(queue, true, false, false, null);
    }
    assertThatThrownBy(() -> topology.declare(admin, destination, "g"))
        .isInstanceOf(TopologyConflictException.class)
        .hasMessageContaining("queue '" + queue + "'")
        .hasMessageContaining("x-queue-type")
        .hasMessageContaining("PRECONDITION_FAILED");
    assertThat(TestBroker.rabbitmqctl("list_queues", "name", "type"))
        .containsPattern(java.util.regex.Pattern.quote(queue) + "\\sclassic");
    assertThat(admin.isOpen()).as("only the declaring channel closed").isTrue();
  }

  @Test
  @DisplayName("the group queue has an explicit delivery limit and dead-letters into the group's"
      + " dead-letter queue; the dead-letter queue has an explicit limit too")
  void explicitDeliveryLimits() throws Exception {
    RabbitMqTopology.GroupQueues q = topology.declare(admin, destination, "g");
    String all = TestBroker.rabbitmqctl("list_queues", "name", "arguments");
    String group = line(all, q.queue());
    assertThat(group).contains("x-delivery-limit")
        .contains(Integer.toString(RabbitMqTopology.DELIVERY_LIMIT))
        .contains("x-dead-letter-routing-key").contains(q.deadLetterQueue())
        .contains("at-least-once");
    assertThat(line(all, q.deadLetterQueue())).contains("x-delivery-limit")
        .contains(Integer.toString(RabbitMqTopology.DEAD_LETTER_DELIVERY_LIMIT));
  }

  @Test
  @DisplayName("a group queue declared without the limits (an older relaykit) is a conflict whose"
      + " message gives the migration steps; the queue is left as it was")
  void olderGroupQueueNeedsMigration() throws Exception {
    String queue = topology.queues(destination, "g").queue();
    try (Channel ch = admin.createChannel()) {
      ch.queueDeclare(queue, true, false, false, Map.of("x-queue-type", "quorum"));
    }
    assertThatThrownBy(() -> topology.declare(admin, destination, "g"))
        .isInstanceOf(TopologyConflictException.class)
        .hasMessageContaining("queue '" + queue + "'")
        .hasMessageContaining("PRECONDITION_FAILED")
        .hasMessageContaining("x-delivery-limit")
        .hasMessageContaining("migrate")
        .hasMessageContaining("rabbitmqctl delete_queue " + queue);
    assertThat(line(TestBroker.rabbitmqctl("list_queues", "name", "arguments"), queue))
        .doesNotContain("x-delivery-limit");
  }

  private static String line(String listing, String queue) {
    return listing.lines().filter(l -> l.startsWith(queue + "\t")).findFirst()
        .orElseThrow(() -> new AssertionError("no queue " + queue + " in " + listing));
  }
}
