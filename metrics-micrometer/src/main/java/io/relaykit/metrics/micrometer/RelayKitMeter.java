package io.relaykit.metrics.micrometer;

/**
 * Every meter {@link RelayKitMeterBinder} registers, with its default name (under the default
 * prefix {@code relaykit}), its type and its tags. The names follow Micrometer's convention (lower
 * case, dot-separated; a registry renders them in its own style, Prometheus as {@code
 * relaykit_consumer_lag}); the tag keys are OpenTelemetry's messaging attribute names where one
 * exists: {@value #SYSTEM_TAG} on every meter (the binder's {@link
 * RelayKitMeterBinder.Builder#messagingSystem}), {@value #DESTINATION_TAG}, {@value #GROUP_TAG},
 * {@value #PARTITION_TAG} (rendered by Prometheus as {@code messaging_destination_name} and so
 * on). The relaykit-specific tags keep relaykit names: {@code stage}, {@code reason}, {@code
 * outcome}, {@code queue}, {@code store}, {@code meter}, {@code type}. Durations are timers in
 * seconds. The names and tag keys
 * are stable: a change is a breaking change, listed in the CHANGELOG.
 *
 * <p>The two timers keep relaykit names by default rather than OpenTelemetry's {@code
 * messaging.process.duration} and {@code messaging.client.operation.duration}: those metrics are
 * still in development in the conventions (whose rule is that instrumentations do not switch to
 * them before they are stable), they want {@code error.type} only on failed operations (a
 * Micrometer meter has the same tag keys on every series, so relaykit keeps {@code
 * outcome=success|failure|timeout}), and a second library emitting the same name with other tag
 * keys would clash in a Prometheus registry. Rename them with {@link
 * RelayKitMeterBinder.Builder#name} to adopt the conventions' names.
 *
 * <p>Rename any one through {@link RelayKitMeterBinder.Builder#name}, or all of them through
 * {@link RelayKitMeterBinder.Builder#prefix}.
 */
public enum RelayKitMeter {
  // Tags below leave out messaging.system, which every meter has; "destination" is
  // messaging.destination.name, "group" messaging.consumer.group.name, "partition"
  // messaging.destination.partition.id.

