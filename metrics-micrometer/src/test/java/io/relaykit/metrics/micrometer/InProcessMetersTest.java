package io.relaykit.metrics.micrometer;

import io.relaykit.inprocess.InProcessTransport;
import io.relaykit.message.Publisher;
import io.relaykit.message.Subscriber;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;

@DisplayName("meters after a scripted run on the in-process transport")
class InProcessMetersTest extends ScriptedRunContract {

  private final InProcessTransport transport = InProcessTransport.builder().listener(binder)
      .closeTimeout(Duration.ofSeconds(5)).build();

  @AfterEach
  void close() {
    transport.close();
  }

  @Override
  String destination() {
    return "orders-" + UUID.randomUUID();
  }

  @Override
  Publisher publisher() {
    return transport;
  }

  @Override
  Subscriber subscriber() {
    return transport;
  }
}
