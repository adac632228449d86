package io.relaykit.transport.rabbitmq;

import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ShutdownSignalException;
import io.relaykit.message.MessageHandler;
import io.relaykit.message.Subscriber;
import io.relaykit.message.Subscription;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.monitor.MetricsListener;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.InstantSource;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A {@link Subscriber} on RabbitMQ quorum queues with manual acknowledgements: a message is acked
 * only after its handler returned, or after it was durably (publisher-confirmed) moved to a delay
 * queue for a retry or to the group's dead-letter queue. Nothing is acked before that, so a crash
 * at any point redelivers the message.
 *
 * <p>Each {@link #subscribe} declares the destination's topology for the spec's group (see {@link
 * RabbitMqTopology}) and starts one consumer with prefetch {@code maxInFlight} (or the configured
 * prefetch). Members of one group compete for messages; each group sees every message.
 *
 * <p><b>Retries.</b> A retryable failure goes to the delay queue of the smallest delay level not
 * shorter than the policy's backoff; the broker dead-letters it back to the group's queue when the
 * level's TTL expires, so a short delay never waits behind a long one and the main queue never
 * blocks. The attempt count and failure times travel in relaykit headers, never in broker delivery
 * counts. Permanent failures, exhausted attempts, and messages that cannot be decoded go to the
 * dead-letter queue with the reason, exception, attempts and times in headers.
 *
 * <p><b>Ordering.</b> Handlers run on a {@link io.relaykit.ordering.KeyedExecutor} of {@code
 * concurrency} threads. {@code KEY}: one message per key at a time in arrival order, keys in
 * parallel (keyless messages run beside anything); {@code PARTITION}: one message at a time per
 * queue; {@code UNORDERED}: {@code concurrency} at once. Order holds
 * within one subscriber and only until a retry: a retried message comes back after later ones, and
 * competing consumers of one group each see part of a key's messages.
 *
 * <p><b>Connection loss.</b> amqp-client reconnects and restores each subscription's channel,
 * prefetch and consumer (never the queues: relaykit declares them, durable, itself). The broker
 * redelivers every delivery that was unacked at the loss; relaykit drops those of them that had
 * not started (still queued for a worker), so only the redelivery runs, and discards the result
 * of one whose handler was running (no ack, ACKED event, retry or dead-letter copy: its
 * redelivery runs it again, at-least-once). A consumer channel that a recovery could not restore,
 * or that the broker closed alone, is reopened every recovery interval while the connection is
 * up. A full worker queue leaves deliveries waiting, unacked, under the prefetch: nothing is
 * requeued in a loop, and broker delivery counts never stand in for relaykit's attempts.
 *
 * <p>Costs one connection (consumers, recovered automatically after a connection loss) and one publisher connection for retries and dead
 * letters, a handler-timeout thread and a metrics sampling thread (plus, per sampled
 * subscription, one channel and one passive queue declare per {@code metricsInterval}).
 * Thread-safe.
 */
public final class RabbitMqSubscriber implements Subscriber {

  private static final System.Logger LOG = System.getLogger(RabbitMqSubscriber.class.getName());

  private final RabbitMqTransportConfig config;
  private final RabbitMqTopology topology;
  private final LifecycleListener listener;
  private final MetricsListener metrics;
  private final InstantSource clock;
  private final Connection connection;
  private final RabbitMqPublisher mover;
  private final ScheduledExecutorService timeouts;
  /**
   * Samples every subscription's lag and in-flight count: apart from {@link #timeouts}, so a
   * broker slow to answer a passive declare delays samples, never a handler timeout.
   */
  private final ScheduledExecutorService sampler;
  private final List<RabbitMqSubscription> subscriptions = new CopyOnWriteArrayList<>();
  private volatile boolean closed;
  /** Channels and consumers the client's automatic recovery could not restore. */
  private final AtomicLong recoveryFailures;

