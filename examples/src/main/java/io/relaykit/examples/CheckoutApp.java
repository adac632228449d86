package io.relaykit.examples;

import io.relaykit.console.ConsoleHistory;
import com.fasterxml.jackson.databind.JsonNode;
import com.google.inject.Guice;
import com.google.inject.Injector;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.relaykit.config.Settings;
import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterQuery;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.examples.kafka.KafkaPing;
import io.relaykit.examples.kafka.LocalKafkaBroker;
import io.relaykit.idempotency.Claim;
import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.idempotency.IdempotencyUnavailableException;
import io.relaykit.idempotency.TieredIdempotencyStore;
import io.relaykit.guice.RelayKitConfig;
import io.relaykit.guice.RelayKitModule;
import io.relaykit.message.Delivery;
import io.relaykit.message.Publisher;
import io.relaykit.message.Subscriber;
import io.relaykit.message.MalformedMessageException;
import io.relaykit.message.Subscription;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.message.Tracing;
import io.relaykit.metrics.micrometer.RelayKitMeterBinder;
import io.relaykit.monitor.BacklogMonitor;
import io.relaykit.monitor.BacklogSnapshot;
import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.monitor.LifecycleLog;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.ordering.OrderingMode;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.outbox.OutboxStats;
import io.relaykit.outbox.OutboxStore;
import io.relaykit.retry.Backoff;
import io.relaykit.retry.Jitter;
import io.relaykit.retry.PermanentFailureException;
import io.relaykit.retry.RetryPolicy;
import io.relaykit.storage.jdbc.JdbcStorageConfig;
import io.relaykit.storage.jdbc.JdbcOutboxStore;
import io.relaykit.storage.jdbc.JdbcStorage;
import io.relaykit.storage.redis.RedisStorage;
import io.relaykit.storage.redis.RedisStorageConfig;
import io.relaykit.transport.kafka.KafkaConfigKeys;
import io.relaykit.transport.rabbitmq.RabbitMqConfigKeys;
import io.relaykit.transport.rabbitmq.RabbitMqTransportConfig;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;

/**
 * The checkout pipeline, wired: an order and its outbox messages commit together; a relay publishes
 * them; two idempotent consumers (SMS, coupon) do the effects exactly once, retrying transient
 * failures and dead-lettering permanent ones; the order's status follows the real pipeline.
 *
 * <p>Modules are chosen by configuration through queue-guice: {@link RelayKitModule} supplies the
 * clock, the retry policy and the transport ({@code relaykit.transport}: the in-process one, or
 * RabbitMQ through transport-rabbitmq's backend provider); the storage is the JDBC storage of
 * storage-h2 on H2 or PostgreSQL, with {@code --storage redis} a Redis fast tier in front of its
 * idempotency store.
 *
 * <p>With {@code --transport kafka} and no broker configured ({@code
 * RELAYKIT_KAFKA_BOOTSTRAP_SERVERS} unset), it runs a {@link LocalKafkaBroker} under the data
 * directory ({@code DIR/kafka}) and stops it last on close. A configured service that does not
 * answer fails the start with a {@link DemoStartupException}: one line naming it.
 */
final class CheckoutApp implements AutoCloseable {
  static final String KAFKA_BOOTSTRAP = KafkaConfigKeys.BOOTSTRAP_SERVERS;
  static final String KAFKA_BOOTSTRAP_ENV = Settings.environmentName(KAFKA_BOOTSTRAP);
  static final String RABBITMQ_URI = RabbitMqConfigKeys.URI;

  private static final System.Logger LOG = System.getLogger(CheckoutApp.class.getName());

