package io.relaykit.inprocess;

import io.relaykit.message.Message;
import io.relaykit.message.Publisher;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.ordering.OrderingMode;
import io.relaykit.tck.Await;
import io.relaykit.tck.PublisherContract;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterEach;

class InProcessPublisherTest extends PublisherContract {

  private InProcessTransport transport;
  private final Map<String, List<Message>> arrived = new ConcurrentHashMap<>();

  @Override
  protected Publisher createPublisher() {
    transport = InProcessTransport.create();
    return transport;
  }

  @Override
  protected String newDestination() {
    return "orders-" + UUID.randomUUID();
  }

  /** A fresh group reads the destination from its oldest message, one message at a time. */
  @Override
  protected List<Message> readBack(String destination, int expected, Duration timeout) {
    List<Message> got = arrived.computeIfAbsent(destination, d -> {
      List<Message> list = new ArrayList<>();
      transport.subscribe(SubscriptionSpec.builder(d, "readback").ordering(OrderingMode.PARTITION)
          .concurrency(1).maxInFlight(1).build(), delivery -> {
            synchronized (list) {
              list.add(delivery.message());
            }
          });
      return list;
    });
    Await.until(timeout, expected + " messages on " + destination, () -> {
      synchronized (got) {
        return got.size() >= expected;
      }
    });
    synchronized (got) {
      return List.copyOf(got);
    }
  }

  @AfterEach
  void closeTransport() {
    transport.close();
  }
}
