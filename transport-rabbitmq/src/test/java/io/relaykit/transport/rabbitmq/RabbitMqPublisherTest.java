package io.relaykit.transport.rabbitmq;

import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHeaders;
import io.relaykit.message.Publisher;
import io.relaykit.tck.PublisherContract;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/** The Publisher contract on the real broker: read back through a group queue of each destination. */
class RabbitMqPublisherTest extends PublisherContract {

  private static final String GROUP = "kit";

  private RabbitMqTransportConfig config;
  private RabbitMqTopology topology;
  private Connection admin;
  private final List<String> destinations = new ArrayList<>();

  @BeforeEach
  void connect() {
    config = TestBroker.config().build();
    topology = RabbitMqTopology.of(config);
    admin = TestBroker.connect(config);
  }

  @AfterEach
  void cleanUp() throws IOException {
    for (String d : destinations) {
      topology.delete(admin, d, GROUP, true);
    }
    admin.close();
  }

  @Override
  protected Publisher createPublisher() {
    if (config == null) {
      connect();
    }
    return RabbitMqPublisher.create(config);
  }

  @Override
  protected String newDestination() {
    String d = TestBroker.unique("kit");
    try {
      topology.declare(admin, d, GROUP);
    } catch (IOException e) {
      throw new AssertionError(e);
    }
    destinations.add(d);
    return d;
  }

  @Override
  protected List<Message> readBack(String destination, int expected, Duration timeout) {
    String queue = topology.queues(destination, GROUP).queue();
    io.relaykit.tck.Await.until(timeout, expected + " messages on " + queue,
        () -> TestBroker.depth(admin, queue) >= expected);
    List<Message> out = new ArrayList<>();
    for (GetResponse r : TestBroker.drain(admin, queue)) {
      var wire = AmqpHeaders.strings(r.getProps());
      out.add(MessageHeaders.fromWire(wire, wire.get(AmqpHeaders.KEY), r.getBody()));
    }
    return out;
  }
}
