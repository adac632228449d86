package io.relaykit.examples.kafka;

import java.io.IOException;
import java.io.InputStream;

/**
 * The child JVM's entry point for {@link LocalKafkaBroker}: runs {@code kafka.Kafka.main(args)}
 * (the broker's own main class, {@code kafka.Kafka server.properties}) and halts the broker when
 * its parent dies. The parent holds the write end of this process's standard input and never
 * writes to it; end of input means the parent is gone (also after its {@code kill -9}), so a demo
 * or a harness that dies does not leave a broker behind holding the port and the data directory.
 *
 * <p>Not for direct use; public only so {@code java} can launch it.
 */
public final class BrokerMain {
  /** The exit code of a broker halted because its parent is gone (SIGKILL gives 137). */
  public static final int PARENT_GONE = 75;

  private BrokerMain() {}

  public static void main(String[] args) throws Throwable {
    Thread watchdog = new Thread(() -> {
      try {
        InputStream in = System.in;
        byte[] buf = new byte[64];
        while (in.read(buf) >= 0) {
          // the parent never writes; keep reading until it is gone
        }
      } catch (IOException e) {
        // a broken pipe means the same as end of input
      }
      // Like kill -9: the broker's recovery on the next start is the same as after a crash.
      Runtime.getRuntime().halt(PARENT_GONE);
    }, "relaykit-parent-watchdog");
    watchdog.setDaemon(true);
    watchdog.start();
    Class<?> kafka = Class.forName("kafka.Kafka");
    try {
      kafka.getMethod("main", String[].class).invoke(null, (Object) args);
    } catch (java.lang.reflect.InvocationTargetException e) {
      throw e.getCause();
    }
  }
}
