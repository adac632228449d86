package io.relaykit.transport.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.Recoverable;
import com.rabbitmq.client.RecoveryListener;
import com.rabbitmq.client.ShutdownSignalException;
import com.rabbitmq.client.impl.recovery.AutorecoveringChannel;
import com.rabbitmq.client.impl.recovery.AutorecoveringConnection;
import com.rabbitmq.client.impl.recovery.RecoveryAwareChannelN;
import io.relaykit.deadletter.DeadLetterLog;
import io.relaykit.deadletter.FailureRoute;
import io.relaykit.message.CloudEvents;
import io.relaykit.message.Delivery;
import io.relaykit.message.InboundMapping;
import io.relaykit.message.MalformedMessageException;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHandler;
import io.relaykit.message.MessageHeaders;
import io.relaykit.message.PublishReceipt;
import io.relaykit.message.Subscription;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.ordering.KeyedExecutor;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayDeque;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One consumer of one group queue: hands deliveries to worker lanes, runs the handler with a
 * timeout, and settles each delivery exactly once (ack, or confirmed move to a delay or
 * dead-letter queue then ack, or nack with requeue when that move failed).
 *
 * <p>Metrics: every {@code metricsInterval}, on the subscriber's sampling thread (never a
 * delivery thread), it reports {@link MetricsListener#inFlight} (deliveries received and not yet
 * settled: running, waiting for a worker lane, or waiting for their move's confirm; at most the
 * prefetch) and {@link MetricsListener#consumerLag} (the group queue's ready messages, from one
 * passive queue declare on a channel of its own). A failed declare is counted ({@link
 * #lagSampleFailures()}) and logged (WARNING at the first of a streak, DEBUG after), its channel
 * is reopened at the next sample, and the consumer is not touched. Not sampled for {@link
 * MetricsListener#noop()}.
 */
final class RabbitMqSubscription implements Subscription {

  private static final System.Logger LOG = System.getLogger(RabbitMqSubscription.class.getName());
  /** The least close(deadline) waits for the channel's close-ok after the drain. */
  private static final long CHANNEL_CLOSE_WAIT_MILLIS = 1_000;
  /**
   * Worker queue room for the no-op tasks of deliveries dropped with a lost channel while a slow
   * handler holds their key's lane (a few bytes each: their payload is released at the drop).
   */
  private static final int DROPPED_SLACK = 1024;

  private final SubscriptionSpec spec;
  private final MessageHandler handler;
  private final RabbitMqTopology.GroupQueues queues;
  private final RabbitMqTopology topology;
  private final RabbitMqPublisher mover;
  private final ScheduledExecutorService timeouts;
  private final LifecycleListener listener;
  /** The spec's listener, else the subscriber's. */
  private final MetricsListener metrics;
  private final InstantSource clock;
  private final int prefetch;
  private final Duration requeueDelay;
  private final ScheduledExecutorService sampler;
  private final Duration metricsInterval;
  private final KeyedExecutor workers;
  private final AtomicInteger inFlight = new AtomicInteger();
  private final AtomicLong received = new AtomicLong();
  private final AtomicLong staleDropped = new AtomicLong();
  private final AtomicLong channelReopens = new AtomicLong();
  /** Deliveries received and not started: swept when their channel is lost. */
  private final Set<Ctx> unstarted = ConcurrentHashMap.newKeySet();
  /** Deliveries waiting for room in {@link #workers}, in arrival order; guarded by itself. */
  private final ArrayDeque<Ctx> waiting = new ArrayDeque<>();
  private final Object drained = new Object();
  private final AtomicBoolean closing = new AtomicBoolean();
  private volatile boolean running;
  private volatile boolean finishedInTime;
  /** Set when close gave up waiting: late results must not ack what the broker will redeliver. */
  private volatile boolean abandoned;
  private Channel channel;
  private String consumerTag;
  private Connection connection;
  /** Sampling thread only: the channel of the passive declares; reopened after a failure. */
  private Channel sampleChannel;
  private volatile ScheduledFuture<?> sampling;
  /** Registered on the connection while open; removed by close (else closed ones pile up). */
  private RecoveryListener recoveryListener;
  /** Run once at the end of close: the subscriber forgets this subscription. */
  private volatile Runnable onClosed = () -> { };
  private final AtomicLong lagSampleFailures = new AtomicLong();
  /** Sampling thread only: failures since the last good sample, to log a streak once. */
  private long failureStreak;

  RabbitMqSubscription(SubscriptionSpec spec, MessageHandler handler,
      RabbitMqTopology.GroupQueues queues, RabbitMqTopology topology, RabbitMqPublisher mover,
      ScheduledExecutorService timeouts, LifecycleListener listener, MetricsListener metrics,
      InstantSource clock, int prefetch, Duration requeueDelay, ScheduledExecutorService sampler,
      Duration metricsInterval) {
    this.spec = spec;
    this.handler = handler;
    this.queues = queues;
    this.topology = topology;
    this.mover = mover;
    this.timeouts = timeouts;
    this.listener = listener;
    this.metrics = metrics;
    this.clock = clock;
    this.prefetch = prefetch;
    this.requeueDelay = requeueDelay;
    this.sampler = sampler;
    this.metricsInterval = metricsInterval;
    // Prefetch bounds what the broker hands out; the slack covers deliveries of a channel lost
    // and recovered while its old deliveries still run, and the tasks of deliveries dropped with
    // their channel that stay queued (no-ops, their payload released) behind a slow handler of
    // their key until it returns: without it, a few connection losses under one slow handler
    // would fill the queue and stall every other key.
    this.workers = KeyedExecutor.builder()
        .threads(spec.concurrency())
        .maxQueued(2 * prefetch + DROPPED_SLACK)
        .threadFactory(spec.handlerThreads().factory("relaykit-rabbitmq-" + queues.queue(),
            RabbitMqPublisher.daemon("relaykit-rabbitmq-" + queues.queue())))
        .build();
  }

  void start(Connection connection) throws IOException {
    this.connection = connection;
    channel = connection.createChannel();
    if (channel == null) {
      throw new IOException("no channel available on the subscriber connection");
    }
    // Per-consumer prefetch (global=false): what quorum queues support.
    channel.basicQos(prefetch);
    // A connection loss (the old channel shut down) drops what it had handed over and not started.
    channel.addShutdownListener(cause -> {
      dropStale();
      if (!cause.isHardError() && !cause.isInitiatedByApplication() && !closing.get()) {
        // The broker closed this channel alone (a channel-level error): amqp-client recovers
        // channels only with their connection, so without this the consumer would stay gone
        // until the next connection loss.
        LOG.log(System.Logger.Level.WARNING, "the broker closed the consumer channel of "
            + queues.queue() + " (" + cause.getMessage() + "); reopening it in " + requeueDelay);
        reopenLater();
      }
    });
    if (connection instanceof AutorecoveringConnection recovering) {
      // A connection recovery that could not restore this channel (the connection was cut again
      // while it ran, a channel.open timed out) leaves it closed on a live connection.
      recoveryListener = new RecoveryListener() {
        @Override
        public void handleRecovery(Recoverable recoverable) {
          if (!closing.get() && !channel.isOpen()) {
            LOG.log(System.Logger.Level.WARNING, "the connection of " + queues.queue()
                + " recovered without its consumer channel; reopening it in " + requeueDelay);
            reopenLater();
          }
        }

        @Override
        public void handleRecoveryStarted(Recoverable recoverable) {
          // nothing to do before the recovery
        }
      };
      recovering.addRecoveryListener(recoveryListener);
    }
    running = true;
    consumerTag = channel.basicConsume(queues.queue(), false, new DefaultConsumer(channel) {
      @Override
      public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties props,
          byte[] body) {
        received(envelope, props, body);
      }

      @Override
      public void handleCancel(String tag) {
        running = false;
        LOG.log(System.Logger.Level.WARNING, "the broker cancelled the consumer of "
            + queues.queue() + " (queue deleted?)");
      }
    });
    if (metrics != MetricsListener.noop()) {
      try {
        sampling = sampler.scheduleWithFixedDelay(this::sample, 0, metricsInterval.toNanos(),
            TimeUnit.NANOSECONDS);
      } catch (RejectedExecutionException closing) {
        // the subscriber is closing: nothing to sample
      }
    }
  }

  /**
   * One sample, on the sampling thread: in-flight from this subscription's own count, lag from a
   * passive declare of the group queue. Fixed delay, so a slow answer never piles samples up.
   */
  private void sample() {
    if (closing.get()) {
      return;
    }
    long taken = inFlight.get();
    MetricsListener.safely(metrics, m -> m.inFlight(spec.destination(), spec.group(), taken));
    long ready;
    try {
      ready = readyMessages();
    } catch (IOException | TimeoutException | RuntimeException e) {
      closeSampleChannel();
      if (closing.get()) {
        return; // closed meanwhile: not a failure
      }
      lagSampleFailures.incrementAndGet();
      LOG.log(failureStreak++ == 0 ? System.Logger.Level.WARNING : System.Logger.Level.DEBUG,
          "could not read the ready messages of " + queues.queue() + " for its consumer lag"
          + " (the consumer goes on; the lag gauge keeps its last value): " + e);
      return;
    }
    failureStreak = 0;
    MetricsListener.safely(metrics, m -> m.consumerLag(spec.destination(), spec.group(), ready));
  }

  /** The group queue's ready messages (not the unacked ones), from a passive declare. */
  private long readyMessages() throws IOException, TimeoutException {
    Channel c = sampleChannel;
    if (c == null || !c.isOpen()) {
      c = connection.createChannel();
      if (c == null) {
        throw new IOException("no channel available for sampling");
      }
      sampleChannel = c;
    }
    return c.queueDeclarePassive(queues.queue()).getMessageCount();
  }

  private void closeSampleChannel() {
    Channel c = sampleChannel;
    sampleChannel = null;
    if (c != null && c.isOpen()) {
      try {
        c.abort();
      } catch (IOException | RuntimeException e) {
        LOG.log(System.Logger.Level.DEBUG, "closing the sampling channel of " + queues.queue(), e);
      }
    }
  }

  /** Passive declares that failed since the start; for tests and diagnostics. */
  long lagSampleFailures() {
    return lagSampleFailures.get();
  }

  /** Runs on the connection's dispatch thread: decode, then hand off; never blocks. */
  private void received(Envelope envelope, AMQP.BasicProperties props, byte[] body) {
    received.incrementAndGet();
    long tag = envelope.getDeliveryTag();
    inFlight.incrementAndGet();
    if (isStale(tag)) {
      // Dispatched after its channel was lost: not ours to settle, the broker redelivers it.
      staleDropped.incrementAndGet();
      countIgnoredOfFirst(envelope, props, body);
      done();
      return;
    }
    if (closing.get()) {
      // Arrived after close() began (its cancel is on the way): back to the queue.
      countIgnoredOfFirst(envelope, props, body);
      nack(tag);
      done();
      return;
    }
    Instant now = clock.instant();
    Ctx ctx;
    try {
      InboundMapping.Decoded decoded = decode(envelope, props, body, now);
      Map<String, String> wire = decoded.wire();
      Delivery delivery = FailureRoute.delivery(decoded.message(), spec.destination(), wire);
      if (delivery.attempt() == 1 && !envelope.isRedeliver()) {
        // Once per message and group queue: the broker's first delivery of it (a redelivery
        // after a connection loss or a requeue was counted at that first one).
        decoded.reportIgnored(metrics, spec.destination());
      }
      // The payload the handler sees (a structured CloudEvent's data, not the JSON around it) is
      // what a retry or dead-letter copy carries: the copy has relaykit's envelope.
      ctx = new Ctx(tag, wire, delivery.message().payload(), delivery,
          orderKey(delivery.message()));
    } catch (MalformedMessageException | IllegalArgumentException e) {
      deadLetterUndecodable(tag, props, body, e, now);
      return;
    }
    if (ctx.message.isExpiredAt(now)) {
      ctx.settled.set(true);
      ack(tag);
      event(LifecycleEvent.Stage.EXPIRED, ctx.message, "expired at "
          + ctx.message.expiresAt().orElseThrow());
      done();
      return;
    }
    unstarted.add(ctx);
    synchronized (waiting) {
      waiting.addLast(ctx);
    }
    pump();
  }

  /** The message of a delivery, read with the subscription's mapping. */
  private InboundMapping.Decoded decode(Envelope envelope, AMQP.BasicProperties props,
      byte[] body, Instant now) {
    InboundMapping inbound = spec.inbound();
    Set<String> invalid = inbound.acceptsForeign() ? new HashSet<>() : Set.of();
    Map<String, String> wire = inbound.acceptsForeign()
        ? AmqpHeaders.stringsLenient(props, invalid) : AmqpHeaders.strings(props);
    if (inbound.acceptsForeign() && !wire.containsKey(MessageHeaders.ID)
        && props.getContentType() != null && !props.getContentType().isBlank()) {
      // A foreign message's content type (CloudEvents' datacontenttype) as a header.
      wire.putIfAbsent(CloudEvents.CONTENT_TYPE, props.getContentType());
    }
    InboundMapping.Decoded decoded = inbound.decode(wire, body, new InboundMapping.Inbound(
        spec.destination(), AmqpHeaders.stablePosition(spec.destination(), props, wire, body),
        wire.containsKey(MessageHeaders.ID) ? wire.get(AmqpHeaders.KEY)
            : AmqpHeaders.foreignKey(envelope), props.getTimestamp() == null ? null
            : props.getTimestamp().toInstant(), now, invalid,
        InboundMapping.AMQP_CLOUDEVENTS_PREFIX));
    if (decoded.foreign()) {
      decoded.message().key().ifPresent(k -> decoded.wire().put(AmqpHeaders.KEY, k));
    }
    return decoded;
  }

  /**
   * Counts what the mapping ignores in the broker's first delivery of a message that is handed
   * back unread (its channel lost, or closing): its redelivery is not counted again.
   */
  private void countIgnoredOfFirst(Envelope envelope, AMQP.BasicProperties props, byte[] body) {
    if (envelope.isRedeliver()) {
      return;
    }
    try {
      InboundMapping.Decoded decoded = decode(envelope, props, body, clock.instant());
      if (FailureRoute.delivery(decoded.message(), spec.destination(), decoded.wire())
          .attempt() == 1) {
        decoded.reportIgnored(metrics, spec.destination());
      }
    } catch (MalformedMessageException | IllegalArgumentException undecodable) {
      // undecodable: its redelivery dead-letters it; nothing to count
    }
  }

  /**
   * Hands waiting deliveries to the workers in arrival order while they have room. A full
   * executor (lanes still holding deliveries of a lost channel, or a slow handler) leaves them
   * waiting here, unacked: the broker sends at most {@code prefetch} unacked deliveries per
   * channel, so the wait itself pushes back and nothing is nacked into a redelivery loop. Called
   * on every arrival and after every task; a pump that found no room tries again shortly, since
   * the task that frees the room may still be on its way out.
   */
  private void pump() {
    boolean blocked = false;
    synchronized (waiting) {
      Ctx head;
      while ((head = waiting.peekFirst()) != null) {
        if (head.settled.get()) {
          waiting.pollFirst(); // dropped meanwhile (its channel was lost)
          continue;
        }
        boolean accepted;
        try {
          Ctx c = head;
          accepted = workers.trySubmit(c.orderKey, () -> {
            try {
              run(c);
            } finally {
              pumpSoon();
            }
          });
        } catch (RejectedExecutionException closing) {
          // Closing: back to the queue for the next consumer.
          waiting.pollFirst();
          if (unstarted.remove(head) && head.settled.compareAndSet(false, true)) {
            nack(head.tag);
            done();
          }
          continue;
        }
        if (!accepted) {
          blocked = true;
          break;
        }
        waiting.pollFirst();
      }
    }
    if (blocked) {
      pumpLater();
    }
  }

  /** Pumps from a task that is about to return (its slot frees right after). */
  private void pumpSoon() {
    boolean any;
    synchronized (waiting) {
      any = !waiting.isEmpty();
    }
    if (any) {
      pumpLater();
    }
  }

  private void pumpLater() {
    try {
      timeouts.schedule(this::pump, 5, TimeUnit.MILLISECONDS);
    } catch (RejectedExecutionException closing) {
      // the subscriber is closing: close() settles what waits
    }
  }

  private void reopenLater() {
    try {
      timeouts.schedule(() -> onOwnThread("reopen", this::reopen), requeueDelay.toNanos(),
          TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException closed) {
      // the subscriber is closing: nothing to reopen
    }
  }

  /**
   * Reopens the consumer's channel, its QoS and its consumer after the broker closed the channel
   * alone; tried again every recovery interval while the connection stays up and the channel
   * closed (a connection loss meanwhile hands the job to amqp-client's recovery).
   */
  private void reopen() {
    Connection c = connection;
    if (closing.get() || channel.isOpen() || !c.isOpen()) {
      return;
    }
    if (c instanceof AutorecoveringConnection recovering
        && channel instanceof AutorecoveringChannel ch) {
      channelReopens.incrementAndGet();
      recovering.recoverChannelAndTopology(ch); // failures: logged and counted by the handler
      if (!channel.isOpen()) {
        reopenLater();
      }
    }
  }

  /** Consumer channels reopened after the broker closed them alone; for tests and diagnostics. */
  long channelReopens() {
    return channelReopens.get();
  }

  /** The consumer's channel; for tests that make the broker close it. */
  Channel channel() {
    return channel;
  }

  /**
   * Whether {@code tag} belongs to a channel that is gone: the consumer's channel is closed (lost,
   * not yet recovered), or it was recovered since the delivery arrived. amqp-client numbers the
   * tags of a recovered channel above every tag of the channel it replaces (and drops acks of
   * older tags), so a tag at or below the current channel's offset belongs to a lost one.
   */
  private boolean isStale(long tag) {
    Channel c = channel;
    if (c instanceof AutorecoveringChannel recovering) {
      Channel current = recovering.getDelegate();
      if (current instanceof RecoveryAwareChannelN aware) {
        return !aware.isOpen() || tag <= aware.getActiveDeliveryTagOffset();
      }
    }
    return c == null || !c.isOpen();
  }

  /**
   * On a channel's shutdown: drops every delivery of a lost channel that has not started (queued
   * for a lane or waiting for room), at once, so it never runs, never counts as in flight, and its
   * redelivery is the only copy that runs. A running one finishes; its result is discarded.
   */
  private void dropStale() {
    int dropped = 0;
    for (Ctx c : unstarted) {
      // Whoever removes a delivery from unstarted decides its fate: this sweep or its run().
      if (isStale(c.tag) && unstarted.remove(c) && c.settled.compareAndSet(false, true)) {
        c.release();
        staleDropped.incrementAndGet();
        dropped++;
        done();
      }
    }
    if (dropped > 0) {
      LOG.log(System.Logger.Level.DEBUG, "dropped " + dropped + " deliveries of a lost channel of "
          + queues.queue() + " before they ran (the broker redelivers them)");
    }
    pump();
  }

  /** The KeyedExecutor key: the message key, one key for the whole queue, or none. */
  private Object orderKey(Message message) {
    switch (spec.ordering()) {
      case KEY:
        return message.key().orElse(null);
      case PARTITION:
        return queues.queue();
      default:
        return null;
    }
  }

  private void run(Ctx ctx) {
    if (!unstarted.remove(ctx) || ctx.settled.get()) {
      return; // dropped: its channel was lost before it started
    }
    if (isStale(ctx.tag)) {
      if (ctx.settled.compareAndSet(false, true)) {
        staleDropped.incrementAndGet();
        done();
      }
      return;
    }
    ctx.worker = Thread.currentThread();
    ctx.started = System.nanoTime();
    ScheduledFuture<?> timeout = null;
    try {
      timeout = timeouts.schedule(() -> timedOut(ctx), spec.handlerTimeout().toNanos(),
          TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException closing) {
      // the subscriber is closing; run without a timeout
    }
    event(LifecycleEvent.Stage.DELIVERED, ctx.message, "attempt " + ctx.attempt);
    Throwable failure = null;
    try {
      handler.handle(ctx.delivery);
    } catch (Throwable t) {
      failure = t;
    } finally {
      if (timeout != null) {
        timeout.cancel(false);
      }
      synchronized (ctx) {
        ctx.worker = null;
      }
    }
    // Whichever of this return and the timeout settles the delivery reports its duration; a late
    // return after the timeout (already reported as timed out) reports nothing.
    if (ctx.settled.compareAndSet(false, true)) {
      Duration took = Duration.ofNanos(System.nanoTime() - ctx.started);
      boolean failed = failure != null;
      MetricsListener.safely(metrics,
          x -> x.handlerDuration(spec.destination(), spec.group(), took, failed));
      settleClaimed(ctx, failure);
    }
    // A timeout may have interrupted this thread after the handler returned.
    Thread.interrupted();
    if (failure instanceof VirtualMachineError) {
      throw (VirtualMachineError) failure;
    }
  }

  private void timedOut(Ctx ctx) {
    if (ctx.settled.compareAndSet(false, true)) {
      Duration took = Duration.ofNanos(System.nanoTime() - ctx.started);
      MetricsListener.safely(metrics,
          x -> x.handlerTimedOut(spec.destination(), spec.group(), took));
      settleClaimed(ctx, new TimeoutException("handler did not finish within "
          + spec.handlerTimeout()));
    }
    synchronized (ctx) {
      if (ctx.worker != null) {
        ctx.worker.interrupt();
      }
    }
  }

  /**
   * Settles a delivery whose {@link Ctx#settled} the caller has just set: exactly one of the
   * handler's return and its timeout gets here, so a late result after a timeout is ignored.
   */
  private void settleClaimed(Ctx ctx, Throwable failure) {
    if (abandoned) {
      done();
      return;
    }
    if (isStale(ctx.tag)) {
      // Its channel was lost while the handler ran: the broker redelivers it (at-least-once), an
      // ack would be dropped, and a retry or dead-letter copy would run beside the redelivery.
      LOG.log(System.Logger.Level.DEBUG, "the channel of " + queues.queue() + " was lost while "
          + ctx.message.id() + " ran; its redelivery settles it");
      done();
      return;
    }
    if (failure == null) {
      ack(ctx.tag);
      event(LifecycleEvent.Stage.ACKED, ctx.message, "attempt " + ctx.attempt);
      done();
      return;
    }
    // The failure model is queue-core's, the same on every transport; this only moves bytes.
    FailureRoute route = FailureRoute.decide(spec, ctx.delivery, failure, clock.instant());
    Map<String, String> headers = route.headers(ctx.wire);
    String target;
    LifecycleEvent.Stage stage;
    String detail;
    if (route.isRetry()) {
      // The retry waits in the delay queue of the smallest level not below the route's delay.
      Duration level = topology.levelFor(route.delay());
      target = queues.retryQueues().get(level);
      headers.put(MessageHeaders.RETRY_AT, route.lastFailureAt().plus(level).toString());
      stage = LifecycleEvent.Stage.RETRIED;
      detail = "attempt " + ctx.attempt + " failed (" + failure.getClass().getSimpleName()
          + "); retry in " + level + " via " + target;
    } else {
      target = queues.deadLetterQueue();
      headers.put(AmqpHeaders.DEAD_ENTRY, UUID.randomUUID().toString());
      stage = LifecycleEvent.Stage.DEAD_LETTERED;
      detail = route.reason();
    }
    moveThenAck(ctx.tag, target, headers, ctx.body, () -> {
      event(stage, ctx.message, detail);
      if (!route.isRetry()) {
        DeadLetterLog.shared().deadLettered(metrics, ctx.message.id(), spec.destination(),
            spec.group(), route.attempt(), route.reason());
      }
    });
  }

  private void deadLetterUndecodable(long tag, AMQP.BasicProperties props, byte[] body,
      RuntimeException e, Instant now) {
    Map<String, String> headers = new LinkedHashMap<>();
    if (props.getHeaders() != null) {
      props.getHeaders().forEach((k, v) -> {
        if (!k.equals(AmqpHeaders.PUBLISH_SEQ) && !AmqpHeaders.isBrokerHeader(k)) {
          headers.put(k, String.valueOf(v));
        }
      });
    }
    String id = headers.get(MessageHeaders.ID);
    if (id == null || id.isBlank()) {
      id = props.getMessageId() != null && !props.getMessageId().isBlank()
          ? props.getMessageId() : "undecodable-" + UUID.randomUUID();
      headers.put(MessageHeaders.ID, id);
    }
    FailureRoute route = FailureRoute.undecodable(spec.destination(), e, now);
    String reason = route.reason();
    Map<String, String> dead = route.headers(headers);
    dead.put(AmqpHeaders.DEAD_ENTRY, UUID.randomUUID().toString());
    String trace = headers.get(MessageHeaders.TRACE_ID);
    String messageId = id;
    moveThenAck(tag, queues.deadLetterQueue(), dead, body, () -> {
      LifecycleListener.safely(listener, new LifecycleEvent(LifecycleEvent.Stage.DEAD_LETTERED,
          messageId, trace, spec.destination(), clock.instant(), where(reason)));
      DeadLetterLog.shared().deadLettered(metrics, messageId, spec.destination(), spec.group(),
          route.attempt(), reason);
    });
  }

  /**
   * Publishes to {@code queue} with a confirm, then acks the original; if the publish fails the
   * original is requeued instead, so the message is never in neither place. The requeue waits
   * {@code requeueDelay} (the recovery interval): a move that fails fast (a broker that blocks
   * publishing under a resource alarm) must not turn into a loop that runs the handler again and
   * again as fast as the broker redelivers. The message holds its in-flight slot meanwhile.
   */
  private void moveThenAck(long tag, String queue, Map<String, String> headers, byte[] body,
      Runnable onMoved) {
    CompletableFuture<PublishReceipt> moved;
    try {
      moved = mover.publishToQueue(queue, headers, body);
    } catch (RuntimeException e) {
      moved = CompletableFuture.failedFuture(e);
    }
    moved.whenComplete((receipt, error) -> {
      if (error == null) {
        ack(tag);
        onMoved.run();
      } else {
        LOG.log(System.Logger.Level.WARNING, "could not move a message to " + queue
            + "; requeueing it in " + requeueDelay + " for another attempt: " + error);
        Runnable requeue = () -> {
          nack(tag);
          done();
        };
        try {
          timeouts.schedule(requeue, requeueDelay.toNanos(), TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException closing) {
          requeue.run();
        }
        return;
      }
      done();
    });
  }

  private void ack(long tag) {
    try {
      synchronized (channel) {
        channel.basicAck(tag, false);
      }
    } catch (IOException | ShutdownSignalException e) {
      // The channel is gone: the broker redelivers the message (at-least-once).
      LOG.log(System.Logger.Level.DEBUG, "ack failed on " + queues.queue(), e);
    }
  }

  private void nack(long tag) {
    try {
      synchronized (channel) {
        channel.basicNack(tag, false, true);
      }
    } catch (IOException | ShutdownSignalException e) {
      LOG.log(System.Logger.Level.DEBUG, "nack failed on " + queues.queue(), e);
    }
  }

  private void done() {
    if (inFlight.decrementAndGet() == 0) {
      synchronized (drained) {
        drained.notifyAll();
      }
    }
  }

  /**
   * Reports under the destination, as every transport does (the group queue, its delay queues and
   * its dead-letter queue are this transport's plumbing); the group and the queue go in the detail.
   */
  private void event(LifecycleEvent.Stage stage, Message m, String detail) {
    LifecycleListener.safely(listener, new LifecycleEvent(stage, m.id(), m.traceId(),
        spec.destination(), clock.instant(), where(detail)));
  }

  private String where(String detail) {
    return "group=" + spec.group() + " queue=" + queues.queue() + ": " + detail;
  }

  @Override
  public boolean close(Duration deadline) {
    if (deadline == null || deadline.isNegative()) {
      throw new IllegalArgumentException("deadline must be zero or positive, was " + deadline);
    }
    if (!closing.compareAndSet(false, true)) {
      return finishedInTime;
    }
    running = false;
    ScheduledFuture<?> samples = sampling;
    if (samples != null) {
      samples.cancel(false);
      // The sampling channel closes on the sampling thread, which owns it.
      try {
        sampler.execute(this::closeSampleChannel);
      } catch (RejectedExecutionException shutDown) {
        // the subscriber is closing: its connection's close takes the channel with it
      }
    }
    long end = System.nanoTime() + deadline.toNanos();
    // basic.cancel waits for cancel-ok, which a broker that reads nothing never sends: it runs
    // on its own thread, and deliveries that still arrive meanwhile are requeued (received()).
    if (channel != null && consumerTag != null) {
      onOwnThread("cancel", () -> channel.basicCancel(consumerTag));
    }
    boolean interrupted = false;
    synchronized (drained) {
      long left;
      while (inFlight.get() > 0 && (left = end - System.nanoTime()) > 0) {
        try {
          TimeUnit.NANOSECONDS.timedWait(drained, left);
        } catch (InterruptedException e) {
          interrupted = true;
          break;
        }
      }
    }
    finishedInTime = inFlight.get() == 0;
    abandoned = !finishedInTime;
    // Close the channel before interrupting the workers: a handler that returns on the interrupt
    // must not ack a message that should go to the next consumer.
    if (channel != null && channel.isOpen()) {
      // Unacked deliveries go back to the queue for the next consumer. channel.close waits for
      // close-ok: bounded here, since a stalled broker never answers (it requeues them when the
      // connection dies instead; late results are not acked, see abandoned).
      Thread closer = onOwnThread("close", channel::close);
      try {
        closer.join(Math.max(CHANNEL_CLOSE_WAIT_MILLIS,
            TimeUnit.NANOSECONDS.toMillis(end - System.nanoTime())));
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    workers.shutdownNow();
    if (connection instanceof AutorecoveringConnection recovering && recoveryListener != null) {
      recovering.removeRecoveryListener(recoveryListener);
    }
    onClosed.run();
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
    return finishedInTime;
  }

  private interface BrokerCall {
    void run() throws IOException, TimeoutException;
  }

  /** Sets what close runs at its end (once); called before the subscription is handed out. */
  void onClosed(Runnable r) {
    onClosed = r;
  }

  /** Runs {@code call} on a new daemon thread, logging its failure; returns the thread. */
  private Thread onOwnThread(String what, BrokerCall call) {
    Thread t = RabbitMqPublisher.daemon("relaykit-rabbitmq-" + what + "-" + queues.queue())
        .newThread(() -> {
          try {
            call.run();
          } catch (IOException | TimeoutException | RuntimeException e) {
            LOG.log(System.Logger.Level.DEBUG, what + " failed on " + queues.queue(), e);
          }
        });
    t.start();
    return t;
  }

  @Override
  public boolean isRunning() {
    return running && channel != null && channel.isOpen();
  }

  /** Deliveries received since the start, redeliveries included; for tests. */
  long received() {
    return received.get();
  }

  /** Deliveries of lost channels dropped before their handler ran; for tests. */
  long staleDropped() {
    return staleDropped.get();
  }

  /** Deliveries received and not yet settled; for tests. */
  int inFlight() {
    return inFlight.get();
  }

  /** One delivery on its way through the handler. */
  private static final class Ctx {
    final long tag;
    /** Null once dropped ({@link #release}), as are body, delivery and message. */
    Map<String, String> wire;
    byte[] body;
    Delivery delivery;
    Message message;
    final int attempt;
    /** The KeyedExecutor key. */
    final Object orderKey;
    final AtomicBoolean settled = new AtomicBoolean();
    volatile Thread worker;
    /** System.nanoTime() when the handler call began. */
    volatile long started;

    Ctx(long tag, Map<String, String> wire, byte[] body, Delivery delivery, Object orderKey) {
      this.tag = tag;
      this.wire = wire;
      this.body = body;
      this.delivery = delivery;
      this.message = delivery.message();
      this.attempt = delivery.attempt();
      this.orderKey = orderKey;
    }

    /**
     * Lets go of the payload of a delivery dropped before it started: its task may wait as a
     * no-op behind a slow handler of its key. Only the one that removed it from unstarted calls
     * this, and nothing reads these fields of a dropped delivery again.
     */
    void release() {
      wire = null;
      body = null;
      delivery = null;
      message = null;
    }
  }
}