  private RabbitMqSubscriber(RabbitMqTransportConfig config, LifecycleListener listener,
      MetricsListener metrics, InstantSource clock, Connection connection,
      RabbitMqPublisher mover, AtomicLong recoveryFailures) {
    this.recoveryFailures = recoveryFailures;
    this.config = config;
    this.topology = RabbitMqTopology.of(config);
    this.listener = listener;
    this.metrics = metrics;
    this.clock = clock;
    this.connection = connection;
    this.mover = mover;
    this.timeouts = Executors.newSingleThreadScheduledExecutor(
        RabbitMqPublisher.daemon("relaykit-rabbitmq-handler-timeouts"));
    this.sampler = Executors.newSingleThreadScheduledExecutor(
        RabbitMqPublisher.daemon("relaykit-rabbitmq-metrics"));
  }

  /**
   * Connects to the broker in {@code config}.
   *
   * @param config the broker and topology settings
   * @return the connected subscriber
   * @throws UncheckedIOException naming the broker and how to start it, if it is unreachable
   */
  public static RabbitMqSubscriber create(RabbitMqTransportConfig config) {
    return create(config, LifecycleListener.noop(), InstantSource.system());
  }

  /**
   * Like {@link #create(RabbitMqTransportConfig)}, reporting DELIVERED, ACKED, RETRIED,
   * DEAD_LETTERED and EXPIRED events and reading failure times and expiry from {@code clock}.
   * Events name the subscription's destination as {@link
   * io.relaykit.monitor.LifecycleEvent#where()}, never its group, delay or dead-letter queue
   * (those are in the detail, {@code "group=g queue=d.g: ..."}); the moves to delay and
   * dead-letter queues report no PUBLISHED or CONFIRMED events of their own.
   *
   * @param config the broker and topology settings
   * @param listener receives the lifecycle events
   * @param clock the clock of failure times and expiry
   * @return the connected subscriber
   * @throws IllegalArgumentException if an argument is null
   * @throws UncheckedIOException naming the broker and how to start it, if it is unreachable
   */
  public static RabbitMqSubscriber create(RabbitMqTransportConfig config,
      LifecycleListener listener, InstantSource clock) {
    return create(config, listener, MetricsListener.noop(), clock);
  }

  /**
   * Like {@link #create(RabbitMqTransportConfig, LifecycleListener, InstantSource)}, with {@code
   * metrics} as the subscriptions' listener for their handler durations, timeouts and ignored
   * parts ({@link MetricsListener#handlerDuration}, {@link MetricsListener#handlerTimedOut},
   * {@link MetricsListener#ignored}) and, every {@link RabbitMqTransportConfig#metricsInterval()},
   * their consumer lag (the group queue's ready messages, one passive queue declare per sample)
   * and in-flight deliveries ({@link MetricsListener#consumerLag}, {@link
   * MetricsListener#inFlight}), unless a subscription's spec names its own ({@link
   * SubscriptionSpec#metrics()}), which replaces it. With {@link MetricsListener#noop()} nothing is
   * sampled.
   *
   * @param config the broker and topology settings
   * @param listener receives the lifecycle events
   * @param metrics receives the subscriptions' numbers; called on delivery, timeout and sampling
   *     threads through {@link MetricsListener#safely}, so what it throws never fails a delivery
   * @param clock the clock of failure times and expiry
   * @return the connected subscriber
   * @throws IllegalArgumentException if an argument is null
   * @throws UncheckedIOException naming the broker and how to start it, if it is unreachable
   */
  public static RabbitMqSubscriber create(RabbitMqTransportConfig config,
      LifecycleListener listener, MetricsListener metrics, InstantSource clock) {
    RabbitMqClientVersion.check();
    if (metrics == null) {
      throw new IllegalArgumentException("metrics must not be null");
    }
    if (config == null) {
      throw new IllegalArgumentException("config must not be null");
    }
    if (listener == null) {
      throw new IllegalArgumentException("listener must not be null");
    }
    if (clock == null) {
      throw new IllegalArgumentException("clock must not be null");
    }
    // The mover reports nothing: its copies are the RETRIED and DEAD_LETTERED steps the
    // subscription reports under the destination, not publishes of new messages.
    RabbitMqPublisher mover = RabbitMqPublisher.create(config, LifecycleListener.noop(), clock,
        "subscriber-mover");
    Connection connection;
    AtomicLong recoveryFailures = new AtomicLong();
    try {
      connection = Connections.openRecovering(config, "subscriber", recoveryFailures);
    } catch (IOException e) {
      mover.close();
      throw new UncheckedIOException(e.getMessage(), e);
    }
    return new RabbitMqSubscriber(config, listener, metrics, clock, connection, mover,
        recoveryFailures);
  }

