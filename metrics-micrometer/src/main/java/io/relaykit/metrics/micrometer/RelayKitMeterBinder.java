package io.relaykit.metrics.micrometer;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.relaykit.monitor.BacklogSnapshot;
import io.relaykit.monitor.BacklogVerdict;
import io.relaykit.monitor.LifecycleEvent;
import io.relaykit.monitor.LifecycleListener;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.queue.QueueStats;
import io.relaykit.queue.ReportQueue;
import java.time.Duration;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * Turns relaykit's {@link MetricsListener} and {@link LifecycleListener} calls into Micrometer
 * meters with stable names ({@link RelayKitMeter}) and bounded tags. Pass the same binder as the
 * metrics listener and the lifecycle listener of the relay, queues, publishers and subscriptions
 * whose numbers you want, and bind it to a registry once:
 *
 * <pre>{@code
 * RelayKitMeterBinder meters = RelayKitMeterBinder.builder()
 *     .messagingSystem(publisher.messagingSystem()).build();
 * meters.bindTo(registry);
 * OutboxRelay relay = OutboxRelay.builder()...metrics(meters).listener(meters.relayListener())
 *     .build();
 * }</pre>
 *
 * <p>Tags: every meter carries {@code messaging.system} (from {@link Builder#messagingSystem}:
 * the SPIs do not carry it, so whoever wires the binder names the transport); the messaging tags
 * use OpenTelemetry's attribute names, see {@link RelayKitMeter}. In the method docs below, {@code
 * destination}, {@code group} and {@code partition} stand for {@code messaging.destination.name},
 * {@code messaging.consumer.group.name} and {@code messaging.destination.partition.id}.
 *
 * <p>The relay gets {@link #relayListener()}, not the binder itself, when its publisher reports to
 * the binder too: both report PUBLISHED and CONFIRMED for each relayed message.
 *
 * <p>Cost: a lifecycle event or a counted drop is one lookup in a map of destinations (no
 * allocation once the destination is known) and one counter increment; a gauge report is one
 * lookup and one volatile write; a duration is one lookup and one {@link Timer#record}. Only the
 * first call for a new tag combination registers a meter; relaykit calls the listeners under its
 * locks, so that first call pays the registry's registration cost once per series.
 *
 * <p>Bounds: each meter holds at most {@link Builder#maxSeriesPerMeter} tag combinations; a call
 * for one more is not recorded and counts once in {@code relaykit.meters.overflow{meter=...}}
 * instead, so a destination per customer cannot grow the registry without bound. Stages, reasons
 * (cut to 64 characters), outcomes and verdicts are closed or short sets.
 *
 * <p>Failures: calls before {@link #bindTo} are ignored (nothing is buffered). A registry that
 * throws while registering a series (a {@code MeterFilter} that throws, a name already taken by
 * another meter type) refuses that series for good: it is logged once per meter, each later call
 * for it counts in {@code relaykit.meters.overflow} without asking the registry again, and
 * delivery goes on. Thread-safe.
 */
public final class RelayKitMeterBinder implements MeterBinder, MetricsListener, LifecycleListener {

  private static final System.Logger LOG = System.getLogger(RelayKitMeterBinder.class.getName());
  private static final String DESTINATION = RelayKitMeter.DESTINATION_TAG;
  private static final String GROUP = RelayKitMeter.GROUP_TAG;
  private static final String PARTITION = RelayKitMeter.PARTITION_TAG;
  private static final String PARTITION_ALL = "all";
  private static final String OUTCOME_TIMEOUT = "timeout";
  private static final int MAX_REASON = 64;
  private static final LifecycleEvent.Stage[] STAGES = LifecycleEvent.Stage.values();

  private final Map<RelayKitMeter, String> names;
  /** {@code messaging.system}, on every meter. */
  private final Tags common;
  private final String system;
  private final int maxSeries;
  private final double[] percentiles;
  private final boolean histogram;
  private final boolean durations;
  private final AtomicReference<MeterRegistry> registry = new AtomicReference<>();

  private final Series<AtomicLong> backlog = new Series<>(RelayKitMeter.OUTBOX_BACKLOG);
  private final Series<AtomicLong> oldestAge = new Series<>(RelayKitMeter.OUTBOX_OLDEST_AGE);
  private final Series<AtomicLong> lag = new Series<>(RelayKitMeter.CONSUMER_LAG);
  private final Series<AtomicLong> inFlight = new Series<>(RelayKitMeter.CONSUMER_IN_FLIGHT);
  private final Series<AtomicLong> inFlightAge =
      new Series<>(RelayKitMeter.CONSUMER_OLDEST_IN_FLIGHT_AGE);
  private final Series<Counter> failed = new Series<>(RelayKitMeter.CONSUMER_FAILED);
  private final Series<Counter> deadLettered = new Series<>(RelayKitMeter.DEAD_LETTERED);
  private final Series<Counter[]> messages = new Series<>(RelayKitMeter.MESSAGES);
  private final Series<Counter> dropped = new Series<>(RelayKitMeter.MESSAGES_DROPPED);
  private final Series<DistributionSummary> headsWalked =
      new Series<>(RelayKitMeter.OUTBOX_CLAIM_HEADS_WALKED);
  private final Series<DistributionSummary> rowsWalked =
      new Series<>(RelayKitMeter.OUTBOX_CLAIM_ROWS_WALKED);
  private final Series<Counter> shareAcks = new Series<>(RelayKitMeter.SHARE_ACKNOWLEDGED);
  private final Series<Counter> shareRenewed = new Series<>(RelayKitMeter.SHARE_RENEWED);
  private final Series<Counter> shareLockLost = new Series<>(RelayKitMeter.SHARE_LOCK_LOST);
  private final Series<Counter> ignored = new Series<>(RelayKitMeter.MESSAGES_IGNORED);
  private final Series<Counter> consoleActions = new Series<>(RelayKitMeter.CONSOLE_ACTIONS);
  private final Series<Counter> consoleDeadLetters =
      new Series<>(RelayKitMeter.CONSOLE_DEAD_LETTERS);
  private final Series<Timer> handler = new Series<>(RelayKitMeter.HANDLER_DURATION);
  private final Series<Timer> confirm = new Series<>(RelayKitMeter.PUBLISH_CONFIRM_DURATION);
  private final Series<AtomicLong> deadLetters = new Series<>(RelayKitMeter.DEAD_LETTERS);
  private final Series<AtomicLong> verdict = new Series<>(RelayKitMeter.BACKLOG_VERDICT);
  private final Series<ReportQueue> reportQueues = new Series<>(RelayKitMeter.REPORT_QUEUE_DEPTH);
  /**
   * Consumers (destination, group) whose runtime reported a partition: their sum is not kept.
   * An entry is added only once a partition series exists, so the lag series bound bounds it.
   */
  private final Map<Key, Boolean> partitioned = new ConcurrentHashMap<>();
  private volatile Map<RelayKitMeter, Counter> overflow = Map.of();
  /** {@link #relayListener()}: the steps the relay reports but its publisher does not. */
  private final LifecycleListener relayListener = event -> {
    if (event.stage() != LifecycleEvent.Stage.PUBLISHED
        && event.stage() != LifecycleEvent.Stage.CONFIRMED) {
      on(event);
    }
  };

  private RelayKitMeterBinder(Builder b) {
    this.names = new EnumMap<>(RelayKitMeter.class);
    for (RelayKitMeter m : RelayKitMeter.values()) {
      String override = b.names.get(m);
      names.put(m, override != null ? override : b.prefix + "." + m.suffix());
    }
    this.system = b.system;
    this.common = Tags.of(RelayKitMeter.SYSTEM_TAG, b.system);
    this.maxSeries = b.maxSeries;
    this.percentiles = b.percentiles.clone();
    this.histogram = b.histogram;
    this.durations = b.durations;
  }

  /**
   * A builder with the defaults: prefix {@code relaykit}, {@code messaging.system="unknown"}, 256
   * series per meter, no percentiles, no histogram.
   *
   * @return a new builder
   */
  public static Builder builder() {
    // micrometer-core 1.16.6 is what Spring Boot 4.0 manages, and the oldest relaykit-micrometer
    // compiles and runs against; an older one fails here with one line.
    io.relaykit.internal.ClientVersions.require("relaykit-micrometer", "micrometer-core",
        io.relaykit.internal.ClientVersions.ofJar(Counter.class).orElse(null), "1.16.6", null);
    return new Builder();
  }

  /**
   * The name this binder gives {@code meter}.
   *
   * @param meter the meter
   * @return its name, the override or prefix plus {@link RelayKitMeter#suffix()}
   */
  public String name(RelayKitMeter meter) {
    return names.get(Objects.requireNonNull(meter, "meter"));
  }

  /**
   * The {@code messaging.system} tag value this binder puts on every meter it registers.
   *
   * @return the system, as given to {@link Builder#messagingSystem}, else {@code "unknown"}
   */
  public String messagingSystem() {
    return system;
  }

  /**
   * Whether this binder records {@code relaykit.handler.duration} and {@code
   * relaykit.publish.confirm.duration} ({@link Builder#recordDurations}); the Spring Boot starter
   * checks it to warn about timers recorded twice.
   *
   * @return true unless built with {@code recordDurations(false)}
   */
  public boolean recordsDurations() {
    return durations;
  }

  /**
   * The number {@code relaykit.backlog.verdict} shows for {@code v}, in order of severity: {@code
   * HEALTHY} 0, {@code DRAINING_SPIKE} 1, {@code SUSTAINED_GROWTH} 2, {@code STALLED} 3, {@code
   * OVER_BOUND} 4. Alert on {@code >= 2}. The numbers are stable; a new verdict gets a new one.
   *
   * @param v the verdict
   * @return its number
   */
  public static int verdictValue(BacklogVerdict v) {
    return switch (Objects.requireNonNull(v, "v")) {
      case HEALTHY -> 0;
      case DRAINING_SPIKE -> 1;
      case SUSTAINED_GROWTH -> 2;
      case STALLED -> 3;
      case OVER_BOUND -> 4;
    };
  }

  /**
   * Binds this binder to {@code registry}: the overflow counters now, every other meter at its
   * first report. One registry per binder (compose registries with a {@code
   * CompositeMeterRegistry}).
   *
   * @param registry the registry to register meters with
   * @throws NullPointerException if {@code registry} is null
   * @throws IllegalStateException if this binder is already bound to another registry
   */
  @Override
  public synchronized void bindTo(MeterRegistry registry) {
    Objects.requireNonNull(registry, "registry");
    MeterRegistry bound = this.registry.get();
    if (bound == registry) {
      return;
    }
    if (bound != null) {
      throw new IllegalStateException("RelayKitMeterBinder is bound to another registry already;"
          + " use a CompositeMeterRegistry to export to several");
    }
    Map<RelayKitMeter, Counter> counters = new EnumMap<>(RelayKitMeter.class);
    for (RelayKitMeter m : RelayKitMeter.values()) {
      if (m != RelayKitMeter.METERS_OVERFLOW) {
        counters.put(m, Counter.builder(name(RelayKitMeter.METERS_OVERFLOW))
            .description(RelayKitMeter.METERS_OVERFLOW.description())
            .tag("meter", name(m)).tags(common).register(registry));
      }
    }
    overflow = counters; // published before the registry, so no series misses its counter
    this.registry.set(registry);
  }

  /**
   * Registers the gauges of a report queue: {@code relaykit.report.queue.depth} (pending plus in
   * flight), {@code .bytes} and the function counter {@code .dropped}, read from {@link
   * ReportQueue#stats()} when the registry is scraped (each read takes the queue's lock briefly).
   * Its drops by reason also arrive through {@link #dropped} when the queue's metrics listener is
   * this binder.
   *
   * @param name the tag value naming the queue
   * @param queue the queue to watch; held strongly, so its gauges stay while this binder lives
   * @throws NullPointerException if an argument is null
   * @throws IllegalStateException if this binder is not bound yet
   */
  public void reportQueue(String name, ReportQueue queue) {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(queue, "queue");
    MeterRegistry r = registry.get();
    if (r == null) {
      throw new IllegalStateException("bind RelayKitMeterBinder to a registry before reportQueue");
    }
    reportQueues.get(new Key(name, "", ""), k -> {
      Tags tags = common.and("queue", name);
      Gauge.builder(name(RelayKitMeter.REPORT_QUEUE_DEPTH), queue,
          q -> depth(q.stats())).tags(tags)
          .description(RelayKitMeter.REPORT_QUEUE_DEPTH.description()).register(r);
      Gauge.builder(name(RelayKitMeter.REPORT_QUEUE_BYTES), queue, q -> q.stats().bytes())
          .tags(tags).baseUnit("bytes")
          .description(RelayKitMeter.REPORT_QUEUE_BYTES.description()).register(r);
      FunctionCounter.builder(name(RelayKitMeter.REPORT_QUEUE_DROPPED), queue,
          q -> q.stats().dropped()).tags(tags)
          .description(RelayKitMeter.REPORT_QUEUE_DROPPED.description()).register(r);
      return queue;
    });
  }

  private static double depth(QueueStats s) {
    return (double) s.pending() + s.inflight();
  }

  // ---- LifecycleListener: the hot path ------------------------------------------------------

  /**
   * Counts {@code event} in {@code relaykit.messages{destination, stage}}: a map lookup and an
   * increment. {@link LifecycleEvent.Stage#DROPPED} is not counted here; drops are counted with
   * their reason by {@link #dropped}.
   *
   * @param event the step
   */
  @Override
  public void on(LifecycleEvent event) {
    if (event.stage() == LifecycleEvent.Stage.DROPPED) {
      return;
    }
    Counter[] byStage = messages.get(event.where(), this::stageCounters);
    if (byStage != null) {
      byStage[event.stage().ordinal()].increment();
    }
  }

  private Counter[] stageCounters(String destination, MeterRegistry r) {
    Counter[] counters = new Counter[STAGES.length];
    for (LifecycleEvent.Stage s : STAGES) {
      if (s != LifecycleEvent.Stage.DROPPED) {
        counters[s.ordinal()] = Counter.builder(name(RelayKitMeter.MESSAGES))
            .description(RelayKitMeter.MESSAGES.description())
            .tags(common).tags(DESTINATION, destination, "stage", stage(s)).register(r);
      }
    }
    return counters;
  }

  /**
   * The lifecycle listener for an {@link io.relaykit.outbox.OutboxRelay} whose publisher reports
   * to this binder too: it counts every step the relay reports except {@link
   * LifecycleEvent.Stage#PUBLISHED} and {@link LifecycleEvent.Stage#CONFIRMED}. The relay and the
   * transport's publisher both report those two steps for every relayed message, under the same
   * destination; with this binder as the listener of both, {@code relaykit.messages} would count
   * each relayed message twice at those stages. The relay's other steps (a publish that failed
   * and is retried or dead-lettered) are its own and count here. Give the relay this binder itself
   * when its publisher reports to no listener (a {@link io.relaykit.message.Publisher} of your
   * own). Same cost as {@link #on}; the same listener on every call.
   *
   * @return a listener forwarding to {@link #on} every event but PUBLISHED and CONFIRMED
   */
  public LifecycleListener relayListener() {
    return relayListener;
  }

  /**
   * The {@code stage} tag value of {@code s}: its name in lower case, e.g. {@code dead_lettered}.
   *
   * @param s the stage
   * @return the tag value
   */
  public static String stage(LifecycleEvent.Stage s) {
    return s.name().toLowerCase(java.util.Locale.ROOT);
  }

  // ---- MetricsListener ----------------------------------------------------------------------

  /** {@inheritDoc} Sets {@code relaykit.outbox.backlog{destination}}. */
  @Override
  public void backlogDepth(String destination, long depth) {
    set(backlog, RelayKitMeter.OUTBOX_BACKLOG, destination, depth);
  }

  /** {@inheritDoc} Sets the TimeGauge {@code relaykit.outbox.oldest.age{destination}}. */
  @Override
  public void oldestAge(String destination, Duration age) {
    AtomicLong v = oldestAge.get(destination, (d, r) -> {
      AtomicLong nanos = new AtomicLong();
      TimeGauge.builder(name(RelayKitMeter.OUTBOX_OLDEST_AGE), nanos, TimeUnit.NANOSECONDS,
          AtomicLong::doubleValue).tags(common).tags(DESTINATION, d)
          .description(RelayKitMeter.OUTBOX_OLDEST_AGE.description()).register(r);
      return nanos;
    });
    if (v != null) {
      v.set(saturatedNanos(age));
    }
  }

  /**
   * {@inheritDoc} Sets {@code relaykit.consumer.lag{destination, group, partition="all"}} for a
   * consumer whose runtime never reported a partition; once it has, the sum is not kept (the
   * partitions add up to it).
   */
  @Override
  public void consumerLag(String destination, String group, long lag) {
    Key consumer = new Key(destination, group, "");
    if (partitioned.containsKey(consumer)) {
      return;
    }
    AtomicLong v;
    synchronized (this.lag) { // against partitionLag removing the sum between check and create
      if (partitioned.containsKey(consumer)) {
        return;
      }
      v = this.lag.get(new Key(destination, group, PARTITION_ALL),
          k -> lagGauge(k, registry.get()));
    }
    if (v != null) {
      v.set(lag);
    }
  }

  /** {@inheritDoc} Sets {@code relaykit.consumer.lag{destination, group, partition}}. */
  @Override
  public void partitionLag(String destination, String group, int partition, long lag) {
    AtomicLong v = this.lag.get(new Key(destination, group, Integer.toString(partition)),
        k -> lagGauge(k, registry.get()));
    if (v == null) {
      return; // over the series bound (counted), or not bound yet
    }
    // Marked only once a partition series exists: the marks stay within the series bound.
    Key consumer = new Key(destination, group, "");
    if (!partitioned.containsKey(consumer)) {
      synchronized (this.lag) {
        if (partitioned.putIfAbsent(consumer, Boolean.TRUE) == null) {
          AtomicLong sum = this.lag.remove(new Key(destination, group, PARTITION_ALL));
          if (sum != null) {
            MeterRegistry r = registry.get();
            Meter all = r.find(name(RelayKitMeter.CONSUMER_LAG)).tags(common).tags(DESTINATION,
                tag(destination), GROUP, tag(group), PARTITION, PARTITION_ALL).meter();
            if (all != null) {
              r.remove(all);
            }
          }
        }
      }
    }
    v.set(lag);
  }

  private AtomicLong lagGauge(Key k, MeterRegistry r) {
    AtomicLong v = new AtomicLong();
    Gauge.builder(name(RelayKitMeter.CONSUMER_LAG), v, AtomicLong::doubleValue)
        .tags(common).tags(DESTINATION, k.a, GROUP, k.b, PARTITION, k.c)
        .description(RelayKitMeter.CONSUMER_LAG.description()).register(r);
    return v;
  }

  /** {@inheritDoc} Sets {@code relaykit.consumer.in.flight{destination, group}}. */
  @Override
  public void inFlight(String destination, String group, long count) {
    AtomicLong v = inFlight.get(new Key(destination, group, ""), k -> {
      AtomicLong g = new AtomicLong();
      Gauge.builder(name(RelayKitMeter.CONSUMER_IN_FLIGHT), g, AtomicLong::doubleValue)
          .tags(common).tags(DESTINATION, k.a, GROUP, k.b)
          .description(RelayKitMeter.CONSUMER_IN_FLIGHT.description()).register(registry.get());
      return g;
    });
    if (v != null) {
      v.set(count);
    }
  }

  /**
   * {@inheritDoc} Sets the TimeGauge {@code relaykit.consumer.in.flight.oldest.age{destination,
   * group}}.
   */
  @Override
  public void oldestInFlightAge(String destination, String group, Duration age) {
    AtomicLong v = inFlightAge.get(new Key(destination, group, ""), k -> {
      AtomicLong nanos = new AtomicLong();
      TimeGauge.builder(name(RelayKitMeter.CONSUMER_OLDEST_IN_FLIGHT_AGE), nanos,
          TimeUnit.NANOSECONDS, AtomicLong::doubleValue).tags(common)
          .tags(DESTINATION, k.a, GROUP, k.b)
          .description(RelayKitMeter.CONSUMER_OLDEST_IN_FLIGHT_AGE.description())
          .register(registry.get());
      return nanos;
    });
    if (v != null) {
      v.set(saturatedNanos(age));
    }
  }

  /**
   * {@inheritDoc} Records in {@code relaykit.handler.duration{messaging.destination.name,
   * messaging.consumer.group.name, outcome}} with {@code outcome} {@code success} or {@code
   * failure}.
   */
  @Override
  public void handlerDuration(String destination, String group, Duration duration,
      boolean failed) {
    handlerTimer(destination, group, failed ? "failure" : "success", duration);
  }

  /**
   * {@inheritDoc} Records in {@code relaykit.handler.duration{..., outcome="timeout"}}: a handler
   * call the runtime gave up on at its timeout, with the time until then; its late return, if
   * any, records nothing.
   */
  @Override
  public void handlerTimedOut(String destination, String group, Duration duration) {
    handlerTimer(destination, group, OUTCOME_TIMEOUT, duration);
  }

  private void handlerTimer(String destination, String group, String outcome,
      Duration duration) {
    if (!durations) {
      return;
    }
    Timer t = handler.get(new Key(destination, group, outcome),
        k -> timer(RelayKitMeter.HANDLER_DURATION,
            Tags.of(DESTINATION, k.a, GROUP, k.b, "outcome", k.c)));
    if (t != null) {
      t.record(duration);
    }
  }

  /** {@inheritDoc} Records in {@code relaykit.publish.confirm.duration{destination}}. */
  @Override
  public void publishConfirmDuration(String destination, Duration duration) {
    if (!durations) {
      return;
    }
    Timer t = confirm.get(destination,
        (d, r) -> timer(RelayKitMeter.PUBLISH_CONFIRM_DURATION, Tags.of(DESTINATION, d)));
    if (t != null) {
      t.record(duration);
    }
  }

  private Timer timer(RelayKitMeter m, Tags tags) {
    Timer.Builder b = Timer.builder(name(m)).description(m.description()).tags(common)
        .tags(tags);
    if (percentiles.length > 0) {
      b.publishPercentiles(percentiles);
    }
    if (histogram) {
      b.publishPercentileHistogram();
    }
    return b.register(registry.get());
  }

  /** {@inheritDoc} Sets {@code relaykit.dead.letters{destination}}. */
  @Override
  public void deadLetterDepth(String destination, long depth) {
    set(deadLetters, RelayKitMeter.DEAD_LETTERS, destination, depth);
  }

  /**
   * {@inheritDoc} Counts in {@code relaykit.dead.lettered{destination, group}} ({@code group}
   * {@code "none"} when null).
   */
  @Override
  public void deadLettered(String destination, String group) {
    Counter c = deadLettered.get(new Key(destination, group == null ? "none" : group, ""), k ->
        Counter.builder(name(RelayKitMeter.DEAD_LETTERED)).tags(common)
            .tags(DESTINATION, k.a, GROUP, k.b)
            .description(RelayKitMeter.DEAD_LETTERED.description()).register(registry.get()));
    if (c != null) {
      c.increment();
    }
  }

  /**
   * {@inheritDoc} Records {@code heads} in {@code relaykit.outbox.claim.heads.walked{store}} and
   * {@code rows} in {@code relaykit.outbox.claim.rows.walked{store}} (distribution summaries: count,
   * total, max, and the binder's percentiles if set). Negative values are not recorded.
   */
  @Override
  public void outboxClaimWalked(String store, long heads, long rows) {
    summary(headsWalked, RelayKitMeter.OUTBOX_CLAIM_HEADS_WALKED, store, heads);
    summary(rowsWalked, RelayKitMeter.OUTBOX_CLAIM_ROWS_WALKED, store, rows);
  }

  private void summary(Series<DistributionSummary> series, RelayKitMeter m, String store,
      long value) {
    if (value < 0) {
      return;
    }
    DistributionSummary s = series.get(store, (d, r) -> {
      DistributionSummary.Builder b = DistributionSummary.builder(name(m)).tags(common)
          .tag("store", d).description(m.description());
      if (percentiles.length > 0) {
        b.publishPercentiles(percentiles);
      }
      return b.register(r);
    });
    if (s != null) {
      s.record(value);
    }
  }

  /**
   * {@inheritDoc} Adds to {@code relaykit.share.acknowledged{destination, group, type}} (a type
   * other than {@code accept}, {@code release} or {@code reject} counts as {@code unknown}, so
   * the series stay bounded).
   */
  @Override
  public void shareAcknowledged(String destination, String group, String type, long count) {
    String t = "accept".equals(type) || "release".equals(type) || "reject".equals(type)
        ? type : "unknown";
    Counter c = shareAcks.get(new Key(destination, group, t), k ->
        Counter.builder(name(RelayKitMeter.SHARE_ACKNOWLEDGED)).tags(common)
            .tags(DESTINATION, k.a, GROUP, k.b, "type", k.c)
            .description(RelayKitMeter.SHARE_ACKNOWLEDGED.description())
            .register(registry.get()));
    if (c != null && count > 0) {
      c.increment(count);
    }
  }

  /** {@inheritDoc} Adds to {@code relaykit.share.renewed{destination, group}}. */
  @Override
  public void shareRenewed(String destination, String group, long count) {
    groupCount(shareRenewed, RelayKitMeter.SHARE_RENEWED, destination, group, count);
  }

  /** {@inheritDoc} Adds to {@code relaykit.share.lock.lost{destination, group}}. */
  @Override
  public void shareLockLost(String destination, String group, long count) {
    groupCount(shareLockLost, RelayKitMeter.SHARE_LOCK_LOST, destination, group, count);
  }

  private void groupCount(Series<Counter> series, RelayKitMeter m, String destination,
      String group, long n) {
    Counter c = series.get(new Key(destination, group, ""), k -> Counter.builder(name(m))
        .tags(common).tags(DESTINATION, k.a, GROUP, k.b).description(m.description())
        .register(registry.get()));
    if (c != null && n > 0) {
      c.increment(n);
    }
  }

  /** {@inheritDoc} Adds to {@code relaykit.messages.dropped{destination, reason}}. */
  @Override
  public void dropped(String destination, String reason, long count) {
    count(dropped, RelayKitMeter.MESSAGES_DROPPED, destination, reason, count);
  }

  /**
   * {@inheritDoc} Adds one to {@code relaykit.console.actions{action, outcome}} and {@code count}
   * to {@code relaykit.console.dead.letters{action}}.
   */
  @Override
  public void consoleAction(String action, String outcome, long count) {
    String a = action == null || action.isBlank() ? "unknown"
        : action.length() > MAX_REASON ? action.substring(0, MAX_REASON) : action;
    String o = "ok".equals(outcome) ? "ok" : "failed";
    Counter c = consoleActions.get(new Key(a, o, ""), k -> Counter.builder(
        name(RelayKitMeter.CONSOLE_ACTIONS)).tags(common).tags("action", k.a, "outcome", k.b)
        .description(RelayKitMeter.CONSOLE_ACTIONS.description()).register(registry.get()));
    if (c != null) {
      c.increment();
    }
    Counter n = consoleDeadLetters.get(new Key(a, "", ""), k -> Counter.builder(
        name(RelayKitMeter.CONSOLE_DEAD_LETTERS)).tags(common).tags("action", k.a)
        .description(RelayKitMeter.CONSOLE_DEAD_LETTERS.description()).register(registry.get()));
    if (n != null && count > 0) {
      n.increment(count);
    }
  }

  /** {@inheritDoc} Adds to {@code relaykit.messages.ignored{destination, reason}}. */
  @Override
  public void ignored(String destination, String reason, long count) {
    count(ignored, RelayKitMeter.MESSAGES_IGNORED, destination, reason, count);
  }

  /**
   * {@inheritDoc} Sets {@code relaykit.backlog.verdict{destination, group="relay"}} (the outbox
   * relay's verdict: no consumer group) to {@link #verdictValue}.
   */
  @Override
  public void backlog(String destination, BacklogSnapshot snapshot) {
    backlog(destination, "relay", snapshot);
  }

  /**
   * {@inheritDoc} Sets {@code relaykit.backlog.verdict{destination, group}} to {@link
   * #verdictValue}: one series per group, so two groups on one topic do not overwrite each other.
   */
  @Override
  public void backlog(String destination, String group, BacklogSnapshot snapshot) {
    AtomicLong v = verdict.get(new Key(destination, group == null ? "relay" : group, ""), k -> {
      AtomicLong g = new AtomicLong();
      Gauge.builder(name(RelayKitMeter.BACKLOG_VERDICT), g, AtomicLong::doubleValue)
          .tags(common).tags(DESTINATION, k.a, GROUP, k.b)
          .description(RelayKitMeter.BACKLOG_VERDICT.description()).register(registry.get());
      return g;
    });
    if (v != null) {
      v.set(verdictValue(snapshot.verdict()));
    }
  }

  /** {@inheritDoc} Counts in {@code relaykit.consumer.failed{destination, group}}. */
  @Override
  public void consumerFailed(String destination, String group, Throwable cause) {
    Counter c = failed.get(new Key(destination, group, ""), k ->
        Counter.builder(name(RelayKitMeter.CONSUMER_FAILED)).tags(common)
            .tags(DESTINATION, k.a, GROUP, k.b)
            .description(RelayKitMeter.CONSUMER_FAILED.description()).register(registry.get()));
    if (c != null) {
      c.increment();
    }
  }

  private void set(Series<AtomicLong> series, RelayKitMeter m, String destination, long value) {
    AtomicLong v = series.get(destination, (d, r) -> {
      AtomicLong g = new AtomicLong();
      Gauge.builder(name(m), g, AtomicLong::doubleValue).tags(common).tags(DESTINATION, d)
          .description(m.description()).register(r);
      return g;
    });
    if (v != null) {
      v.set(value);
    }
  }

  private void count(Series<Counter> series, RelayKitMeter m, String destination, String reason,
      long n) {
    String why = reason == null || reason.isBlank() ? "unknown"
        : reason.length() > MAX_REASON ? reason.substring(0, MAX_REASON) : reason;
    Counter c = series.get(new Key(destination, why, ""), k -> Counter.builder(name(m))
        .tags(common).tags(DESTINATION, k.a, "reason", k.b).description(m.description())
        .register(registry.get()));
    if (c != null && n > 0) {
      c.increment(n);
    }
  }

  private static long saturatedNanos(Duration d) {
    try {
      return d.toNanos();
    } catch (ArithmeticException e) {
      return d.isNegative() ? Long.MIN_VALUE : Long.MAX_VALUE;
    }
  }

  private static String tag(String v) {
    return v == null || v.isBlank() ? "unknown" : v;
  }

  /** Up to three tag values; the empty string where a meter has fewer tags. */
  private record Key(String a, String b, String c) {
    Key {
      a = tag(a);
      b = "".equals(b) ? b : tag(b);
    }
  }

  /**
   * The series of one meter: cached values by key, at most {@link #maxSeries} of them. A lookup of
   * a known key is one {@link ConcurrentHashMap#get}; a new key registers its meter once.
   */
  private final class Series<T> {
    private final RelayKitMeter meter;
    private final Map<Object, T> byKey = new ConcurrentHashMap<>();
    private final AtomicInteger size = new AtomicInteger();
    /** Keys whose registration threw: not asked again (at most maxSeries of them). */
    private final Set<Object> refused = ConcurrentHashMap.newKeySet();

    Series(RelayKitMeter meter) {
      this.meter = meter;
    }

    /** By a single destination, so the hot path allocates no key. */
    T get(String destination, java.util.function.BiFunction<String, MeterRegistry, T> create) {
      String d = tag(destination);
      T v = byKey.get(d);
      return v != null ? v : create(d, () -> create.apply(d, registry.get()));
    }

    T get(Key key, Function<Key, T> create) {
      T v = byKey.get(key);
      return v != null ? v : create(key, () -> create.apply(key));
    }

    T remove(Key key) {
      T v = byKey.remove(key);
      if (v != null) {
        size.decrementAndGet();
      }
      return v;
    }

    private T create(Object key, Supplier<T> factory) {
      if (registry.get() == null) {
        return null;
      }
      if (refused.contains(key)) {
        countOverflow();
        return null;
      }
      synchronized (this) {
        T v = byKey.get(key);
        if (v != null) {
          return v;
        }
        if (size.get() >= maxSeries) {
          countOverflow();
          return null;
        }
        try {
          v = factory.get();
        } catch (RuntimeException e) {
          // A registry that refuses this series (a MeterFilter that throws, a name already
          // registered as another type) refuses it every time: asking again per event would
          // cost a registration attempt and a stack trace per message.
          if (refused.size() < maxSeries && refused.add(key) && refused.size() == 1) {
            LOG.log(System.Logger.Level.WARNING, "the meter registry refused "
                + name(meter) + " for " + key + "; that series is not recorded (counted in "
                + name(RelayKitMeter.METERS_OVERFLOW) + "): " + e, e);
          }
          countOverflow();
          return null;
        }
        byKey.put(key, v);
        size.incrementAndGet();
        return v;
      }
    }

    private void countOverflow() {
      Counter c = overflow.get(meter);
      if (c != null) {
        c.increment();
      }
    }
  }

  /**
   * Configures a {@link RelayKitMeterBinder}; every setter checks its argument. Not thread-safe.
   */
  public static final class Builder {
    private String prefix = "relaykit";
    private String system = "unknown";
    private final Map<RelayKitMeter, String> names = new EnumMap<>(RelayKitMeter.class);
    private int maxSeries = 256;
    private double[] percentiles = new double[0];
    private boolean histogram;
    private boolean durations = true;

    private Builder() {}

    /**
     * The prefix of every meter name not renamed with {@link #name}.
     *
     * @param prefix dot-separated, e.g. {@code "orders.relaykit"}; default {@code relaykit}
     * @return this builder
     * @throws NullPointerException if {@code prefix} is null
     * @throws IllegalArgumentException if {@code prefix} is blank, or starts or ends with a dot
     */
    public Builder prefix(String prefix) {
      Objects.requireNonNull(prefix, "prefix");
      if (prefix.isBlank() || prefix.startsWith(".") || prefix.endsWith(".")) {
        throw new IllegalArgumentException("prefix must be non-blank and must not start or end"
            + " with a dot: \"" + prefix + "\"");
      }
      this.prefix = prefix;
      return this;
    }

    /**
     * The {@code messaging.system} tag on every meter this binder registers: the messaging system
     * of the transport whose numbers it receives, as OpenTelemetry's messaging conventions name it
     * and as the transports name themselves ({@code Publisher.messagingSystem()}, {@code
     * Subscriber.messagingSystem()}): {@code kafka}, {@code rabbitmq}, {@code relaykit-inprocess}.
     * The metrics and lifecycle SPIs do not carry the system, so the binder takes it here: whoever
     * wires the binder passes the transport's name (the Spring Boot starter does, from {@code
     * relaykit.transport}). An application with two transports uses one binder per transport,
     * composed with {@code MetricsListener.composite} where one component reports to both, all
     * bound to the same registry (their series differ in {@code messaging.system}). Default
     * {@code "unknown"}.
     *
     * @param system e.g. {@code transport.messagingSystem()}; at most 64 characters
     * @return this builder
     * @throws NullPointerException if {@code system} is null
     * @throws IllegalArgumentException if {@code system} is blank or longer than 64 characters
     */
    public Builder messagingSystem(String system) {
      Objects.requireNonNull(system, "system");
      if (system.isBlank() || system.length() > MAX_REASON) {
        throw new IllegalArgumentException("messagingSystem must be non-blank and at most "
            + MAX_REASON + " characters: \"" + system + "\"");
      }
      this.system = system;
      return this;
    }

    /**
     * The full name of one meter, instead of prefix plus {@link RelayKitMeter#suffix()}.
     *
     * @param meter the meter to rename
     * @param name its name, e.g. {@code "orders.consumer.lag"}
     * @return this builder
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if {@code name} is blank
     */
    public Builder name(RelayKitMeter meter, String name) {
      Objects.requireNonNull(meter, "meter");
      Objects.requireNonNull(name, "name");
      if (name.isBlank()) {
        throw new IllegalArgumentException("name of " + meter + " must not be blank");
      }
      names.put(meter, name);
      return this;
    }

    /**
     * The most tag combinations one meter holds; more are refused and counted in {@code
     * relaykit.meters.overflow}.
     *
     * @param max at least 1; default 256
     * @return this builder
     * @throws IllegalArgumentException if {@code max < 1}
     */
    public Builder maxSeriesPerMeter(int max) {
      if (max < 1) {
        throw new IllegalArgumentException("maxSeriesPerMeter must be >= 1, was " + max);
      }
      this.maxSeries = max;
      return this;
    }

    /**
     * Client-side percentiles the two timers publish (each costs memory per series); none by
     * default.
     *
     * @param percentiles each in {@code [0, 1]}, e.g. {@code 0.5, 0.99}
     * @return this builder
     * @throws NullPointerException if {@code percentiles} is null
     * @throws IllegalArgumentException if one is outside {@code [0, 1]}
     */
    public Builder percentiles(double... percentiles) {
      Objects.requireNonNull(percentiles, "percentiles");
      for (double p : percentiles) {
        if (!(p >= 0 && p <= 1)) {
          throw new IllegalArgumentException("percentile must be in [0, 1], was " + p);
        }
      }
      this.percentiles = Arrays.copyOf(percentiles, percentiles.length);
      return this;
    }

    /**
     * Whether the two timers publish a percentile histogram (buckets a backend aggregates, such
     * as Prometheus's {@code histogram_quantile}); off by default.
     *
     * @param histogram whether to publish it
     * @return this builder
     */
    public Builder percentileHistogram(boolean histogram) {
      this.histogram = histogram;
      return this;
    }

    /**
     * Whether the binder records the two timers, {@code relaykit.handler.duration} and {@code
     * relaykit.publish.confirm.duration}; on by default. Turn it off when another instrumentation
     * records the same operations under the same names (the Spring Boot starter's Micrometer
     * Observations do): the durations the binder is then told are ignored, at no cost, and every
     * other meter is unchanged.
     *
     * @param durations whether to record the timers
     * @return this builder
     */
    public Builder recordDurations(boolean durations) {
      this.durations = durations;
      return this;
    }

    /**
     * The binder, not yet bound to a registry.
     *
     * @return a new binder
     */
    public RelayKitMeterBinder build() {
      return new RelayKitMeterBinder(this);
    }
  }
}
