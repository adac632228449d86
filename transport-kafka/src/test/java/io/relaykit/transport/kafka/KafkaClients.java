package io.relaykit.transport.kafka;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A test fixture for the broker tests: opens subscribers and dead-letter stores on the shared test
 * broker and closes each after the test, newest first. Register one per test
 * instance with {@code @RegisterExtension}, so parallel tests never share it.
 */
final class KafkaClients implements AfterEachCallback {

  /** The heartbeat interval of classic group members that set none (see {@link #subscriber}). */
  static final int CLASSIC_HEARTBEAT_MS = 500;

  private final List<AutoCloseable> open = new ArrayList<>();

  /** A subscriber on the shared broker with quick commits and a 5 s close timeout. */
  KafkaSubscriber subscriber() {
    return subscriber(KafkaTestSupport.config().closeTimeout(Duration.ofSeconds(5)));
  }

  /**
   * A subscriber built from {@code config}, closed after the test. A classic consumer group member
   * that sets no heartbeat interval heartbeats every {@value #CLASSIC_HEARTBEAT_MS} ms instead of
   * Kafka's 3 s: a classic member learns of a rebalance (another member joining or leaving) only
   * from a heartbeat's answer, so each join or leave otherwise waits up to 3 s of idle time. The
   * session timeout stays as configured (Kafka's 45 s unless the test sets it), so nothing that
   * waits for a member's failure changes. The consumer protocol ({@code group.protocol=consumer})
   * and share groups take their heartbeat from the test broker and refuse the setting.
   */
  KafkaSubscriber subscriber(KafkaTransportConfig.Builder config) {
    KafkaTransportConfig built = config.build();
    Map<String, String> props = built.consumerProperties();
    if (built.groupType() == KafkaTransportConfig.GroupType.CONSUMER
        && !"consumer".equalsIgnoreCase(props.getOrDefault("group.protocol", "classic"))
        && !props.containsKey("heartbeat.interval.ms")) {
      built = config.consumerProperty("heartbeat.interval.ms",
          Integer.toString(CLASSIC_HEARTBEAT_MS)).build();
    }
    return closedAfterTest(KafkaSubscriber.create(built));
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
