package io.relaykit.examples.kafka;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;

/**
 * Runs a {@link LocalKafkaBroker} for a process on another class path: {@code java -cp <the
 * examples module's class path> io.relaykit.examples.kafka.StandaloneBroker DIR} starts the broker
 * under {@code DIR} on a free 127.0.0.1 port, prints one line {@code bootstrap=127.0.0.1:PORT}
 * once it answers, and stops it when its standard input ends (the parent closed it or died).
 * Lets a build whose own class path holds an older kafka-clients (a Spring Boot application on
 * Boot's managed versions) test against this build's broker.
 */
public final class StandaloneBroker {
  private StandaloneBroker() {}

  /**
   * Starts the broker, announces it, and runs until standard input ends.
   *
   * @param args the data directory
   * @throws IOException if standard input fails
   */
  public static void main(String[] args) throws IOException {
    if (args.length != 1) {
      System.err.println("usage: StandaloneBroker DATA_DIR");
      System.exit(2);
    }
    try (LocalKafkaBroker broker = LocalKafkaBroker.start(Path.of(args[0]), 0, 0)) {
      System.out.println("bootstrap=" + broker.bootstrap());
      System.out.flush();
      InputStream in = System.in;
      byte[] buffer = new byte[256];
      while (in.read(buffer) >= 0) {
        // Nothing is sent on the lifeline; only its end matters.
      }
    }
  }
}
