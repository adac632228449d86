package io.relaykit.transport.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConfirmListener;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ShutdownSignalException;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHeaders;
import io.relaykit.message.MessageRejectedException;
import io.relaykit.message.PublishException;
import io.relaykit.message.PublishReceipt;
import io.relaykit.message.Publisher;
import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleListener;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;

/**
 * A {@link Publisher} with RabbitMQ publisher confirms: a future completes only after the broker
 * confirmed the persistent message, and fails if the broker nacks it, if it is unroutable
 * (published {@code mandatory}: a destination without any group queue bound is a failure, not a
 * silent drop), or if no confirm arrives within the confirm timeout.
 *
 * <p>A destination is a durable fanout exchange, declared on first use (see {@link
 * RabbitMqTopology}); the message key becomes the routing key.
 *
 * <p><b>Window.</b> At most {@code confirmWindow} messages are unconfirmed at once; {@code publish}
 * <em>blocks</em> the calling thread while the window is full (back-pressure), up to the confirm
 * timeout, then fails that message with a {@link PublishException}. Futures are completed on a
 * publisher thread, never on the connection's thread, so a callback may publish again.
 *
 * <p><b>Connection loss.</b> The publisher reconnects by itself (every recovery interval) and
 * republishes, in their original order, every message that was not confirmed: at-least-once, so a
 * message may reach the broker twice. A message still unconfirmed after the confirm timeout fails;
 * one whose publish broke a channel five times fails with the broker's reason.
 *
 * <p>Costs one connection and one channel; {@code publish} takes a lock for the socket write only.
 * Thread-safe.
 */
public final class RabbitMqPublisher implements Publisher {

  private static final System.Logger LOG = System.getLogger(RabbitMqPublisher.class.getName());
  private static final int MAX_SENDS = 5;
  private static final String DEFAULT_EXCHANGE = "";

  private final RabbitMqTransportConfig config;
  private final RabbitMqTopology topology;
  private final LifecycleListener listener;
  private final InstantSource clock;
  private final String role;
  private final Semaphore window;
  private final long timeoutNanos;
  private final ReentrantLock lock = new ReentrantLock();
  private final ArrayDeque<Pending> unsent = new ArrayDeque<>(); // guarded by lock
  private Connection connection; // guarded by lock
  private Gen gen; // guarded by lock; null while disconnected
  private String lastLoss = "none"; // guarded by lock
  private volatile boolean closed;
  private final Set<String> declaredExchanges = ConcurrentHashMap.newKeySet();
  private final ScheduledExecutorService scheduler;
  private final ExecutorService completer;
  private final AtomicLong recoveries = new AtomicLong();
  private final AtomicLong republished = new AtomicLong();

  private RabbitMqPublisher(RabbitMqTransportConfig config, LifecycleListener listener,
      InstantSource clock, String role) {
    this.config = config;
    this.topology = RabbitMqTopology.of(config);
    this.listener = listener;
    this.clock = clock;
    this.role = role;
    this.window = new Semaphore(config.confirmWindow());
    this.timeoutNanos = config.confirmTimeout().toNanos();
    this.scheduler = Executors.newSingleThreadScheduledExecutor(daemon("relaykit-rabbitmq-"
        + role + "-recovery"));
    this.completer = Executors.newSingleThreadExecutor(daemon("relaykit-rabbitmq-" + role
        + "-confirms"));
  }

  /**
   * Connects to the broker in {@code config}.
   *
   * @throws UncheckedIOException naming the broker and how to start it, if it is unreachable
   */
  public static RabbitMqPublisher create(RabbitMqTransportConfig config) {
    return create(config, LifecycleListener.noop(), InstantSource.system());
  }

  /** Like {@link #create(RabbitMqTransportConfig)}, reporting PUBLISHED and CONFIRMED events. */
  public static RabbitMqPublisher create(RabbitMqTransportConfig config,
      LifecycleListener listener, InstantSource clock) {
    return create(config, listener, clock, "publisher");
  }

