package io.relaykit.transport.kafka;

import io.relaykit.deadletter.FailureRoute;
import io.relaykit.message.Delivery;
import io.relaykit.message.InboundMapping;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHandler;
import io.relaykit.message.MessageHeaders;
import io.relaykit.message.MessageRejectedException;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.monitor.BacklogMonitor;
import io.relaykit.monitor.BacklogSnapshot;
import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.retry.RateLimiter;
import io.relaykit.ordering.KeyedExecutor;
import io.relaykit.ordering.OffsetTracker;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.InvalidOffsetException;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.FencedInstanceIdException;
import org.apache.kafka.common.errors.GroupMaxSizeReachedException;
import org.apache.kafka.common.errors.InvalidGroupIdException;
import org.apache.kafka.common.errors.UnreleasedInstanceIdException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.errors.WakeupException;

/**
 * The consumer runtime behind a {@link KafkaSubscription}: one poll thread that owns the Kafka
 * consumer and never runs or waits for a handler, a {@link KeyedExecutor} of {@code concurrency}
 * workers, an {@link OffsetTracker} that turns out-of-order completion into a contiguous commit
 * position, and the retry and dead-letter routing.
 *
 * <h2>Implementation notes</h2>
 *
 * <p>Poll thread: each turn it sets which partitions are paused (the source partitions when active
 * work, parked records left out, is near {@code maxInFlight}; the retry partitions with them for
 * up to one poll timeout, since a fetch of the retry partitions alone would hold the source's next
 * fetch at the broker, then on their own again, and never while only parked records stop the
 * source, so a retry that unparks a key or that a handler waits for is never starved; a retry
 * partition whose next record is not yet due until then), polls, tracks and submits every record, and every commit interval
 * commits the tracker's committable offsets asynchronously and samples the backlog. While intake
 * is stopped for lack of room, the worker whose completion makes room wakes the poll ({@link
 * KafkaConsumer#wakeup()}): intake resumes while the records still in flight keep the workers busy,
 * instead of up to a poll timeout later, after they may have run dry. A record of the
 * retry topic that is not yet due is not tracked: the poll thread seeks back to it and pauses its
 * partition until its due time, so the delay costs no memory and no sleeping.
 *
 * <p>The runtime reads as three parts: the poll loop (pauses, intake, start positions, commits,
 * backlog samples; poll thread only), dispatch ({@link KeyParking} and the {@link KeyedExecutor}
 * lanes), and the workers, which decode the record (undecodable records go to the dead-letter
 * topic), run the handler under a timeout watchdog, and on failure take the decision of {@link
 * FailureRoute} (the one failure model of every transport: retry after which delay, or
 * dead-letter for which reason, with which headers) and leave the writing of the retry or
 * dead-letter copy to {@link CopyHandOff}; either way the record counts as done only when the
 * broker confirmed that copy. In KEY and PARTITION modes, {@link KeyParking} holds back the key's
 * later records until the retry finishes.
 *
 * <p>Rebalances: on revoke we commit what is done for the revoked partitions (synchronously, still
 * owning them), then drop their tracker state, so nothing of theirs is committed again and late
 * completions of their records are ignored; the new owner starts at the committed offset. On loss
 * (the group moved on without us) we drop the state without committing.
 */
final class KafkaConsumerRuntime implements KafkaSubscription {

  private static final System.Logger LOG = System.getLogger(KafkaConsumerRuntime.class.getName());
  /** The longest wait between poll turns that keep failing with retriable errors. */
  static final Duration MAX_ERROR_BACKOFF = Duration.ofSeconds(5);
  /**
   * How far past the retry policy's longest wait a {@code relaykit-retry-at} may lie (clocks of
   * members apart) before it is bad input.
   */
  static final Duration RETRY_AT_MARGIN = Duration.ofMinutes(1);
  /**
   * Tests: by group, a failure the read of committed offsets at assignment throws instead of
   * reading ({@link #readHandedOver}). Empty outside tests.
   */
  static final Map<String, java.util.function.Supplier<RuntimeException>> HAND_OVER_READ_FAULTS =
      new java.util.concurrent.ConcurrentHashMap<>();
  /** Records that may wait for parked keys, per unit of {@code maxInFlight}. */
  static final int PARKED_PER_IN_FLIGHT = 4;

  private enum State { RUNNING, DRAINING, STOPPING, CLOSED, FAILED }

  /** The position of a record in the retry topic whose key is parked until it finishes. */
  private record RetryHold(TopicPartition partition, long offset) {}

  /** Reads the retry topic only (a share subscription's retry reader). */
  private final boolean retryOnly;
  private final SubscriptionSpec spec;
  private final MessageHandler handler;
  private final KafkaTransportConfig config;
  private final InstantSource clock;
  private final LifecycleListener listener;
  private final MetricsListener metrics;
  private final BacklogMonitor monitor;
  private final RateLimiter rateLimiter;
  private final String topic;
  private final String retryTopic;
  /** The retry topic's partition count: a source partition's copies go to its number modulo. */
  private final int retryPartitions;
  private final OffsetReset sourceReset;
  private final KafkaConsumer<String, byte[]> consumer;
  /** The copies' producer of the default hand-off; null with the transactional one. */
  private final KafkaPublisher router;
  /** The transactional hand-off; null with the default one. */
  private final TransactionalCopies txn;
  private final OffsetTracker<TopicPartition> tracker;
  private final KeyParking parking = new KeyParking();
  private final KeyedExecutor workers;
  private final ScheduledThreadPoolExecutor timers;
  /** Runs the copies' sends apart from the watchdog's timer: a blocked send delays no timeout. */
  private final ScheduledThreadPoolExecutor copies;
  private final HandlerWatchdog watchdog;
  /** Whether KEY ordering reads a mapped key header ({@link InboundMapping#keyOf}). */
  private final boolean mapsKey;
  private final CopyHandOff handOff;
  private final Thread pollThread;
  private final int maxPollRecords;
  /** The retry policy's longest wait: its backoff's delay for the last attempt, no jitter. */
  private final Duration longestRetryWait;
  /**
   * The most records that may wait for parked keys before source intake stops: {@value
   * #PARKED_PER_IN_FLIGHT} times {@code maxInFlight}. They do not count against {@code
   * maxInFlight} (a hot failing key would stop every other key), but they are held in memory.
   */
  private final int maxParked;
  private final Runnable onClosed;
  private final Object idle = new Object();
  private final Set<TopicPartition> owned = java.util.concurrent.ConcurrentHashMap.newKeySet();
  private final CountDownLatch pollThreadDone = new CountDownLatch(1);
  /** Up while the poll thread polls with intake stopped for lack of room; see {@link #poll}. */
  private final AtomicBoolean wakeWhenRoom = new AtomicBoolean();

  /**
   * Partitions being handed over (a revoke, a close): a worker that reaches a record of theirs
   * that has not started leaves it to the next owner (counted in {@link #leftOver}).
   */
  private final Set<TopicPartition> leaving = java.util.concurrent.ConcurrentHashMap.newKeySet();
  /** Of each leaving partition: its records a worker left to the next owner without starting. */
  private final Map<TopicPartition, java.util.concurrent.atomic.AtomicInteger> leftOver =
      new java.util.concurrent.ConcurrentHashMap<>();
  /** Up while the poll thread waits for a hand-over: finishing records wake it. */
  private volatile boolean handingOver;
  /** The {@link System#nanoTime} by which {@link #close} wants the hand-over done. */
  private volatile long closeBy = Long.MAX_VALUE;
  /** Tests: the poll thread ends as a killed process would, committing nothing more. */
  private volatile boolean simulatedCrash;

  private volatile State state = State.RUNNING;
  private volatile ConsumerBacklog backlog;
  private volatile Boolean drainedAtClose;
  private volatile Throwable failure;

  // Poll thread only.
  /**
   * The {@link System#nanoTime} since which active work has filled {@code maxInFlight}; 0 while
   * it does not.
   */
  private long activeFullSince;
  private final Map<TopicPartition, Instant> delayedUntil = new HashMap<>();
  private final Map<TopicPartition, Long> committed = new HashMap<>();
  /** Of each retry partition: the offset after the last record taken in (or put back). */
  private final Map<TopicPartition, Long> retryRead = new HashMap<>();
  /**
   * Of each retry partition: the holds placed for keys a previous owner handed over parked, with
   * their keys; each is released once this member reads past its copy or finds another key's copy
   * at its offset (the entry was stale or forged). At most the entries one metadata text holds.
   */
  private final Map<TopicPartition, Map<RetryHold, Object>> handedHolds = new HashMap<>();
  /** Of each retry partition: the offset after the last copy this member wrote there. */
  private final Map<TopicPartition, Long> copiesEnd =
      new java.util.concurrent.ConcurrentHashMap<>();
  /**
   * Partitions whose tracking was dropped after an aborted hand-off transaction and that still
   * have to be moved back to their committed offsets; nothing of them is taken in or committed
   * until then.
   */
  private final Set<TopicPartition> toRewind = new HashSet<>();
  /** Of each partition: what its previous owner finished past the committed offset. */
  private final Map<TopicPartition, FinishedAbove> handedOver = new HashMap<>();
  /** Set while a commit names the records finished past the position ({@link #changedOffsets}). */
  private boolean withFinished;
  /**
   * Partitions handed over with nothing of theirs left running: every record of theirs that
   * wrote a copy has finished, so the open hand-off transaction may commit with them.
   */
  private final Set<TopicPartition> drained = new HashSet<>();

