package io.relaykit.transport.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ShutdownSignalException;
import io.relaykit.monitor.SubscriptionStatus;
import io.relaykit.monitor.SubscriptionStatusSource;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Reads the depth of RabbitMQ queues with a passive {@code queue.declare}: for each queue, the
 * messages ready for delivery and the consumers attached, as the operator console shows them per
 * subscription. A passive declare creates and changes nothing; a queue that does not exist is left
 * out of the answer and counted ({@link #missing()}).
 *
 * <p>What it cannot tell: messages delivered and not yet acknowledged. AMQP 0-9-1 reports only
 * ready messages in {@code declare-ok}; the unacknowledged count is in the management plugin's HTTP
 * API, which this reader does not use. {@link #read()} therefore reports in-flight as {@link
 * SubscriptionStatus#UNKNOWN} (this process's own subscriptions report theirs through {@link
 * io.relaykit.monitor.SubscriptionGauges}); the lag is the ready count of the group's work queue
 * (kind {@value #KIND}), not counting its delay queues (retries waiting for their time) or its
 * dead-letter queue.
 *
 * <p>Cost of one read: one channel open, one passive declare per queue (a round trip each, in
 * order; one more channel open after each missing queue, since the broker closes the channel on
 * it), one channel close, on one AMQP connection that the reader opens at its first read and keeps
 * until {@link #close()} (reopened after a failure). At most {@code maxQueues} queues (default
 * {@value #DEFAULT_MAX_QUEUES}), fixed at build time.
 *
 * <p>Failure: each read runs on the reader's own thread under one deadline ({@code timeout},
 * default 5 s) that the caller's wait never exceeds. An unreachable, stalled or refusing broker
 * makes {@link #read()} throw within about {@code timeout}: a {@link TimeoutException} when the
 * deadline passed (the connection is then aborted, so the next read connects afresh), an {@link
 * IOException} naming the broker or queue when the broker refused or the connection broke. No
 * figures of a failed read are returned; nothing is written to the broker, so a failed read leaves
 * no state behind on it. Reads of one reader run one at a time; a read waiting behind a stuck one
 * fails at its own deadline. Thread-safe.
 */
public final class RabbitMqQueueStatus implements SubscriptionStatusSource, AutoCloseable {

  /** The kind of every entry. */
  public static final String KIND = "rabbitmq-queue";
  /** Default bound on the queues of one reader. */
  public static final int DEFAULT_MAX_QUEUES = 100;
  /** Default deadline of one read. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(5);

  /**
   * One queue's depth as the broker reported it.
   *
   * @param queue the queue's name
   * @param destination the relaykit destination whose group queue it is, or the queue's name for
   *     a queue added by name
   * @param group the subscriber group, or null for a queue added by name
   * @param ready messages ready for delivery, {@code >= 0}
   * @param consumers consumers attached, {@code >= 0}
   * @param readAt when the read finished
   */
  public record QueueDepth(String queue, String destination, String group, long ready,
      int consumers, Instant readAt) {}

  private record Target(String queue, String destination, String group) {}

  private final RabbitMqTransportConfig config;
  private final List<Target> targets;
  private final Duration timeout;
  private final InstantSource clock;
  private final ExecutorService worker;
  /** Owned by the worker thread; aborted by a caller whose deadline passed. */
  private volatile Connections.Opened opened;
  private volatile int missing;
  private volatile boolean closed;

  private RabbitMqQueueStatus(Builder b) {
    this.config = b.config;
    this.targets = List.copyOf(b.targets.values());
    this.timeout = b.timeout;
    this.clock = b.clock;
    this.worker = Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "relaykit-rabbitmq-status");
      t.setDaemon(true);
      return t;
    });
  }

  /**
   * A builder for a reader on {@code config}'s broker (its URI, credentials and TLS, its topology's
   * name prefix for group queues).
   *
   * @param config the transport's configuration; not null
   * @return a builder
   * @throws IllegalArgumentException if {@code config} is null
   */
  public static Builder builder(RabbitMqTransportConfig config) {
    if (config == null) {
      throw new IllegalArgumentException("config must not be null");
    }
    return new Builder(config);
  }

  /**
   * The subscriptions' status: per queue, the ready messages as the lag, in-flight {@link
   * SubscriptionStatus#UNKNOWN}.
   *
   * @return one entry per queue that exists, in the order added
   * @throws TimeoutException if the read did not finish within {@code timeout}
   * @throws IOException if the broker refused the connection or a declare, or the connection broke
   * @throws InterruptedException if the calling thread was interrupted while waiting
   * @throws IllegalStateException if the reader is closed
   */
  @Override
  public List<SubscriptionStatus> read() throws IOException, TimeoutException,
      InterruptedException {
    List<SubscriptionStatus> out = new ArrayList<>();
    for (QueueDepth d : readQueues()) {
      out.add(new SubscriptionStatus(KIND, d.destination(), d.group(), d.ready(),
          SubscriptionStatus.UNKNOWN, d.readAt()));
    }
    return out;
  }

  /**
   * Each queue's ready messages and consumers, read now; see the class documentation for cost
   * and failures.
   *
   * @return one entry per queue that exists, in the order added
   * @throws TimeoutException if the read did not finish within {@code timeout}
   * @throws IOException if the broker refused the connection or a declare, or the connection broke
   * @throws InterruptedException if the calling thread was interrupted while waiting
   * @throws IllegalStateException if the reader is closed
   */
  public List<QueueDepth> readQueues() throws IOException, TimeoutException,
      InterruptedException {
    if (closed) {
      throw new IllegalStateException("the RabbitMQ queue status reader is closed");
    }
    long deadline = System.nanoTime() + timeout.toNanos();
    Future<List<QueueDepth>> f;
    try {
      f = worker.submit(() -> declareAll(deadline));
    } catch (RejectedExecutionException e) {
      throw new IllegalStateException("the RabbitMQ queue status reader is closed", e);
    }
    try {
      return f.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      f.cancel(true);
      abort();
      throw new TimeoutException("could not read queue depths from RabbitMQ at "
          + config.redactedUri() + " within " + timeout);
    } catch (InterruptedException e) {
      f.cancel(true);
      abort();
      Thread.currentThread().interrupt();
      throw e;
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (deadline - System.nanoTime() <= 0 || timedOut(cause)) {
        abort();
        TimeoutException t = new TimeoutException("could not read queue depths from RabbitMQ at "
            + config.redactedUri() + " within " + timeout);
        t.initCause(cause);
        throw t;
      }
      if (cause instanceof IOException io) {
        throw io;
      }
      if (cause instanceof TimeoutException t) {
        throw t;
      }
      throw new IOException("could not read queue depths from RabbitMQ at "
          + config.redactedUri() + ": " + cause, cause);
    }
  }

  /**
   * Queues named that did not exist at the latest successful read.
   *
   * @return how many were left out; 0 before the first read
   */
  public int missing() {
    return missing;
  }

  /**
   * Closes the connection and the reader's thread. A read running at the same time fails; later
   * reads throw {@link IllegalStateException}. Idempotent.
   */
  @Override
  public void close() {
    closed = true;
    worker.shutdownNow();
    abort();
  }

  @Override
  public String toString() {
    return "RabbitMqQueueStatus[" + config.redactedUri() + ", queues=" + targets.size()
        + ", timeout=" + timeout + "]";
  }

  /** On the worker thread: one channel, a passive declare per queue. */
  private List<QueueDepth> declareAll(long deadline) throws IOException, TimeoutException {
    List<long[]> figures = new ArrayList<>(targets.size());
    List<Target> found = new ArrayList<>(targets.size());
    Channel ch = null;
    try {
      for (Target t : targets) {
        if (deadline - System.nanoTime() <= 0 || Thread.currentThread().isInterrupted()) {
          throw new TimeoutException("could not read queue depths from RabbitMQ at "
              + config.redactedUri() + " within " + timeout);
        }
        if (ch == null || !ch.isOpen()) {
          ch = openChannel(deadline);
          if (ch == null) {
            throw new IOException("RabbitMQ at " + config.redactedUri()
                + " has no channel left for reading queue depths");
          }
        }
        try {
          AMQP.Queue.DeclareOk ok = ch.queueDeclarePassive(t.queue());
          figures.add(new long[] {ok.getMessageCount(), ok.getConsumerCount()});
          found.add(t);
        } catch (IOException e) {
          if (!notFound(e)) {
            throw new IOException("could not read the depth of queue " + t.queue()
                + " on RabbitMQ at " + config.redactedUri() + ": " + e.getMessage(), e);
          }
          ch = null; // the broker closed the channel on 404; the next queue opens another
        }
      }
    } catch (IOException | TimeoutException | RuntimeException e) {
      abort(); // a broken or timed-out connection is not reused
      throw e;
    } finally {
      if (ch != null && ch.isOpen()) {
        try {
          ch.close();
        } catch (IOException | TimeoutException | RuntimeException e) {
          // the figures are read; a channel that does not close goes with the connection
        }
      }
    }
    Instant at = clock.instant();
    List<QueueDepth> out = new ArrayList<>(found.size());
    for (int i = 0; i < found.size(); i++) {
      Target t = found.get(i);
      out.add(new QueueDepth(t.queue(), t.destination(), t.group(), figures.get(i)[0],
          (int) figures.get(i)[1], at));
    }
    missing = targets.size() - found.size();
    return out;
  }

  /** A channel on the reader's connection; a broken connection's error names the broker. */
  private Channel openChannel(long deadline) throws IOException {
    Connections.Opened o = connection(deadline);
    try {
      return o.connection().createChannel();
    } catch (IOException | RuntimeException e) {
      throw new IOException("could not open a channel on RabbitMQ at " + config.redactedUri()
          + " for reading queue depths: " + e, e);
    }
  }

  private Connections.Opened connection(long deadline) throws IOException {
    Connections.Opened o = opened;
    if (o != null && o.connection().isOpen()) {
      return o;
    }
    // RPCs may outlast the deadline by a margin: the caller's wait ends at the deadline, and a
    // timeout aborts the connection, which ends them.
    Duration left = Duration.ofNanos(Math.max(1_000_000, deadline - System.nanoTime()))
        .plusSeconds(1);
    o = Connections.openWithSocket(config, "status", left);
    opened = o;
    if (closed) {
      abort();
      throw new IOException("the RabbitMQ queue status reader is closed");
    }
    return o;
  }

  private void abort() {
    Connections.Opened o = opened;
    opened = null;
    if (o != null) {
      o.forceClose();
      o.connection().abort(1_000);
    }
  }

  /** Whether an RPC of the read ran out of time (amqp-client wraps its timeouts). */
  private static boolean timedOut(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof TimeoutException) {
        return true;
      }
    }
    return false;
  }

  private static boolean notFound(IOException e) {
    return e.getCause() instanceof ShutdownSignalException s
        && s.getReason() instanceof AMQP.Channel.Close close && close.getReplyCode() == 404;
  }

  /** Builds {@link RabbitMqQueueStatus}; {@link #build()} validates, naming the field and value. */
  public static final class Builder {
    private final RabbitMqTransportConfig config;
    private final RabbitMqTopology topology;
    private final Map<String, Target> targets = new LinkedHashMap<>();
    private int maxQueues = DEFAULT_MAX_QUEUES;
    private Duration timeout = DEFAULT_TIMEOUT;
    private InstantSource clock = InstantSource.system();

    private Builder(RabbitMqTransportConfig config) {
      this.config = config;
      this.topology = RabbitMqTopology.of(config);
    }

    /**
     * Reads the work queue of {@code group} on {@code destination}, as {@link RabbitMqSubscriber}
     * names it; its entries carry the destination and group. Adding one twice reads it once.
     *
     * @param destination the destination
     * @param group the subscriber group
     * @return this builder
     * @throws IllegalArgumentException if a name is invalid, as for {@link
     *     RabbitMqTopology#queues}
     */
    public Builder subscription(String destination, String group) {
      String queue = topology.queues(destination, group).queue();
      targets.putIfAbsent(queue, new Target(queue, destination, group));
      return this;
    }

    /**
     * Reads the queue named {@code queue}, of any application; its entries carry the queue's name
     * as the destination and no group.
     *
     * @param queue the queue's name, 1 to 255 characters, not blank
     * @return this builder
     * @throws IllegalArgumentException if the name is blank or longer than 255 characters
     */
    public Builder queue(String queue) {
      if (queue == null || queue.isBlank() || queue.length() > 255) {
        throw new IllegalArgumentException("queue must be 1 to 255 characters and not blank, was "
            + (queue == null ? null : "'" + queue + "'"));
      }
      targets.putIfAbsent(queue, new Target(queue, queue, null));
      return this;
    }

    /**
     * The most queues one reader reads. Default {@value #DEFAULT_MAX_QUEUES}.
     *
     * @param maxQueues the bound; checked (1 to 10 000, and at least the queues added) by {@link
     *     #build()}
     * @return this builder
     */
    public Builder maxQueues(int maxQueues) {
      this.maxQueues = maxQueues;
      return this;
    }

    /**
     * The deadline of one read, connecting included. Default 5 s.
     *
     * @param timeout the deadline; checked (positive, at most one hour) by {@link #build()}
     * @return this builder
     */
    public Builder timeout(Duration timeout) {
      this.timeout = timeout;
      return this;
    }

    /**
     * The clock of {@link SubscriptionStatus#readAt()}. Default: the system clock.
     *
     * @param clock the clock; checked (not null) by {@link #build()}
     * @return this builder
     */
    public Builder clock(InstantSource clock) {
      this.clock = clock;
      return this;
    }

    /**
     * Builds the reader; contacts no broker until the first read.
     *
     * @return the reader, owning one connection (once read) and one thread: close it
     * @throws IllegalArgumentException if no queue was added, more than {@code maxQueues} were,
     *     a bound or the timeout is out of range, or the clock is null
     */
    public RabbitMqQueueStatus build() {
      if (maxQueues < 1 || maxQueues > 10_000) {
        throw new IllegalArgumentException("maxQueues must be 1..10000, was " + maxQueues);
      }
      if (targets.isEmpty()) {
        throw new IllegalArgumentException("no queue to read: add a subscription or a queue");
      }
      if (targets.size() > maxQueues) {
        throw new IllegalArgumentException(targets.size() + " queues exceed maxQueues ("
            + maxQueues + ")");
      }
      if (timeout == null || timeout.isZero() || timeout.isNegative()
          || timeout.compareTo(Duration.ofHours(1)) > 0) {
        throw new IllegalArgumentException("timeout must be positive and at most 1 h, was "
            + timeout);
      }
      if (clock == null) {
        throw new IllegalArgumentException("clock must not be null");
      }
      return new RabbitMqQueueStatus(this);
    }
  }
}
