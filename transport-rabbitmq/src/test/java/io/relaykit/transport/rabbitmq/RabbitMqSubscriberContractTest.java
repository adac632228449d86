package io.relaykit.transport.rabbitmq;

import com.rabbitmq.client.Connection;
import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.message.Publisher;
import io.relaykit.message.Subscriber;
import io.relaykit.tck.Await;
import io.relaykit.tck.SubscriberContract;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;

/**
 * The Subscriber contract on the real broker. Retries leave a key's order (a retried message waits
 * in a delay queue while later messages of its key go on), so {@link #holdsKeyBehindRetry()} is
 * false, as the RabbitMqSubscriber documents.
 */
class RabbitMqSubscriberContractTest extends SubscriberContract {

  private static final List<String> GROUPS = List.of("g", "g1", "g2", "shared");

  private final RabbitMqTransportConfig config = TestBroker.config()
      .delayLevels(Duration.ofMillis(100), Duration.ofSeconds(1), Duration.ofMinutes(1))
      .build();
  private final RabbitMqTopology topology = RabbitMqTopology.of(config);
  private final List<String> destinations = new CopyOnWriteArrayList<>();

  @Override
  protected Subscriber createSubscriber() {
    return RabbitMqSubscriber.create(config);
  }

  @Override
  protected Publisher createPublisher() {
    return RabbitMqPublisher.create(config);
  }

  @Override
  protected String newDestination() {
    String d = TestBroker.unique("subkit");
    destinations.add(d);
    return d;
  }

  @Override
  protected boolean holdsKeyBehindRetry() {
    return false;
  }

  @Override
  protected DeadLetterStore deadLetterStore(String destination, String group) {
    return RabbitMqDeadLetterStore.create(config, destination, group);
  }

  @Override
  protected DeadLetter awaitDeadLetter(String destination, String messageId, Duration timeout) {
    AtomicReference<DeadLetter> found = new AtomicReference<>();
    try (RabbitMqDeadLetterStore store = RabbitMqDeadLetterStore.create(config, destination,
        "g")) {
      Await.until(timeout, "dead letter " + messageId + " of " + destination, () -> {
        Optional<DeadLetter> d = store.list(DeadLetterQuery.all().withMessageId(messageId))
            .stream().findFirst();
        d.ifPresent(found::set);
        return d.isPresent();
      });
    }
    return found.get();
  }

  @Override
  protected boolean writesRawRecords() {
    return true;
  }

  @Override
  protected void publishRaw(String destination, String transportKey, byte[] body,
      java.util.Map<String, String> headers) {
    try (Connection c = TestBroker.connect(config); var ch = c.createChannel()) {
      java.util.Map<String, Object> amqp = new java.util.LinkedHashMap<>(headers);
      ch.basicPublish(topology.exchange(destination), transportKey == null ? "" : transportKey,
          new com.rabbitmq.client.AMQP.BasicProperties.Builder().headers(amqp).deliveryMode(2)
              .build(), body);
    } catch (IOException | java.util.concurrent.TimeoutException e) {
      throw new AssertionError("raw publish to " + destination + " failed", e);
    }
  }

  @AfterEach
  void deleteQueues() throws IOException {
    try (Connection admin = TestBroker.connect(config)) {
      for (String d : destinations) {
        for (String g : GROUPS) {
          topology.delete(admin, d, g, false);
        }
        try (var ch = admin.createChannel()) {
          ch.exchangeDelete(topology.exchange(d));
        } catch (java.util.concurrent.TimeoutException e) {
          throw new IOException(e);
        }
      }
    }
  }
}
