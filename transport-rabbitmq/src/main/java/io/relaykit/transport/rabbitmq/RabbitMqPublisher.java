package io.relaykit.transport.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.BlockedListener;
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
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
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
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
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
 * <p><b>A broker that stops reading.</b> amqp-client writes to the socket in the calling thread
 * under its channel locks, and such a write blocks for as long as the broker reads nothing (a
 * memory or disk alarm, a stalled network). So {@code publish} never writes: it hands the message
 * to the publisher's one writer thread and returns, and the writer alone writes to the connection
 * (exchange declarations included), without holding the publisher's lock. While the writer is
 * stuck every future still fails with a {@link PublishException} once its confirm timeout passed
 * ("was not sent" when it never reached the socket, "no confirm" when it did and may still
 * arrive), later calls still return, and {@link #close()} returns within twice the close timeout
 * (at most the close timeout plus {@value #CONNECTION_CLOSE_MILLIS} ms): if the connection does
 * not close in time, close() closes its socket under it. A writer stuck in a write resumes when the broker reads
 * again; the connection is not given up for a slow broker.
 *
 * <p><b>Blocked connection.</b> When the broker announces {@code connection.blocked} (a resource
 * alarm) the publisher fails fast instead of queueing behind it: every message not yet written and
 * every {@code publish} until {@code connection.unblocked} fails at once with a {@link
 * PublishException} quoting the broker's reason. Messages already written keep waiting for their
 * confirm (the broker confirms them once the alarm clears) up to the confirm timeout.
 *
 * <p><b>Connection loss.</b> The publisher reconnects by itself (every recovery interval) and
 * republishes, in their original order, every message that was not confirmed: at-least-once, so a
 * message may reach the broker twice. A message still unconfirmed after the confirm timeout fails;
 * one whose publish broke a channel five times fails with the broker's reason.
 *
 * <p>Costs one connection (with amqp-client's reader thread), one channel and four daemon threads
 * (writer, timer, recovery, completer); one hand-off to the writer per message. Thread-safe.
 */
public final class RabbitMqPublisher implements Publisher {

  private static final System.Logger LOG = System.getLogger(RabbitMqPublisher.class.getName());
  private static final int MAX_SENDS = 5;
  private static final String DEFAULT_EXCHANGE = "";
  /** Messages the writer takes per turn of its lock. */
  private static final int WRITE_BATCH = 256;
  /** How long close() waits for the connection to close after the confirms (bounded anyway). */
  static final int CONNECTION_CLOSE_MILLIS = 5_000;

  private final RabbitMqTransportConfig config;
  private final RabbitMqTopology topology;
  private final LifecycleListener listener;
  private final InstantSource clock;
  private final String role;
  private final Semaphore window;
  private final long timeoutNanos;
  /** Guards the fields below; never held while writing to or waiting on the broker. */
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition writable = lock.newCondition();
  /** Not yet written (or taken back from a lost channel), in publish order. */
  private final TreeMap<Long, Pending> unsent = new TreeMap<>();
  private long nextOrder; // guarded by lock
  private Connections.Opened connection; // guarded by lock
  private Gen gen; // guarded by lock; null while disconnected
  private String lastLoss = "none"; // guarded by lock
  /** Non-null while the broker blocks the connection; written under the lock, read without. */
  private volatile String blockedReason;
  private boolean stopped; // guarded by lock: the writer is to exit
  private volatile boolean closed;
  private final Set<String> declaredExchanges = ConcurrentHashMap.newKeySet();
  private final ScheduledExecutorService timer;
  private final ScheduledExecutorService recovery;
  private final ExecutorService completer;
  private final Thread writer;
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
    this.timer = Executors.newSingleThreadScheduledExecutor(daemon("relaykit-rabbitmq-"
        + role + "-timer"));
    this.recovery = Executors.newSingleThreadScheduledExecutor(daemon("relaykit-rabbitmq-"
        + role + "-recovery"));
    this.completer = Executors.newSingleThreadExecutor(daemon("relaykit-rabbitmq-" + role
        + "-confirms"));
    this.writer = daemon("relaykit-rabbitmq-" + role + "-writer").newThread(this::writeLoop);
  }

  /**
   * Connects to the broker in {@code config}.
   *
   * @param config the broker settings
   * @return the connected publisher
   * @throws UncheckedIOException naming the broker and how to start it, if it is unreachable
   */
  public static RabbitMqPublisher create(RabbitMqTransportConfig config) {
    return create(config, LifecycleListener.noop(), InstantSource.system());
  }

  /**
   * Like {@link #create(RabbitMqTransportConfig)}, reporting PUBLISHED and CONFIRMED events.
   *
   * @param config the broker settings
   * @param listener receives the PUBLISHED and CONFIRMED events
   * @param clock dates the events
   * @return the connected publisher
   */
  public static RabbitMqPublisher create(RabbitMqTransportConfig config,
      LifecycleListener listener, InstantSource clock) {
    RabbitMqClientVersion.check();
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
    } catch (IOException | RuntimeException e) {
      p.timer.shutdownNow();
      p.recovery.shutdownNow();
      p.completer.shutdownNow();
      if (e instanceof RuntimeException re) {
        throw re;
      }
      throw new UncheckedIOException(e.getMessage(), (IOException) e);
    }
    p.writer.start();
    long period = Math.max(10, Math.min(1_000, config.confirmTimeout().toMillis() / 10));
    p.timer.scheduleWithFixedDelay(p::failOverdue, period, period, TimeUnit.MILLISECONDS);
    return p;
  }

  /**
   * Publishes {@code message} to the exchange of {@code destination}, declaring the exchange on
   * first use. Blocks while the confirm window is full (at most the confirm timeout); never
   * writes to the socket itself. Fails at once while the broker blocks the connection. A message
   * whose id, type, key, or a header name or value holds an unpaired surrogate (no UTF-8 form:
   * the wire would carry '?', and two such ids would arrive as one) fails at once with {@link
   * MessageRejectedException} naming the header; so does one whose key (the routing key) or a
   * header name is longer than 255 UTF-8 bytes. An id or type longer than that travels in the headers only (the
   * message-id and type properties cannot hold it).
   *
   * @throws IllegalArgumentException if {@code destination} is not a valid destination name or
   *     {@code message} is null
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
    for (Map.Entry<String, String> h : wire.entrySet()) {
      // amqp-client writes an unpaired surrogate as '?': two ids (keys, values) differing only
      // there would reach every consumer as one.
      int at = io.relaykit.internal.Utf8.firstUnpairedSurrogate(h.getKey());
      int valueAt = io.relaykit.internal.Utf8.firstUnpairedSurrogate(h.getValue());
      if (AmqpHeaders.utf8Length(h.getKey()) > AmqpHeaders.MAX_SHORT_STRING_BYTES) {
        // A header table's field names are short strings: amqp-client refuses to encode it.
        return CompletableFuture.failedFuture(new MessageRejectedException("header "
            + h.getKey().substring(0, 32) + "... has a name of "
            + AmqpHeaders.utf8Length(h.getKey()) + " UTF-8 bytes, more than the "
            + AmqpHeaders.MAX_SHORT_STRING_BYTES + " AMQP allows"));
      }
      if (at >= 0 || valueAt >= 0) {
        return CompletableFuture.failedFuture(new MessageRejectedException("header "
            + h.getKey().replaceAll("\\p{Cs}", "?") + (at >= 0 ? " (its name)" : "")
            + " holds an unpaired surrogate at index " + (at >= 0 ? at : valueAt)
            + ": it has no UTF-8 form, and the broker would carry it as '?'"));
      }
    }
    if (message.key().isPresent()
        && AmqpHeaders.utf8Length(message.key().get()) > AmqpHeaders.MAX_SHORT_STRING_BYTES) {
      // The routing key: amqp-client refuses to encode it, and every write would fail.
      return CompletableFuture.failedFuture(new MessageRejectedException("message "
          + message.id() + ": its key is " + AmqpHeaders.utf8Length(message.key().get())
          + " UTF-8 bytes, more than the " + AmqpHeaders.MAX_SHORT_STRING_BYTES
          + " of an AMQP routing key"));
    }
    long size = message.payloadSize() + AmqpHeaders.estimatedSize(wire);
    if (size > config.maxMessageBytes()) {
      return CompletableFuture.failedFuture(new MessageRejectedException("message "
          + message.id() + " is about " + size + " bytes encoded; the limit is "
          + config.maxMessageBytes() + " (maxMessageBytes)"));
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
    return publishToQueue(queue, wire, body, wire.getOrDefault(MessageHeaders.ID, "unknown"),
        clock.millis());
  }

  /** Like {@link #publishToQueue(String, Map, byte[])} with the message id and timestamp given. */
  CompletableFuture<PublishReceipt> publishToQueue(String queue, Map<String, String> wire,
      byte[] body, String messageId, long timestampMillis) {
    if (closed) {
      return CompletableFuture.failedFuture(new PublishException("publisher is closed"));
    }
    return enqueue(new Pending(DEFAULT_EXCHANGE, queue, queue, messageId,
        wire.get(MessageHeaders.TRACE_ID), wire.get(MessageHeaders.TYPE), timestampMillis, wire,
        body));
  }

  private CompletableFuture<PublishReceipt> enqueue(Pending p) {
    String blocked = blockedReason; // the fast path; checked again under the lock below
    if (blocked != null) {
      return CompletableFuture.failedFuture(blockedFailure(p, blocked));
    }
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
    p.deadlineNanos = System.nanoTime() + timeoutNanos;
    lock.lock();
    try {
      if (closed) {
        // close() may have collected what was left before this lock: nothing would finish p.
        window.release();
        return CompletableFuture.failedFuture(new PublishException("publisher is closed"));
      }
      if (blockedReason != null) {
        window.release();
        return CompletableFuture.failedFuture(blockedFailure(p, blockedReason));
      }
      p.order = nextOrder++;
      unsent.put(p.order, p);
      writable.signal();
    } finally {
      lock.unlock();
    }
    return p.future;
  }

  private PublishException blockedFailure(Pending p, String reason) {
    return new PublishException("RabbitMQ blocked the " + role + " connection (" + reason
        + "): message " + p.messageId + " was not sent; publish again after the broker's alarm"
        + " clears");
  }

  /**
   * The writer thread: the only one that writes to the connection, so publish sequence numbers
   * follow the write order and no caller waits on the socket. It takes up to {@value
   * #WRITE_BATCH} messages per turn of the lock, moving them from unsent into the channel's
   * pending map with the sequence numbers their writes will get, and writes them without the
   * lock. Every message is at all times in unsent or in a pending map (where the timer can fail
   * it), or being written.
   */
  private void writeLoop() {
    List<Pending> batch = new ArrayList<>(WRITE_BATCH);
    List<Pending> tooOften = new ArrayList<>();
    while (true) {
      Gen g;
      Pending undeclared = null;
      lock.lock();
      try {
        while (!stopped && (gen == null || blockedReason != null || unsent.isEmpty())) {
          writable.await();
        }
        if (stopped) {
          return;
        }
        g = gen;
        long seq = g.channel.getNextPublishSeqNo();
        while (batch.size() < WRITE_BATCH && !unsent.isEmpty()) {
          Pending p = unsent.firstEntry().getValue();
          if (!p.exchange.isEmpty() && !declaredExchanges.contains(p.exchange)) {
            if (batch.isEmpty()) {
              undeclared = p; // stays in unsent while declared: its timeout still runs
            }
            break;
          }
          unsent.pollFirstEntry();
          if (++p.sends > MAX_SENDS) {
            tooOften.add(p);
            continue;
          }
          p.seq = seq++;
          g.pending.put(p.seq, p);
          batch.add(p);
        }
      } catch (InterruptedException e) {
        return; // close() stops the writer; it fails what is left
      } finally {
        lock.unlock();
      }
      if (!tooOften.isEmpty()) {
        String loss = lastLossText();
        finish(tooOften, p -> new PublishException("gave up on message " + p.messageId
            + " after " + MAX_SENDS + " attempts to publish it; last channel loss: " + loss));
        tooOften.clear();
      }
      if (undeclared != null) {
        declare(g, undeclared);
      } else {
        write(g, batch);
      }
      batch.clear();
    }
  }

  /** Declares {@code p}'s exchange on {@code g}'s connection; fails p if that is refused. */
  private void declare(Gen g, Pending p) {
    RuntimeException failure = null;
    try {
      topology.declareExchange(g.opened.connection(), p.destination);
      declaredExchanges.add(p.exchange);
    } catch (TopologyConflictException e) {
      failure = new MessageRejectedException(e.getMessage(), e);
    } catch (IOException | RuntimeException e) {
      if (!g.channel.isOpen() || !g.opened.connection().isOpen()) {
        // The connection went away: p is declared and sent after the reconnect.
        writeFailed(g, e);
        return;
      }
      failure = new PublishException("could not declare exchange " + p.exchange + ": "
          + e.getMessage(), e);
    }
    if (failure != null) {
      lock.lock();
      try {
        unsent.remove(p.order, p);
      } finally {
        lock.unlock();
      }
      finish(p, failure);
    }
  }

  /** Writes {@code batch} (in g's pending map already) on {@code g}'s channel, without the lock. */
  private void write(Gen g, List<Pending> batch) {
    boolean shifted = false; // a skipped message left its sequence number unused
    for (Pending p : batch) {
      if (p.isFinished() || !p.claimWrite()) {
        g.pending.remove(p.seq, p); // failed (as not sent) before its write: never written
        shifted = true;
        continue;
      }
      if (shifted) {
        if (!renumber(g, p)) {
          return; // g was retired meanwhile: the rest went back to unsent
        }
        if (p.isFinished()) {
          continue; // failed meanwhile ("no confirm"): no need to write it
        }
      }
      try {
        g.channel.basicPublish(p.exchange, p.routingKey, true,
            AmqpHeaders.properties(p.messageId, p.type, p.createdMillis, p.wire, p.seq), p.body);
      } catch (IOException | RuntimeException e) {
        // The channel or the connection is going away, or the socket failed under the write
        // (maybe half written): everything of g not confirmed goes back to unsent.
        writeFailed(g, e);
        return;
      }
      if (p.sends == 1 && p.traceId != null) {
        event(LifecycleEvent.Stage.PUBLISHED, p, p.exchange.isEmpty() ? p.routingKey : p.exchange);
      }
    }
  }

  /**
   * Gives {@code p} the sequence number its write will get, after a message before it in the
   * batch was skipped. Under the lock, so that a retire sees p under one number or the other.
   * Returns false if g is no longer current.
   */
  private boolean renumber(Gen g, Pending p) {
    lock.lock();
    try {
      if (gen != g) {
        return false;
      }
      long next = g.channel.getNextPublishSeqNo();
      if (p.seq != next && g.pending.remove(p.seq, p)) {
        p.seq = next;
        g.pending.put(next, p);
      }
      return true;
    } finally {
      lock.unlock();
    }
  }

  /**
   * A write or declaration on {@code g} failed: the channel or connection is going away, or the
   * socket failed under a write, which may have left a message half written. Unless the channel's
   * shutdown listener got there first, takes g out of service and reopens the connection.
   */
  private void writeFailed(Gen g, Exception cause) {
    boolean retired;
    lock.lock();
    try {
      retired = retire(g, "write failed: " + cause);
    } finally {
      lock.unlock();
    }
    if (retired) {
      LOG.log(System.Logger.Level.WARNING, "RabbitMQ " + role + " write failed (" + cause
          + "); reconnecting");
      try {
        recovery.execute(() -> {
          abortQuietly(g.opened, "write failed");
          reconnect();
        });
      } catch (RejectedExecutionException closing) {
        // closed meanwhile: close() fails what is left
      }
    }
  }

  /**
   * Takes {@code g} out of service if it still is current: its unconfirmed messages go back to
   * unsent in publish order. Must hold the lock. Returns whether it was current.
   */
  private boolean retire(Gen g, String cause) {
    if (gen != g) {
      drainInto(g);
      return false;
    }
    gen = null;
    lastLoss = cause;
    drainInto(g);
    return true;
  }

  /** Moves what {@code g} has not confirmed back to unsent; must hold the lock. */
  private void drainInto(Gen g) {
    Map.Entry<Long, Pending> e;
    while ((e = g.pending.pollFirstEntry()) != null) {
      if (!e.getValue().isFinished()) {
        unsent.put(e.getValue().order, e.getValue());
      }
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
    List<Pending> unconfirmed = new ArrayList<>();
    List<Pending> notWritten = new ArrayList<>();
    String loss;
    lock.lock();
    try {
      if (gen != null) {
        for (Iterator<Pending> it = gen.pending.values().iterator(); it.hasNext(); ) {
          Pending p = it.next();
          if (now - p.deadlineNanos >= 0) {
            it.remove();
            (p.claimNotSent() ? notWritten : unconfirmed).add(p);
          }
        }
      }
      for (Iterator<Pending> it = unsent.values().iterator(); it.hasNext(); ) {
        Pending p = it.next();
        if (now - p.deadlineNanos >= 0) {
          it.remove();
          (p.claimNotSent() ? notWritten : unconfirmed).add(p);
        }
      }
      loss = lastLoss;
    } finally {
      lock.unlock();
    }
    finish(unconfirmed, p -> new PublishException("no confirm for message " + p.messageId
        + " on " + p.destination + " within " + config.confirmTimeout()
        + " (last connection loss: " + loss + ")"));
    finish(notWritten, p -> new PublishException("message " + p.messageId + " on "
        + p.destination + " was not sent: it could not be written to RabbitMQ within "
        + config.confirmTimeout() + " (the connection takes no data: a broker that stopped"
        + " reading, a stalled network; last connection loss: " + loss + ")"));
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
    int waiting;
    lock.lock();
    try {
      if (!retire(g, String.valueOf(cause.getMessage()))) {
        return;
      }
      waiting = unsent.size();
    } finally {
      lock.unlock();
    }
    LOG.log(System.Logger.Level.WARNING, "RabbitMQ " + role + " channel lost ("
        + cause.getMessage() + "); " + waiting + " unconfirmed messages will be "
        + "republished after reconnecting");
    reconnect();
  }

  private void reconnect() {
    if (closed) {
      return;
    }
    lock.lock();
    try {
      if (gen != null) {
        return; // connected already
      }
    } finally {
      lock.unlock();
    }
    try {
      connectNow();
      recoveries.incrementAndGet();
    } catch (IOException | RuntimeException e) {
      LOG.log(System.Logger.Level.DEBUG, "RabbitMQ " + role + " reconnect failed; retrying", e);
      try {
        recovery.schedule(this::reconnect, config.recoveryInterval().toMillis(),
            TimeUnit.MILLISECONDS);
      } catch (RejectedExecutionException closing) {
        // closed meanwhile: close() fails what is left
      }
    }
  }

  /**
   * Broker resource alarms on {@code c}: while blocked, what is not written yet fails now and
   * later publishes fail at once (see the class comment).
   */
  private void blocked(Connection c, String reason) {
    String why = reason == null || reason.isBlank() ? "no reason given" : reason;
    List<Pending> failed = new ArrayList<>();
    lock.lock();
    try {
      if (connection == null || connection.connection() != c || closed) {
        return;
      }
      blockedReason = why;
      // What never reached the socket fails now; what was written once (taken back from a lost
      // channel) may be on the broker already: it waits for its confirm timeout.
      for (Iterator<Pending> it = unsent.values().iterator(); it.hasNext(); ) {
        Pending p = it.next();
        if (p.claimNotSent()) {
          it.remove();
          failed.add(p);
        }
      }
    } finally {
      lock.unlock();
    }
    LOG.log(System.Logger.Level.WARNING, "RabbitMQ blocked the " + role + " connection ("
        + why + "); publishes fail until it is unblocked");
    finish(failed, p -> blockedFailure(p, why));
  }

  private void unblocked(Connection c) {
    lock.lock();
    try {
      if (connection == null || connection.connection() != c) {
        return;
      }
      blockedReason = null;
      writable.signalAll();
    } finally {
      lock.unlock();
    }
    LOG.log(System.Logger.Level.INFO, "RabbitMQ unblocked the " + role + " connection");
  }

  /** Opens a connection if needed and a confirm channel, then lets the writer send what waits. */
  private void connectNow() throws IOException {
    Connections.Opened o;
    lock.lock();
    try {
      o = connection;
    } finally {
      lock.unlock();
    }
    boolean fresh = o == null || !o.connection().isOpen();
    if (fresh) {
      // Opening takes a network round trip or a timeout: not under the lock.
      o = Connections.openWithSocket(config, role, config.confirmTimeout());
      Connection opened = o.connection();
      opened.addBlockedListener(new BlockedListener() {
        @Override
        public void handleBlocked(String reason) {
          blocked(opened, reason);
        }

        @Override
        public void handleUnblocked() {
          unblocked(opened);
        }
      });
    }
    Connection c = o.connection();
    Channel channel;
    try {
      channel = c.createChannel();
      if (channel == null) {
        throw new IOException("no channel available on the " + role + " connection");
      }
      channel.confirmSelect();
    } catch (IOException | RuntimeException e) {
      if (fresh) {
        abortQuietly(o, "could not open a confirm channel");
      }
      throw e;
    }
    Gen g = new Gen(o, channel);
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
          recovery.execute(() -> lost(g, cause));
        } catch (RejectedExecutionException e) {
          // closed meanwhile
        }
      }
    });
    Connections.Opened replaced = null;
    boolean discard = false;
    lock.lock();
    try {
      if (stopped) {
        replaced = o;
      } else if (gen != null) {
        // Connected by another path meanwhile; a second live channel would strand its messages.
        discard = true;
        if (o != connection) {
          replaced = o;
        }
      } else {
        if (connection != null && connection != o) {
          replaced = connection;
        }
        boolean reconnecting = connection != null;
        if (connection != o) {
          blockedReason = null; // a new connection starts unblocked; the broker says otherwise
        }
        connection = o;
        gen = g;
        if (reconnecting) {
          republished.addAndGet(unsent.size());
        }
        writable.signalAll();
      }
    } finally {
      lock.unlock();
    }
    if (discard) {
      try {
        channel.abort();
      } catch (IOException | RuntimeException e) {
        // it goes away with its connection at the latest
      }
    }
    if (replaced != null) {
      abortQuietly(replaced, "replaced");
    }
  }

  /**
   * Discards a connection: closes its socket first (its close frame could queue behind a write
   * that never ends), then lets amqp-client shut it down.
   */
  private void abortQuietly(Connections.Opened o, String why) {
    o.forceClose();
    try {
      o.connection().abort(AMQP.REPLY_SUCCESS, why, CONNECTION_CLOSE_MILLIS);
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.DEBUG, "aborting the " + role + " connection failed", e);
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

  /**
   * The publisher's state in one line, for failure messages of tests and for debugging: the
   * current channel, what waits to be written and what waits for a confirm, the free window, the
   * writer thread's state.
   */
  String describe() {
    StringBuilder b = new StringBuilder("RabbitMqPublisher[").append(role).append(": ");
    lock.lock();
    try {
      if (gen == null) {
        b.append("disconnected");
      } else {
        b.append("channel ").append(gen.channel.getChannelNumber())
            .append(gen.channel.isOpen() ? " open" : " closed")
            .append(", connection ").append(gen.opened.connection().isOpen() ? "open" : "closed")
            .append(", awaiting confirm ").append(gen.pending.size())
            .append(" (next seq ").append(gen.channel.getNextPublishSeqNo()).append(')');
      }
      b.append(", unsent ").append(unsent.size())
          .append(", blocked ").append(blockedReason)
          .append(", stopped ").append(stopped)
          .append(", last loss: ").append(lastLoss);
    } finally {
      lock.unlock();
    }
    b.append(", window free ").append(window.availablePermits()).append('/')
        .append(config.confirmWindow())
        .append(", waiting for window ").append(window.getQueueLength())
        .append(", recoveries ").append(recoveries.get())
        .append(", republished ").append(republished.get())
        .append(", writer ").append(writer.getState()).append(']');
    return b.toString();
  }

  /**
   * Messages published and not yet confirmed or failed.
   *
   * @return the count, between 0 and the confirm window
   */
  public int unconfirmed() {
    return config.confirmWindow() - window.availablePermits();
  }

  /**
   * Stops taking messages, waits up to the close timeout for outstanding confirms, fails the rest
   * with {@link PublishException} and closes the connection, waiting for that at most the close
   * timeout again, capped at {@value #CONNECTION_CLOSE_MILLIS} ms (a broker that reads nothing
   * cannot answer the close; its socket is then closed under it): returns within twice the close
   * timeout (at most the close timeout plus 5 s), whatever the broker does.
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
    Connections.Opened c;
    lock.lock();
    try {
      stopped = true;
      writable.signalAll();
      if (gen != null) {
        drainInto(gen);
      }
      left.addAll(unsent.values());
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
    timer.shutdownNow();
    recovery.shutdownNow();
    completer.shutdown();
    if (c != null) {
      // A graceful close writes close and waits for close-ok; behind a write that never ends it
      // would wait without end, so it runs on another thread and the socket is closed under it
      // when it does not finish in time.
      Connections.Opened closing = c;
      Thread t = daemon("relaykit-rabbitmq-" + role + "-close").newThread(() -> {
        try {
          if (closing.connection().isOpen()) {
            closing.connection().close(CONNECTION_CLOSE_MILLIS);
          }
        } catch (IOException | RuntimeException e) {
          LOG.log(System.Logger.Level.DEBUG, "closing the " + role + " connection failed", e);
        }
      });
      t.start();
      join(t, Math.min(CONNECTION_CLOSE_MILLIS, config.closeTimeout().toMillis()));
      if (t.isAlive()) {
        abortQuietly(closing, "close timed out");
      }
    }
    join(writer, 500);
    try {
      completer.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static void join(Thread t, long millis) {
    try {
      t.join(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** The current confirm channel, for tests (they inject broker confirms into it); or null. */
  Channel channel() {
    lock.lock();
    try {
      return gen == null ? null : gen.channel;
    } finally {
      lock.unlock();
    }
  }

  /** The current connection, for tests (they inject broker control commands into it). */
  Connection connection() {
    lock.lock();
    try {
      return connection == null ? null : connection.connection();
    } finally {
      lock.unlock();
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
    final Connections.Opened opened;
    final Channel channel;
    final ConcurrentSkipListMap<Long, Pending> pending = new ConcurrentSkipListMap<>();

    Gen(Connections.Opened opened, Channel channel) {
      this.opened = opened;
      this.channel = channel;
    }
  }

  /** A message on its way: sent or waiting to be (re)sent, until confirmed or failed. */
  private static final class Pending {
    static final int NEW = 0;
    static final int WRITTEN = 1;
    static final int NOT_SENT = 2;

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
    long order; // set under the publisher's lock before the writer can see it
    int sends; // guarded by the publisher's lock
    /** NEW until the writer claims it (WRITTEN) or it fails before that (NOT_SENT). */
    final AtomicInteger sent = new AtomicInteger(NEW);
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

    /** The writer's claim before the first write; false if it was failed as not sent. */
    boolean claimWrite() {
      return sent.get() == WRITTEN || sent.compareAndSet(NEW, WRITTEN);
    }

    /** Whether it never reached the socket and never will: its failure may say "not sent". */
    boolean claimNotSent() {
      return sent.get() == NOT_SENT || sent.compareAndSet(NEW, NOT_SENT);
    }
  }
}