  KafkaConsumerRuntime(SubscriptionSpec spec, MessageHandler handler, KafkaTransportConfig config,
      String retryTopic, int retryPartitions, String deadLetterTopic, RateLimiter rateLimiter,
      Runnable onClosed) {
    this(spec, handler, config, retryTopic, retryPartitions, deadLetterTopic, rateLimiter,
        onClosed, spec.group(), false, java.util.function.UnaryOperator.identity());
  }

  /**
   * As above, in consumer group {@code consumerGroup} (the copies still name {@code spec.group()}),
   * reading only the retry topic when {@code retryOnly}: the retry reader of a {@link
   * KafkaShareSubscriber}, whose source records come through a share group; the copies' sender
   * wrapped by {@code senders} (fault injection in tests).
   */
  KafkaConsumerRuntime(SubscriptionSpec spec, MessageHandler handler, KafkaTransportConfig config,
      String retryTopic, int retryPartitions, String deadLetterTopic, RateLimiter rateLimiter,
      Runnable onClosed, String consumerGroup, boolean retryOnly,
      java.util.function.UnaryOperator<CopyHandOff.Sender> senders) {
    this.retryOnly = retryOnly;
    this.spec = spec;
    this.handler = handler;
    this.config = config;
    this.clock = config.clock();
    this.listener = config.listener();
    // Every per-subscription number goes to the spec's listener when it names one.
    this.metrics = spec.metricsOr(config.metrics());
    this.monitor = new BacklogMonitor(config.backlogMonitor(), clock);
    this.rateLimiter = rateLimiter;
    this.topic = spec.destination();
    this.retryTopic = retryTopic;
    this.retryPartitions = Math.max(1, retryPartitions);
    this.sourceReset = OffsetReset.parse(config.consumerProperties().get(OffsetReset.SETTING));
    this.onClosed = onClosed;
    this.maxPollRecords = Math.max(1, Math.min(500, spec.maxInFlight() / 2));
    this.longestRetryWait = spec.retryPolicy().backoff().withJitter(io.relaykit.retry.Jitter.NONE)
        .delay(Math.max(1, spec.retryPolicy().maxAttempts()));
    this.maxParked = (int) Math.min(Integer.MAX_VALUE / 2,
        (long) PARKED_PER_IN_FLIGHT * spec.maxInFlight());
    this.tracker = new OffsetTracker<>(clock);
    // First, so that a coordinator that cannot be reached leaves no consumer behind.
    this.txn = config.handOff() == KafkaTransportConfig.HandOff.TRANSACTIONAL
        ? new TransactionalCopies(config,
            TransactionalCopies.transactionalId(config, topic, spec.group()))
        : null;
    Map<String, Object> consumerProps = consumerProperties(config, spec, maxPollRecords);
    consumerProps.put("group.id", consumerGroup);
    this.consumer = new KafkaConsumer<>(consumerProps,
        new org.apache.kafka.common.serialization.StringDeserializer(),
        new org.apache.kafka.common.serialization.ByteArrayDeserializer());
    this.router = txn == null ? KafkaPublisher.createRouter(config) : null;
    String name = "relaykit-" + topic + "-" + spec.group();
    this.workers = KeyedExecutor.builder()
        .threads(spec.concurrency())
        // Everything tracked may be queued at once (parked records released together, retries in
        // their headroom), beside stale tasks of a revoked assignment: a submit never waits.
        .maxQueued(2 * (spec.maxInFlight() + maxParked) + 3 * maxPollRecords)
        .threadFactory(spec.handlerThreads().factory(name + "-worker",
            daemonThreads(name + "-worker")))
        .failureHandler((key, failure) -> LOG.log(System.Logger.Level.ERROR,
            "unexpected failure in the consumer runtime of " + topic, failure))
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
    this.mapsKey = spec.inbound().acceptsForeign() && spec.inbound().keyHeader().isPresent();
    this.watchdog = new HandlerWatchdog(spec.handlerTimeout(), timers);
    CopyHandOff.Sender sender = senders.apply(txn != null
        ? (w, copy, what) -> txn.send(w, copy, what, () -> current(w) && state != State.FAILED)
        : (w, copy, what) -> router.send(copy, what));
    this.handOff = new CopyHandOff(sender, copies, config, metrics, topic, spec.group(),
        retryTopic, retryPartitions, deadLetterTopic, new CopyHandOff.Owner() {
          @Override
          public boolean current(Work w) {
            return KafkaConsumerRuntime.this.current(w) && state != State.FAILED;
          }

          @Override
          public void retried(Work w, Object key, RecordMetadata copyAt) {
            KafkaConsumerRuntime.this.retried(w, key, copyAt);
          }

          @Override
          public void retryRefused(Work w, Object key) {
            if (key != null) {
              parking.release(key, w, KafkaConsumerRuntime.this::drain);
            }
          }

          @Override
          public void finish(Work w) {
            KafkaConsumerRuntime.this.finish(w);
          }
        });
    this.backlog = new ConsumerBacklog(topic, spec.group(), Map.of(), 0, Duration.ZERO,
        clock.instant());
    this.pollThread = new Thread(this::pollLoop, name + "-poll");
    pollThread.setDaemon(true);
  }

  private static java.util.concurrent.ThreadFactory daemonThreads(String name) {
    java.util.concurrent.atomic.AtomicInteger n = new java.util.concurrent.atomic.AtomicInteger();
    return r -> {
      Thread t = new Thread(r, name + "-" + n.incrementAndGet());
      t.setDaemon(true); // a stuck handler must not keep the JVM alive after close
      return t;
    };
  }

  static Map<String, Object> consumerProperties(KafkaTransportConfig config, SubscriptionSpec spec,
      int maxPollRecords) {
    Map<String, Object> props = new HashMap<>();
    props.putAll(config.consumerProperties());
    // We choose start positions ourselves (see resetPositions): the user's setting governs the
    // source partitions only, retry partitions always start from their earliest copy.
    props.put(OffsetReset.SETTING, "none");
    // Under the KIP-848 protocol the server's default (uniform) assignor may put every retry
    // partition on one member and every source partition on another; range gives a member the
    // same partition numbers of both topics, so retry copies land where their key is parked.
    if ("consumer".equalsIgnoreCase(String.valueOf(props.get("group.protocol")))) {
      props.putIfAbsent("group.remote.assignor", "range");
    }
    props.put("bootstrap.servers", config.bootstrapServers());
    props.put("group.id", spec.group());
    props.put("client.id", config.clientIdPrefix() + "-" + spec.group() + "-"
        + Long.toHexString(System.nanoTime()));
    props.put("enable.auto.commit", "false");
    props.put("max.poll.records", Integer.toString(maxPollRecords));
    props.put("max.poll.interval.ms", Long.toString(config.maxPollInterval().toMillis()));
    if (config.handOff() == KafkaTransportConfig.HandOff.TRANSACTIONAL) {
      // Copies of aborted (and not yet committed) hand-off transactions must not be read.
      props.put("isolation.level", "read_committed");
    }
    return props;
  }

  void start() {
    watchdog.start();
    pollThread.start();
  }

  // ---------------------------------------------------------------- poll thread

