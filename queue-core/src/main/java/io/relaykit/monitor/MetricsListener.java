package io.relaykit.monitor;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * Receives the numbers an operator watches, from every runtime that has them: backlog depth,
 * oldest-message age, consumer lag, dead-letter depth, drops by reason, and the {@link
 * BacklogMonitor}'s verdict. Bridge it to Micrometer, Prometheus or logs; every method has a no-op
 * default, so an implementation overrides only what it exports.
 *
 * <p>Gauges ({@code backlogDepth}, {@code oldestAge}, {@code consumerLag}, {@code partitionLag},
 * {@code inFlight}, {@code oldestInFlightAge}, {@code deadLetterDepth}, {@code backlog}) report the
 * current value each time a runtime samples it;
 * {@code dropped} and {@code ignored} report increments; {@code consumerFailed} reports that a
 * consumer stopped. {@code destination} names a queue, topic or outbox; runtimes
 * pass the same name they were configured with.
 *
 * <p>WARNING: called from delivery threads, publisher callbacks and timers, some of them (the
 * relay's and queues' samples, {@link #publishConfirmDuration}) under relaykit's locks.
 * Implementations must be fast (O(1): update a cached meter, never build a new tag map or look
 * one up per call on the hot path), thread-safe and must not block. Runtimes call through {@link
 * #safely}, which contains what a listener throws (reported once through {@link System.Logger})
 * so a broken exporter cannot stall delivery.
 */
public interface MetricsListener {

  /** {@link #ignored} reason: a {@code traceparent} header that is not a valid W3C one. */
  String IGNORED_TRACEPARENT = "malformed-traceparent";
  /**
   * {@link #ignored} reason: a {@code tracestate} header that was malformed (dropped) or over the
   * W3C bounds (cut to the members that fit).
   */
  String IGNORED_TRACESTATE = "malformed-tracestate";
  /**
   * {@link #ignored} reason: a CloudEvents attribute that was malformed (a {@code time} that is not
   * RFC 3339, a blank attribute, a {@code specversion} other than 1.x).
   */
  String IGNORED_CLOUDEVENTS_ATTRIBUTE = "malformed-cloudevents-attribute";

  /**
   * Messages waiting in {@code destination} to be sent or taken: an outbox's unsent rows (the
   * relay reports them under {@code "outbox"}), or a queue's waiting messages. Consumers report
   * their lag with {@link #consumerLag} and {@link #partitionLag} instead, never here.
   *
   * @param destination the queue or outbox
   * @param depth the current number of waiting messages
   */
  default void backlogDepth(String destination, long depth) {}

  /**
   * How long the oldest waiting message of {@code destination} has waited, next to {@link
   * #backlogDepth}; consumers report {@link #oldestInFlightAge} instead.
   *
   * @param destination the queue or outbox
   * @param age the current age of its oldest waiting message; {@link Duration#ZERO} when none waits
   */
  default void oldestAge(String destination, Duration age) {}

  /**
   * How far consumer {@code group} trails the end of {@code destination} (per partition summed),
   * in messages.
   *
   * @param destination the topic or queue consumed
   * @param group the consumer group
   * @param lag the current lag in messages, summed over partitions
   */
  default void consumerLag(String destination, String group, long lag) {}

  /**
   * How far consumer {@code group} trails the end of one {@code partition} of {@code destination},
   * in messages: reported next to {@link #consumerLag} by runtimes that know partitions (Kafka);
   * the others report only the sum. Called from the sampling thread, once per assigned partition
   * per sample; a partition no longer assigned is not reported again (its last value stays).
   *
   * @param destination the topic consumed
   * @param group the consumer group
   * @param partition the partition number, {@code >= 0}
   * @param lag the current lag of that partition in messages
   */
  default void partitionLag(String destination, String group, int partition, long lag) {}

  /**
   * Messages of {@code destination} taken by consumer {@code group} and not yet finished (handler
   * running, or done but not yet committed): a gauge, reported when the runtime samples.
   *
   * @param destination the topic or queue consumed
   * @param group the consumer group
   * @param count the current number of in-flight messages
   */
  default void inFlight(String destination, String group, long count) {}

  /**
   * How long the oldest message of {@code destination} that consumer {@code group} took and has
   * not finished has been in flight (handler calls still running past their timeout included), so
   * that workers that stopped moving raise an alarm: a gauge, reported when the runtime samples,
   * next to {@link #inFlight}. Consumers report this, never {@link #backlogDepth} or {@link
   * #oldestAge}, which are the outbox's (and a queue's) waiting messages.
   *
   * @param destination the topic or queue consumed
   * @param group the consumer group
   * @param age the current age of its oldest in-flight message; {@link Duration#ZERO} when none
   */
  default void oldestInFlightAge(String destination, String group, Duration age) {}

  /**
   * One handler call of consumer {@code group} on {@code destination} took {@code duration}:
   * reported once per delivery attempt that finished within its handler timeout, on the handler's
   * thread right after the handler returned or threw, outside relaykit's locks. An attempt that
   * ran past its timeout is reported through {@link #handlerTimedOut} instead, never here: not
   * when its handler later returns (its late result is ignored), so each attempt is reported
   * exactly once.
   *
   * @param destination the topic or queue consumed
   * @param group the consumer group
   * @param duration how long the handler ran, measured on a monotonic clock
   * @param failed whether the handler threw
   */
  default void handlerDuration(String destination, String group, Duration duration,
      boolean failed) {}

  /**
   * One handler call of consumer {@code group} on {@code destination} ran past its handler
   * timeout, and the runtime gave up on it after {@code duration} (about the timeout): the attempt
   * counts as a retryable failure. Reported once per such attempt, when the timeout fires, on the
   * runtime's timer thread, outside relaykit's locks (Kafka's handler thread waits for it, so keep
   * it O(1)); the handler may still be running, and when it returns nothing more is reported for the attempt
   * (a consumer's {@link #oldestInFlightAge} keeps showing a handler that does not return). Every
   * transport (in-process, Kafka, Kafka share groups, RabbitMQ) reports timeouts here.
   *
   * <p>The default reports it as a failed {@link #handlerDuration}, so a listener that knows only
   * that method counts a timeout as a failure; override it to tell the two apart.
   *
   * @param destination the topic or queue consumed
   * @param group the consumer group
   * @param duration from the handler's start to the timeout firing, on a monotonic clock
   */
  default void handlerTimedOut(String destination, String group, Duration duration) {
    handlerDuration(destination, group, duration, true);
  }

  /**
   * One message to {@code destination} was confirmed by the broker {@code duration} after it was
   * handed to the publisher: reported once per confirmed publish, on the thread that sees the
   * confirmation (a publisher's callback thread or the relay's thread), possibly under the relay's
   * lock.
   *
   * @param destination the queue, topic or outbox the publisher sent to
   * @param duration from the publish call to its confirmation, on a monotonic clock
   */
  default void publishConfirmDuration(String destination, Duration duration) {}

  /**
   * Dead letters held for {@code destination}.
   *
   * @param destination the destination the dead letters came from
   * @param depth the current number of dead letters held
   */
  default void deadLetterDepth(String destination, long depth) {}

  /**
   * One message of {@code destination} was dead-lettered by consumer {@code group}: an increment,
   * reported once per dead letter stored (the dead-letter store, topic or queue confirmed it), by
   * every transport through {@link io.relaykit.deadletter.DeadLetterLog}, which also logs it.
   *
   * @param destination the topic or queue consumed
   * @param group the consumer group; null for none
   */
  default void deadLettered(String destination, String group) {}

  /**
   * One claim of an outbox store: how much of the outbox it walked to find the rows it leased, so
   * an operator sees claims whose cost grows with the backlog's shape (heads of keys that cannot
   * send, rows read and passed over) rather than with the batch. Reported once per claim that
   * reached the database, on the claiming thread, after the claim's transaction ended, by the
   * stores that can count it (the JDBC outbox on H2; a store that cannot tell reports nothing).
   *
   * @param store the store's name (the JDBC outbox's table name): a few per application, safe as
   *     a metric tag
   * @param heads key heads the claim examined (each is one probe of its key's lowest unsent row),
   *     {@code >= 0}
   * @param rows outbox rows the claim read as candidates (unkeyed rows, due retries, heads' rows
   *     and key runs' rows), leased or passed over, {@code >= 0}
   */
  default void outboxClaimWalked(String store, long heads, long rows) {}

  /**
   * {@code count} messages of {@code destination} were discarded for {@code reason}.
   *
   * @param reason a short, low-cardinality label: {@code "capacity"}, {@code "expired"}, {@code
   *     "rejected"}, {@code "malformed"}
   * @param destination the queue, topic or outbox that discarded them
   * @param count how many were discarded by this event (an increment, not a total)
   */
  default void dropped(String destination, String reason, long count) {}

  /**
   * {@code count} parts of one message received from {@code destination} were ignored without
   * failing the message (it is delivered without them): an increment, reported by the
   * transports' decode step once per first delivery of a message to a subscription (a redelivery
   * of a record the consumer had not committed may count again). Unlike {@link #dropped}, no
   * message is lost.
   *
   * @param destination the queue or topic the message came from
   * @param reason one of {@link #IGNORED_TRACEPARENT}, {@link #IGNORED_TRACESTATE}, {@link
   *     #IGNORED_CLOUDEVENTS_ATTRIBUTE}: a closed set, safe as a metric tag
   * @param count how many parts of that message were ignored for {@code reason}, {@code >= 1}
   */
  default void ignored(String destination, String reason, long count) {}

  /**
   * The latest backlog judgement for {@code destination}.
   *
   * @param destination the destination judged
   * @param snapshot the monitor's latest judgement of it
   */
  default void backlog(String destination, BacklogSnapshot snapshot) {}

  /**
   * A consumer group's backlog snapshot for {@code destination}: as {@link #backlog(String,
   * BacklogSnapshot)}, which it calls by default, but naming the group, so two groups reading one
   * destination are told apart. The consumers that have a group (Kafka's) call this one.
   *
   * @param destination the topic or queue
   * @param group the consumer group
   * @param snapshot the monitor's current snapshot
   */
  default void backlog(String destination, String group, BacklogSnapshot snapshot) {
    backlog(destination, snapshot);
  }

  /**
   * Consumer {@code group} of {@code destination} stopped for good on an error it cannot recover
   * from (an offset it may not reset, missing authorization, a fenced member): an event, once per
   * subscription, not a gauge. The subscription no longer runs; {@code cause} says why.
   *
   * @param destination the topic or queue consumed
   * @param group the consumer group that stopped
   * @param cause the error that stopped it
   */
  default void consumerFailed(String destination, String group, Throwable cause) {}

  /**
   * A share group's acknowledgements the broker confirmed, by type: {@code accept} (handled, or
   * its retry or dead-letter copy written), {@code release} (given back for redelivery) or
   * {@code reject} (neither a dead letter nor its reference entry could be written).
   *
   * @param destination the topic
   * @param group the share group
   * @param type {@code accept}, {@code release} or {@code reject}
   * @param count how many, {@code >= 1}
   */
  default void shareAcknowledged(String destination, String group, String type, long count) {}

  /**
   * Acquisition locks of a share group's records that the broker renewed (a handler running past
   * a third of its lock).
   *
   * @param destination the topic
   * @param group the share group
   * @param count how many, {@code >= 1}
   */
  default void shareRenewed(String destination, String group, long count) {}

  /**
   * Acquisition locks of a share group's records this member lost (a renewal refused, or a
   * renewed record no poll returned): the broker delivers the record again, and a late result of
   * its handler is dropped (counted as {@link #dropped} {@code share-lock-lost}).
   *
   * @param destination the topic
   * @param group the share group
   * @param count how many, {@code >= 1}
   */
  default void shareLockLost(String destination, String group, long count) {}

  /**
   * An operator ran an action in the console (relaykit-console): an event, once per action run
   * (a repeated request for the same action is not counted again), on the request's thread.
   *
   * @param action {@code replay-one}, {@code replay-set}, {@code purge-one} or {@code purge-set}:
   *     a closed set, safe as a metric tag
   * @param outcome {@code ok} when it did all it was asked, {@code failed} otherwise
   * @param count dead letters it replayed or purged, {@code >= 0}
   */
  default void consoleAction(String action, String outcome, long count) {}

  /**
   * A listener that ignores everything.
   *
   * @return one shared listener whose every method does nothing; runtimes may recognise it and
   *     skip sampling for it (an {@code OutboxRelay} given it samples nothing for metrics)
   */
  static MetricsListener noop() {
    return NoopMetrics.INSTANCE;
  }

  /**
   * Forwards every call to each of {@code listeners} in order; one failing does not stop the rest.
   *
   * @param listeners the listeners to call; copied, so later changes to the list are not seen
   * @return a listener calling each of {@code listeners} through {@link #safely}
   * @throws NullPointerException if {@code listeners} is null
   * @throws IllegalArgumentException if {@code listeners} contains null
   */
  static MetricsListener composite(List<MetricsListener> listeners) {
    Objects.requireNonNull(listeners, "listeners");
    for (MetricsListener l : listeners) {
      if (l == null) {
        throw new IllegalArgumentException("listeners must not contain null");
      }
    }
    List<MetricsListener> copy = List.copyOf(listeners);
    return new MetricsListener() {
      @Override
      public void backlogDepth(String destination, long depth) {
        copy.forEach(l -> safely(l, x -> x.backlogDepth(destination, depth)));
      }

      @Override
      public void oldestAge(String destination, Duration age) {
        copy.forEach(l -> safely(l, x -> x.oldestAge(destination, age)));
      }

      @Override
      public void consumerLag(String destination, String group, long lag) {
        copy.forEach(l -> safely(l, x -> x.consumerLag(destination, group, lag)));
      }

      @Override
      public void partitionLag(String destination, String group, int partition, long lag) {
        copy.forEach(l -> safely(l, x -> x.partitionLag(destination, group, partition, lag)));
      }

      @Override
      public void inFlight(String destination, String group, long count) {
        copy.forEach(l -> safely(l, x -> x.inFlight(destination, group, count)));
      }

      @Override
      public void oldestInFlightAge(String destination, String group, Duration age) {
        copy.forEach(l -> safely(l, x -> x.oldestInFlightAge(destination, group, age)));
      }

      @Override
      public void handlerDuration(String destination, String group, Duration duration,
          boolean failed) {
        copy.forEach(l -> safely(l, x -> x.handlerDuration(destination, group, duration, failed)));
      }

      @Override
      public void handlerTimedOut(String destination, String group, Duration duration) {
        copy.forEach(l -> safely(l, x -> x.handlerTimedOut(destination, group, duration)));
      }

      @Override
      public void publishConfirmDuration(String destination, Duration duration) {
        copy.forEach(l -> safely(l, x -> x.publishConfirmDuration(destination, duration)));
      }

      @Override
      public void deadLetterDepth(String destination, long depth) {
        copy.forEach(l -> safely(l, x -> x.deadLetterDepth(destination, depth)));
      }

      @Override
      public void deadLettered(String destination, String group) {
        copy.forEach(l -> safely(l, x -> x.deadLettered(destination, group)));
      }

      @Override
      public void outboxClaimWalked(String store, long heads, long rows) {
        copy.forEach(l -> safely(l, x -> x.outboxClaimWalked(store, heads, rows)));
      }

      @Override
      public void dropped(String destination, String reason, long count) {
        copy.forEach(l -> safely(l, x -> x.dropped(destination, reason, count)));
      }

      @Override
      public void shareAcknowledged(String destination, String group, String type, long count) {
        copy.forEach(l -> safely(l, x -> x.shareAcknowledged(destination, group, type, count)));
      }

      @Override
      public void shareRenewed(String destination, String group, long count) {
        copy.forEach(l -> safely(l, x -> x.shareRenewed(destination, group, count)));
      }

      @Override
      public void shareLockLost(String destination, String group, long count) {
        copy.forEach(l -> safely(l, x -> x.shareLockLost(destination, group, count)));
      }

      @Override
      public void ignored(String destination, String reason, long count) {
        copy.forEach(l -> safely(l, x -> x.ignored(destination, reason, count)));
      }

      @Override
      public void backlog(String destination, BacklogSnapshot snapshot) {
        copy.forEach(l -> safely(l, x -> x.backlog(destination, snapshot)));
      }

      @Override
      public void backlog(String destination, String group, BacklogSnapshot snapshot) {
        copy.forEach(l -> safely(l, x -> x.backlog(destination, group, snapshot)));
      }

      @Override
      public void consumerFailed(String destination, String group, Throwable cause) {
        copy.forEach(l -> safely(l, x -> x.consumerFailed(destination, group, cause)));
      }

      @Override
      public void consoleAction(String action, String outcome, long count) {
        copy.forEach(l -> safely(l, x -> x.consoleAction(action, outcome, count)));
      }
    };
  }

  /**
   * Makes one call on {@code listener}, containing whatever it throws:
   * {@code MetricsListener.safely(metrics, m -> m.dropped("orders", "expired", 1))}.
   *
   * @param listener the listener to call
   * @param call the call to make on it; what it throws short of a {@link VirtualMachineError} is
   *     contained and reported once per listener through {@link System.Logger}
   */
  static void safely(MetricsListener listener, Consumer<MetricsListener> call) {
    try {
      call.accept(listener);
    } catch (RuntimeException | LinkageError | AssertionError e) {
      ListenerFailures.report(listener, e);
    }
  }
}
