package io.relaykit.inprocess;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.message.Publisher;
import io.relaykit.message.Subscriber;
import io.relaykit.tck.Await;
import io.relaykit.tck.SubscriberContract;
import java.time.Duration;
import java.util.UUID;

class InProcessSubscriberTest extends SubscriberContract {

  private InProcessTransport transport;

  @Override
  protected Subscriber createSubscriber() {
    transport = InProcessTransport.builder().closeTimeout(Duration.ofSeconds(5)).build();
    return transport;
  }

  @Override
  protected Publisher createPublisher() {
    return transport;
  }

  @Override
  protected String newDestination() {
    return "orders-" + UUID.randomUUID();
  }

  @Override
  protected boolean keepsRetriesAcrossRestart() {
    return false; // retries wait in the closed subscription's memory
  }

  @Override
  protected DeadLetterStore deadLetterStore(String destination, String group) {
    return transport.deadLetters();
  }

  @Override
  protected DeadLetter awaitDeadLetter(String destination, String messageId, Duration timeout) {
    return Await.value(timeout, "dead letter " + messageId,
        () -> transport.deadLetters().list(DeadLetterQuery.all().withMessageId(messageId)
            .withSource(destination)).stream().findFirst().orElse(null), d -> d != null);
  }
}