  final DemoOptions options;
  /** The database this app reads and writes, and where that choice came from. */
  final DemoStore store;
  final JdbcStorage storage;
  final Orders orders;
  final LifecycleLog lifecycle = new LifecycleLog(10_000);
  final BacklogMonitor backlog;
  private final Map<LifecycleEvent.Stage, AtomicLong> counts =
      new EnumMap<>(LifecycleEvent.Stage.class);
  /** Deliveries of an effect that was already done, absorbed by the idempotency guard. */
  private final AtomicLong deduplicated = new AtomicLong();
  private final InstantSource clock;
  private final Publisher publisher;
  private final Subscriber subscriber;
  private final OutboxRelay relay;
  private final List<Subscription> subscriptions = new ArrayList<>();
  private final RetryPolicy retry;
  /** {@code --storage redis}: Redis in front of the JDBC idempotency store; null otherwise. */
  private final RedisStorage redis;
  /** The delivery guard ({@code --storage redis}: the tiered store); null otherwise. */
  final IdempotencyStore deliveries;
  /** The broker this app started ({@code --transport kafka}, none configured); null otherwise. */
  final LocalKafkaBroker localKafka;
  /** Spans of POST /orders, the outbox, the relay and the consumers ({@link DemoTracing}). */
  final DemoTracing tracing;
  /** The relaykit meters ({@link #meters}) in Prometheus's format, for GET /metrics/prometheus. */
  final PrometheusMeterRegistry prometheus = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  /**
   * Fed as a lifecycle and metrics listener by the outbox, relay, transport and consumers; its
   * meters carry the transport's {@code messaging.system} ({@link #messagingSystem}).
   */
  final RelayKitMeterBinder meters;
  /** The status page's samples; sampled every {@link #samplePeriod} while the pipeline runs. */
  final ConsoleHistory history;
  final Duration samplePeriod;
  /** Runs {@link ConsoleHistory#tick()}; null without a relay. */
  private final ScheduledExecutorService sampler;

  /**
   * What tests tune: how often the status history samples, the backlog monitor's thresholds, and
   * a wrapper around the relay's outbox (to hold the relay back, say).
   *
   * @param samplePeriod 10 ms to 1 min
   * @param backlog the backlog monitor's thresholds
   * @param relayOutbox wraps the outbox store the relay claims from
   */
  record Tuning(Duration samplePeriod, BacklogMonitor.Config backlog,
      UnaryOperator<OutboxStore> relayOutbox) {
    /** The demo's: a sample a second, the monitor's defaults, the outbox as it is. */
    static final Tuning DEFAULTS = new Tuning(Duration.ofSeconds(1),
        BacklogMonitor.Config.defaults(), UnaryOperator.identity());

    /**
     * @throws IllegalArgumentException if {@code samplePeriod} is under 10 ms or over a minute
     * @throws NullPointerException if a component is null
     */
    Tuning {
      if (samplePeriod.compareTo(Duration.ofMillis(10)) < 0
          || samplePeriod.compareTo(Duration.ofMinutes(1)) > 0) {
        throw new IllegalArgumentException("samplePeriod must be 10 ms to 1 min, was "
            + samplePeriod);
      }
      java.util.Objects.requireNonNull(backlog, "backlog");
      java.util.Objects.requireNonNull(relayOutbox, "relayOutbox");
    }
  }