  /**
   * Declares the topology of {@code spec.destination()} for {@code spec.group()} and starts
   * consuming the group's queue.
   *
   * @throws IllegalArgumentException if the destination or group is not a valid name
   * @throws TopologyConflictException if a queue exists with other arguments
   * @throws UncheckedIOException if the broker could not be reached
   * @throws IllegalStateException if this subscriber is closed
   */
  /**
   * The OpenTelemetry messaging system name.
   *
   * @return {@code "rabbitmq"}
   */
  @Override
  public String messagingSystem() {
    return "rabbitmq";
  }

  @Override
  public Subscription subscribe(SubscriptionSpec spec, MessageHandler handler) {
    if (spec == null) {
      throw new IllegalArgumentException("spec must not be null");
    }
    if (handler == null) {
      throw new IllegalArgumentException("handler must not be null");
    }
    if (closed) {
      throw new IllegalStateException("subscriber is closed");
    }
    RabbitMqTopology.GroupQueues queues;
    try {
      queues = topology.declare(connection, spec.destination(), spec.group());
    } catch (IOException e) {
      throw new UncheckedIOException("could not declare the queues of " + spec.destination()
          + " for group " + spec.group() + ": " + e.getMessage(), e);
    }
    RabbitMqSubscription s = new RabbitMqSubscription(spec, handler, queues, topology, mover,
        timeouts, listener, spec.metricsOr(metrics), clock,
        config.prefetch() > 0 ? config.prefetch() : spec.maxInFlight(),
        config.recoveryInterval(), sampler, config.metricsInterval());
    try {
      s.start(connection);
    } catch (IOException | ShutdownSignalException e) {
      s.close(java.time.Duration.ZERO);
      throw new UncheckedIOException("could not start consuming " + queues.queue() + ": "
          + e.getMessage(), e instanceof IOException ? (IOException) e : new IOException(e));
    }
    subscriptions.add(s);
    s.onClosed(() -> subscriptions.remove(s));
    return s;
  }

  /** The publisher that moves failed messages to delay and dead-letter queues; for tests. */
  RabbitMqPublisher mover() {
    return mover;
  }

  /** Closes every subscription (each with the configured close timeout), then the connections. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    for (RabbitMqSubscription s : subscriptions) {
      s.close(config.closeTimeout());
    }
    mover.close();
    timeouts.shutdownNow();
    sampler.shutdownNow();
    try {
      if (connection.isOpen()) {
        // Waits this long for close-ok, then closes the socket: bounded on a stalled broker.
        connection.close((int) Math.max(1, Math.min(5_000, config.closeTimeout().toMillis())));
      }
    } catch (IOException | ShutdownSignalException e) {
      LOG.log(System.Logger.Level.DEBUG, "closing the subscriber connection failed", e);
    }
  }

  /**
   * Channels and consumers that automatic recovery could not restore since the start (each is
   * logged at WARNING); for tests and diagnostics.
   */
  long recoveryFailures() {
    return recoveryFailures.get();
  }

  /** The broker-side name of the consuming connection. */
  String connectionName() {
    return config.connectionName() + "-subscriber";
  }
}