  static RabbitMqPublisher create(RabbitMqTransportConfig config, LifecycleListener listener,
      InstantSource clock, String role) {
    if (config == null) {
      throw new IllegalArgumentException("config must not be null");
    }
    if (listener == null) {
      throw new IllegalArgumentException("listener must not be null");
    }
    if (clock == null) {
      throw new IllegalArgumentException("clock must not be null");
    }
    RabbitMqPublisher p = new RabbitMqPublisher(config, listener, clock, role);
    try {
      p.connectNow();
    } catch (IOException e) {
      p.scheduler.shutdownNow();
      p.completer.shutdownNow();
      throw new UncheckedIOException(e.getMessage(), e);
    }
    long period = Math.max(10, Math.min(1_000, config.confirmTimeout().toMillis() / 10));
    p.scheduler.scheduleWithFixedDelay(p::failOverdue, period, period, TimeUnit.MILLISECONDS);
    return p;
  }

  /**
   * Publishes {@code message} to the exchange of {@code destination}, declaring the exchange on
   * first use. Blocks while the confirm window is full.
   *
   * @throws IllegalArgumentException if {@code destination} is not a valid destination name or
   *     {@code message} is null
   */
  @Override
  public CompletableFuture<PublishReceipt> publish(String destination, Message message) {
    if (message == null) {
      throw new IllegalArgumentException("message must not be null");
    }
    String exchange = topology.exchange(destination);
    if (closed) {
      return CompletableFuture.failedFuture(new PublishException("publisher is closed"));
    }
    Map<String, String> wire = MessageHeaders.toWire(message);
    message.key().ifPresent(key -> wire.put(AmqpHeaders.KEY, key));
    long size = message.payloadSize() + AmqpHeaders.estimatedSize(wire);
    if (size > config.maxMessageBytes()) {
      return CompletableFuture.failedFuture(new MessageRejectedException("message "
          + message.id() + " is about " + size + " bytes encoded; the limit is "
          + config.maxMessageBytes() + " (maxMessageBytes)"));
    }
    if (!declaredExchanges.contains(exchange)) {
      try {
        declareExchange(destination);
        declaredExchanges.add(exchange);
      } catch (TopologyConflictException e) {
        return CompletableFuture.failedFuture(new MessageRejectedException(e.getMessage(), e));
      } catch (IOException | RuntimeException e) {
        return CompletableFuture.failedFuture(new PublishException(
            "could not declare exchange " + exchange + ": " + e.getMessage(), e));
      }
    }
    return enqueue(new Pending(exchange, message.key().orElse(""), destination, message.id(),
        message.traceId(), message.type(), message.createdAt().toEpochMilli(), wire,
        message.payload()));
  }

  /**
   * Publishes an already encoded message straight to {@code queue} through the default exchange:
   * how the subscriber moves a message to a delay or dead-letter queue and the dead-letter view
   * replays one. Confirmed and mandatory like {@link #publish}; no size check (the message came
   * from the broker).
   */
  CompletableFuture<PublishReceipt> publishToQueue(String queue, Map<String, String> wire,
      byte[] body) {
    if (closed) {
      return CompletableFuture.failedFuture(new PublishException("publisher is closed"));
    }
    String id = wire.getOrDefault(MessageHeaders.ID, "unknown");
    String trace = wire.get(MessageHeaders.TRACE_ID);
    return enqueue(new Pending(DEFAULT_EXCHANGE, queue, queue, id, trace,
        wire.get(MessageHeaders.TYPE), clock.millis(), wire, body));
  }

  private void declareExchange(String destination) throws IOException {
    Connection c;
    lock.lock();
    try {
      c = connection;
    } finally {
      lock.unlock();
    }
    if (c == null || !c.isOpen()) {
      throw new IOException("not connected to RabbitMQ (reconnecting; last loss: "
          + lastLossText() + ")");
    }
    topology.declareExchange(c, destination);
  }