  private void pollLoop() {
    try {
      consumer.subscribe(retryOnly ? List.of(retryTopic) : List.of(topic, retryTopic),
          new Rebalance());
      long nextCommit = System.nanoTime() + config.commitInterval().toNanos();
      int errorsInARow = 0;
      while (state == State.RUNNING || state == State.DRAINING) {
        try {
          if (!toRewind.isEmpty()) {
            finishRewind();
          }
          ConsumerRecords<String, byte[]> records = poll(adjustPauses());
          accept(records);
          if (System.nanoTime() - nextCommit >= 0) {
            if (txn == null) {
              commitAsync();
            } else {
              commitTransactional(false);
            }
            sampleBacklog();
            nextCommit = System.nanoTime() + config.commitInterval().toNanos();
          }
          errorsInARow = 0;
        } catch (InvalidOffsetException e) {
          resetPositions(e);
        } catch (AuthenticationException | AuthorizationException | InvalidGroupIdException
            | FencedInstanceIdException | UnreleasedInstanceIdException
            | GroupMaxSizeReachedException | UnsupportedVersionException e) {
          fail("consumer of " + topic + " in group " + spec.group() + " cannot go on: " + e, e);
        } catch (RuntimeException e) {
          // A bad turn (a commit timeout, a broker moving) must not end the loop; repeated ones
          // back off, and only the first of a run logs its stack trace.
          errorsInARow++;
          backOff(errorsInARow, e);
        }
      }
    } finally {
      try {
        // Nothing more starts; the commit names what finished past each position, so the next
        // owner runs only what this member did not finish. A retry record taken in just as close
        // stopped waiting finishes first, within what is left of the close's deadline.
        Set<TopicPartition> all = new HashSet<>(owned);
        leaving.addAll(all);
        if (!simulatedCrash) {
          long by = closeBy;
          awaitHandOver(all, by == Long.MAX_VALUE ? config.closeTimeout().toNanos()
              : Math.min(by - System.nanoTime(), config.closeTimeout().toNanos()));
          commitFinal(all);
        }
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "final commit of " + topic + " failed: " + e, e);
      }
      for (TopicPartition tp : new ArrayList<>(owned)) {
        tracker.revoke(tp);
      }
      owned.clear();
      try {
        consumer.close(org.apache.kafka.clients.consumer.CloseOptions.timeout(config.closeTimeout()));
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "closing the consumer of " + topic + " failed", e);
      }
      pollThreadDone.countDown();
      synchronized (idle) {
        idle.notifyAll();
      }
    }
  }

  /**
   * Chooses start positions for partitions the consumer could not place ({@code
   * auto.offset.reset=none} is what it runs with): a retry partition starts from its earliest copy
   * (a copy skipped is a message lost: its source was committed when the copy was confirmed); a
   * source partition follows the user's {@link OffsetReset}, and with {@code none} the
   * subscription fails, naming the partitions and the setting.
   */
  private void resetPositions(InvalidOffsetException e) {
    resetPositions(e.partitions(), e instanceof OffsetOutOfRangeException, e);
  }

  private void resetPositions(Collection<TopicPartition> partitions, boolean outOfRange,
      Throwable e) {
    List<TopicPartition> retry = new ArrayList<>();
    List<TopicPartition> source = new ArrayList<>();
    for (TopicPartition tp : partitions) {
      (tp.topic().equals(retryTopic) ? retry : source).add(tp);
    }
    if (!retry.isEmpty()) {
      if (outOfRange) {
        LOG.log(System.Logger.Level.WARNING, "committed offsets of retry partitions " + retry
            + " of group " + spec.group() + " are out of range (retention?); starting from the"
            + " earliest copy still held");
      }
      consumer.seekToBeginning(retry);
    }
    if (source.isEmpty()) {
      return;
    }
    switch (sourceReset.kind()) {
      case EARLIEST -> consumer.seekToBeginning(source);
      case LATEST -> consumer.seekToEnd(source);
      case BY_DURATION -> {
        long since = clock.instant().minus(sourceReset.duration()).toEpochMilli();
        Map<TopicPartition, Long> times = new HashMap<>();
        source.forEach(tp -> times.put(tp, since));
        Map<TopicPartition, org.apache.kafka.clients.consumer.OffsetAndTimestamp> found =
            consumer.offsetsForTimes(times, config.closeTimeout());
        List<TopicPartition> toEnd = new ArrayList<>();
        for (TopicPartition tp : source) {
          var at = found.get(tp);
          if (at == null) {
            toEnd.add(tp); // nothing that recent: start at the end
          } else {
            consumer.seek(tp, at.offset());
          }
        }
        if (!toEnd.isEmpty()) {
          consumer.seekToEnd(toEnd);
        }
      }
      case NONE -> fail("partition(s) " + source + " of group " + spec.group()
          + (outOfRange ? " have a committed offset out of range" : " have no committed offset")
          + " and " + sourceReset + " forbids choosing a start: set the group's offsets"
          + " (kafka-consumer-groups.sh --reset-offsets) or use auto.offset.reset=earliest or"
          + " latest; the subscription stopped", e);
      default -> throw new AssertionError(sourceReset);
    }
    if (outOfRange && sourceReset.kind() != OffsetReset.Kind.NONE) {
      LOG.log(System.Logger.Level.WARNING, "committed offsets of " + source + " of group "
          + spec.group() + " are out of range; restarting them by " + sourceReset);
    }
  }

  /**
   * Stops the subscription for good: one error log naming the cause, {@link #failure()} set,
   * {@link MetricsListener#consumerFailed} reported, {@link #isRunning()} false. The poll loop then
   * commits what finished and closes the consumer; unfinished records are redelivered to the next
   * consumer.
   */
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

  /**
   * Waits after the {@code n}-th retriable error in a row: the poll timeout doubled per error, at
   * most {@link #MAX_ERROR_BACKOFF}; {@link #close} cuts the wait short.
   */
  private void backOff(int n, RuntimeException e) {
    long base = Math.max(config.pollTimeout().toMillis(), 10);
    long waitMs = Math.min(MAX_ERROR_BACKOFF.toMillis(), base << Math.min(n - 1, 20));
    String text = "poll loop of " + topic + " in group " + spec.group() + " hit " + e
        + " (" + n + " in a row); retrying in " + waitMs + " ms";
    if (n == 1) {
      LOG.log(System.Logger.Level.WARNING, text, e);
    } else if (Integer.bitCount(n) == 1) {
      LOG.log(System.Logger.Level.WARNING, text);
    }
    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(waitMs);
    while (state == State.RUNNING || state == State.DRAINING) {
      long left = end - System.nanoTime();
      if (left <= 0) {
        return;
      }
      java.util.concurrent.locks.LockSupport.parkNanos(this, left);
    }
  }

  /**
   * Polls for up to the poll timeout. When {@code full}, a worker that makes room cuts the wait short
   * with {@link KafkaConsumer#wakeup()}, so intake resumes while the records still in flight keep
   * the workers busy, not one poll timeout later.
   */
  private ConsumerRecords<String, byte[]> poll(boolean full) {
    if (full) {
      wakeWhenRoom.set(true);
      if (hasRoom()) { // room was made before the flag was up: go round again at once
        wakeWhenRoom.set(false);
        return ConsumerRecords.empty();
      }
    }
    try {
      return consumer.poll(config.pollTimeout());
    } catch (WakeupException e) {
      return ConsumerRecords.empty(); // a worker made room
    } finally {
      wakeWhenRoom.set(false);
    }
  }

  /**
   * Records in flight that will finish by themselves: running, queued for a worker, or being handed
   * to the retry or dead-letter topic. Records waiting for a parked key are not among them: they
   * wait for a retry, which must still be fetched.
   */
  private long active() {
    return tracker.inFlight() - parking.waiting();
  }

  /**
   * Whether one more poll's worth of source records fits: under {@code maxInFlight} active
   * records, and under {@link #maxParked} records waiting for parked keys.
   */
  private boolean hasRoom() {
    return active() + maxPollRecords <= spec.maxInFlight() && parking.waiting() < maxParked;
  }

  /**
   * Whether the retry partitions may be fetched: they keep one poll of headroom above {@code
   * maxInFlight}, so neither the main flow nor parked records can starve the retries that unpark
   * keys. What is active finishes by itself (handlers are bounded by their timeout), so this bound
   * cannot deadlock.
   */
  private boolean hasRetryRoom() {
    return active() <= spec.maxInFlight();
  }

  /**
   * Whether retry partition {@code tp} may hold a record to read: the consumer's lag says so, or
   * this member wrote a copy past what it read. A copy another member wrote is seen once the
   * source flows again (its lag is then fetched).
   */
  private boolean retryHasWork(TopicPartition tp) {
    OptionalLong lag = consumer.currentLag(tp);
    if (lag.isPresent() && lag.getAsLong() > 0) {
      return true;
    }
    Long end = copiesEnd.get(tp);
    return end != null && end > retryRead.getOrDefault(tp, 0L);
  }

  /**
   * Pauses the source partitions while source intake is stopped, the retry partitions while they
   * have no room of their own or, for up to one poll timeout (on {@link System#nanoTime}) from the
   * turn active work came to fill {@code maxInFlight}, while it still does, and a retry partition
   * until its next record is due; resumes the rest. The bound is per such stretch: where active
   * work fills and empties again turn after turn, the retries are fetched whenever the source is,
   * behind the source records the consumer has already buffered.
   *
   * @return true if source intake is stopped because in-flight work is full (and the runtime is
   *     running)
   */
  private boolean adjustPauses() {
    Set<TopicPartition> assigned = consumer.assignment();
    Instant now = clock.instant();
    delayedUntil.entrySet().removeIf(e -> !e.getValue().isAfter(now)
        || !assigned.contains(e.getKey()));
    boolean full = !hasRoom();
    boolean stopSource = state != State.RUNNING || full;
    // Retry partitions are read while draining too (a due retry unparks its key's records) and
    // while the source is stopped for parked records, but then only when they hold something to
    // read: the consumer keeps one fetch in flight per broker, and after returning a partition's
    // records it sends the next fetch for that partition at once, so a fetch of the retry
    // partitions alone would wait at the broker for fetch.max.wait.ms and hold back the source's
    // fetch when it resumes. While the active records fill maxInFlight the retry partitions wait
    // with the source, for up to one poll timeout (active records usually make room sooner, and
    // the retries are then fetched with the source), then they are read on their own again: a
    // handler may be waiting for a retry, so retries must never wait for room.
    boolean activeFull = active() + maxPollRecords > spec.maxInFlight() && state == State.RUNNING;
    long nowNanos = System.nanoTime();
    if (!activeFull) {
      activeFullSince = 0;
    } else if (activeFullSince == 0) {
      activeFullSince = nowNanos | 1; // never 0 while set
    }
    boolean retryWaitsForRoom = activeFull
        && nowNanos - activeFullSince < config.pollTimeout().toNanos();
    boolean stopRetry = !hasRetryRoom() || retryWaitsForRoom;
    Set<TopicPartition> wanted = new HashSet<>(delayedUntil.keySet());
    for (TopicPartition tp : assigned) {
      boolean stop = tp.topic().equals(retryTopic)
          ? stopRetry || (stopSource && !retryHasWork(tp))
          : stopSource;
      if (stop) {
        wanted.add(tp);
      }
    }
    Set<TopicPartition> paused = consumer.paused();
    List<TopicPartition> toPause = new ArrayList<>();
    for (TopicPartition tp : wanted) {
      if (!paused.contains(tp)) {
        toPause.add(tp);
      }
    }
    List<TopicPartition> toResume = new ArrayList<>();
    for (TopicPartition tp : paused) {
      if (!wanted.contains(tp) && assigned.contains(tp)) {
        toResume.add(tp);
      }
    }
    if (!toPause.isEmpty()) {
      consumer.pause(toPause);
    }
    if (!toResume.isEmpty()) {
      consumer.resume(toResume);
    }
    return full && state == State.RUNNING;
  }

  private void accept(ConsumerRecords<String, byte[]> records) {
    if (records.isEmpty()) {
      return;
    }
    Instant now = clock.instant();
    for (TopicPartition tp : records.partitions()) {
      if (!toRewind.isEmpty() && toRewind.contains(tp)) {
        continue; // moved back to its committed offset before anything of it is taken in
      }
      boolean fromRetry = tp.topic().equals(retryTopic);
      FinishedAbove done = handedOver.isEmpty() ? null : handedOver.get(tp);
      for (ConsumerRecord<String, byte[]> r : records.records(tp)) {
        if (state != State.RUNNING && !(fromRetry && state == State.DRAINING)) {
          consumer.seek(tp, r.offset()); // draining: leave it for the next owner
          break;
        }
        if (fromRetry && !handedHolds.isEmpty()) {
          passHandedHolds(tp, r);
        }
        if (done != null) {
          if (done.finished(r.offset())) {
            // Its previous owner finished it before handing the partition over: passed over,
            // counted as finished so the commit position moves past it.
            if (fromRetry) {
              retryRead.put(tp, r.offset() + 1);
              Object key = spec.ordering() == io.relaykit.ordering.OrderingMode.UNORDERED ? null
                  : gateKey(r, true);
              if (key != null) { // a key handed over parked behind it goes on
                parking.release(key, new RetryHold(tp, r.offset()), this::drain);
              }
            }
            tracker.complete(tracker.track(tp, r.offset()));
            continue;
          }
          if (r.offset() >= done.end()) {
            handedOver.remove(tp);
            done = null;
          }
        }
        if (fromRetry) {
          Instant due = retryDue(r, now);
          if (due != null && due.isAfter(now)) {
            consumer.seek(tp, r.offset());
            delayedUntil.put(tp, due);
            retryRead.put(tp, r.offset());
            consumer.pause(List.of(tp));
            break;
          }
        }
        if (fromRetry) {
          retryRead.put(tp, r.offset() + 1);
        }
        OffsetTracker.Ticket<TopicPartition> ticket = tracker.track(tp, r.offset());
        dispatch(new Work(r, ticket, fromRetry, gateKey(r, fromRetry)));
      }
    }
  }

  /**
   * A retry record's due time; null when it has none, or one that is bad input ({@link
   * #badRetryAt}): the worker then dead-letters it as undecodable, naming the header.
   */
  private Instant retryDue(ConsumerRecord<String, byte[]> r, Instant now) {
    String due = KafkaRecords.fromHeaders(r.headers()).get(MessageHeaders.RETRY_AT);
    if (due == null || badRetryAt(due, now) != null) {
      return null;
    }
    return Instant.parse(due);
  }

  /**
   * Why {@code due}, a retry record's {@code relaykit-retry-at}, is bad input, or null when it is
   * not: not an instant, or later than now plus the longest wait the retry policy gives (its
   * backoff's delay for the last attempt, without jitter) plus {@link #RETRY_AT_MARGIN} for clocks
   * apart. Such a record (forged, or written by a clock far ahead) would stop its retry partition
   * until then; it is dead-lettered with the reason instead.
   */
  private String badRetryAt(String due, Instant now) {
    Instant at;
    try {
      at = Instant.parse(due);
    } catch (DateTimeParseException e) {
      return "header " + MessageHeaders.RETRY_AT + " is not an instant: "
          + io.relaykit.internal.Texts.truncateUtf8(due, 64);
    }
    Instant latest;
    try {
      latest = now.plus(longestRetryWait).plus(RETRY_AT_MARGIN);
    } catch (java.time.DateTimeException | ArithmeticException e) {
      return null; // the policy's longest wait reaches past the end of time: nothing is too late
    }
    if (at.isAfter(latest)) {
      return "header " + MessageHeaders.RETRY_AT + " " + due + " is later than the retry"
          + " policy allows (" + longestRetryWait + " plus " + RETRY_AT_MARGIN + " from now)";
    }
    return null;
  }

  /**
   * Releases the handed-over holds of retry partition {@code tp} that record {@code r} shows
   * cannot be met by a copy this member will still read: those below its offset (passed), and one
   * at its offset naming another key. A hold on {@code r} itself is left to {@code r}'s finish.
   */
  private void passHandedHolds(TopicPartition tp, ConsumerRecord<String, byte[]> r) {
    Map<RetryHold, Object> holds = handedHolds.get(tp);
    if (holds == null) {
      return;
    }
    Object own = null;
    boolean ownRead = false;
    for (var it = holds.entrySet().iterator(); it.hasNext(); ) {
      var e = it.next();
      long at = e.getKey().offset();
      if (at > r.offset()) {
        continue;
      }
      it.remove();
      if (at == r.offset()) {
        if (!ownRead) {
          own = gateKey(r, true);
          ownRead = true;
        }
        if (e.getValue().equals(own)) {
          continue; // its copy: released when it finishes
        }
      }
      parking.release(e.getValue(), e.getKey(), this::drain);
    }
    if (holds.isEmpty()) {
      handedHolds.remove(tp);
    }
  }

  private Object gateKey(ConsumerRecord<String, byte[]> r, boolean fromRetry) {
    switch (spec.ordering()) {
      case UNORDERED:
        return null;
      case KEY:
        // The key the handler sees (mapped from a key header for a foreign record); a keyless
        // record has nothing to be ordered with: it runs unordered. Retry copies carry that key.
        return mapsKey
            ? spec.inbound().keyOf(name -> KafkaRecords.header(r.headers(), name), r.key())
            : r.key();
      case PARTITION:
        if (fromRetry) {
          String source = sourcePositionOf(KafkaRecords.header(r.headers(),
              MessageHeaders.SOURCE_POSITION), null);
          String partition = source == null ? null : KafkaRecords.partitionOf(source);
          return partition != null ? partition : r.topic() + "-" + r.partition();
        }
        return r.topic() + "-" + r.partition();
      default:
        throw new AssertionError(spec.ordering());
    }
  }

  private void commitAsync() {
    Map<TopicPartition, OffsetAndMetadata> offsets = changedOffsets(consumer.assignment());
    if (offsets.isEmpty()) {
      return;
    }
    consumer.commitAsync(offsets, (done, error) -> {
      if (error != null) {
        LOG.log(System.Logger.Level.DEBUG, "async commit of " + topic + " failed (the next one"
            + " covers it): " + error);
        done.keySet().forEach(committed::remove);
      }
    });
    offsets.forEach((tp, o) -> committed.put(tp, o.offset()));
  }

  private void commitSync(Collection<TopicPartition> partitions) {
    if (txn != null) {
      commitTransactional(true);
      return;
    }
    Map<TopicPartition, OffsetAndMetadata> offsets = changedOffsets(partitions);
    if (!offsets.isEmpty()) {
      try {
        consumer.commitSync(offsets, config.closeTimeout());
      } catch (WakeupException e) {
        // a worker's wake-up meant for a poll (it made room just as that poll ended); the throw
        // used it up, and the commit is still wanted
        consumer.commitSync(offsets, config.closeTimeout());
      }
      offsets.forEach((tp, o) -> committed.put(tp, o.offset()));
    }
  }

  /**
   * A commit of the transactional hand-off ({@link TransactionalCopies#commit}): plainly when no
   * transaction is open, else with the open transaction once the watermark passed its copies (or
   * {@code force}: revoke, close). An aborted transaction rewinds every owned partition to its
   * committed offset; a fenced producer stops the subscription, committing nothing more.
   */
  private void commitTransactional(boolean force) {
    txn.commit(txnCommitter, force);
  }

  /** The runtime's side of {@link TransactionalCopies}; poll thread only. */
  private final TransactionalCopies.Committer txnCommitter = new TransactionalCopies.Committer() {
      @Override
      public Map<TopicPartition, OffsetAndMetadata> offsets() {
        Set<TopicPartition> parts = new HashSet<>(consumer.assignment());
        parts.removeAll(toRewind);
        return changedOffsets(parts);
      }

      @Override
      public boolean passed(TopicPartition tp, long offset) {
        if (withFinished && drained.contains(tp)) {
          // A hand-over with nothing left running: the records that wrote copies all finished,
          // and the commit names them finished past the position (the next owner passes over
          // them), so committing their copies runs nothing twice.
          return true;
        }
        OptionalLong at = tracker.committable(tp);
        if (at.isEmpty() || at.getAsLong() > offset) {
          return true;
        }
        // The lowest unfinished record waits for a parked key: it cannot finish before its key's
        // retry runs, which needs a committed transaction (maybe this one) and its delay; keeping
        // the transaction open would gain nothing and hold every retry in it back.
        long low = at.getAsLong();
        return parking.anyWaiting(w -> w.record().offset() == low && w.partition().equals(tp));
      }

      @Override
      public org.apache.kafka.clients.consumer.ConsumerGroupMetadata groupMetadata() {
        return consumer.groupMetadata();
      }

      @Override
      public void commitPlain(Map<TopicPartition, OffsetAndMetadata> offsets) {
        try {
          consumer.commitSync(offsets, config.closeTimeout());
        } catch (WakeupException e) {
          consumer.commitSync(offsets, config.closeTimeout()); // see commitSync
        }
      }

      @Override
      public void committed(Map<TopicPartition, OffsetAndMetadata> offsets) {
        offsets.forEach((tp, o) -> committed.put(tp, o.offset()));
      }

      @Override
      public void aborted() {
        startRewind();
      }

      @Override
      public void fenced() {
        Set<TopicPartition> all = new HashSet<>(owned);
        drop(all); // nothing of this member's may be committed any more
        fail("transactional producer " + txn.transactionalId() + " of " + topic + " in group "
            + spec.group() + " was fenced (another live member uses the same member id, or its"
            + " transaction outlived transaction.timeout.ms); its open transaction was aborted and"
            + " the subscription stopped: restart it to resume from the committed offsets",
            txn.fatal());
      }
    };

  /**
   * After an aborted hand-off transaction: drops the tracking of every owned partition now (their
   * in-flight work turns stale and writes nothing; its retry and dead-letter copies were
   * discarded) and moves them back to their committed offsets before the next poll ({@link
   * #finishRewind}): their records run again at the attempt the broker last committed.
   */
  private void startRewind() {
    Set<TopicPartition> all = new HashSet<>(owned);
    drop(all);
    owned.addAll(all);
    toRewind.addAll(all);
  }

  private void finishRewind() {
    Set<TopicPartition> parts = new HashSet<>(toRewind);
    parts.retainAll(consumer.assignment());
    for (TopicPartition tp : parts) {
      tracker.revoke(tp); // anything taken in since the abort
    }
    Map<TopicPartition, OffsetAndMetadata> at = consumer.committed(parts, config.closeTimeout());
    List<TopicPartition> none = new ArrayList<>();
    for (TopicPartition tp : parts) {
      OffsetAndMetadata o = at.get(tp);
      if (o == null) {
        none.add(tp);
      } else {
        consumer.seek(tp, o.offset());
        committed.put(tp, o.offset());
      }
    }
    if (!none.isEmpty()) {
      resetPositions(none, false, null);
    }
    toRewind.clear();
    LOG.log(System.Logger.Level.INFO, "partitions " + parts + " of " + topic + " in group "
        + spec.group() + " rewound to their committed offsets after an aborted transaction");
  }

  private Map<TopicPartition, OffsetAndMetadata> changedOffsets(
      Collection<TopicPartition> partitions) {
    Map<TopicPartition, OffsetAndMetadata> offsets = new LinkedHashMap<>();
    for (TopicPartition tp : partitions) {
      if (withFinished) {
        var pending = tracker.pending(tp);
        FinishedAbove done = null;
        long base = -1;
        if (pending.isPresent()) {
          var p = pending.get();
          base = p.committable();
          done = FinishedAbove.of(p.committable(), p.end(), p.incomplete(), handedOver.get(tp));
        } else {
          OptionalLong next = tracker.committable(tp);
          base = next.isPresent() ? next.getAsLong() : -1;
        }
        List<FinishedAbove.Parked> keys = base < 0 ? List.of() : parkedAt(tp);
        if (!keys.isEmpty()) {
          done = FinishedAbove.withParked(done, base, keys);
        }
        if (done != null) {
          offsets.put(tp, new OffsetAndMetadata(base, done.encode()));
          continue;
        }
      }
      OptionalLong next = tracker.committable(tp);
      if (next.isPresent() && !Long.valueOf(next.getAsLong()).equals(committed.get(tp))) {
        offsets.put(tp, new OffsetAndMetadata(next.getAsLong()));
      }
    }
    return offsets;
  }

  /**
   * The keys parked for their retry that a hand-over of source partition {@code tp} names for the
   * next owner: those with a record of {@code tp} waiting, or held by a copy in the retry partition
   * {@code tp}'s copies go to; each with its latest confirmed retry copy. A key whose copy is not
   * confirmed yet is left out (its record is not finished either, and runs again).
   */
  private List<FinishedAbove.Parked> parkedAt(TopicPartition tp) {
    if (retryOnly || spec.ordering() == io.relaykit.ordering.OrderingMode.UNORDERED
        || !tp.topic().equals(topic)) {
      return List.of();
    }
    int rp = Math.floorMod(tp.partition(), retryPartitions);
    List<FinishedAbove.Parked> keys = new ArrayList<>();
    parking.holdsOf(w -> !w.fromRetryTopic() && w.partition().equals(tp),
        h -> h instanceof RetryHold rh && rh.partition().partition() == rp)
        .forEach((key, holds) -> {
          RetryHold last = null;
          for (Object h : holds) {
            if (!(h instanceof RetryHold rh)) {
              return;
            }
            if (last == null || rh.offset() > last.offset()) {
              last = rh;
            }
          }
          if (key instanceof String k && last != null) {
            keys.add(new FinishedAbove.Parked(last.partition().partition(), last.offset(), k));
          }
        });
    return keys;
  }

  /**
   * Parks the keys a previous owner handed over parked ({@link FinishedAbove#parked}) behind their
   * retry copies, where this member reads that copy's retry partition and has not passed it: the
   * key's records then wait for that copy to finish here, as they would have at the previous
   * owner. Bounded: a hold is dropped when the copy finishes or is passed over, when its retry
   * partition is revoked, and at the latest after the retry policy's longest wait plus {@link
   * #RETRY_AT_MARGIN} (a copy gone to retention must not stall its key).
   */
  private void parkHandedOver(FinishedAbove done, Map<TopicPartition, OffsetAndMetadata> at) {
    Set<TopicPartition> named = new HashSet<>();
    for (FinishedAbove.Parked p : done.parked()) {
      TopicPartition rtp = new TopicPartition(retryTopic, p.retryPartition());
      if (owned.contains(rtp)) {
        named.add(rtp);
      }
    }
    Map<TopicPartition, Long> ends = Map.of();
    // Not with the transactional hand-off: there the end is the last stable offset, which can
    // still lie below a copy whose transaction committed while its markers are being written.
    if (!named.isEmpty() && txn == null) {
      try {
        ends = consumer.endOffsets(named, config.closeTimeout());
      } catch (RuntimeException e) {
        // unknown: the holds stay, bounded by the timer below
        LOG.log(System.Logger.Level.DEBUG, "could not read the end of " + named + ": " + e);
      }
    }
    for (FinishedAbove.Parked p : done.parked()) {
      TopicPartition rtp = new TopicPartition(retryTopic, p.retryPartition());
      if (!owned.contains(rtp)) {
        continue; // another member reads that copy: order as after a crash
      }
      Long end = ends.get(rtp);
      if (end != null && p.offset() >= end) {
        continue; // no such copy (a confirmed copy is below the end): stale or forged
      }
      OffsetAndMetadata read = at.get(rtp);
      FinishedAbove rdone = handedOver.get(rtp);
      if ((read != null && read.offset() > p.offset())
          || (rdone != null && rdone.finished(p.offset()))
          || retryRead.getOrDefault(rtp, -1L) > p.offset()) {
        continue; // that copy finished already, or is in this member's hands
      }
      RetryHold hold = new RetryHold(rtp, p.offset());
      parking.hold(p.key(), hold);
      handedHolds.computeIfAbsent(rtp, t -> new HashMap<>()).put(hold, p.key());
      long bound;
      try {
        bound = longestRetryWait.plus(RETRY_AT_MARGIN).toMillis();
      } catch (ArithmeticException e) {
        bound = Long.MAX_VALUE / 4;
      }
      try {
        timers.schedule(() -> parking.release(p.key(), hold, this::drain), bound,
            TimeUnit.MILLISECONDS);
      } catch (RejectedExecutionException e) {
        parking.release(p.key(), hold, this::drain); // closing
      }
    }
  }

  private void sampleBacklog() {
    Map<String, Long> lag = new LinkedHashMap<>();
    Map<Integer, Long> byPartition = new LinkedHashMap<>();
    for (TopicPartition tp : consumer.assignment()) {
      OptionalLong l = consumer.currentLag(tp);
      if (l.isPresent()) {
        lag.put(tp.toString(), l.getAsLong());
        if (tp.topic().equals(topic)) {
          byPartition.put(tp.partition(), l.getAsLong());
        }
      }
    }
    // A handler stuck past its timeout (its record moved on to the retry topic) still holds a
    // worker: it counts towards the oldest age, so an alarm sees workers that stopped moving.
    Duration oldest = tracker.oldestInFlightAge().orElse(Duration.ZERO);
    Duration running = watchdog.oldestRunning().orElse(Duration.ZERO);
    ConsumerBacklog sample = new ConsumerBacklog(topic, spec.group(), lag, tracker.inFlight(),
        running.compareTo(oldest) > 0 ? running : oldest, clock.instant());
    backlog = sample;
    try {
      monitor.record(sample.toSample());
    } catch (IllegalArgumentException e) {
      return; // the clock stepped back: skip this sample rather than feed the monitor disorder
    }
    BacklogSnapshot snapshot = monitor.snapshot();
    // A partition this member reported before and no longer holds (revoked, lost) reads 0 once:
    // its lag is its new owner's to report, and a gauge must not keep this member's last value.
    for (java.util.Iterator<Integer> it = lagReported.iterator(); it.hasNext(); ) {
      Integer p = it.next();
      if (!byPartition.containsKey(p)) {
        it.remove();
        MetricsListener.safely(metrics, m -> m.partitionLag(topic, spec.group(), p, 0));
      }
    }
    lagReported.addAll(byPartition.keySet());
    if (retryOnly) {
      // A share subscription's retry reader: its owner reports lag, in-flight, oldest age and
      // the backlog snapshot for both together (the same destination and group), so the gauges
      // do not flip between them and the snapshot is not the retry records' alone.
      return;
    }
    // One call each: a listener that throws on one still gets the others.
    MetricsListener.safely(metrics, m -> m.consumerLag(topic, spec.group(), sample.totalLag()));
    byPartition.forEach((p, l) -> MetricsListener.safely(metrics,
        m -> m.partitionLag(topic, spec.group(), p, l)));
    MetricsListener.safely(metrics, m -> m.inFlight(topic, spec.group(), sample.inFlight()));
    MetricsListener.safely(metrics,
        m -> m.oldestInFlightAge(topic, spec.group(), sample.oldestInFlightAge()));
    MetricsListener.safely(metrics, m -> m.backlog(topic, spec.group(), snapshot));
  }

  /** Poll thread: the source partitions whose lag was last reported, to zero them when gone. */
  private final java.util.Set<Integer> lagReported = new java.util.HashSet<>();

  /** Runs on the poll thread, inside {@code poll}. */
  private final class Rebalance implements ConsumerRebalanceListener {
    @Override
    public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
      try {
        Set<TopicPartition> mine = new HashSet<>(partitions);
        mine.retainAll(owned);
        if (!mine.isEmpty()) {
          leaving.addAll(mine);
          awaitHandOver(mine, config.closeTimeout().toNanos());
        }
        commitHandOver(partitions);
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "commit on revoke of " + partitions + " failed; "
            + "the next owner may repeat finished records: " + e, e);
      }
      drop(partitions);
    }

    @Override
    public void onPartitionsLost(Collection<TopicPartition> partitions) {
      if (txn != null) {
        // Its offsets can no longer be committed by us: abort now, so that records read again
        // after the reassignment write their copies into a new transaction.
        txn.abortOpen(txnCommitter, "partitions " + partitions + " were lost");
      }
      drop(partitions);
    }

    @Override
    public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
      owned.addAll(partitions);
      readHandedOver(partitions);
    }
  }

  /**
   * Waits, up to {@code waitNanos}, until every record of {@code partitions} taken in has
   * finished or was left to the next owner without starting (queued in a lane, or waiting for a
   * parked key): a graceful hand-over runs no record twice. Poll thread, inside the revoke.
   */
  private void awaitHandOver(Set<TopicPartition> partitions, long waitNanos) {
    long end = System.nanoTime() + Math.max(0, waitNanos);
    handingOver = true;
    try {
      synchronized (idle) {
        while (runningIn(partitions) > 0) {
          long left = end - System.nanoTime();
          if (left <= 0) {
            LOG.log(System.Logger.Level.WARNING, "records of " + partitions + " still running"
                + " at their hand-over after " + Duration.ofNanos(Math.max(0, waitNanos))
                + "; the next owner may run them again");
            return;
          }
          try {
            idle.wait(Math.max(1, Math.min(50, TimeUnit.NANOSECONDS.toMillis(left))));
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
          }
        }
      }
      drained.addAll(partitions);
    } finally {
      handingOver = false;
    }
  }

  /**
   * Records of {@code partitions} that will still finish here: in flight, less those waiting for
   * a parked key and those left over. Read in that order, a record moving between them is counted
   * at most twice, never missed.
   */
  private long runningIn(Set<TopicPartition> partitions) {
    long left = 0;
    for (TopicPartition tp : partitions) {
      var n = leftOver.get(tp);
      left += n == null ? 0 : n.get();
    }
    long parked = parking.waiting(w -> partitions.contains(w.partition()));
    long inFlight = 0;
    for (TopicPartition tp : partitions) {
      inFlight += tracker.inFlight(tp);
    }
    return inFlight - parked - left;
  }

  /**
   * Commits {@code partitions} for a hand-over: the position, and in its metadata the records
   * finished past it ({@link FinishedAbove}), which the next owner passes over.
   */
  private void commitHandOver(Collection<TopicPartition> partitions) {
    withFinished = true;
    try {
      try {
        commitSync(partitions);
      } catch (org.apache.kafka.common.errors.OffsetMetadataTooLarge e) {
        // a broker whose offset.metadata.max.bytes is below what the list took: commit the
        // position alone (the records finished past it run again, at least once) rather than
        // nothing (every record since the last interval commit would run again)
        LOG.log(System.Logger.Level.WARNING, "the broker refused the hand-over metadata of "
            + partitions + " as too large (offset.metadata.max.bytes); committing the position"
            + " alone: records finished past it may run again: " + e);
        withFinished = false;
        commitSync(partitions);
      }
    } finally {
      withFinished = false;
      drained.clear();
    }
  }

  /**
   * The hand-over commit at the end of the poll loop. A group in the middle of a rebalance
   * refuses it ({@code RebalanceInProgressException}, under the cooperative protocol): the
   * rebalance is then completed by polls with every partition paused (records a poll returns
   * are not taken in; a revoke on the way commits its own hand-over), and the commit tried again,
   * up to the close timeout.
   */
  private void commitFinal(Set<TopicPartition> all) {
    long end = System.nanoTime() + config.closeTimeout().toNanos();
    while (true) {
      try {
        Set<TopicPartition> mine = new HashSet<>(all);
        mine.retainAll(owned);
        commitHandOver(mine);
        return;
      } catch (org.apache.kafka.common.errors.RebalanceInProgressException e) {
        if (System.nanoTime() - end >= 0 || owned.isEmpty()) {
          throw e;
        }
        consumer.pause(consumer.assignment());
        try {
          consumer.poll(config.pollTimeout());
        } catch (WakeupException ignored) {
          // close's wake-up, or a worker's: poll again
        }
        leaving.addAll(owned); // partitions assigned on the way are not started either
      }
    }
  }

  /**
   * Reads what the previous owners of {@code partitions} finished past their committed offsets.
   * A failure to read costs only a second handling of those records (at least once), so it is
   * logged and the assignment goes on.
   */
  private void readHandedOver(Collection<TopicPartition> partitions) {
    if (partitions.isEmpty()) {
      return;
    }
    Set<TopicPartition> parts = new HashSet<>(partitions);
    Set<TopicPartition> asked = new HashSet<>(parts);
    for (TopicPartition tp : owned) {
      if (tp.topic().equals(retryTopic)) {
        asked.add(tp); // where the copies of keys handed over parked are
      }
    }
    Map<TopicPartition, OffsetAndMetadata> at;
    try {
      var fault = HAND_OVER_READ_FAULTS.get(spec.group());
      if (fault != null) {
        throw fault.get();
      }
      try {
        at = consumer.committed(asked, config.closeTimeout());
      } catch (WakeupException e) {
        at = consumer.committed(asked, config.closeTimeout()); // see commitSync
      }
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "could not read the committed offsets of " + parts
          + " at their assignment; records their previous owner finished past them may run"
          + " again: " + e);
      return;
    }
    for (TopicPartition tp : parts) {
      handedOver.remove(tp);
      OffsetAndMetadata o = at.get(tp);
      FinishedAbove done = o == null ? null : FinishedAbove.decode(o.metadata(), o.offset());
      if (done != null) {
        handedOver.put(tp, done);
      }
    }
    for (TopicPartition tp : parts) {
      FinishedAbove done = handedOver.get(tp);
      if (done != null && !done.parked().isEmpty() && tp.topic().equals(topic)
          && spec.ordering() != io.relaykit.ordering.OrderingMode.UNORDERED) {
        parkHandedOver(done, at);
      }
    }
  }

  private void drop(Collection<TopicPartition> partitions) {
    Set<TopicPartition> gone = new HashSet<>(partitions);
    owned.removeAll(gone);
    for (TopicPartition tp : gone) {
      tracker.revoke(tp); // first: a worker that then sees it not leaving sees it not current
      leaving.remove(tp);
      leftOver.remove(tp);
      handedOver.remove(tp);
      delayedUntil.remove(tp);
      committed.remove(tp);
      retryRead.remove(tp);
      handedHolds.remove(tp);
      copiesEnd.remove(tp);
      toRewind.remove(tp);
    }
    parking.revoke(
        hold -> (hold instanceof RetryHold rh && gone.contains(rh.partition()))
            || (hold instanceof Work w && gone.contains(w.partition())),
        w -> gone.contains(w.partition()),
        this::drain);
    synchronized (idle) {
      idle.notifyAll();
    }
  }

  // ---------------------------------------------------------------- dispatch

  private void dispatch(Work w) {
    if (w.gateKey() == null || w.fromRetryTopic()) {
      submit(w);
    } else {
      parking.admit(w, this::submit);
    }
  }

  private void submit(Work w) {
    submitTask(w.gateKey(), () -> {
      if (!current(w)) {
        return; // queued before a revoke: the partition's current owner (maybe us) re-read it
      }
      if (leftToNextOwner(w)) {
        return;
      }
      if (w.gateKey() != null && !w.fromRetryTopic() && parking.parkIfHeld(w)) {
        return; // its key went into retry (or is draining its released records) meanwhile
      }
      processGuarded(w);
    });
  }

  /**
   * Runs the released records of {@code key} in order, in the key's lane: one task for all of
   * them, so a record of the key queued in the lane before the release cannot overtake them (it
   * finds the key still parked and joins the queue).
   */
  private void drain(Object key) {
    submitTask(key, () -> {
      Work next;
      while ((next = parking.nextReleased(key)) != null) {
        if (current(next) && !leftToNextOwner(next)) {
          processGuarded(next);
        }
      }
    });
  }

  private void submitTask(Object key, Runnable task) {
    try {
      if (!workers.trySubmit(key, task)) {
        // Cannot happen while in-flight work stays under maxInFlight; wait rather than lose it.
        workers.submit(key, task);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (java.util.concurrent.RejectedExecutionException e) {
      // Shutting down: the record stays uncommitted and is redelivered to the next owner.
    }
  }

  /**
   * Whether {@code w}, not started yet, is of a partition being handed over: then it is left to
   * the next owner (counted, not finished, so the commit position stays below it).
   */
  private boolean leftToNextOwner(Work w) {
    if (leaving.isEmpty() || !leaving.contains(w.partition())) {
      return false;
    }
    leftOver.computeIfAbsent(w.partition(), p -> new java.util.concurrent.atomic.AtomicInteger())
        .incrementAndGet();
    if (handingOver) {
      synchronized (idle) {
        idle.notifyAll();
      }
    }
    return true;
  }

  // ---------------------------------------------------------------- workers

  /**
   * Whether {@code w} belongs to its partition's current assignment. Not whether we own the
   * partition: after a revoke and a reassignment to this member, work of the earlier assignment is
   * stale (the partition was re-read from the committed offset) and must write nothing, no retry
   * or dead-letter copy and no hold.
   */
  private boolean current(Work w) {
    return tracker.isCurrent(w.ticket()) && state != State.CLOSED;
  }

  /**
   * {@link #process}, and whatever it throws outside the handler ends in a dead letter naming it:
   * an unfinished record would hold its partition's commit and an in-flight slot for good.
   */
  private void processGuarded(Work w) {
    try {
      process(w);
    } catch (RuntimeException | Error e) {
      LOG.log(System.Logger.Level.ERROR, "unexpected failure processing " + w + " of " + topic
          + "; dead-lettering it", e);
      handOff.deadLetterUndecodable(w, KafkaRecords.fromHeaders(w.record().headers()), e,
          clock.instant());
    }
  }

  /**
   * A retry record's {@code relaykit-source-position} when it names a position of this
   * subscription's topic, else {@code fallback}: a position elsewhere (forged, or not a position)
   * must not become the position a dead letter's reference entry replays from.
   */
  private String sourcePositionOf(String header, String fallback) {
    var at = KafkaRecords.parsePosition(header);
    return at != null && at.getKey().topic().equals(topic) ? header : fallback;
  }

  private void process(Work w) {
    if (!current(w)) {
      return; // revoked: the partition's current owner re-reads it
    }
    Instant now = clock.instant();
    KafkaRecords.Read read = KafkaRecords.read(w.record(), spec.inbound(), topic, w.position(),
        now);
    if (read.malformed() != null) {
      handOff.deadLetterUndecodable(w, read, now);
      return;
    }
    InboundMapping.Decoded decoded = read.decoded();
    Map<String, String> wire = decoded.wire();
    String source = topic;
    String sourcePosition = w.position();
    Delivery delivery;
    try {
      if (w.fromRetryTopic()) {
        // The retry topic is this topic's and group's own: its records are records of topic,
        // whatever their relaykit-source says (a forged one would move the dead letter's source,
        // id and replay target to another topic), and their source position is one of topic's,
        // or the retry record's own.
        sourcePosition = sourcePositionOf(wire.get(MessageHeaders.SOURCE_POSITION), w.position());
        String due = wire.get(MessageHeaders.RETRY_AT);
        String bad = due == null ? null : badRetryAt(due, now);
        if (bad != null) {
          throw new io.relaykit.message.MalformedMessageException(bad);
        }
      }
      delivery = FailureRoute.delivery(decoded.message(), source, wire);
    } catch (RuntimeException e) {
      // A relaykit failure header that is not a number or an instant, a blank source: the
      // decoded record cannot make a delivery, so it is undecodable, with the reason.
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
      finish(w);
      return;
    }
    if (rateLimiter != null) {
      try {
        rateLimiter.acquire(); // holds this worker, so intake slows through the in-flight bound
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return; // closing: not committed, redelivered to the next owner
      }
    }
    event(LifecycleEvent.Stage.DELIVERED, message, w.position());
    runHandler(w, wire, delivery, sourcePosition);
  }

  private void runHandler(Work w, Map<String, String> wire, Delivery delivery,
      String sourcePosition) {
    // On a timeout the failure is decided on the timer thread, and watchdog.end waits for that:
    // the key is parked (onFailure) before this worker lets the key's next record run. The retry
    // or dead-letter send then runs on the copies' executor, so a producer blocked on a missing
    // topic's metadata holds neither this worker nor the timer that times out other handlers.
    // The watchdog settles a call exactly once: a timed-out call's duration is reported by its
    // expiry, and its late return (end() false) reports nothing.
    long started = System.nanoTime();
    HandlerWatchdog.Call call = watchdog.begin(() -> {
      Duration took = Duration.ofNanos(System.nanoTime() - started);
      MetricsListener.safely(metrics, m -> m.handlerTimedOut(topic, spec.group(), took));
      onFailure(w, wire, delivery, sourcePosition, new TimeoutException(
          "handler did not finish within " + spec.handlerTimeout()
          + "; its late result is ignored"), this::afterTimeout);
    });
    Throwable failure = null;
    try {
      handler.handle(delivery);
    } catch (Throwable t) {
      failure = t;
    }
    Duration took = Duration.ofNanos(System.nanoTime() - started);
    if (!watchdog.end(call)) {
      LOG.log(System.Logger.Level.DEBUG, "late result of " + w + " ignored after its timeout");
      return;
    }
    boolean failed = failure != null;
    MetricsListener.safely(metrics, m -> m.handlerDuration(topic, spec.group(), took, failed));
    if (!current(w)) {
      return; // revoked or closed meanwhile: the current owner redoes it
    }
    if (failure == null) {
      event(LifecycleEvent.Stage.ACKED, delivery.message(), w.position());
      finish(w);
    } else {
      onFailure(w, wire, delivery, sourcePosition, failure, Runnable::run);
    }
  }

  /** Sends a timed-out record's retry or dead-letter copy once the watchdog has let go of it. */
  private void afterTimeout(Runnable send) {
    try {
      copies.execute(send); // not on the watchdog's timer: a blocked send delays no timeout
    } catch (RejectedExecutionException e) {
      send.run(); // closing: the ownership checks in the send skip what is no longer ours
    }
  }

  /**
   * Routes a failed record ({@link FailureRoute}) and, for a retry, holds its key (at once, on this
   * thread); the retry or dead-letter copy is then sent through {@code sends}.
   */
  private void onFailure(Work w, Map<String, String> wire, Delivery delivery,
      String sourcePosition, Throwable failure, Executor sends) {
    if (!current(w)) {
      return; // revoked or closing: the current owner redoes it, so no retry copy
    }
    FailureRoute route = FailureRoute.decide(spec, delivery, failure, clock.instant());
    if (!route.isRetry()) {
      sends.execute(() -> handOff.deadLetter(w, wire, delivery.message(), route,
          sourcePosition));
      return;
    }
    Object key = w.gateKey();
    // Held before this worker lets the key's next record run; under the parking lock with the
    // staleness check, so a revoke either sees the hold and drops it or makes the check fail.
    if (key != null && !parking.holdIf(key, w, () -> current(w))) {
      return;
    }
    sends.execute(() -> handOff.retry(w, wire, delivery.message(), route, sourcePosition, key));
  }

  /** The retry copy of {@code w} is confirmed at {@code copyAt}: its key's hold moves there. */
  private void retried(Work w, Object key, RecordMetadata copyAt) {
    copiesEnd.merge(new TopicPartition(copyAt.topic(), copyAt.partition()), copyAt.offset() + 1,
        Math::max);
    if (key != null) {
      TopicPartition tp = new TopicPartition(copyAt.topic(), copyAt.partition());
      parking.moveHold(key, w, new RetryHold(tp, copyAt.offset()), () -> owned.contains(tp),
          this::drain);
    }
    finish(w);
  }

  private void finish(Work w) {
    if (!tracker.complete(w.ticket())) {
      return; // revoked since: the result is discarded, and its holds went with the revoke
    }
    if (wakeWhenRoom.get() && hasRoom() && wakeWhenRoom.compareAndSet(true, false)) {
      consumer.wakeup(); // the poll thread waits for room: intake can resume
    }
    if (w.fromRetryTopic() && w.gateKey() != null) {
      parking.releaseRetry(w.gateKey(), new RetryHold(w.partition(), w.record().offset()),
          this::drain);
    }
    if (state != State.RUNNING || handingOver) {
      synchronized (idle) {
        idle.notifyAll();
      }
    }
  }

  private void event(LifecycleEvent.Stage stage, Message message, String detail) {
    if (listener == KafkaTransportConfig.NO_LISTENER) {
      return; // nobody listens: spare the two events per record
    }
    LifecycleListener.safely(listener, new LifecycleEvent(stage, message.id(), message.traceId(),
        topic, clock.instant(), detail));
  }

  // ---------------------------------------------------------------- Subscription

  @Override
  public ConsumerBacklog backlog() {
    return backlog;
  }

  @Override
  public BacklogSnapshot backlogVerdict() {
    return monitor.snapshot();
  }

  @Override
  public boolean isRunning() {
    return state == State.RUNNING;
  }

  @Override
  public java.util.Optional<Throwable> failure() {
    return java.util.Optional.ofNullable(failure);
  }

  @Override
  public boolean close(Duration deadline) {
    if (deadline == null || deadline.isNegative()) {
      throw new IllegalArgumentException("deadline must be zero or positive, was " + deadline);
    }
    synchronized (this) {
      if (state == State.RUNNING || state == State.FAILED) {
        state = state == State.FAILED ? State.FAILED : State.DRAINING;
      } else {
        awaitClosed();
        return Boolean.TRUE.equals(drainedAtClose);
      }
      long end = System.nanoTime() + deadline.toNanos();
      closeBy = end;
      synchronized (idle) {
        // Records waiting for a parked key are not waited for: they wait for a retry that may be
        // due long after the deadline (they stay uncommitted and are redelivered).
        while (active() > 0 && pollThreadDone.getCount() > 0) {
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
      boolean drained = active() == 0;
      if (state != State.FAILED) {
        state = State.STOPPING;
        consumer.wakeup(); // end a poll in progress now, not a poll timeout later
        java.util.concurrent.locks.LockSupport.unpark(pollThread); // and an error back-off
      }
      awaitPollThread();
      workers.shutdownNow();
      try {
        if (!workers.awaitTermination(config.closeTimeout())) {
          LOG.log(System.Logger.Level.WARNING, "workers of " + topic + " still run handlers that"
              + " ignore interrupts after " + config.closeTimeout() + "; left behind (daemons)");
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      timers.shutdownNow();
      copies.shutdownNow();
      if (router != null) {
        router.close();
      } else {
        txn.close(config.closeTimeout());
      }
      state = State.CLOSED;
      drainedAtClose = drained;
    }
    onClosed.run();
    return Boolean.TRUE.equals(drainedAtClose);
  }

  private void awaitPollThread() {
    try {
      if (!pollThreadDone.await(config.closeTimeout().toMillis() * 2
          + config.pollTimeout().toMillis(), TimeUnit.MILLISECONDS)) {
        LOG.log(System.Logger.Level.WARNING, "poll thread of " + topic + " did not stop in time");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private synchronized void awaitClosed() {
    // close() holds this monitor while closing: reaching here means it finished.
  }

  /**
   * Stops as a killed process would leave the group's offsets (tests): nothing is committed at
   * the end, so the last periodic commit, which names no finished records past its position, is
   * what the next owner starts from.
   */
  void crashForTest() {
    simulatedCrash = true;
    close(Duration.ZERO);
  }

  /** Keys parked now, and records waiting for them (tests). */
  int parkedKeys() {
    return parking.parkedKeys();
  }

  /** Whether a hand-off transaction is open (tests). */
  boolean transactionOpen() {
    return txn != null && txn.isOpen();
  }

  /** Records taken in and not finished yet (tests). */
  long inFlight() {
    return tracker.inFlight();
  }

  @Override
  public String toString() {
    return "KafkaSubscription[topic=" + topic + ", group=" + spec.group() + ", state=" + state
        + ", inFlight=" + tracker.inFlight() + "]";
  }
}
