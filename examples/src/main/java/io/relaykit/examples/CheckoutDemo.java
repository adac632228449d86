package io.relaykit.examples;

/**
 * Runs the checkout demo: {@code ./relaykit demo [--port 8080] [--data DIR] [--storage h2|postgres]
 * [--transport memory] [--fail-rate R] [--poison-sku SKU] [--lease SECONDS]}.
 *
 * <p>Prints {@code relaykit demo listening on http://HOST:PORT} once it serves requests (tests
 * wait for that line), and shuts down gracefully on SIGTERM or Ctrl-C. With {@code --transport
 * kafka} and no {@code RELAYKIT_KAFKA_BOOTSTRAP_SERVERS}, it first starts its own broker under the
 * data directory and says so in one line. Exit codes: 2 bad option, 1 a service it needs does not
 * answer (one line naming it, its address and how to start one).
 */
public final class CheckoutDemo {
  private CheckoutDemo() {}

  /** Sets slf4j-simple's level for {@code logger} unless a {@code -D} setting chose one. */
  private static void quiet(String logger, String level) {
    String key = "org.slf4j.simpleLogger.log." + logger;
    if (System.getProperty(key) == null) {
      System.setProperty(key, level);
    }
  }

  public static void main(String[] args) throws Exception {
    // Before anything loads H2: its lock socket and AUTO_SERVER port listen on loopback only.
    DemoStore.bindH2ToLoopback();
    DemoOptions options;
    try {
      options = DemoOptions.parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println("relaykit demo: " + e.getMessage());
      System.exit(2);
      return;
    }
    // Kafka's clients log every configuration at INFO and every reconnect attempt; a terminal
    // wants the demo's own lines. An explicit -D setting wins.
    quiet("org.apache.kafka", "warn");
    // Right after the subscriber creates its retry and dead-letter topics, the admin client's
    // offset lookup meets "unknown topic" until the new partitions' leaders are known; it retries,
    // and logs each retry at ERROR.
    quiet("org.apache.kafka.clients.admin.internals.PartitionLeaderStrategy", "off");
    CheckoutApp app;
    try {
      app = CheckoutApp.start(options);
    } catch (DemoStartupException e) {
      System.err.println("relaykit demo: " + e.getMessage());
      System.exit(1);
      return;
    }
    DemoServer server = new DemoServer(app, options.host(), options.port());
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      server.close();
      app.close();
    }, "demo-shutdown"));
    System.out.println("relaykit demo listening on http://" + options.host() + ":"
        + server.port() + " (storage " + options.storage() + ", transport "
        + options.transport() + ", data " + options.dataDir().toAbsolutePath() + ")");
    System.out.flush();
  }
}
