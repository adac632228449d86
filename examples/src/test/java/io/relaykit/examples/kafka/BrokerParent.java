package io.relaykit.examples.kafka;

import java.nio.file.Path;

/**
 * A child JVM for {@link LocalKafkaBrokerTest}: starts a broker on {@code args[0]}, prints {@code
 * pid=N port=P}, then waits for its parent to kill it (it never closes the broker).
 */
public final class BrokerParent {
  private BrokerParent() {}

  public static void main(String[] args) throws Exception {
    LocalKafkaBroker broker = LocalKafkaBroker.start(Path.of(args[0]), 0, 0);
    System.out.println("pid=" + broker.pid() + " port=" + broker.port());
    System.out.flush();
    while (System.in.read() >= 0) {
      // until the test kills this JVM
    }
  }
}