  /** Gauge, tag destination: messages waiting to be sent (an outbox's unsent rows, under
   *  {@code messaging.destination.name="outbox"}); never a consumer's lag, which is {@link
   *  #CONSUMER_LAG}. */
  OUTBOX_BACKLOG("outbox.backlog", "messages waiting to be sent"),
  /** TimeGauge, tag destination: how long the oldest waiting message has waited. */
  OUTBOX_OLDEST_AGE("outbox.oldest.age", "age of the oldest waiting message"),
  /** DistributionSummary, tag {@code store} (the outbox store's name, its table on JDBC): key
   *  heads one claim examined ({@link io.relaykit.monitor.MetricsListener#outboxClaimWalked}).
   *  A mean well above the claimed batch means claims walk keys that cannot send. */
  OUTBOX_CLAIM_HEADS_WALKED("outbox.claim.heads.walked", "key heads one outbox claim examined"),
  /** DistributionSummary, tag {@code store}: outbox rows one claim read as candidates, leased or
   *  passed over. */
  OUTBOX_CLAIM_ROWS_WALKED("outbox.claim.rows.walked", "outbox rows one claim read"),
  /** Gauge, tags destination, group, partition: consumer lag in messages; partition {@code
   *  "all"} where the runtime knows no partitions (RabbitMQ, in-process). */
  CONSUMER_LAG("consumer.lag", "messages the consumer group trails the end of the partition"),
  /** Gauge, tags destination, group: messages taken and not yet finished. */
  CONSUMER_IN_FLIGHT("consumer.in.flight", "messages taken by the consumer and not yet finished"),
  /** TimeGauge, tags destination, group: how long the consumer's oldest unfinished message has
   *  been in flight (handlers stuck past their timeout included). */
  CONSUMER_OLDEST_IN_FLIGHT_AGE("consumer.in.flight.oldest.age",
      "age of the oldest message the consumer took and has not finished"),
  /** Counter, tags destination, group: consumers stopped for good. */
  CONSUMER_FAILED("consumer.failed", "consumers stopped for good on an unrecoverable error"),
  /** Counter, tags destination, {@code stage}: lifecycle steps taken, one per message per step. */
  MESSAGES("messages", "lifecycle steps taken by messages"),
  /** Counter, tags destination, group ({@code "none"} without one): messages dead-lettered. */
  DEAD_LETTERED("dead.lettered", "messages dead-lettered"),
  /** Counter, tags destination, {@code reason}: messages discarded. Dead letters the relay's
   *  retention removed count here under destination {@code "all"}, reason {@code
   *  "dead-letter-retention"}. */
  MESSAGES_DROPPED("messages.dropped", "messages discarded"),
  /** Counter, tags destination, {@code reason}: message parts ignored (no message lost). */
  MESSAGES_IGNORED("messages.ignored", "message parts ignored without failing the message"),
  /** Timer, tags destination, group, {@code outcome}: handler calls, one per delivery attempt;
   *  {@code outcome} is {@code success}, {@code failure} (the handler threw) or {@code timeout}
   *  (the runtime gave up at the handler timeout: recorded then, with the time until then, and
   *  not again when the handler returns late). */
  HANDLER_DURATION("handler.duration", "time a message handler ran"),
  /** Timer, tag destination: from publish to the broker's confirmation. */
  PUBLISH_CONFIRM_DURATION("publish.confirm.duration", "time from publish to broker confirm"),
  /** Gauge, tag {@code queue}: events in a report queue (pending plus in flight). */
  REPORT_QUEUE_DEPTH("report.queue.depth", "events held by the report queue"),
  /** Gauge, tag {@code queue}: bytes of the events a report queue holds. */
  REPORT_QUEUE_BYTES("report.queue.bytes", "bytes held by the report queue"),
  /** FunctionCounter, tag {@code queue}: events a report queue discarded (capacity, bytes). */
  REPORT_QUEUE_DROPPED("report.queue.dropped", "events the report queue discarded"),
  /** Gauge, tag destination: dead letters held. */
  DEAD_LETTERS("dead.letters", "dead letters held"),
  /** Gauge, tags destination, group ({@code "relay"} for the outbox relay): the backlog verdict
   *  as a number, see {@link RelayKitMeterBinder#verdictValue}. */
  BACKLOG_VERDICT("backlog.verdict",
      "backlog verdict: 0 healthy, 1 draining spike, 2 sustained growth, 3 stalled, 4 over bound"),
  /** Counter, tags destination, group, {@code type}: a share group's acknowledgements the broker
   *  confirmed, by {@code type}: {@code accept}, {@code release} or {@code reject}. */
  SHARE_ACKNOWLEDGED("share.acknowledged", "share-group acknowledgements the broker confirmed"),
  /** Counter, tags destination, group: a share group's acquisition locks the broker renewed. */
  SHARE_RENEWED("share.renewed", "share-group acquisition locks renewed"),
  /** Counter, tags destination, group: a share group's acquisition locks this member lost (the
   *  broker delivers the record again). */
  SHARE_LOCK_LOST("share.lock.lost", "share-group acquisition locks lost"),
  /** Counter, tags {@code action} ({@code replay-one}, {@code replay-set}, {@code purge-one},
   *  {@code purge-set}), {@code outcome} ({@code ok}, {@code failed}): operator console actions
   *  run, one per action (a repeated request for the same action is not counted again). */
  CONSOLE_ACTIONS("console.actions", "operator console actions run"),
  /** Counter, tag {@code action}: dead letters the operator console's actions replayed or
   *  purged. */
  CONSOLE_DEAD_LETTERS("console.dead.letters", "dead letters replayed or purged from the console"),
  /** Counter, tag {@code meter}: series refused because their meter reached its cap. */
  METERS_OVERFLOW("meters.overflow", "tag combinations refused: a meter reached its cap, or the registry refused the series");

  /** Tag key on every meter: OpenTelemetry's {@code messaging.system} ({@code kafka}, ...). */
  public static final String SYSTEM_TAG = "messaging.system";
  /** Tag key: OpenTelemetry's {@code messaging.destination.name}, the queue, topic or outbox. */
  public static final String DESTINATION_TAG = "messaging.destination.name";
  /** Tag key: OpenTelemetry's {@code messaging.consumer.group.name}, the consumer group. */
  public static final String GROUP_TAG = "messaging.consumer.group.name";
  /** Tag key: OpenTelemetry's {@code messaging.destination.partition.id}, a partition number. */
  public static final String PARTITION_TAG = "messaging.destination.partition.id";

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
