package io.relaykit.transport.kafka;

import org.junit.platform.launcher.LauncherSession;
import org.junit.platform.launcher.LauncherSessionListener;

/**
 * Stops the shared test broker when the JUnit session ends, before the JVM exits, so its shutdown
 * runs (and logs) while the test framework is still in charge of the process.
 */
public final class KafkaTestBrokerSession implements LauncherSessionListener {
  @Override
  public void launcherSessionClosed(LauncherSession session) {
    KafkaTestBroker.stop();
  }
}
