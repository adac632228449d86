package io.relaykit.transport.kafka;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A test fixture for the broker tests: opens subscribers and dead-letter stores on the shared test
 * broker and closes each after the test, newest first. Register one per test
 * instance with {@code @RegisterExtension}, so parallel tests never share it.
 */
final class KafkaClients implements AfterEachCallback {

  private final List<AutoCloseable> open = new ArrayList<>();

  /** A subscriber on the shared broker with quick commits and a 5 s close timeout. */
  KafkaSubscriber subscriber() {
    return subscriber(KafkaTestSupport.config().closeTimeout(Duration.ofSeconds(5)));
  }

  /** A subscriber built from {@code config}, closed after the test. */
  KafkaSubscriber subscriber(KafkaTransportConfig.Builder config) {
    return closedAfterTest(KafkaSubscriber.create(config.build()));
  }

  /** The dead-letter store of {@code group}'s subscription to {@code topic}. */
  KafkaDeadLetterStore deadLetterStore(String topic, String group) {
    return closedAfterTest(KafkaDeadLetterStore.forSubscription(
        KafkaTestSupport.config().build(), topic, group));
  }

  /** The dead-letter store over {@code deadLetterTopic} itself. */
  KafkaDeadLetterStore deadLetterStore(String deadLetterTopic) {
    return closedAfterTest(KafkaDeadLetterStore.create(KafkaTestSupport.config().build(),
        deadLetterTopic));
  }

  private <T extends AutoCloseable> T closedAfterTest(T client) {
    open.add(client);
    return client;
  }

  /** Closes every client, newest first, even when one fails; the first failure is thrown. */
  @Override
  public void afterEach(ExtensionContext context) throws Exception {
    Exception failure = null;
    for (int i = open.size() - 1; i >= 0; i--) {
      try {
        open.get(i).close();
      } catch (Exception e) {
        if (failure == null) {
          failure = e;
        } else {
          failure.addSuppressed(e);
        }
      }
    }
    open.clear();
    if (failure != null) {
      throw failure;
    }
  }
}
