package io.relaykit.inprocess;

import io.relaykit.message.HandlerThreads;
import org.junit.jupiter.api.condition.EnabledForJreRange;
import org.junit.jupiter.api.condition.JRE;

/**
 * The whole subscriber contract with handlers on virtual threads; the kit fails a test if any
 * handler ran on a platform thread. Runs on Java 21+ only: the normal build (Java 17) skips it and
 * {@code ./relaykit test-newest-jdk} runs it, so a JRE condition is acceptable here.
 */
@EnabledForJreRange(min = JRE.JAVA_21)
class InProcessVirtualThreadSubscriberTest extends InProcessSubscriberTest {

  @Override
  protected HandlerThreads handlerThreads() {
    return HandlerThreads.VIRTUAL;
  }
}
