package io.relaykit.transport.kafka;

import io.relaykit.deadletter.FailureRoute;
import io.relaykit.message.Delivery;
import io.relaykit.message.InboundMapping;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHandler;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.ordering.KeyedExecutor;
import io.relaykit.ordering.OrderingMode;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.InvalidGroupIdException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.errors.WakeupException;

/**
 * The runtime behind a {@link KafkaShareSubscription}; see {@link KafkaShareSubscriber} for what
 * it guarantees.
 *
 * <h2>Implementation notes</h2>
 *
 * <p>Only the poll thread touches the share consumer. Workers and producer callbacks hand outcomes
 * to it through {@link #outcomes}; it calls {@code acknowledge} and, once every record of the last
 * poll has an acknowledgement (ACCEPT, RELEASE, REJECT or RENEW), polls again, which commits them.
 * A record still unfinished at a third of its lock is renewed: RENEW counts as its acknowledgement, the
 * next poll returns it again (a new {@link ConsumerRecord} for the same position), and an outcome
 * that arrived meanwhile waits until then. An acknowledgement the broker refuses shows up in the
 * commit callback: a refused RENEW means the lock is gone, so the record is forgotten and its
 * outcome, when it comes, is counted as {@code share-lock-lost}.
 */
final class KafkaShareRuntime implements KafkaShareSubscription {

  private static final System.Logger LOG = System.getLogger(KafkaShareRuntime.class.getName());

  private enum State { RUNNING, DRAINING, STOPPING, CLOSED, FAILED }

  /** One acquired record, across its renewals. */
  private static final class Item {
    final String position;
    final Work work;
    final int deliveryCount;
    /** Set on the poll thread: the record object of the latest poll that returned it. */
    ConsumerRecord<String, byte[]> record;
    /** Poll thread: when its lock was last acquired or renewed. */
    long lockedAt;
    /** Poll thread: renewed and not yet returned again by a poll. */
    boolean renewing;
    /** Poll thread: its outcome, waiting for the record to come back after a renewal. */
    AcknowledgeType deferred;
    /** Poll thread: acknowledged in the current poll round (RENEW included). */
    boolean acknowledged;
    /** Poll thread: handed to a worker, so counted in {@code running}. */
    boolean started;
    /**
     * An outcome was handed to the poll thread, or the item was given up: exactly once, and the
     * one that sets it lowers {@code running} if the item was started.
     */
    final AtomicBoolean settled = new AtomicBoolean();
    /** Given up: the lock was lost, or the subscription closed. */
    volatile boolean stale;
    /**
     * Taken by exactly one of: the worker that begins its handler, or a close that gives the
     * record back before it began ({@link #giveBack}).
     */
    final AtomicBoolean claimed = new AtomicBoolean();
    /** Poll thread: given back by a close on its last delivery; its dead letter is under way. */
    boolean givenUp;
    /** When it was first acquired ({@code System.nanoTime}), for the oldest in-flight age. */
    final long acquiredAt = System.nanoTime();

    Item(ConsumerRecord<String, byte[]> record, String position, int deliveryCount, Object key) {
      this.record = record;
      this.position = position;
      this.work = new Work(record, null, false, key);
      this.deliveryCount = deliveryCount;
    }
  }

  private record Outcome(Item item, AcknowledgeType type) {}

  private final SubscriptionSpec spec;
  private final MessageHandler handler;
  private final KafkaTransportConfig config;
  private final MetricsListener metrics;
  private final LifecycleListener listener;
  private final String topic;
  private final int deliveryCountLimit;
  private final KafkaConsumerRuntime retryReader;
  private final KafkaShareConsumer<String, byte[]> consumer;
  private final KafkaPublisher router;
  /** Reads the group's lag for the meters ({@link #sampleIfDue}); asynchronous calls only. */
  private final org.apache.kafka.clients.admin.Admin admin;
  private final AtomicBoolean lagAsked = new AtomicBoolean();
  private final CopyHandOff handOff;
  private final KeyedExecutor workers;
  private final ScheduledThreadPoolExecutor timers;
  /** Runs the copies' sends apart from the watchdog's timer: a blocked send delays no timeout. */
  private final ScheduledThreadPoolExecutor copies;
  private final HandlerWatchdog watchdog;
  /** Records one poll may acquire: {@code max.poll.records}; see {@link #maxPollRecords}. */
  private final int maxPollRecords;
  /** Whether KEY ordering reads a mapped key header ({@link InboundMapping#keyOf}). */
  private final boolean mapsKey;
  private final Thread pollThread;
  private final Runnable onClosed;
  private final LinkedBlockingQueue<Outcome> outcomes = new LinkedBlockingQueue<>();
  private final Map<Work, Item> byWork = new java.util.concurrent.ConcurrentHashMap<>();
  private final CountDownLatch pollThreadDone = new CountDownLatch(1);
  private final AtomicInteger running = new AtomicInteger();
  private final AtomicLong accepted = new AtomicLong();
  private final AtomicLong released = new AtomicLong();
  private final AtomicLong rejected = new AtomicLong();
  private final AtomicLong renewed = new AtomicLong();
  private final AtomicLong locksLost = new AtomicLong();
  private final Object idle = new Object();

