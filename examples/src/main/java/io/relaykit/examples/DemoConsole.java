package io.relaykit.examples;

import io.relaykit.console.Console;
import io.relaykit.console.ConsoleDeadLetterSource;
import io.relaykit.console.ConsoleHistory;
import io.relaykit.console.ConsoleServer;
import io.relaykit.monitor.SubscriptionStatusSource;
import io.relaykit.transport.kafka.KafkaSubscriptionStatus;
import io.relaykit.transport.kafka.KafkaTransportConfig;
import io.relaykit.transport.rabbitmq.RabbitMqQueueStatus;
import io.relaykit.transport.rabbitmq.RabbitMqTransportConfig;
import java.io.IOException;
import java.net.InetAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * {@code ./relaykit console}: the operator console over the demo's store (the same store {@code
 * ./relaykit dlq} opens), served by {@link ConsoleServer} on 127.0.0.1 unless {@code --bind} says
 * otherwise, read-only unless {@code --allow-actions}. The store's dead letters replay into the
 * outbox in one transaction (a running demo's relay publishes them), and purge one by one. With
 * {@code --transport kafka} the overview reads every consumer group's lag through an Admin client;
 * with {@code --transport rabbitmq} the depth and consumers of the demo's queues.
 */
final class DemoConsole implements AutoCloseable {

  /** The store's name on the console's pages. */
  static final String STORE = "relaykit";

  private final ConsoleServer server;
  private final ConsoleHistory history;
  private final List<AutoCloseable> owned;

  private DemoConsole(ConsoleServer server, ConsoleHistory history, List<AutoCloseable> owned) {
    this.server = server;
    this.history = history;
    this.owned = owned;
  }

  /**
   * Starts the console over {@code app}'s store.
   *
   * @param app the storage-only demo app, which the caller closes after this
   * @param options the demo options (transport, namespace)
   * @param bind the address to listen on
   * @param port the port, 0 for any
   * @param allowActions whether replay and purge are allowed
   * @throws IOException if the address cannot be bound
   */
  static DemoConsole start(CheckoutApp app, DemoOptions options, InetAddress bind, int port,
      boolean allowActions) throws IOException {
    return start(app, options, bind, port, allowActions, ConsoleHistory.DEFAULT_PERIOD);
  }

  /**
   * Starts the console, sampling its hour of history every {@code samplePeriod}.
   *
   * @throws IOException if the address cannot be bound
   */
  static DemoConsole start(CheckoutApp app, DemoOptions options, InetAddress bind, int port,
      boolean allowActions, Duration samplePeriod) throws IOException {
    List<AutoCloseable> owned = new ArrayList<>();
    int capacity = (int) Math.min(100_000, Math.max(2,
        Duration.ofHours(1).toMillis() / samplePeriod.toMillis()));
    Console.Builder b = Console.builder()
        .history(capacity, samplePeriod)
        .backlog(now -> app.storage.outboxStore().stats(now))
        .backlogMonitor(CheckoutApp.Tuning.DEFAULTS.backlog())
        .deadLetters(new ConsoleDeadLetterSource(STORE, app.storage.deadLetterStore(),
            app::replay, true, "the demo's database; a replay goes back into the outbox"))
        .readOnly(!allowActions)
        .readOnlyHint("start it with --allow-actions");
    try {
      for (SubscriptionStatusSource s : subscriptionSources(options, owned)) {
        b.subscriptions(s);
      }
      Console console = b.build();
      ConsoleServer server = ConsoleServer.builder(console).bind(bind).port(port).start();
      return new DemoConsole(server, console.history(), owned);
    } catch (IOException | RuntimeException e) {
      closeAll(owned);
      throw e;
    }
  }

  private static List<SubscriptionStatusSource> subscriptionSources(DemoOptions options,
      List<AutoCloseable> owned) {
    Map<String, String> none = Map.of();
    switch (options.transport()) {
      case "kafka": {
        KafkaSubscriptionStatus s = KafkaSubscriptionStatus.builder(KafkaTransportConfig
            .builderFrom(CheckoutApp.relayKitConfig(options, none).settings()).build()).build();
        owned.add(s);
        return List.of(s);
      }
      case "rabbitmq": {
        RabbitMqQueueStatus.Builder q = RabbitMqQueueStatus.builder(RabbitMqTransportConfig
            .builderFrom(CheckoutApp.relayKitConfig(options, none).settings()).build());
        for (Orders.Effect effect : Orders.Effect.values()) {
          q.subscription(effect.destination(), effect.group());
        }
        RabbitMqQueueStatus s = q.build();
        owned.add(s);
        return List.of(s);
      }
      default:
        return List.of();
    }
  }

  /** {@return the URL to open, with the access token} */
  String url() {
    return server.url();
  }

  ConsoleServer server() {
    return server;
  }

  ConsoleHistory history() {
    return history;
  }

  @Override
  public void close() {
    server.close();
    closeAll(owned);
  }

  private static void closeAll(List<AutoCloseable> owned) {
    for (AutoCloseable c : owned) {
      try {
        c.close();
      } catch (Exception e) {
        // closing anyway
      }
    }
  }
}
