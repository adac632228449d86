package io.relaykit.examples;

/**
 * Runs the checkout demo: {@code ./relaykit demo [--port 8080] [--data DIR] [--storage h2|postgres]
 * [--transport memory] [--fail-rate R] [--poison-sku SKU] [--lease SECONDS]}.
 *
 * <p>Prints {@code relaykit demo listening on http://HOST:PORT} once it serves requests (tests
 * wait for that line), and shuts down gracefully on SIGTERM or Ctrl-C.
 */
public final class CheckoutDemo {
  private CheckoutDemo() {}

  public static void main(String[] args) throws Exception {
    DemoOptions options;
    try {
      options = DemoOptions.parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println("relaykit demo: " + e.getMessage());
      System.exit(2);
      return;
    }
    CheckoutApp app = CheckoutApp.start(options);
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