  // Poll thread only.
  private final Map<String, Item> held = new HashMap<>();
  private final ArrayDeque<Item> toStart = new ArrayDeque<>();
  /** Positions acknowledged and not yet confirmed by the commit callback, with their type. */
  private final Map<String, AcknowledgeType> sent = new HashMap<>();
  private long lockMs = 30_000;
  /** Poll thread: test requests to run there ({@link #loseLocks}). */
  private final java.util.concurrent.ConcurrentLinkedQueue<Runnable> pollTasks =
      new java.util.concurrent.ConcurrentLinkedQueue<>();

  private volatile State state = State.RUNNING;
  private volatile Throwable failure;
  private volatile Boolean drainedAtClose;

  KafkaShareRuntime(SubscriptionSpec spec, MessageHandler handler, KafkaTransportConfig config,
      String retryTopic, int retryPartitions, String deadLetterTopic, int deliveryCountLimit,
      KafkaConsumerRuntime retryReader, UnaryOperator<CopyHandOff.Sender> senders,
      Runnable onClosed) {
    this.spec = spec;
    this.handler = handler;
    this.config = config;
    // Every per-subscription number goes to the spec's listener when it names one.
    this.metrics = spec.metricsOr(config.metrics());
    this.backlogMonitor = new io.relaykit.monitor.BacklogMonitor(config.backlogMonitor(),
        config.clock());
    this.listener = config.listener();
    this.topic = spec.destination();
    this.deliveryCountLimit = deliveryCountLimit;
    this.retryReader = retryReader;
    this.onClosed = onClosed;
    this.maxPollRecords = maxPollRecords(spec);
    this.mapsKey = spec.ordering() == OrderingMode.KEY && spec.inbound().acceptsForeign()
        && spec.inbound().keyHeader().isPresent();
    this.consumer = new KafkaShareConsumer<>(consumerProperties(config, spec),
        new org.apache.kafka.common.serialization.StringDeserializer(),
        new org.apache.kafka.common.serialization.ByteArrayDeserializer());
    this.router = KafkaPublisher.createRouter(config);
    this.admin = org.apache.kafka.clients.admin.Admin.create(
        KafkaSubscriber.adminProperties(config));
    String name = "relaykit-share-" + topic + "-" + spec.group();
    this.workers = KeyedExecutor.builder()
        .threads(spec.concurrency())
        .maxQueued(spec.maxInFlight())
        .threadFactory(spec.handlerThreads().factory(name + "-worker", r -> {
          Thread t = new Thread(r, name + "-worker");
          t.setDaemon(true);
          return t;
        }))
        .failureHandler((key, f) -> LOG.log(System.Logger.Level.ERROR,
            "unexpected failure in the share runtime of " + topic, f))
        .build();
    this.timers = new ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, name + "-timer");
      t.setDaemon(true);
      return t;
    });
    timers.setRemoveOnCancelPolicy(true);
    this.copies = new ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, name + "-copies");
      t.setDaemon(true);
      return t;
    });
    copies.setRemoveOnCancelPolicy(true);
    this.watchdog = new HandlerWatchdog(spec.handlerTimeout(), timers);
    CopyHandOff.Sender sender = senders.apply((w, copy, what) -> router.send(copy, what));
    this.handOff = new CopyHandOff(sender, copies, config, metrics, topic, spec.group(),
        retryTopic, retryPartitions, deadLetterTopic, new CopyHandOff.Owner() {
          @Override
          public boolean current(Work w) {
            Item i = byWork.get(w);
            return i != null && !i.stale && state != State.CLOSED;
          }

          @Override
          public void retried(Work w, Object key, RecordMetadata copyAt) {
            settle(w, AcknowledgeType.ACCEPT);
          }

          @Override
          public void retryRefused(Work w, Object key) {
            // no key parking in a share group: the dead letter follows
          }

          @Override
          public void finish(Work w) {
            settle(w, AcknowledgeType.ACCEPT);
          }

          @Override
          public boolean resendAfter(Work w, Throwable cause) {
            Item i = byWork.get(w);
            if (i != null && i.deliveryCount >= deliveryCountLimit) {
              return true; // a RELEASE now would let the broker archive it: keep it, renewed
            }
            settle(w, AcknowledgeType.RELEASE);
            return false;
          }

          @Override
          public void dropped(Work w) {
            settle(w, AcknowledgeType.REJECT);
          }

          @Override
          public void abandoned(Work w) {
            // Its lock was lost (or the subscription closed) before a copy was written: settled
            // here, counted share-lock-lost, so that inFlight() drops and a close need not wait.
            settle(w, AcknowledgeType.RELEASE);
          }
        });
    this.pollThread = new Thread(this::pollLoop, name + "-poll");
    pollThread.setDaemon(true);
  }

  static Map<String, Object> consumerProperties(KafkaTransportConfig config,
      SubscriptionSpec spec) {
    Map<String, Object> props = new HashMap<>();
    props.put("share.acquire.mode", "record_limit");
    props.putAll(config.shareConsumerProperties());
    props.put("bootstrap.servers", config.bootstrapServers());
    props.put("group.id", spec.group());
    props.put("client.id", config.clientIdPrefix() + "-share-" + spec.group() + "-"
        + Long.toHexString(System.nanoTime()));
    props.put("share.acknowledgement.mode", "explicit");
    props.put("max.poll.records", Integer.toString(maxPollRecords(spec)));
    props.put("max.poll.interval.ms", Long.toString(config.maxPollInterval().toMillis()));
    return props;
  }

  /**
   * Records one poll acquires at most ({@code max.poll.records} with {@code
   * share.acquire.mode=record_limit}, which the configuration cannot change): {@code
   * maxInFlight}. A poll for new records is made only when every record of the last poll is
   * acknowledged, so with all {@code maxInFlight} slots free: a member acquires no record it
   * cannot start. A poll that must bring renewed records back is the one exception (see {@link
   * #turn}): the records it acquires wait, renewed like the rest.
   */
  static int maxPollRecords(SubscriptionSpec spec) {
    return spec.maxInFlight();
  }

  void start() {
    watchdog.start();
    pollThread.start();
  }

  // ---------------------------------------------------------------- poll thread

  private void pollLoop() {
    try {
      consumer.setAcknowledgementCommitCallback(this::committed);
      consumer.subscribe(java.util.List.of(topic));
      while (state == State.RUNNING || state == State.DRAINING) {
        try {
          turn();
        } catch (AuthenticationException | AuthorizationException | InvalidGroupIdException
            | UnsupportedVersionException e) {
          fail("share consumer of " + topic + " in group " + spec.group() + " cannot go on: "
              + e, e);
        } catch (WakeupException e) {
          // close() ends a poll in progress
        } catch (RuntimeException e) {
          LOG.log(System.Logger.Level.WARNING, "poll turn of share group " + spec.group()
              + " on " + topic + " failed: " + e, e);
          pause(config.pollTimeout());
        }
      }
    } finally {
      try {
        finishAll();
      } finally {
        pollThreadDone.countDown();
        synchronized (idle) {
          idle.notifyAll();
        }
      }
    }
  }

  private void turn() {
    Runnable task;
    while ((task = pollTasks.poll()) != null) {
      task.run();
    }
    applyOutcomes(0);
    if (state != State.RUNNING) {
      while (!toStart.isEmpty()) {
        giveBack(toStart.poll()); // draining: it will not start
      }
    }
    startWork();
    sampleIfDue();
    if (state == State.DRAINING && held.isEmpty()) {
      state = State.STOPPING;
      return;
    }
    renewIfDue();
    if (allAcknowledged()) {
      // Everything held now is renewing (acknowledged records leave held). Running, a poll asks
      // for new records only with maxPollRecords (= maxInFlight) slots free, so when nothing is
      // held; renewed records must come back through a poll whatever the room, so that poll alone
      // may acquire beyond it (those wait in toStart, renewed like the rest). Closing, only
      // renewed records are polled for.
      boolean renewing = held.values().stream().anyMatch(i -> i.renewing);
      boolean room = held.size() + maxPollRecords <= spec.maxInFlight();
      if ((state == State.RUNNING && room) || renewing) {
        Duration wait = held.isEmpty() ? config.pollTimeout() : Duration.ofMillis(5);
        accept(consumer.poll(wait));
        return;
      }
    }
    applyOutcomes(Math.max(1, Math.min(config.pollTimeout().toMillis(), untilRenewal())));
  }

  /** Whether every record of the last poll has an acknowledgement (the share consumer's rule). */
  private boolean allAcknowledged() {
    for (Item i : held.values()) {
      if (!i.renewing && !i.acknowledged) {
        return false;
      }
    }
    return true;
  }

  private void accept(ConsumerRecords<String, byte[]> records) {
    Optional<Integer> lock = consumer.acquisitionLockTimeoutMs();
    if (lock.isPresent() && lock.get() > 0) {
      lockMs = lock.get();
    }
    long now = System.nanoTime();
    for (Item i : held.values()) {
      i.acknowledged = false; // a new round: what is held now needs an acknowledgement again
    }
    for (ConsumerRecord<String, byte[]> r : records) {
      String position = KafkaRecords.position(r.topic(), r.partition(), r.offset());
      Item known = held.get(position);
      if (known != null && known.renewing) {
        known.record = r;
        known.renewing = false; // its lock restarted when the broker took the renewal
        if (known.deferred != null) {
          acknowledge(known, known.deferred);
        }
        continue;
      }
      int deliveries = r.deliveryCount().map(Short::intValue).orElse(1);
      Item item = new Item(r, position, deliveries,
          spec.ordering() == OrderingMode.KEY ? orderingKey(r) : null);
      item.lockedAt = now;
      held.put(position, item);
      byWork.put(item.work, item);
      if (state != State.RUNNING) {
        giveBack(item); // acquired by a poll for renewed records while closing
      } else {
        toStart.add(item);
      }
    }
    // Renewed records no poll returned within two lock periods of their renewal (a lock lost on
    // a leader change): forgotten; the broker redelivers them.
    held.values().removeIf(i -> {
      if (i.renewing && now - i.lockedAt > TimeUnit.MILLISECONDS.toNanos(2L * lockMs)) {
        lost(i);
        return true;
      }
      return false;
    });
    startWork();
  }

  private void startWork() {
    while (!toStart.isEmpty()) {
      Item item = toStart.peek();
      if (item.stale) {
        toStart.poll(); // given up before it started: nothing runs, nothing to count
        continue;
      }
      // Counted before the hand-over: a worker may run the handler, and a close read the count,
      // before trySubmit even returns here.
      item.started = true;
      running.incrementAndGet();
      if (!workers.trySubmit(item.work.gateKey(), () -> processGuarded(item))) {
        item.started = false;
        running.decrementAndGet();
        return; // the bounded queue is full: the rest start as workers finish
      }
      toStart.poll();
    }
  }

  private void applyOutcomes(long waitMs) {
    try {
      Outcome o = waitMs <= 0 ? outcomes.poll() : outcomes.poll(waitMs, TimeUnit.MILLISECONDS);
      while (o != null) {
        Item i = o.item();
        if (i.stale || held.get(i.position) != i) {
          MetricsListener.safely(metrics, m -> m.dropped(topic, "share-lock-lost", 1));
        } else if (i.renewing) {
          i.deferred = o.type();
        } else {
          acknowledge(i, o.type());
        }
        o = outcomes.poll();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void acknowledge(Item i, AcknowledgeType type) {
    consumer.acknowledge(i.record, type);
    held.remove(i.position);
    byWork.remove(i.work);
    sent.put(i.position, type);
    if (type == AcknowledgeType.RELEASE) {
      released.incrementAndGet();
    }
  }

  private long untilRenewal() {
    long oldest = Long.MAX_VALUE;
    for (Item i : held.values()) {
      if (!i.renewing) {
        oldest = Math.min(oldest, i.lockedAt);
      }
    }
    if (oldest == Long.MAX_VALUE) {
      return Long.MAX_VALUE;
    }
    long due = oldest + TimeUnit.MILLISECONDS.toNanos(lockMs / 3);
    return Math.max(0, TimeUnit.NANOSECONDS.toMillis(due - System.nanoTime()));
  }

  /**
   * At a third of the lock of the oldest unfinished record (counted from its acquisition or its
   * last renewal request, when the broker's lock restarts at the latest), renews every unfinished record of the last
   * poll: the next poll may then go ahead, and returns them again.
   */
  private void renewIfDue() {
    if (untilRenewal() > 0) {
      return;
    }
    for (Item i : held.values()) {
      if (!i.renewing && !i.acknowledged) {
        consumer.acknowledge(i.record, AcknowledgeType.RENEW);
        sent.put(i.position, AcknowledgeType.RENEW);
        i.renewing = true;
        i.acknowledged = true;
        i.lockedAt = System.nanoTime(); // from now on: when the renewal was asked for
      }
    }
  }

  /** The commit callback: runs on the poll thread, inside poll and commitSync. */
  private void committed(Map<org.apache.kafka.common.TopicIdPartition, Set<Long>> offsets,
      Exception error) {
    offsets.forEach((tip, set) -> {
      for (Long offset : set) {
        String position = KafkaRecords.position(tip.topic(), tip.partition(), offset);
        AcknowledgeType type = sent.remove(position);
        if (error == null) {
          if (type == AcknowledgeType.ACCEPT) {
            accepted.incrementAndGet();
          } else if (type == AcknowledgeType.REJECT) {
            rejected.incrementAndGet();
          } else if (type == AcknowledgeType.RENEW) {
            renewed.incrementAndGet();
            MetricsListener.safely(metrics, m -> m.shareRenewed(topic, spec.group(), 1));
          }
          if (type != null && type != AcknowledgeType.RENEW) {
            String name = type.name().toLowerCase(java.util.Locale.ROOT);
            MetricsListener.safely(metrics,
                m -> m.shareAcknowledged(topic, spec.group(), name, 1));
          }
          continue;
        }
        if (type == AcknowledgeType.RENEW) {
          Item i = held.remove(position);
          if (i != null) {
            lost(i);
          }
        } else {
          LOG.log(System.Logger.Level.WARNING, "acknowledgement " + type + " of " + position
              + " in share group " + spec.group() + " was refused (" + error + "); the broker"
              + " delivers it again");
          MetricsListener.safely(metrics, m -> m.dropped(topic, "share-ack-refused", 1));
        }
      }
    });
  }

  private void lost(Item i) {
    i.stale = true;
    locksLost.incrementAndGet();
    MetricsListener.safely(metrics, m -> m.shareLockLost(topic, spec.group(), 1));
    if (i.deferred != null) {
      // Its result came while the renewal was out and waited for a poll that will not return the
      // record: that result is dropped, and counted as one.
      MetricsListener.safely(metrics, m -> m.dropped(topic, "share-lock-lost", 1));
    }
    // A handler still running keeps the item until it settles (settle drops it then, counted as
    // share-lock-lost), so a close still waits for that handler. Not started, or already settled:
    // nothing more comes for it.
    if (!i.started || i.settled.get()) {
      byWork.remove(i.work);
    }
    LOG.log(System.Logger.Level.WARNING, "lock of " + i.position + " in share group "
        + spec.group() + " was lost; the broker delivers it again");
  }

  /** Closing: gives back what has no outcome, commits what has, closes the consumer. */
  private void finishAll() {
    try {
      applyOutcomes(0);
      if (allAcknowledged() && held.values().stream().anyMatch(i -> i.renewing)) {
        // Brings renewed records back so that they can be acknowledged; a record this poll newly
        // acquires is given back by accept (dead-lettered on its last delivery).
        accept(consumer.poll(Duration.ZERO));
      }
      applyOutcomes(0);
      long end = System.nanoTime() + config.closeTimeout().toNanos();
      // Given back while draining: their dead letters' confirms come as outcomes (then ACCEPT).
      while (held.values().stream().anyMatch(i -> i.givenUp && !i.acknowledged)
          && System.nanoTime() - end < 0) {
        applyOutcomes(20);
      }
      deadLetterLastDeliveries(end);
      for (Item i : new java.util.ArrayList<>(held.values())) {
        if (!i.renewing && !i.acknowledged) {
          i.stale = true;
          acknowledge(i, AcknowledgeType.RELEASE);
        }
      }
      consumer.commitSync(config.closeTimeout());
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "final acknowledgements of share group "
          + spec.group() + " failed; unacknowledged records are delivered again: " + e, e);
    }
    try {
      consumer.close(config.closeTimeout());
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "closing the share consumer of " + topic + " failed",
          e);
    }
  }

  private void fail(String what, Throwable cause) {
    if (failure != null) {
      return;
    }
    IllegalStateException e = new IllegalStateException(what, cause);
    failure = e;
    state = State.FAILED;
    LOG.log(System.Logger.Level.ERROR, what, cause);
    MetricsListener.safely(metrics, m -> m.consumerFailed(topic, spec.group(), e));
  }

  private void pause(Duration d) {
    long end = System.nanoTime() + d.toNanos();
    while (state == State.RUNNING || state == State.DRAINING) {
      long left = end - System.nanoTime();
      if (left <= 0) {
        return;
      }
      java.util.concurrent.locks.LockSupport.parkNanos(this, left);
    }
  }

  // ---------------------------------------------------------------- workers

  /** Hands {@code w}'s outcome to the poll thread, once. */
  private void settle(Work w, AcknowledgeType type) {
    Item i = byWork.get(w);
    if (i == null || !i.settled.compareAndSet(false, true)) {
      return;
    }
    if (i.stale) { // its lock was lost, or the subscription closed, while its handler ran
      if (pollThreadDone.getCount() > 0) { // after a close, the close gave it back
        MetricsListener.safely(metrics, m -> m.dropped(topic, "share-lock-lost", 1));
      }
      byWork.remove(w); // after the count: whoever sees inFlight() drop sees it counted
    } else {
      outcomes.add(new Outcome(i, type)); // stale from here on: applyOutcomes counts it
    }
    if (i.started) {
      finishedOne();
    }
  }

  /** One started item ended (settled or given up): wakes a close waiting for the drain. */
  private void finishedOne() {
    if (running.decrementAndGet() == 0 || state != State.RUNNING) {
      synchronized (idle) {
        idle.notifyAll();
      }
    }
  }

  /**
   * {@link #process}, and whatever a step before the handler throws ends in a dead letter naming
   * it: a record that is never settled would hold its slot and its lock for good.
   */
  private void processGuarded(Item item) {
    try {
      process(item);
    } catch (RuntimeException | Error e) {
      LOG.log(System.Logger.Level.ERROR, "unexpected failure processing " + item.position
          + " in share group " + spec.group() + "; dead-lettering it", e);
      handOff.deadLetterUndecodable(item.work, KafkaRecords.fromHeaders(
          item.work.record().headers()), e, config.clock().instant());
    }
  }

  private void process(Item item) {
    Work w = item.work;
    if (!item.claimed.compareAndSet(false, true)) {
      return; // given back by a close before it began; giveBack settled it
    }
    if (item.stale || state == State.CLOSED) {
      if (item.settled.compareAndSet(false, true)) {
        byWork.remove(w);
        finishedOne(); // given up while queued for a worker
      }
      return;
    }
    Instant now = config.clock().instant();
    KafkaRecords.Read read = KafkaRecords.read(w.record(), spec.inbound(), topic, w.position(),
        now);
    if (read.malformed() != null) {
      handOff.deadLetterUndecodable(w, read, now);
      return;
    }
    InboundMapping.Decoded decoded = read.decoded();
    Map<String, String> wire = decoded.wire();
    Delivery delivery;
    try {
      delivery = delivery(item, decoded);
    } catch (RuntimeException e) { // a relaykit failure header that is not a number or instant
      handOff.deadLetterUndecodable(w, wire, e, now);
      return;
    }
    if (delivery.attempt() == 1) {
      decoded.reportIgnored(metrics, topic);
    }
    Message message = delivery.message();
    if (message.isExpiredAt(now)) {
      event(LifecycleEvent.Stage.EXPIRED, message, "expired at " + message.expiresAt().get());
      MetricsListener.safely(metrics, m -> m.dropped(topic, "expired", 1));
      settle(w, AcknowledgeType.ACCEPT);
      return;
    }
    event(LifecycleEvent.Stage.DELIVERED, message, w.position());
    Map<String, String> headers = wire;
    Delivery attempt = delivery;
    long started = System.nanoTime();
    HandlerWatchdog.Call call = watchdog.begin(() -> {
      Duration took = Duration.ofNanos(System.nanoTime() - started);
      MetricsListener.safely(metrics, m -> m.handlerTimedOut(topic, spec.group(), took));
      onFailure(w, headers, attempt, new TimeoutException("handler did not finish within "
          + spec.handlerTimeout() + "; its late result is ignored"), true);
    });
    Throwable thrown = null;
    try {
      handler.handle(delivery);
    } catch (Throwable t) {
      thrown = t;
    }
    Duration took = Duration.ofNanos(System.nanoTime() - started);
    if (!watchdog.end(call)) {
      return; // timed out: reported and its copy routed by the watchdog
    }
    boolean failed = thrown != null;
    MetricsListener.safely(metrics, m -> m.handlerDuration(topic, spec.group(), took, failed));
    if (thrown == null) {
      event(LifecycleEvent.Stage.ACKED, message, w.position());
      settle(w, AcknowledgeType.ACCEPT);
    } else {
      onFailure(w, wire, delivery, thrown, false);
    }
  }

  /**
   * The delivery of {@code item}: its failure headers read ({@link FailureRoute#delivery}), and
   * the broker's redeliveries of the record counted as attempts (attempt header + count - 1).
   *
   * @throws io.relaykit.message.MalformedMessageException if a failure header is malformed
   */
  private Delivery delivery(Item item, InboundMapping.Decoded decoded) {
    Delivery d = FailureRoute.delivery(decoded.message(), topic, decoded.wire());
    return item.deliveryCount <= 1 ? d : new Delivery(d.message(), d.source(),
        Math.addExact(d.attempt(), item.deliveryCount - 1), d.firstFailureAt());
  }

  /**
   * Gives back a record that will not run (the member is closing), unless its handler began (it
   * settles itself): on its last delivery ({@code deliveryCount >= share.delivery.count.limit})
   * it is dead-lettered, since a RELEASE would let the broker archive it unhandled; before that,
   * RELEASEd for another member. Poll thread.
   */
  private void giveBack(Item item) {
    if (!item.claimed.compareAndSet(false, true)) {
      return;
    }
    if (item.deliveryCount < deliveryCountLimit) {
      item.stale = true;
      if (item.settled.compareAndSet(false, true) && item.started) {
        finishedOne(); // queued for a worker: counted in running
      }
      acknowledge(item, AcknowledgeType.RELEASE);
      return;
    }
    if (!item.started) {
      item.started = true; // counted in running until its dead letter is confirmed
      running.incrementAndGet();
    }
    item.givenUp = true;
    Work w = item.work;
    Instant now = config.clock().instant();
    try {
      KafkaRecords.Read read = KafkaRecords.read(w.record(), spec.inbound(), topic,
          w.position(), now);
      if (read.malformed() != null) {
        handOff.deadLetterUndecodable(w, read, now);
        return;
      }
      Delivery d;
      try {
        d = delivery(item, read.decoded());
      } catch (RuntimeException e) {
        handOff.deadLetterUndecodable(w, read.decoded().wire(), e, now);
        return;
      }
      handOff.deadLetter(w, read.decoded().wire(), d.message(), FailureRoute.givenUp(d,
          "not run: the share member closed during the record's last delivery ("
          + item.deliveryCount + " of share.delivery.count.limit " + deliveryCountLimit + ")",
          now), w.position());
    } catch (RuntimeException e) {
      handOff.deadLetterUndecodable(w, KafkaRecords.fromHeaders(w.record().headers()), e, now);
    }
  }

  /**
   * Closing, after the drain: every record held on its last delivery that has no outcome (never
   * began, or its handler still runs past the close deadline) is dead-lettered and then accepted,
   * not released: a RELEASE would let the broker archive it unhandled and untraced. Its handler's
   * own late result no longer counts. A copy the broker does not confirm by {@code end} leaves the
   * record to the release that follows (logged). Poll thread.
   */
  private void deadLetterLastDeliveries(long end) {
    Map<Item, java.util.concurrent.CompletableFuture<RecordMetadata>> sending = new HashMap<>();
    for (Item i : new java.util.ArrayList<>(held.values())) {
      if (i.renewing || i.acknowledged || i.givenUp || i.deliveryCount < deliveryCountLimit) {
        continue;
      }
      boolean neverBegan = i.claimed.compareAndSet(false, true);
      if (!neverBegan && !i.settled.compareAndSet(false, true)) {
        continue; // its handler settled just now: its outcome is applied below or released
      }
      if (neverBegan) {
        i.settled.set(true);
      }
      i.stale = true; // whatever its handler still does writes nothing and counts nothing
      if (i.started) {
        finishedOne();
      }
      Instant now = config.clock().instant();
      Work w = i.work;
      String reason = neverBegan
          ? "not run: the share member closed during the record's last delivery ("
              + i.deliveryCount + " of share.delivery.count.limit " + deliveryCountLimit + ")"
          : "the share member closed while the record's last delivery (" + i.deliveryCount
              + " of share.delivery.count.limit " + deliveryCountLimit + ") still ran";
      try {
        KafkaRecords.Read read = KafkaRecords.read(w.record(), spec.inbound(), topic,
            w.position(), now);
        if (read.malformed() != null) {
          sending.put(i, handOff.deadLetterOnce(w, read.wire(), null,
              FailureRoute.undecodable(topic, read.malformed(), now)));
          continue;
        }
        Delivery d;
        try {
          d = delivery(i, read.decoded());
        } catch (RuntimeException e) {
          sending.put(i, handOff.deadLetterOnce(w, read.decoded().wire(), null,
              FailureRoute.undecodable(topic, e, now)));
          continue;
        }
        sending.put(i, handOff.deadLetterOnce(w, read.decoded().wire(), d.message(),
            FailureRoute.givenUp(d, reason, now)));
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.ERROR, "could not dead-letter " + i.position + " of share"
            + " group " + spec.group() + " on its last delivery; it is released", e);
      }
    }
    sending.forEach((i, f) -> {
      try {
        f.get(Math.max(0, end - System.nanoTime()), TimeUnit.NANOSECONDS);
        acknowledge(i, AcknowledgeType.ACCEPT);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (java.util.concurrent.ExecutionException
          | java.util.concurrent.TimeoutException e) {
        LOG.log(System.Logger.Level.ERROR, "dead letter of " + i.position + " (last delivery)"
            + " in share group " + spec.group() + " not confirmed (" + e + "); it is released"
            + " and the broker may archive it");
      }
    });
  }

  /** The key a KEY-ordered record waits under: the key its handler sees. */
  private Object orderingKey(ConsumerRecord<String, byte[]> r) {
    return mapsKey ? spec.inbound().keyOf(name -> KafkaRecords.header(r.headers(), name), r.key())
        : r.key();
  }

  private long nextSample = System.nanoTime();

  /**
   * Every commit interval (poll thread): in-flight records, the oldest one's age, and the lag the
   * broker last reported for the group, each together with the retry reader's (which reports none
   * of them itself: one destination and group, one gauge each).
   */
  private void sampleIfDue() {
    long now = System.nanoTime();
    if (now - nextSample < 0) {
      return;
    }
    nextSample = now + config.commitInterval().toNanos();
    long oldest = now;
    for (Item i : byWork.values()) {
      oldest = Math.min(oldest, i.acquiredAt);
    }
    ConsumerBacklog retries = retryReader.backlog();
    long inFlight = byWork.size() + retries.inFlight();
    Duration own = Duration.ofNanos(now - oldest);
    Duration age = own.compareTo(retries.oldestInFlightAge()) >= 0 ? own
        : retries.oldestInFlightAge();
    long lag = Math.max(0, lastLag) + retries.totalLag();
    MetricsListener.safely(metrics, m -> m.inFlight(topic, spec.group(), inFlight));
    MetricsListener.safely(metrics, m -> m.oldestInFlightAge(topic, spec.group(), age));
    MetricsListener.safely(metrics, m -> m.consumerLag(topic, spec.group(), lag));
    // The backlog trend over both too: the retry reader's snapshot saw its records alone.
    try {
      backlogMonitor.record(new ConsumerBacklog(topic, spec.group(), Map.of(topic, lag), inFlight,
          age, config.clock().instant()).toSample());
      io.relaykit.monitor.BacklogSnapshot snapshot = backlogMonitor.snapshot();
      MetricsListener.safely(metrics, m -> m.backlog(topic, spec.group(), snapshot));
    } catch (IllegalArgumentException e) {
      // the clock stepped back: skip this sample rather than feed the monitor disorder
    }
    sampleLag();
  }

  /** The share subscription's backlog trend, fed with its and its retry reader's samples. */
  private final io.relaykit.monitor.BacklogMonitor backlogMonitor;

  /**
   * Asks the broker for the group's lag ({@code Admin.listShareGroupOffsets}) without waiting:
   * one request at a time; the answer is reported on the admin client's thread as {@link
   * MetricsListener#partitionLag}, for the partitions whose lag the broker reports, and kept for
   * the next {@link MetricsListener#consumerLag} report. A failed request reports nothing (logged
   * at debug) and the next interval asks again.
   */
  private void sampleLag() {
    if (!lagAsked.compareAndSet(false, true)) {
      return;
    }
    try {
      admin.listShareGroupOffsets(Map.of(spec.group(),
          new org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec()))
          .partitionsToOffsetInfo(spec.group()).whenComplete((byPartition, error) -> {
            lagAsked.set(false);
            if (error != null || byPartition == null) {
              LOG.log(System.Logger.Level.DEBUG, "lag of share group " + spec.group()
                  + " not read: " + error);
              return;
            }
            long total = 0;
            boolean any = false;
            for (var e : byPartition.entrySet()) {
              if (!e.getKey().topic().equals(topic) || e.getValue() == null
                  || e.getValue().lag().isEmpty()) {
                continue;
              }
              long lag = e.getValue().lag().get();
              int partition = e.getKey().partition();
              total += lag;
              any = true;
              MetricsListener.safely(metrics,
                  m -> m.partitionLag(topic, spec.group(), partition, lag));
            }
            if (any) {
              lastLag = total;
            }
          });
    } catch (RuntimeException e) {
      lagAsked.set(false);
      LOG.log(System.Logger.Level.DEBUG, "lag of share group " + spec.group() + " not asked: "
          + e);
    }
  }

  /** The lag the broker last reported for this group's topic, or -1 (tests). */
  long lag() {
    return lastLag;
  }

  private volatile long lastLag = -1;

  private void event(LifecycleEvent.Stage stage, Message message, String detail) {
    if (listener == KafkaTransportConfig.NO_LISTENER) {
      return; // nobody listens: spare the two events per record
    }
    LifecycleListener.safely(listener, new LifecycleEvent(stage, message.id(), message.traceId(),
        topic, config.clock().instant(), detail));
  }

  /** Routes a failure ({@link FailureRoute}); on the watchdog's timer the send runs apart. */
  private void onFailure(Work w, Map<String, String> wire, Delivery delivery, Throwable failure,
      boolean onTimer) {
    FailureRoute route = FailureRoute.decide(spec, delivery, failure, config.clock().instant());
    Runnable send = route.isRetry()
        ? () -> handOff.retry(w, wire, delivery.message(), route, w.position(), null)
        : () -> handOff.deadLetter(w, wire, delivery.message(), route, w.position());
    if (onTimer) {
      try {
        copies.execute(send); // not on the watchdog's timer: a blocked send delays no timeout
      } catch (java.util.concurrent.RejectedExecutionException e) {
        send.run();
      }
    } else {
      send.run();
    }
  }

  // ---------------------------------------------------------------- Subscription

  @Override
  public int deliveryCountLimit() {
    return deliveryCountLimit;
  }

  @Override
  public int inFlight() {
    return byWork.size();
  }

  @Override
  public long accepted() {
    return accepted.get();
  }

  @Override
  public long released() {
    return released.get();
  }

  /** REJECT acknowledgements the broker confirmed (tests). */
  long rejected() {
    return rejected.get();
  }

  /** RENEW acknowledgements the broker confirmed (tests). */
  long renewed() {
    return renewed.get();
  }

  /** Locks this member lost (tests). */
  long locksLost() {
    return locksLost.get();
  }

  @Override
  public Optional<Throwable> failure() {
    return Optional.ofNullable(failure);
  }

  @Override
  public boolean isRunning() {
    return state == State.RUNNING && retryReader.isRunning();
  }

  @Override
  public boolean close(Duration deadline) {
    if (deadline == null || deadline.isNegative()) {
      throw new IllegalArgumentException("deadline must be zero or positive, was " + deadline);
    }
    long end = System.nanoTime() + deadline.toNanos();
    synchronized (this) {
      if (state == State.CLOSED) {
        return Boolean.TRUE.equals(drainedAtClose);
      }
      if (state == State.RUNNING) {
        state = State.DRAINING;
      }
      consumer.wakeup();
      synchronized (idle) {
        while (running.get() > 0 && pollThreadDone.getCount() > 0) {
          long left = end - System.nanoTime();
          if (left <= 0) {
            break;
          }
          try {
            idle.wait(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            break;
          }
        }
      }
      boolean drained = running.get() == 0;
      if (state != State.FAILED) {
        state = State.STOPPING;
      }
      consumer.wakeup();
      java.util.concurrent.locks.LockSupport.unpark(pollThread);
      try {
        pollThreadDone.await(config.closeTimeout().toMillis() * 3, TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      byWork.values().forEach(i -> i.stale = true);
      workers.shutdownNow();
      try {
        workers.awaitTermination(config.closeTimeout());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      timers.shutdownNow();
      copies.shutdownNow();
      router.close();
      try {
        admin.close(Duration.ZERO); // only sampling requests are outstanding
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.DEBUG, "closing the lag reader of " + topic + ": " + e);
      }
      boolean readerDrained = retryReader.close(Duration.ofNanos(Math.max(0,
          end - System.nanoTime())));
      state = State.CLOSED;
      drainedAtClose = drained && readerDrained;
    }
    onClosed.run();
    return drainedAtClose;
  }

  /**
   * Tests: on the poll thread's next turn, every held record's lock is lost, exactly as when the
   * broker refuses its RENEW (the commit callback's path).
   *
   * @return completes with the number of locks lost, once they are
   */
  java.util.concurrent.CompletableFuture<Integer> loseLocks() {
    java.util.concurrent.CompletableFuture<Integer> done =
        new java.util.concurrent.CompletableFuture<>();
    pollTasks.add(() -> {
      int n = 0;
      for (Item i : new java.util.ArrayList<>(held.values())) {
        held.remove(i.position);
        lost(i);
        n++;
      }
      done.complete(n);
    });
    return done;
  }

  @Override
  public String toString() {
    return "KafkaShareSubscription[topic=" + topic + ", group=" + spec.group() + ", state="
        + state + ", inFlight=" + byWork.size() + "]";
  }
}
