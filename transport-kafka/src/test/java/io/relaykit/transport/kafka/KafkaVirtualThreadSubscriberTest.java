package io.relaykit.transport.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.relaykit.message.HandlerThreads;
import io.relaykit.message.MessageHandler;
import io.relaykit.message.Subscription;
import io.relaykit.message.SubscriptionSpec;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.condition.EnabledForJreRange;
import org.junit.jupiter.api.condition.JRE;

/**
 * The whole subscriber contract with handlers on virtual threads; every handler call checks that
 * it ran on one. Runs on Java 21+ only: the normal build (Java 17) skips it and {@code ./relaykit
 * test-newest-jdk} runs it, so a JRE condition is acceptable here.
 */
@EnabledForJreRange(min = JRE.JAVA_21)
class KafkaVirtualThreadSubscriberTest extends KafkaSubscriberTest {

  private final Set<String> platformThreads = ConcurrentHashMap.newKeySet();

  @Override
  protected SubscriptionSpec.Builder spec(String destination, String group) {
    return super.spec(destination, group).handlerThreads(HandlerThreads.VIRTUAL);
  }

  @Override
  protected Subscription subscribe(SubscriptionSpec spec, MessageHandler handler) {
    return super.subscribe(spec, d -> {
      if (!isVirtual(Thread.currentThread())) {
        platformThreads.add(Thread.currentThread().getName());
      }
      handler.handle(d);
    });
  }

  @AfterEach
  void everyHandlerRanOnAVirtualThread() {
    assertEquals(Set.of(), platformThreads, "handlers ran on platform threads");
  }

  static boolean isVirtual(Thread t) {
    try {
      return (Boolean) Thread.class.getMethod("isVirtual").invoke(t);
    } catch (ReflectiveOperationException e) {
      throw new AssertionError(e);
    }
  }
}
