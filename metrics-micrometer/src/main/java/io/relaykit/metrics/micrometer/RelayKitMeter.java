package io.relaykit.metrics.micrometer;

/**
 * Every meter {@link RelayKitMeterBinder} registers, with its default name (under the default
 * prefix {@code relaykit}), its type and its tags. The names follow Micrometer's convention (lower
 * case, dot-separated; a registry renders them in its own style, Prometheus as {@code
 * relaykit_consumer_lag}) and OpenTelemetry's messaging conventions where they say something
 * ({@code destination}, {@code group}, {@code partition}; durations as timers in seconds). The
 * names and tag keys are stable: a change is a breaking change, listed in the CHANGELOG.
 *
 * <p>Rename any one through {@link RelayKitMeterBinder.Builder#name}, or all of them through
 * {@link RelayKitMeterBinder.Builder#prefix}.
 */
public enum RelayKitMeter {
  /** Gauge, tag {@code destination}: messages waiting to be sent (an outbox's unsent rows, under
   *  {@code destination="outbox"}); never a consumer's lag, which is {@link #CONSUMER_LAG}. */
  OUTBOX_BACKLOG("outbox.backlog", "messages waiting to be sent"),
  /** TimeGauge, tag {@code destination}: how long the oldest waiting message has waited. */
  OUTBOX_OLDEST_AGE("outbox.oldest.age", "age of the oldest waiting message"),
  /** Gauge, tags {@code destination, group, partition}: consumer lag in messages; {@code
   *  partition="all"} where the runtime knows no partitions. */
  CONSUMER_LAG("consumer.lag", "messages the consumer group trails the end of the partition"),
  /** Gauge, tags {@code destination, group}: messages taken and not yet finished. */
  CONSUMER_IN_FLIGHT("consumer.in.flight", "messages taken by the consumer and not yet finished"),
  /** TimeGauge, tags {@code destination, group}: how long the consumer's oldest unfinished
   *  message has been in flight (handlers stuck past their timeout included). */
  CONSUMER_OLDEST_IN_FLIGHT_AGE("consumer.in.flight.oldest.age",
      "age of the oldest message the consumer took and has not finished"),
  /** Counter, tags {@code destination, group}: consumers stopped for good. */
  CONSUMER_FAILED("consumer.failed", "consumers stopped for good on an unrecoverable error"),
  /** Counter, tags {@code destination, stage}: lifecycle steps taken, one per message per step. */
  MESSAGES("messages", "lifecycle steps taken by messages"),
  /** Counter, tags {@code destination, reason}: messages discarded. */
  MESSAGES_DROPPED("messages.dropped", "messages discarded"),
  /** Counter, tags {@code destination, reason}: message parts ignored (no message lost). */
  MESSAGES_IGNORED("messages.ignored", "message parts ignored without failing the message"),
  /** Timer, tags {@code destination, group, outcome}: handler calls, one per delivery attempt. */
  HANDLER_DURATION("handler.duration", "time a message handler ran"),
  /** Timer, tag {@code destination}: from publish to the broker's confirmation. */
  PUBLISH_CONFIRM_DURATION("publish.confirm.duration", "time from publish to broker confirm"),
  /** Gauge, tag {@code queue}: events in a report queue (pending plus in flight). */
  REPORT_QUEUE_DEPTH("report.queue.depth", "events held by the report queue"),
  /** Gauge, tag {@code queue}: bytes of the events a report queue holds. */
  REPORT_QUEUE_BYTES("report.queue.bytes", "bytes held by the report queue"),
  /** FunctionCounter, tag {@code queue}: events a report queue discarded (capacity, bytes). */
  REPORT_QUEUE_DROPPED("report.queue.dropped", "events the report queue discarded"),
  /** Gauge, tag {@code destination}: dead letters held. */
  DEAD_LETTERS("dead.letters", "dead letters held"),
  /** Gauge, tag {@code destination}: the backlog verdict as a number, see {@link
   *  RelayKitMeterBinder#verdictValue}. */
  BACKLOG_VERDICT("backlog.verdict",
      "backlog verdict: 0 healthy, 1 draining spike, 2 sustained growth, 3 stalled, 4 over bound"),
  /** Counter, tag {@code meter}: series refused because their meter reached its cap. */
  METERS_OVERFLOW("meters.overflow", "tag combinations refused because a meter reached its cap");

  private final String suffix;
  private final String description;

  RelayKitMeter(String suffix, String description) {
    this.suffix = suffix;
    this.description = description;
  }

  /**
   * The name under a prefix, without the prefix.
   *
   * @return the dot-separated suffix, e.g. {@code "consumer.lag"}
   */
  public String suffix() {
    return suffix;
  }

  /**
   * The description registered with the meter.
   *
   * @return one line of what the meter measures
   */
  public String description() {
    return description;
  }
}
