package io.relaykit.inprocess;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterLog;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.deadletter.FailureRoute;
import io.relaykit.deadletter.InMemoryDeadLetterStore;
import io.relaykit.internal.Checks;
import io.relaykit.message.Delivery;
import io.relaykit.message.InboundMapping;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHandler;
import io.relaykit.message.PublishException;
import io.relaykit.message.PublishReceipt;
import io.relaykit.message.Publisher;
import io.relaykit.message.Subscriber;
import io.relaykit.message.Subscription;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.ordering.OrderingMode;
import io.relaykit.retry.RetryPolicy;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The embedded transport: a {@link Publisher} and {@link Subscriber} inside one JVM, for tests, the
 * demo and single-process deployments. It keeps every promise of the two SPIs except surviving the
 * process: messages live in memory.
 *
 * <ul>
 *   <li>Publish appends the message to its destination's log; the confirm is complete when the
 *       method returns. Each consumer group sees every message (a group subscribing late starts at
 *       the oldest message still held); members of one group share them. A destination holds a
 *       message until every group has taken it, and everything while no group exists.
 *   <li>Ordering: KEY runs one message per key at a time, in publish order (keyless messages are
 *       unordered); PARTITION runs one message of the destination at a time per group; UNORDERED
 *       runs any. A message waiting for a retry holds back its key (KEY) or its destination
 *       (PARTITION), nothing else.
 *   <li>At most {@code concurrency} handlers run per subscription, and a group takes at most the
 *       sum of its members' {@code maxInFlight} messages off the log before they finish; messages
 *       held back behind a key waiting for a retry do not count (up to four times that sum of
 *       them may wait), so a hot failing key does not stop the other keys.
 *   <li>A handler's normal return acknowledges. A failure, or a handler running past its timeout,
 *       is routed by {@link FailureRoute} (the spec's {@link RetryPolicy}): retry after the delay,
 *       or dead-letter to the {@link DeadLetterStore} with reason, exception (its text bounded),
 *       attempts and first and last failure times, as on every other transport. A
 *       message past its {@code expiresAt} is not delivered: it is reported EXPIRED and dropped.
 *   <li>Every step is reported to the {@link LifecycleListener} with the message's trace id.
 * </ul>
 *
 * <p>Timestamps (events, failure times, expiry) come from the injected {@link InstantSource}; retry
 * delays and handler timeouts run in real time on one scheduler thread. Handlers run on one cached
 * thread pool per subscription; a handler that ignores interruption after its timeout keeps its
 * thread until it returns, and its late result is ignored. Costs: publish and each delivery step
 * are O(1) amortized under a per-destination lock (O(k) for k groups on publish); memory grows with
 * messages not yet taken by every group.
 */
public final class InProcessTransport implements Publisher, Subscriber {

  private static final System.Logger LOG = System.getLogger(InProcessTransport.class.getName());

  private final InstantSource clock;
  private final DeadLetterStore deadLetters;
  private final LifecycleListener listener;
  private final MetricsListener metrics;
  private final Duration closeTimeout;
  private final ScheduledThreadPoolExecutor scheduler;
  private final ConcurrentHashMap<String, Topic> topics = new ConcurrentHashMap<>();
  private final Set<Member> members = ConcurrentHashMap.newKeySet();
  private final AtomicInteger threadIds = new AtomicInteger();
  private volatile boolean closed;

  private InProcessTransport(Builder b) {
    this.clock = b.clock;
    this.deadLetters = b.deadLetters;
    this.listener = b.listener;
    this.metrics = b.metrics;
    this.closeTimeout = b.closeTimeout;
    this.scheduler = new ScheduledThreadPoolExecutor(1, daemon("relaykit-inprocess-scheduler"));
    this.scheduler.setRemoveOnCancelPolicy(true);
  }

  /**
   * A transport on the system clock, with an in-memory dead-letter store and no listener.
   *
   * @return a new transport with every default of {@link #builder()}
   */
  public static InProcessTransport create() {
    return builder().build();
  }

  /**
   * A builder holding the defaults of {@link #create()}.
   *
   * @return a new builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Where messages that gave up are stored.
   *
   * @return the dead-letter store given to the builder, or the in-memory one it created
   */
  public DeadLetterStore deadLetters() {
    return deadLetters;
  }

  /**
   * The OpenTelemetry messaging system name.
   *
   * @return {@code "relaykit-inprocess"}
   */
  @Override
  public String messagingSystem() {
    return "relaykit-inprocess";
  }

  @Override
  public CompletableFuture<PublishReceipt> publish(String destination, Message message) {
    Checks.requireNonBlank("destination", destination);
    Checks.requireNonNull("message", message);
    if (closed) {
      return CompletableFuture.failedFuture(new PublishException("transport is closed: message "
          + message.id() + " was not published to " + destination));
    }
    event(LifecycleEvent.Stage.PUBLISHED, message, destination, "");
    long offset = topic(destination).append(message);
    return CompletableFuture.completedFuture(
        new PublishReceipt(message.id(), destination, destination + "@" + offset));
  }

  /**
   * @throws IllegalArgumentException if the spec or handler is null, or the group already consumes
   *     the destination with another ordering mode
   * @throws IllegalStateException if the transport is closed
   */
  @Override
  public Subscription subscribe(SubscriptionSpec spec, MessageHandler handler) {
    Checks.requireNonNull("spec", spec);
    Checks.requireNonNull("handler", handler);
    if (closed) {
      throw new IllegalStateException("transport is closed");
    }
    return topic(spec.destination()).subscribe(spec, handler);
  }

  /**
   * Stops accepting publishes, closes every subscription (draining each up to the close timeout)
   * and stops the scheduler. Idempotent.
   */
  @Override
  public void close() {
    closed = true;
    for (Member m : List.copyOf(members)) {
      m.close(closeTimeout);
    }
    scheduler.shutdownNow();
  }

  private Topic topic(String destination) {
    return topics.computeIfAbsent(destination, Topic::new);
  }

  private void event(LifecycleEvent.Stage stage, Message m, String where, String detail) {
    LifecycleListener.safely(listener,
        new LifecycleEvent(stage, m.id(), m.traceId(), where, clock.instant(), detail));
  }

  private ThreadFactory daemon(String prefix) {
    return r -> {
      Thread t = new Thread(r, prefix + "-" + threadIds.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }

  /*
   * Implementation notes. Everything about one destination (its log, its groups, their queues and
   * members) is guarded by the destination's lock; handler calls, dead-letter store calls and the
   * scheduler run outside it. An item (one message inside one group) is READY (in the group's
   * runnable queue), RUNNING (a handler has it), WAITING (a retry is scheduled) or gone. Each run
   * carries a run id, so a finish that arrives after a timeout or a forced close is ignored. In KEY
   * and PARTITION modes only the head of an order key's queue is ever runnable: a later item of the
   * key becomes runnable when the head is acknowledged, dead-lettered or expired.
   */

  private enum State { READY, RUNNING, WAITING, DEAD_LETTERING }

  /** Items that may be parked behind keys waiting for a retry, per unit of the in-flight bound. */
  static final int PARKED_PER_IN_FLIGHT = 4;

  private static final class Item {
    final Message message;
    final String orderKey;
    State state = State.READY;
    int attempt = 1;
    int runId;
    Instant firstFailureAt;
    Member runner;
    ScheduledFuture<?> timeout;
    Future<?> execution;

    Item(Message message, String orderKey) {
      this.message = message;
      this.orderKey = orderKey;
    }
  }

  private static final class Group {
    final String name;
    final OrderingMode ordering;
    long cursor;
    int inFlight;
    final ArrayDeque<Item> runnable = new ArrayDeque<>();
    final Map<String, ArrayDeque<Item>> byKey = new HashMap<>();
    /** Order keys whose head waits for a retry: the items behind it are parked. */
    final java.util.Set<String> waitingKeys = new java.util.HashSet<>();
    final List<Member> members = new ArrayList<>();
    int nextMember;

    Group(String name, OrderingMode ordering, long cursor) {
      this.name = name;
      this.ordering = ordering;
      this.cursor = cursor;
    }

    /** Items queued behind a head that waits for a retry. O(keys waiting). */
    int parked() {
      int n = 0;
      for (String key : waitingKeys) {
        ArrayDeque<Item> queue = byKey.get(key);
        n += queue == null ? 0 : queue.size() - 1;
      }
      return n;
    }

    int bound() {
      int sum = 0;
      for (Member m : members) {
        sum += m.spec.maxInFlight();
      }
      return sum;
    }

    String orderKey(Message m) {
      switch (ordering) {
        case KEY:
          return m.key().orElse(null);
        case PARTITION:
          return "";
        default:
          return null;
      }
    }
  }

  private final class Topic {
    final String name;
    final ReentrantLock lock = new ReentrantLock();
    /** Messages from {@code base} on; a prefix already taken by every group may linger. */
    final ArrayList<Message> log = new ArrayList<>();
    long base;
    final Map<String, Group> groups = new HashMap<>();

    Topic(String name) {
      this.name = name;
    }

    long append(Message message) {
      lock.lock();
      try {
        long offset = base + log.size();
        log.add(message);
        event(LifecycleEvent.Stage.CONFIRMED, message, name, name + "@" + offset);
        for (Group g : groups.values()) {
          dispatch(g);
        }
        return offset;
      } finally {
        lock.unlock();
      }
    }

    Subscription subscribe(SubscriptionSpec spec, MessageHandler handler) {
      lock.lock();
      try {
        Group g = groups.get(spec.group());
        if (g == null) {
          g = new Group(spec.group(), spec.ordering(), base);
          groups.put(spec.group(), g);
        } else if (g.ordering != spec.ordering()) {
          throw new IllegalArgumentException("group " + spec.group() + " consumes " + name
              + " with ordering " + g.ordering + "; a member cannot use " + spec.ordering());
        }
        Member m = new Member(this, g, spec, handler);
        g.members.add(m);
        members.add(m);
        dispatch(g);
        return m;
      } finally {
        lock.unlock();
      }
    }

    /** Takes messages into the group up to its in-flight bound and starts what may run. */
    void dispatch(Group g) {
      while (true) {
        fill(g);
        Member m = g.runnable.isEmpty() ? null : freeMember(g);
        if (m == null) {
          return;
        }
        Item item = g.runnable.pollFirst();
        Instant now = clock.instant();
        if (item.message.isExpiredAt(now)) {
          event(LifecycleEvent.Stage.EXPIRED, item.message, name,
              "group=" + g.name + " expired at " + item.message.expiresAt().orElseThrow());
          leave(g, item);
          continue;
        }
        start(g, m, item);
      }
    }

    /**
     * Takes messages off the log while fewer than the bound are in flight. Items parked behind a
     * key waiting for its retry do not count (a hot failing key would stop every other key); up
     * to {@value #PARKED_PER_IN_FLIGHT} times the bound of them may wait.
     */
    private void fill(Group g) {
      int bound = g.bound();
      long end = base + log.size();
      while (g.cursor < end) {
        int parked = g.parked();
        if (g.inFlight - parked >= bound || parked >= PARKED_PER_IN_FLIGHT * bound) {
          break;
        }
        Message message = log.get((int) (g.cursor - base));
        g.cursor++;
        g.inFlight++;
        Item item = new Item(message, g.orderKey(message));
        if (item.orderKey == null) {
          g.runnable.addLast(item);
        } else {
          ArrayDeque<Item> queue = g.byKey.computeIfAbsent(item.orderKey, k -> new ArrayDeque<>());
          queue.addLast(item);
          if (queue.size() == 1) {
            g.runnable.addLast(item);
          }
        }
      }
      trim();
    }

    /** Forgets the log prefix every group has taken, in chunks so the copy stays amortized O(1). */
    private void trim() {
      if (groups.isEmpty()) {
        return;
      }
      long min = Long.MAX_VALUE;
      for (Group g : groups.values()) {
        min = Math.min(min, g.cursor);
      }
      int drop = (int) (min - base);
      if (drop > 0 && (drop == log.size() || drop >= 1024 && drop >= log.size() / 2)) {
        log.subList(0, drop).clear();
        base = min;
      }
    }

    private Member freeMember(Group g) {
      int n = g.members.size();
      for (int i = 0; i < n; i++) {
        Member m = g.members.get((g.nextMember + i) % n);
        if (m.running.size() < m.spec.concurrency()) {
          g.nextMember = (g.nextMember + i + 1) % n;
          return m;
        }
      }
      return null;
    }

    private void start(Group g, Member m, Item item) {
      item.state = State.RUNNING;
      int runId = ++item.runId;
      item.runner = m;
      m.running.add(item);
      Delivery delivery = new Delivery(item.message, name, item.attempt, item.firstFailureAt);
      event(LifecycleEvent.Stage.DELIVERED, item.message, name,
          "group=" + g.name + " attempt=" + item.attempt);
      Duration timeout = m.spec.handlerTimeout();
      MetricsListener metered = m.spec.metricsOr(metrics);
      // Whichever of the handler's return and its timeout comes first decides the run, and only
      // it reports the handler's duration: a late return after the timeout reports nothing.
      AtomicBoolean decided = new AtomicBoolean();
      long started = System.nanoTime();
      item.timeout = scheduler.schedule(() -> {
        if (decided.compareAndSet(false, true)) {
          Duration took = Duration.ofNanos(System.nanoTime() - started);
          MetricsListener.safely(metered, x -> x.handlerTimedOut(name, g.name, took));
          finish(g, item, runId, new TimeoutException("handler did not finish within "
              + timeout));
        }
      }, timeout.toNanos(), TimeUnit.NANOSECONDS);
      item.execution = m.executor.submit(() -> {
        if (delivery.attempt() == 1) {
          InboundMapping.reportIgnored(metered, name, delivery.message(), 0);
        }
        Throwable failure = null;
        try {
          m.handler.handle(delivery);
        } catch (Exception | Error e) {
          failure = e;
        }
        if (!decided.compareAndSet(false, true)) {
          return; // timed out: reported and routed by the timeout; this late result is ignored
        }
        Duration took = Duration.ofNanos(System.nanoTime() - started);
        boolean failed = failure != null;
        MetricsListener.safely(metered, x -> x.handlerDuration(name, g.name, took, failed));
        finish(g, item, runId, failure);
      });
    }

    void finish(Group g, Item item, int runId, Throwable failure) {
      DeadLetter deadLetter = null;
      SubscriptionSpec spec;
      lock.lock();
      try {
        if (item.runId != runId || item.state != State.RUNNING) {
          return;
        }
        Member m = item.runner;
        spec = m.spec;
        stopRun(item);
        if (failure == null) {
          event(LifecycleEvent.Stage.ACKED, item.message, name, "group=" + g.name);
          leave(g, item);
        } else {
          if (failure instanceof TimeoutException) {
            item.execution.cancel(true);
          }
          FailureRoute route = FailureRoute.decide(spec,
              new Delivery(item.message, name, item.attempt, item.firstFailureAt), failure,
              clock.instant());
          item.firstFailureAt = route.firstFailureAt();
          if (route.isRetry()) {
            event(LifecycleEvent.Stage.RETRIED, item.message, name, "group=" + g.name
                + " attempt " + item.attempt + " failed (" + route.exceptionClass() + "); retry in "
                + route.delay());
            item.attempt++;
            waitThenRun(g, item, route.delay());
          } else {
            item.state = State.DEAD_LETTERING;
            deadLetter = route.deadLetter(item.message, g.name);
          }
        }
        m.idle.signalAll();
        dispatch(g);
      } finally {
        lock.unlock();
      }
      if (deadLetter != null) {
        storeDeadLetter(g, item, deadLetter, spec);
      }
    }

    private void storeDeadLetter(Group g, Item item, DeadLetter deadLetter,
        SubscriptionSpec spec) {
      RuntimeException failure = null;
      try {
        deadLetters.add(deadLetter);
      } catch (RuntimeException e) {
        failure = e;
      }
      lock.lock();
      try {
        if (failure == null) {
          event(LifecycleEvent.Stage.DEAD_LETTERED, item.message, name,
              "group=" + g.name + " " + deadLetter.reason());
          leave(g, item);
          dispatch(g);
        } else {
          // Never drop a message whose dead letter was not stored: try the same attempt again.
          Duration delay = spec.retryPolicy().backoff().delay(item.attempt);
          LOG.log(System.Logger.Level.WARNING, "storing dead letter " + item.message.id()
              + " failed; its last attempt runs again in " + delay, failure);
          waitThenRun(g, item, delay);
        }
      } finally {
        lock.unlock();
      }
      if (failure == null) {
        DeadLetterLog.shared().deadLettered(spec.metricsOr(metrics), deadLetter);
      }
    }

    private void waitThenRun(Group g, Item item, Duration delay) {
      item.state = State.WAITING;
      if (item.orderKey != null) {
        g.waitingKeys.add(item.orderKey);
      }
      Runnable due = () -> {
        lock.lock();
        try {
          if (item.state == State.WAITING) {
            item.state = State.READY;
            if (item.orderKey != null) {
              g.waitingKeys.remove(item.orderKey);
            }
            g.runnable.addLast(item);
            dispatch(g);
          }
        } finally {
          lock.unlock();
        }
      };
      if (scheduler.isShutdown()) {
        due.run();
      } else {
        scheduler.schedule(due, delay.toNanos(), TimeUnit.NANOSECONDS);
      }
    }

    private void stopRun(Item item) {
      item.runner.running.remove(item);
      item.runner = null;
      if (item.timeout != null) {
        item.timeout.cancel(false);
      }
    }

    /** An item is done (acked, dead-lettered or expired): frees its slot and its key's next. */
    private void leave(Group g, Item item) {
      g.inFlight--;
      if (item.orderKey != null) {
        ArrayDeque<Item> queue = g.byKey.get(item.orderKey);
        queue.pollFirst();
        if (queue.isEmpty()) {
          g.byKey.remove(item.orderKey);
        } else {
          g.runnable.addLast(queue.peekFirst());
        }
      }
    }

    boolean close(Member m, Duration deadline) {
      lock.lock();
      try {
        if (m.closed) {
          return m.running.isEmpty();
        }
        m.closed = true;
        m.group.members.remove(m);
        long left = deadline.toNanos();
        while (!m.running.isEmpty() && left > 0) {
          try {
            left = m.idle.awaitNanos(left);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            break;
          }
        }
        boolean drained = m.running.isEmpty();
        // Unfinished work is not acknowledged: it goes back, at the front, for the next member.
        for (Item item : new ArrayList<>(m.running)) {
          item.runId++;
          item.execution.cancel(true);
          stopRun(item);
          item.state = State.READY;
          m.group.runnable.addFirst(item);
        }
        dispatch(m.group);
        return drained;
      } finally {
        lock.unlock();
        members.remove(m);
        m.executor.shutdownNow();
      }
    }
  }

  private final class Member implements Subscription {
    final Topic topic;
    final Group group;
    final SubscriptionSpec spec;
    final MessageHandler handler;
    final ExecutorService executor;
    final Condition idle;
    final Set<Item> running = new HashSet<>();
    boolean closed;

    Member(Topic topic, Group group, SubscriptionSpec spec, MessageHandler handler) {
      this.topic = topic;
      this.group = group;
      this.spec = spec;
      this.handler = handler;
      this.idle = topic.lock.newCondition();
      String name = "relaykit-inprocess-" + spec.destination() + "-" + spec.group();
      this.executor = Executors.newCachedThreadPool(
          spec.handlerThreads().factory(name, daemon(name)));
    }

    @Override
    public boolean close(Duration deadline) {
      Checks.requireNonNull("deadline", deadline);
      return topic.close(this, deadline);
    }

    @Override
    public boolean isRunning() {
      topic.lock.lock();
      try {
        return !closed;
      } finally {
        topic.lock.unlock();
      }
    }
  }

  /** Builds an {@link InProcessTransport}; {@link #build()} names any invalid field. */
  public static final class Builder {
    private InstantSource clock = InstantSource.system();
    private DeadLetterStore deadLetters;
    private LifecycleListener listener = LifecycleListener.noop();
    private MetricsListener metrics = MetricsListener.noop();
    private Duration closeTimeout = Duration.ofSeconds(30);

    private Builder() {}

    /**
     * Time for events, failure times and expiry. Default: the system clock.
     *
     * @param clock the time source; checked (not null) by {@link #build()}
     * @return this builder
     */
    public Builder clock(InstantSource clock) {
      this.clock = clock;
      return this;
    }

    /**
     * Where messages that gave up go. Default: a new {@link InMemoryDeadLetterStore}.
     *
     * @param deadLetters the store; null means a new {@link InMemoryDeadLetterStore}
     * @return this builder
     */
    public Builder deadLetters(DeadLetterStore deadLetters) {
      this.deadLetters = deadLetters;
      return this;
    }

    /**
     * Sees every step of every message. Default: none.
     *
     * @param listener the listener; checked (not null) by {@link #build()}
     * @return this builder
     */
    public Builder listener(LifecycleListener listener) {
      this.listener = listener;
      return this;
    }

    /**
     * Receives the subscriptions' handler durations, timeouts and ignored parts ({@link
     * MetricsListener#handlerDuration}, {@link MetricsListener#handlerTimedOut}, {@link
     * MetricsListener#ignored}) unless a subscription's spec names its own listener ({@link
     * SubscriptionSpec#metrics()}), which replaces this one. Called on handler threads (timeouts
     * on the transport's timer thread) through {@link MetricsListener#safely}. Default: none.
     *
     * @param metrics the listener; checked (not null) by {@link #build()}
     * @return this builder
     */
    public Builder metrics(MetricsListener metrics) {
      this.metrics = metrics;
      return this;
    }

    /**
     * How long {@link InProcessTransport#close()} lets each subscription drain. Default 30 s.
     *
     * @param closeTimeout the drain time per subscription; checked (positive) by {@link #build()}
     * @return this builder
     */
    public Builder closeTimeout(Duration closeTimeout) {
      this.closeTimeout = closeTimeout;
      return this;
    }

    /**
     * Builds a transport, ready to publish and subscribe; its threads are daemons, stopped by
     * {@link InProcessTransport#close()}.
     *
     * @return the transport
     * @throws IllegalArgumentException if {@code clock}, {@code listener} or {@code metrics} is
     *     null, or {@code closeTimeout} is not positive
     */
    public InProcessTransport build() {
      Checks.requireNonNull("clock", clock);
      Checks.requireNonNull("listener", listener);
      Checks.requireNonNull("metrics", metrics);
      Checks.requirePositive("closeTimeout", closeTimeout);
      if (deadLetters == null) {
        deadLetters = new InMemoryDeadLetterStore();
      }
      return new InProcessTransport(this);
    }
  }
}