  private CompletableFuture<PublishReceipt> enqueue(Pending p) {
    boolean acquired;
    try {
      acquired = window.tryAcquire(timeoutNanos, TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return CompletableFuture.failedFuture(
          new PublishException("interrupted while waiting for room in the confirm window", e));
    }
    if (!acquired) {
      return CompletableFuture.failedFuture(new PublishException("confirm window of "
          + config.confirmWindow() + " stayed full for " + config.confirmTimeout()));
    }
    if (closed) {
      window.release();
      return CompletableFuture.failedFuture(new PublishException("publisher is closed"));
    }
    p.deadlineNanos = System.nanoTime() + timeoutNanos;
    lock.lock();
    try {
      if (closed) {
        // close() may have collected what was left before this lock: nothing would finish p.
        window.release();
        return CompletableFuture.failedFuture(new PublishException("publisher is closed"));
      }
      if (gen == null) {
        unsent.addLast(p);
      } else {
        send(gen, p);
      }
    } finally {
      lock.unlock();
    }
    return p.future;
  }

  /** Writes {@code p} on {@code g}'s channel; must hold the lock. */
  private void send(Gen g, Pending p) {
    if (p.isFinished()) {
      return;
    }
    if (++p.sends > MAX_SENDS) {
      finish(p, new PublishException("gave up on message " + p.messageId + " after "
          + MAX_SENDS + " attempts to publish it; last channel loss: " + lastLoss));
      return;
    }
    long seq = g.channel.getNextPublishSeqNo();
    p.seq = seq;
    g.pending.put(seq, p);
    try {
      g.channel.basicPublish(p.exchange, p.routingKey, true,
          AmqpHeaders.properties(p.messageId, p.type, p.createdMillis, p.wire, seq), p.body);
    } catch (IOException | ShutdownSignalException e) {
      // The channel is going away; its shutdown listener republishes what it held.
      g.pending.remove(seq);
      unsent.addLast(p);
      return;
    }
    if (p.sends == 1 && p.traceId != null) {
      event(LifecycleEvent.Stage.PUBLISHED, p, p.exchange.isEmpty() ? p.routingKey : p.exchange);
    }
  }

  private void confirmed(Gen g, long seq, boolean multiple, boolean ack) {
    List<Pending> done = new ArrayList<>();
    if (multiple) {
      Map.Entry<Long, Pending> e;
      while ((e = g.pending.firstEntry()) != null && e.getKey() <= seq) {
        if (g.pending.remove(e.getKey(), e.getValue())) {
          done.add(e.getValue());
        }
      }
    } else {
      Pending p = g.pending.remove(seq);
      if (p != null) {
        done.add(p);
      }
    }
    finish(done, p -> {
      if (!ack) {
        return new PublishException("broker nacked message " + p.messageId + " on "
            + p.destination + " (an internal broker error; publish again)");
      }
      if (p.returned != null) {
        return new PublishException("message " + p.messageId + " is unroutable: "
            + p.returned + " (no queue is bound to " + p.destination
            + "; declare a subscriber group first)");
      }
      return null;
    });
  }

  private void returned(Gen g, int replyCode, String replyText, AMQP.BasicProperties props) {
    Object seq = props.getHeaders() == null ? null : props.getHeaders().get(AmqpHeaders.PUBLISH_SEQ);
    if (seq == null) {
      return;
    }
    Pending p = g.pending.get(Long.parseLong(seq.toString()));
    if (p != null) {
      p.returned = replyCode + " " + replyText;
    }
  }

  /** Completes {@code p} once with {@code failure} (null: confirmed). */
  private void finish(Pending p, RuntimeException failure) {
    finish(List.of(p), ignored -> failure);
  }

  /**
   * Completes each of {@code batch} that is not finished yet with the failure {@code outcome} gives
   * it (null: confirmed). Their window slots are freed together and their futures completed by one
   * task on the completer thread: one broker confirm often settles hundreds of messages, and a
   * wake-up of the publishing thread or of the completer per message would cost more than the
   * message itself.
   */
  private void finish(List<Pending> batch, Function<Pending, RuntimeException> outcome) {
    List<Pending> settled = new ArrayList<>(batch.size());
    for (Pending p : batch) {
      if (p.isFinished()) {
        continue;
      }
      RuntimeException failure = outcome.apply(p); // before the claim: it only builds a message
      if (p.finished.compareAndSet(false, true)) {
        p.failure = failure;
        settled.add(p);
      }
    }
    if (settled.isEmpty()) {
      return;
    }
    window.release(settled.size());
    Runnable complete = () -> {
      for (Pending p : settled) {
        try {
          complete(p);
        } catch (RuntimeException | Error e) {
          // What complete() throws (a listener's Error that LifecycleListener.safely lets
          // through) must not strand the rest of the batch; p's future is completed either way.
          p.future.completeExceptionally(e);
          if (e instanceof VirtualMachineError vme) {
            throw vme;
          }
          LOG.log(System.Logger.Level.ERROR, "completing message " + p.messageId + " failed", e);
        }
      }
    };
    try {
      completer.execute(complete);
    } catch (RejectedExecutionException e) {
      complete.run();
    }
  }

  private void complete(Pending p) {
    if (p.failure != null) {
      p.future.completeExceptionally(p.failure);
      return;
    }
    PublishReceipt receipt = new PublishReceipt(p.messageId, p.destination, Long.toString(p.seq));
    try {
      if (p.traceId != null) {
        event(LifecycleEvent.Stage.CONFIRMED, p, receipt.position());
      }
    } finally {
      p.future.complete(receipt); // confirmed by the broker, whatever the event did
    }
  }

  private void event(LifecycleEvent.Stage stage, Pending p, String detail) {
    LifecycleListener.safely(listener, new LifecycleEvent(stage, p.messageId, p.traceId,
        p.destination, clock.instant(), detail));
  }

  private void failOverdue() {
    long now = System.nanoTime();
    List<Pending> overdue = new ArrayList<>();
    lock.lock();
    try {
      if (gen != null) {
        for (Iterator<Pending> it = gen.pending.values().iterator(); it.hasNext(); ) {
          Pending p = it.next();
          if (now - p.deadlineNanos >= 0) {
            it.remove();
            overdue.add(p);
          }
        }
      }
      for (Iterator<Pending> it = unsent.iterator(); it.hasNext(); ) {
        Pending p = it.next();
        if (now - p.deadlineNanos >= 0) {
          it.remove();
          overdue.add(p);
        }
      }
    } finally {
      lock.unlock();
    }
    String loss = lastLossText();
    finish(overdue, p -> new PublishException("no confirm for message " + p.messageId + " on "
        + p.destination + " within " + config.confirmTimeout() + " (last connection loss: "
        + loss + ")"));
  }

  private String lastLossText() {
    lock.lock();
    try {
      return lastLoss;
    } finally {
      lock.unlock();
    }
  }

  /** The channel of {@code g} is gone: take back what it did not confirm and reconnect. */
  private void lost(Gen g, ShutdownSignalException cause) {
    lock.lock();
    try {
      if (gen != g) {
        return;
      }
      gen = null;
      lastLoss = String.valueOf(cause.getMessage());
      List<Pending> back = new ArrayList<>(g.pending.values());
      g.pending.clear();
      for (int i = back.size() - 1; i >= 0; i--) {
        unsent.addFirst(back.get(i));
      }
      LOG.log(System.Logger.Level.WARNING, "RabbitMQ " + role + " channel lost ("
          + cause.getMessage() + "); " + unsent.size() + " unconfirmed messages will be "
          + "republished after reconnecting");
    } finally {
      lock.unlock();
    }
    reconnect();
  }

  private void reconnect() {
    if (closed) {
      return;
    }
    try {
      connectNow();
      recoveries.incrementAndGet();
    } catch (IOException | RuntimeException e) {
      LOG.log(System.Logger.Level.DEBUG, "RabbitMQ " + role + " reconnect failed; retrying", e);
      try {
        scheduler.schedule(this::reconnect, config.recoveryInterval().toMillis(),
            TimeUnit.MILLISECONDS);
      } catch (RejectedExecutionException closing) {
        // closed meanwhile: close() fails what is left
      }
    }
  }

  /** Opens a connection if needed and a confirm channel, then sends everything unsent. */
  private void connectNow() throws IOException {
    Connection c;
    lock.lock();
    try {
      c = connection;
    } finally {
      lock.unlock();
    }
    if (c == null || !c.isOpen()) {
      // Opening takes a network round trip or a timeout: not under the lock.
      c = Connections.open(config, role, false);
    }
    Channel channel = c.createChannel();
    if (channel == null) {
      throw new IOException("no channel available on the " + role + " connection");
    }
    channel.confirmSelect();
    Gen g = new Gen(channel);
    channel.addConfirmListener(new ConfirmListener() {
      @Override
      public void handleAck(long seq, boolean multiple) {
        confirmed(g, seq, multiple, true);
      }

      @Override
      public void handleNack(long seq, boolean multiple) {
        confirmed(g, seq, multiple, false);
      }
    });
    channel.addReturnListener((code, text, exchange, key, props, body) ->
        returned(g, code, text, props));
    channel.addShutdownListener(cause -> {
      if (!closed) {
        try {
          scheduler.execute(() -> lost(g, cause));
        } catch (RejectedExecutionException e) {
          // closed meanwhile
        }
      }
    });
    lock.lock();
    try {
      if (connection != null && connection != c && connection.isOpen()) {
        connection.abort();
      }
      boolean reconnecting = connection != null;
      connection = c;
      gen = g;
      int n = unsent.size();
      if (reconnecting) {
        republished.addAndGet(n);
      }
      for (int i = 0; i < n; i++) {
        Pending p = unsent.pollFirst();
        send(g, p);
        if (gen != g) {
          break;
        }
      }
    } finally {
      lock.unlock();
    }
  }

  /** Reconnections so far; for tests and monitoring. */
  long recoveries() {
    return recoveries.get();
  }

  /**
   * Messages sent after a reconnect: unconfirmed ones taken back from the lost channel and those
   * published while disconnected. For tests and monitoring.
   */
  long republished() {
    return republished.get();
  }

  /** Messages published and not yet confirmed or failed. */
  public int unconfirmed() {
    return config.confirmWindow() - window.availablePermits();
  }

  /**
   * Stops taking messages, waits up to the close timeout for outstanding confirms, fails the rest
   * with {@link PublishException} and closes the connection.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    boolean drained = false;
    try {
      drained = window.tryAcquire(config.confirmWindow(), config.closeTimeout().toNanos(),
          TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    List<Pending> left = new ArrayList<>();
    Connection c;
    lock.lock();
    try {
      if (gen != null) {
        left.addAll(gen.pending.values());
        gen.pending.clear();
      }
      left.addAll(unsent);
      unsent.clear();
      gen = null;
      c = connection;
      connection = null;
    } finally {
      lock.unlock();
    }
    finish(left, p -> new PublishException("publisher closed before message " + p.messageId
        + " was confirmed"));
    if (drained) {
      window.release(config.confirmWindow());
    }
    scheduler.shutdownNow();
    completer.shutdown();
    try {
      if (c != null && c.isOpen()) {
        c.close(5_000);
      }
    } catch (IOException | ShutdownSignalException e) {
      LOG.log(System.Logger.Level.DEBUG, "closing the " + role + " connection failed", e);
    }
    try {
      completer.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** The broker-side name of this publisher's connection. */
  String connectionName() {
    return config.connectionName() + "-" + role;
  }

  Duration confirmTimeout() {
    return config.confirmTimeout();
  }

  static ThreadFactory daemon(String name) {
    return r -> {
      Thread t = new Thread(r, name);
      t.setDaemon(true);
      return t;
    };
  }

  /** One confirm channel and what it has not confirmed yet, by publish sequence number. */
  private static final class Gen {
    final Channel channel;
    final ConcurrentSkipListMap<Long, Pending> pending = new ConcurrentSkipListMap<>();

    Gen(Channel channel) {
      this.channel = channel;
    }
  }

  /** A message on its way: sent or waiting to be (re)sent, until confirmed or failed. */
  private static final class Pending {
    final String exchange;
    final String routingKey;
    final String destination;
    final String messageId;
    final String traceId;
    final String type;
    final long createdMillis;
    final Map<String, String> wire;
    final byte[] body;
    final CompletableFuture<PublishReceipt> future = new CompletableFuture<>();
    final AtomicBoolean finished = new AtomicBoolean();
    long deadlineNanos;
    int sends; // guarded by the publisher's lock
    volatile long seq;
    volatile String returned;
    RuntimeException failure; // written before its completion task is submitted

    Pending(String exchange, String routingKey, String destination, String messageId,
        String traceId, String type, long createdMillis, Map<String, String> wire, byte[] body) {
      this.exchange = exchange;
      this.routingKey = routingKey;
      this.destination = destination;
      this.messageId = messageId;
      this.traceId = traceId;
      this.type = type;
      this.createdMillis = createdMillis;
      this.wire = wire;
      this.body = body;
    }

    boolean isFinished() {
      return finished.get();
    }
  }
}