  private CheckoutApp(DemoOptions options, DemoStore store, Map<String, String> settings,
      boolean consume, LocalKafkaBroker localKafka, DemoTracing tracing, Tuning tuning)
      throws IOException, SQLException {
    this.options = options;
    this.store = store;
    this.samplePeriod = tuning.samplePeriod();
    this.localKafka = localKafka;
    this.tracing = tracing;
    for (LifecycleEvent.Stage stage : LifecycleEvent.Stage.values()) {
      counts.put(stage, new AtomicLong());
    }
    // Made before the transport, which reports to it; checked against it once it exists.
    this.meters = RelayKitMeterBinder.builder()
        .messagingSystem(messagingSystem(options.transport())).build();
    meters.bindTo(prometheus);
    LifecycleListener count = event -> counts.get(event.stage()).incrementAndGet();
    LifecycleListener listener = LifecycleListener.composite(List.of(lifecycle, count, meters));
    // The transport's publisher reports PUBLISHED and CONFIRMED to the meters already.
    LifecycleListener relayListener = LifecycleListener.composite(List.of(lifecycle, count,
        meters.relayListener()));
    // The demo had no metrics listener of its own (GET /metrics reads the stores): the binder is
    // the only one. A second one joins through MetricsListener.composite.
    MetricsListener metrics = meters;

    // The storage is the JDBC storage (H2 file or PostgreSQL); everything else comes from
    // queue-guice, chosen by configuration: relaykit.transport picks the transport, and the
    // JDBC stores replace the in-memory defaults so dead letters and dedupe rows are durable.
    this.clock = InstantSource.system();
    this.storage = JdbcStorage.open(storageConfig(options, store, listener), clock);
    // Appends capture the caller's span (the SERVER span of POST /orders) into the message.
    JdbcOutboxStore outbox = storage.outboxStore().withTracePropagation(tracing.propagation());
    RelayKitConfig config = relayKitConfig(options, settings);
    Injector injector = Guice.createInjector(new RelayKitModule(config), binder -> {
      RelayKitModule.override(binder, InstantSource.class).toInstance(clock);
      RelayKitModule.override(binder, LifecycleListener.class).toInstance(listener);
      // The transport (in-process, RabbitMQ or Kafka) reports its consumers' numbers here.
      RelayKitModule.override(binder, MetricsListener.class).toInstance(metrics);
      RelayKitModule.override(binder, DeadLetterStore.class)
          .toInstance(storage.deadLetterStore());
      RelayKitModule.override(binder, OutboxStore.class).toInstance(outbox);
      RelayKitModule.override(binder, IdempotencyStore.class)
          .toInstance(storage.idempotencyStore());
    });
    this.retry = injector.getInstance(RetryPolicy.class);
    this.orders = new Orders(storage.dataSource(), outbox,
        storage.idempotencyStore(), storage.deadLetterStore(), clock);
    orders.createTables();
    this.backlog = new BacklogMonitor(tuning.backlog(), clock);
    // Ten minutes at the demo's one sample a second.
    this.history = ConsoleHistory.builder().capacity(600).clock(clock)
        .backlog(now -> storage.outboxStore().stats(now), backlog)
        .deadLetterTotal(() -> counts.get(LifecycleEvent.Stage.DEAD_LETTERED).get()).build();

    if (!consume) {
      // The operator CLI: it reads the store and records nothing.
      this.redis = null;
      this.deliveries = null;
      this.publisher = null;
      this.subscriber = null;
      this.relay = null;
      this.sampler = null;
      return;
    }
    if (options.storage().equals("redis")) {
      this.redis = RedisStorage.open(RedisStorageConfig.builder()
          .uri(redisUri())
          .keyPrefix(redisKeyPrefix(options))
          .commandTimeout(Duration.ofMillis(250))
          .build(), clock);
      // Connect now (Redis connects lazily): the first consumers would otherwise find it
      // "still connecting" and send the tier into its durable-only back-off. A Redis that is
      // still down after REDIS_STARTUP fails the start here, naming its address.
      checkRedis(redis, REDIS_STARTUP);
      this.deliveries = TieredIdempotencyStore.of(redis.idempotencyStore(),
          storage.idempotencyStore());
    } else {
      this.redis = null;
      this.deliveries = null;
    }
    this.publisher = injector.getInstance(Publisher.class);
    if (!publisher.messagingSystem().equals(meters.messagingSystem())) {
      throw new IllegalStateException("the meters' messaging.system is "
          + meters.messagingSystem() + " but the transport names itself "
          + publisher.messagingSystem());
    }
    // A CONSUMER span per delivery, child of the relay's PRODUCER span.
    this.subscriber = Tracing.subscriber(injector.getInstance(Subscriber.class),
        tracing.propagation());
    // The in-process transport loses what it held when the JVM dies, so after a restart the
    // messages the relay had already handed over are put back into the outbox. A broker keeps
    // them durably (and redelivers unacked ones), so there is nothing to redrive.
    if (isMemory(options)) {
      int redriven = orders.redriveUnfinished();
      if (redriven > 0) {
        LOG.log(System.Logger.Level.INFO, "redrove " + redriven
            + " unfinished messages after a restart (consumers deduplicate)");
      }
    }
    if (options.transport().equals("kafka")) {
      createKafkaTopics(config);
    }
    for (Orders.Effect effect : Orders.Effect.values()) {
      subscriptions.add(subscriber.subscribe(
          SubscriptionSpec.builder(effect.destination(), effect.group())
              .ordering(OrderingMode.KEY)
              .concurrency(4)
              .maxInFlight(64)
              .retryPolicy(retry)
              .handlerTimeout(Duration.ofSeconds(10))
              .build(),
          delivery -> consumeRecordingDeath(effect, delivery)));
    }
    this.relay = OutboxRelay.builder(tuning.relayOutbox().apply(outbox), publisher,
            storage.deadLetterStore())
        .tracePropagation(tracing.propagation())
        .clock(clock)
        .listener(relayListener)
        .metrics(metrics)
        // One outbox count a second: the backlog gauges and the verdict stay current; with it,
        // off the relay's thread, one count of the dead letters (relaykit_dead_letters).
        .metricsInterval(Duration.ofSeconds(1))
        .retryPolicy(RetryPolicy.builder().maxAttempts(10)
            .backoff(Backoff.exponential(Duration.ofMillis(100)).withMax(Duration.ofSeconds(5))
                .withJitter(Jitter.FULL)).build())
        .lease(options.lease())
        .batchSize(200)
        .pollInterval(Duration.ofMillis(20))
        // Shorter than the lease, so a row is never taken over while its confirm is awaited.
        .confirmTimeout(options.lease().dividedBy(2))
        .build();
    relay.start();
    this.sampler = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "demo-status-history");
      t.setDaemon(true);
      return t;
    });
    sampler.scheduleAtFixedRate(history::tick, 0, samplePeriod.toMillis(),
        TimeUnit.MILLISECONDS);
    LOG.log(System.Logger.Level.DEBUG, () -> "outbox relay and " + subscriptions.size()
        + " consumers started (storage " + options.storage() + ", transport "
        + options.transport() + ")");
  }

  /** The full pipeline: HTTP-facing stores, relay and consumers. */
  static CheckoutApp start(DemoOptions options) throws IOException, SQLException {
    return start(options, Map.of());
  }

  /**
   * The full pipeline, with extra {@code relaykit.*} settings over the demo's (for tests).
   *
   * @throws DemoStartupException if a configured service does not answer, or the local Kafka
   *     broker does not start
   */
  static CheckoutApp start(DemoOptions options, Map<String, String> settings)
      throws IOException, SQLException {
    return start(options, settings, DemoTracing.fromEnvironment());
  }

  /** The full pipeline, tracing through {@code tracing} (closed with the app). */
  static CheckoutApp start(DemoOptions options, Map<String, String> settings,
      DemoTracing tracing) throws IOException, SQLException {
    return start(options, settings, tracing, Tuning.DEFAULTS);
  }

  /** The full pipeline, tuned (tests: a short sample period, a relay held back). */
  static CheckoutApp start(DemoOptions options, Map<String, String> settings,
      DemoTracing tracing, Tuning tuning) throws IOException, SQLException {
    checkServices(options, settings, true);
    LocalKafkaBroker local = null;
    Map<String, String> effective = settings;
    if (options.transport().equals("kafka") && kafkaBootstrap(settings) == null) {
      local = startLocalKafka(options.dataDir().resolve("kafka"));
      effective = new HashMap<>(settings);
      effective.put(KAFKA_BOOTSTRAP, local.bootstrap());
    }
    try {
      CheckoutApp app = new CheckoutApp(options, DemoStore.of(options), effective, true, local,
          tracing, tuning);
      try {
        // The operator CLI (./relaykit stats, dlq) reads this to open the same database.
        app.store.record(options.dataDir());
      } catch (RuntimeException e) {
        local = null; // closed by app.close()
        app.close();
        throw e;
      }
      return app;
    } catch (IOException | SQLException | RuntimeException | Error e) {
      if (local != null) {
        local.close();
      }
      throw e;
    }
  }

  /** Storage only, the store {@code options} name: no relay, no consumers. */
  static CheckoutApp storageOnly(DemoOptions options) throws IOException, SQLException {
    return storageOnly(options, DemoStore.of(options));
  }

  /** Storage only, for the operator CLI: {@code store}'s database, no relay, no consumers. */
  static CheckoutApp storageOnly(DemoOptions options, DemoStore store)
      throws IOException, SQLException {
    if (store.storage().equals("postgres")) {
      ServiceCheck.postgres(store.url(), "--url");
    }
    return new CheckoutApp(options, store, Map.of(), false, null, DemoTracing.off(),
        Tuning.DEFAULTS);
  }

  /**
   * The OpenTelemetry {@code messaging.system} of a {@code relaykit.transport} value, as the
   * transport's {@code Publisher.messagingSystem()} names itself (checked once it exists).
   *
   * @param transport {@code memory}, {@code kafka} or {@code rabbitmq}
   * @return {@code relaykit-inprocess}, {@code kafka} or {@code rabbitmq}
   * @throws IllegalArgumentException for another transport
   */
  static String messagingSystem(String transport) {
    return switch (transport) {
      case RelayKitConfig.MEMORY -> "relaykit-inprocess";
      case "kafka", "rabbitmq" -> transport;
      default -> throw new IllegalArgumentException("relaykit.transport=" + transport
          + " is not one the demo wires (memory, kafka, rabbitmq)");
    };
  }

  /**
   * The configured Kafka bootstrap servers: the {@code relaykit.kafka.bootstrap-servers} setting,
   * else {@code RELAYKIT_KAFKA_BOOTSTRAP_SERVERS}; null when neither is set (the demo then runs a
   * local broker).
   */
  static String kafkaBootstrap(Map<String, String> settings) {
    String configured = settings.get(KAFKA_BOOTSTRAP);
    if (configured == null) {
      configured = System.getenv(KAFKA_BOOTSTRAP_ENV);
    }
    return configured == null || configured.isBlank() ? null : configured.trim();
  }

  /**
   * Checks, before any client library is wired, that the services this configuration uses accept
   * connections; a missing one fails in one line with its address and how to start it.
   */
  static void checkServices(DemoOptions options, Map<String, String> settings, boolean consume) {
    if (options.storage().equals("postgres")) {
      ServiceCheck.postgres(postgresUrl(), "RELAYKIT_POSTGRES_URL");
    }
    if (!consume) {
      return;
    }
    if (options.storage().equals("redis")) {
      ServiceCheck.redis(redisUri(), "RELAYKIT_REDIS_URI");
    }
    if (options.transport().equals("rabbitmq")) {
      String uri = settings.get(RABBITMQ_URI);
      String variable = RABBITMQ_URI;
      if (uri == null) {
        variable = Settings.environmentName(RABBITMQ_URI);
        uri = System.getenv().getOrDefault(variable, RabbitMqTransportConfig.DEFAULT_URI);
      }
      ServiceCheck.rabbitmq(uri, variable);
    }
    String bootstrap = kafkaBootstrap(settings);
    if (options.transport().equals("kafka") && bootstrap != null) {
      String variable = settings.containsKey(KAFKA_BOOTSTRAP) ? KAFKA_BOOTSTRAP
          : KAFKA_BOOTSTRAP_ENV;
      List<InetSocketAddress> brokers;
      try {
        brokers = KafkaPing.parseBootstrap(bootstrap);
      } catch (IllegalArgumentException e) {
        throw new DemoStartupException(e.getMessage() + " (" + variable + "=" + bootstrap + ")");
      }
      if (brokers.stream().noneMatch(a -> ServiceCheck.listening(a.getHostString(),
          a.getPort()))) {
        throw new DemoStartupException("no Kafka broker answers at " + bootstrap + " (" + variable
            + "); start one there, or unset " + variable
            + " and the demo runs a local broker itself");
      }
    }
  }

  /**
   * Starts the demo's own broker on {@code dir}: port 9092 when free, else any free port. Says so
   * in one line on standard output.
   */
  private static LocalKafkaBroker startLocalKafka(Path dir) {
    int port = ServiceCheck.listening("127.0.0.1", 9092) ? LocalKafkaBroker.freePort() : 9092;
    System.out.println("relaykit demo: " + KAFKA_BOOTSTRAP_ENV + " is not set, so the demo runs"
        + " its own Kafka broker (Kafka " + org.apache.kafka.common.utils.AppInfoParser.getVersion()
        + ", KRaft) on 127.0.0.1:" + port + ", data and log in " + dir.toAbsolutePath()
        + "; it stops with the demo");
    System.out.flush();
    try {
      return LocalKafkaBroker.start(dir, port, 0);
    } catch (IllegalStateException | java.io.UncheckedIOException e) {
      // The message's first line is the summary (with the log's path), the rest the log's end.
      List<String> lines = String.valueOf(e.getMessage()).lines()
          .filter(l -> !l.isBlank()).toList();
      String last = lines.size() > 1 ? "; it logged last: " + lines.get(lines.size() - 1).strip()
          : "";
      throw new DemoStartupException("the demo's own Kafka broker did not start: "
          + (lines.isEmpty() ? e.toString() : lines.get(0)) + last);
    }
  }

  static String postgresUrl() {
    return System.getenv().getOrDefault("RELAYKIT_POSTGRES_URL",
        "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres");
  }

  static String redisUri() {
    return System.getenv().getOrDefault("RELAYKIT_REDIS_URI", "redis://127.0.0.1:6379");
  }

  /** How long a start waits for Redis to answer its first command. */
  static final Duration REDIS_STARTUP = Duration.ofSeconds(10);

  /**
   * Asks Redis one command until it answers, for at most {@code within}: the demo's 250 ms
   * command timeout can be missed once on a loaded machine, and a start should not fail for it.
   * After {@code within} the last failure is thrown (it names Redis's address).
   */
  static void checkRedis(RedisStorage redis, Duration within) {
    long end = System.nanoTime() + within.toNanos();
    while (true) {
      try {
        redis.idempotencyStore().status("startup-check");
        return;
      } catch (IdempotencyUnavailableException e) {
        if (System.nanoTime() - end >= 0) {
          throw e;
        }
        LOG.log(System.Logger.Level.DEBUG, "Redis did not answer yet: " + e.getMessage());
        java.util.concurrent.locks.LockSupport.parkNanos(Duration.ofMillis(100).toNanos());
      }
    }
  }

  /** Where the demo's Redis keys live: {@code relaykit-demo:} plus the namespace, if any. */
  static String redisKeyPrefix(DemoOptions options) {
    return options.namespace().isEmpty() ? "relaykit-demo:"
        : "relaykit-demo:" + options.namespace() + ":";
  }

  private static boolean isMemory(DemoOptions options) {
    return options.transport().equals(RelayKitConfig.MEMORY);
  }

  /**
   * The queue-guice configuration that chooses the modules: {@code relaykit.transport} picks the
   * transport; a broker's names carry the demo's namespace, and its retry delays are short so the
   * demo's retries stay quick.
   */
  static RelayKitConfig relayKitConfig(DemoOptions options, Map<String, String> settings) {
    RelayKitConfig.Builder b = RelayKitConfig.builder()
        .transport(options.transport())
        .retryMaxAttempts(6)
        .retryInitialBackoff(Duration.ofMillis(50))
        .retryMaxBackoff(Duration.ofSeconds(1));
    if (options.transport().equals("rabbitmq")) {
      // The URI comes from RELAYKIT_RABBITMQ_URI (the module's default) unless set here.
      b.set(RabbitMqConfigKeys.CONNECTION_NAME, "relaykit-demo")
          .set(RabbitMqConfigKeys.DELAY_LEVELS, "100ms,1s");
      if (!options.namespace().isEmpty()) {
        b.set(RabbitMqConfigKeys.NAME_PREFIX, options.namespace() + ".");
      }
    }
    if (options.transport().equals("kafka")) {
      String bootstrap = kafkaBootstrap(settings);
      b.set(KAFKA_BOOTSTRAP, bootstrap == null ? "127.0.0.1:9092" : bootstrap)
          .set(KafkaConfigKeys.CLIENT_ID_PREFIX, "relaykit-demo");
    }
    settings.forEach(b::set);
    return b.build();
  }

  /**
   * Kafka's subscriber wants its destination topic to exist (it creates the retry and dead-letter
   * topics itself); the demo creates what is missing, with 4 partitions: the consumers' parallelism.
   */
  private static void createKafkaTopics(RelayKitConfig config) {
    try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG,
        config.require(KAFKA_BOOTSTRAP)))) {
      java.util.Set<String> existing = admin.listTopics().names().get(30, TimeUnit.SECONDS);
      List<NewTopic> missing = new ArrayList<>();
      for (Orders.Effect effect : Orders.Effect.values()) {
        if (!existing.contains(effect.destination())) {
          missing.add(new NewTopic(effect.destination(), Optional.of(4), Optional.empty()));
        }
      }
      if (!missing.isEmpty()) {
        admin.createTopics(missing).all().get(30, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while creating the demo's Kafka topics", e);
    } catch (ExecutionException | TimeoutException e) {
      Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
      throw new DemoStartupException("could not create the demo's Kafka topics at "
          + config.require(KAFKA_BOOTSTRAP) + " within 30 s: " + (cause.getMessage() == null
          ? cause.getClass().getSimpleName() : cause.getMessage()));
    }
  }

  /**
   * A broker dead-letters into its own queue, not into the database the order status reads; so
   * when this attempt is the last one, the dead letter is also recorded in the JDBC store (adding
   * is idempotent per message id) before the failure goes back to the transport. Replay then goes
   * through the outbox like any other dead letter. The in-process transport writes the JDBC store
   * itself.
   */
  private void consumeRecordingDeath(Orders.Effect effect, Delivery delivery) throws Exception {
    try {
      consume(effect, delivery);
    } catch (Exception e) {
      if (!isMemory(options)) {
        Instant now = clock.instant();
        Instant first = delivery.firstFailure().orElse(now);
        RetryPolicy.Decision decision = retry.decide(delivery.attempt(), first, now, e);
        if (!decision.retry()) {
          storage.deadLetterStore().add(DeadLetter.of(delivery.message(), delivery.source(),
              effect.group(), decision.reason(), e, delivery.attempt(), first, now));
        }
      }
      throw e;
    }
  }

  /** The storage of {@code store}; its outbox reports to {@code listener} (ENQUEUED, ...). */
  static JdbcStorageConfig storageConfig(DemoOptions options, DemoStore store,
      LifecycleListener listener) throws IOException {
    // --storage redis keeps orders, outbox and dead letters in the H2 file database too: Redis
    // only fronts the idempotency store.
    if (store.url().startsWith("jdbc:h2:file:")) {
      Files.createDirectories(options.dataDir());
    }
    return JdbcStorageConfig.builder().lease(options.lease()).listener(listener)
        .jdbcUrl(store.url()).build();
  }

  private void consume(Orders.Effect effect, Delivery delivery) throws Exception {
    String orderId = delivery.message().key()
        .orElseThrow(() -> new MalformedMessageException("order message without a key"));
    JsonNode body;
    try {
      body = Json.MAPPER.readTree(delivery.message().payloadUtf8());
    } catch (IOException e) {
      throw new MalformedMessageException("order message body is not JSON: " + e.getMessage(), e);
    }
    String sku = body.path("sku").asText(null);
    if (sku == null) {
      throw new MalformedMessageException("order message has no sku");
    }
    orders.markPickedUp(orderId);
    if (sku.equals(options.poisonSku())) {
      throw new PermanentFailureException("SKU " + sku + " is poison: the " + effect.id()
          + " service rejects it");
    }
    // An injected failure strikes before the effect (the service was down) or, half the time,
    // after it (the effect happened but the ack was lost), so redeliveries meet the dedupe guard.
    boolean fail = options.failRate() > 0
        && ThreadLocalRandom.current().nextDouble() < options.failRate();
    boolean afterEffect = fail && ThreadLocalRandom.current().nextBoolean();
    if (fail && !afterEffect) {
      throw new IllegalStateException("injected transient failure in " + effect.id());
    }
    performOnce(orderId, effect);
    if (afterEffect) {
      throw new IllegalStateException("injected transient failure in " + effect.id()
          + " after its effect, as if the ack were lost");
    }
  }

  /** Performs the effect unless it was done; a redelivery of a done effect is counted. */
  private void performOnce(String orderId, Orders.Effect effect) throws Exception {
    if (deliveries == null) {
      if (!orders.perform(orderId, effect)) {
        deduplicated.incrementAndGet();
      }
      return;
    }
    // Redis answers a redelivery of a finished effect without a database transaction. The claim
    // key differs from the effect's runOnce key on purpose: runOnce, in the effect's own
    // transaction, stays the final guard, and an IN_PROGRESS claim (another delivery running, or
    // one that crashed and left its lease) just goes on to that guard instead of waiting.
    Claim claim = deliveries.claim("delivered:" + effect.messageId(orderId), options.lease());
    if (claim.status() == Claim.Status.DONE) {
      deduplicated.incrementAndGet();
      return;
    }
    if (claim.status() != Claim.Status.CLAIMED) {
      if (!orders.perform(orderId, effect)) {
        deduplicated.incrementAndGet();
      }
      return;
    }
    try {
      if (!orders.perform(orderId, effect)) {
        deduplicated.incrementAndGet();
      }
    } catch (Exception e) {
      deliveries.release(claim);
      throw e;
    }
    deliveries.complete(claim);
  }

  /** Outbox backlog, oldest age, dead letters, drops and the backlog's verdict. */
  Map<String, Object> metrics() {
    OutboxStats stats = storage.outboxStore().stats(clock.instant());
    if (sampler == null) {
      // No sampler (the operator CLI): this read is the monitor's sample. With one, the sampler
      // alone feeds it, on its period, so the verdict does not depend on who polls /metrics.
      backlog.record(stats.unsent(), stats.oldestUnsentAge());
    }
    BacklogSnapshot snapshot = backlog.snapshot();
    Map<String, Object> m = new java.util.LinkedHashMap<>();
    m.put("outboxBacklog", stats.unsent());
    m.put("oldestPendingAgeMs", stats.oldestUnsentAge().toMillis());
    m.put("sentNotPurged", stats.sent());
    m.put("deadLetters", storage.deadLetterStore().count(DeadLetterQuery.all()));
    m.put("dropped", counts.get(LifecycleEvent.Stage.DROPPED).get());
    m.put("expired", counts.get(LifecycleEvent.Stage.EXPIRED).get());
    m.put("retried", counts.get(LifecycleEvent.Stage.RETRIED).get());
    m.put("acked", counts.get(LifecycleEvent.Stage.ACKED).get());
    m.put("deduplicated", deduplicated.get());
    m.put("verdict", snapshot.verdict().name());
    // Whole-table counts, for ./relaykit chaos's chart (one sample a second).
    try {
      m.put("orders", orders.count());
      m.put("ordersSucceeded", orders.succeededCount());
    } catch (SQLException e) {
      m.put("orders", -1L);
      m.put("ordersSucceeded", -1L);
    }
    return m;
  }

  /** A scrape of {@link #prometheus}: its content type and its text. */
  record Scrape(String contentType, String body) {}

  /** The content types of the registry's text writers (client_java's, a runtime dependency). */
  static final String PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8";
  static final String OPENMETRICS_TEXT =
      "application/openmetrics-text; version=1.0.0; charset=utf-8";

  /**
   * The meters in the Prometheus text format 0.0.4, or in OpenMetrics 1.0 when {@code accept} asks
   * for {@code application/openmetrics-text}. Reads every registered meter; the gauges read atomics
   * the listeners set, so a scrape takes none of relaykit's locks.
   */
  Scrape scrapePrometheus(String accept) {
    String type = accept != null && accept.contains("application/openmetrics-text")
        ? OPENMETRICS_TEXT : PROMETHEUS_TEXT;
    return new Scrape(type, prometheus.scrape(type));
  }

  /** The relay's own backlog judgement, the one it reports to {@link #meters}. */
  BacklogSnapshot relayBacklog() {
    return relay.backlog();
  }

  List<DeadLetter> deadLetters(int limit) {
    return storage.deadLetterStore().list(DeadLetterQuery.all().withPage(0, limit));
  }

  /** Moves a dead letter back into the outbox, atomically; replaying twice resends once. */
  Optional<DeadLetter> replay(String id) {
    return storage.deadLetterStore().replayToOutbox(id, storage.outboxStore());
  }

  long purgeDeadLetters() {
    return storage.deadLetterStore().purge(DeadLetterQuery.all());
  }

  /** Stops relay, consumers and clients, then the storage, and last the local broker if any. */
  @Override
  public void close() {
    try {
      if (sampler != null) {
        sampler.shutdownNow();
      }
      if (relay != null) {
        relay.close(Duration.ofSeconds(5));
      }
      for (Subscription s : subscriptions) {
        s.close(Duration.ofSeconds(5));
      }
      if (subscriber != null) {
        subscriber.close();
      }
      if (publisher != null) {
        publisher.close();
      }
      if (redis != null) {
        redis.close();
      }
      storage.close();
    } finally {
      if (localKafka != null) {
        localKafka.close();
      }
      tracing.close();
      prometheus.close();
    }
  }
}
