package io.relaykit.monitor;

import io.relaykit.internal.Checks;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * The latest consumer lag and in-flight count that this process's consumers reported, per
 * (destination, group): a {@link MetricsListener} to hand to the transports, and a {@link
 * SubscriptionStatusSource} that the operator console reads. Each callback is O(1) and lock-free
 * (one hash lookup, two volatile writes); {@link #read()} is O(n log n) in the subscriptions kept
 * and never calls a backend, so it cannot fail.
 *
 * <p>What is kept:
 *
 * <ul>
 *   <li>{@link #consumerLag} and {@link #inFlight} of each (destination, group), the latest value
 *       of each; a figure never reported reads {@link SubscriptionStatus#UNKNOWN}, and so does a
 *       negative one. Which consumers report them: Kafka consumer groups (lag over the partitions
 *       the member holds, of the topic and its retry topic together, from the consumer's fetch
 *       positions; in-flight from the offset tracker), Kafka share groups (lag from the broker's
 *       share-group offsets, plus the retry reader's, reported as 0 until the broker first
 *       answered; in-flight acquired records), and RabbitMQ subscriptions (lag is the group
 *       queue's ready messages, in-flight the deliveries not yet settled). The in-process
 *       transport reports neither: its subscriptions do not appear here.
 *   <li>Each subscription reports its own figures under its (destination, group): several
 *       subscriptions of one group on one destination in this process (several Kafka members,
 *       several RabbitMQ consumers) overwrite each other, and the latest report is kept, not
 *       their sum. Run one subscription per group and destination in a process, or read the
 *       group's total from the broker ({@code KafkaSubscriptionStatus}, {@code
 *       RabbitMqQueueStatus}).
 *   <li>{@link SubscriptionStatus#readAt()} is the wall-clock time of the subscription's latest
 *       report, not of the read: an operator sees how old the figures are.
 *   <li>At most {@code maxSubscriptions} (default {@value #DEFAULT_MAX_SUBSCRIPTIONS}) pairs; a
 *       report for a new pair when the table is full is refused and counted ({@link #refused()}),
 *       never kept.
 *   <li>A pair that has not reported for {@code expireAfter} (default 5 minutes, measured on the
 *       monotonic {@code ticker}, so a wall-clock step expires nothing) is dropped: by {@link
 *       #read()}, and by a report that finds the table full (at most one such sweep per {@code
 *       expireAfter}). {@link #consumerFailed} drops the pair at once: a stopped consumer's last
 *       figures would read as a healthy one's.
 * </ul>
 *
 * <p>All subscriptions of one instance share one {@link SubscriptionStatus#kind()} (default {@value
 * #DEFAULT_KIND}): the callbacks do not say which transport calls them. Give each transport (or
 * each subscription, through its spec's metrics listener) its own instance to tell them apart,
 * e.g. {@code kind("kafka-group")}, and combine them with {@link MetricsListener#composite} next
 * to the application's exporter.
 *
 * <p>A report that races the expiry of its own pair (silent for {@code expireAfter}, then
 * reporting while a sweep removes it) may be lost; the subscription's next sample brings it back.
 */
public final class SubscriptionGauges implements MetricsListener, SubscriptionStatusSource {

  /** The default bound on the (destination, group) pairs kept. */
  public static final int DEFAULT_MAX_SUBSCRIPTIONS = 1024;
  /** The largest bound accepted. */
  public static final int MAX_SUBSCRIPTIONS_LIMIT = 65_536;
  /** The default kind of every status read. */
  public static final String DEFAULT_KIND = "consumer";
  /** The default time after which a pair that stopped reporting is dropped. */
  public static final Duration DEFAULT_EXPIRE_AFTER = Duration.ofMinutes(5);

  private final String kind;
  private final int maxSubscriptions;
  private final long expireAfterNanos;
  private final InstantSource clock;
  private final LongSupplier ticker;
  private final ConcurrentHashMap<Key, Entry> entries = new ConcurrentHashMap<>();
  private final AtomicInteger size = new AtomicInteger();
  private final AtomicLong refused = new AtomicLong();
  private final AtomicLong invalid = new AtomicLong();
  /** Monotonic reading before which a full table does not sweep again. */
  private final AtomicLong nextSweep;

  private SubscriptionGauges(Builder b) {
    this.kind = b.kind;
    this.maxSubscriptions = b.maxSubscriptions;
    this.expireAfterNanos = b.expireAfter.toNanos();
    this.clock = b.clock;
    this.ticker = b.ticker;
    this.nextSweep = new AtomicLong(ticker.getAsLong());
  }

  /**
   * Gauges with the defaults: kind {@value #DEFAULT_KIND}, {@value #DEFAULT_MAX_SUBSCRIPTIONS}
   * subscriptions, expiry after 5 minutes, the system clock.
   *
   * @return new, empty gauges
   */
  public static SubscriptionGauges create() {
    return builder().build();
  }

  /**
   * A builder starting from the defaults of {@link #create()}.
   *
   * @return a new builder
   */
  public static Builder builder() {
    return new Builder();
  }

  @Override
  public void consumerLag(String destination, String group, long lag) {
    Entry e = entry(destination, group);
    if (e != null) {
      e.lag = lag < 0 ? SubscriptionStatus.UNKNOWN : lag;
      e.touch();
    }
  }

  @Override
  public void inFlight(String destination, String group, long count) {
    Entry e = entry(destination, group);
    if (e != null) {
      e.inFlight = count < 0 ? SubscriptionStatus.UNKNOWN : count;
      e.touch();
    }
  }

  /** Drops the pair: the subscription no longer runs, and its last figures would mislead. */
  @Override
  public void consumerFailed(String destination, String group, Throwable cause) {
    if (destination == null) {
      return;
    }
    Key key = new Key(destination, group);
    Entry e = entries.get(key);
    if (e != null) {
      remove(key, e);
    }
  }

  /**
   * The subscriptions that reported within {@code expireAfter}, sorted by destination then group
   * (no group first); drops the ones that did not. Never throws.
   *
   * @return at most {@code maxSubscriptions} statuses, each with the latest reported lag and
   *     in-flight count ({@link SubscriptionStatus#UNKNOWN} for a figure never reported) and the
   *     time of the latest report as {@code readAt}
   */
  @Override
  public List<SubscriptionStatus> read() {
    long now = ticker.getAsLong();
    List<SubscriptionStatus> out = new ArrayList<>(Math.min(size.get(), maxSubscriptions));
    for (var me : entries.entrySet()) {
      Entry e = me.getValue();
      if (expired(e, now)) {
        remove(me.getKey(), e);
        continue;
      }
      Instant at = e.reportedAt;
      out.add(new SubscriptionStatus(kind, me.getKey().destination(), me.getKey().group(), e.lag,
          e.inFlight, at));
      if (out.size() == maxSubscriptions) {
        break;
      }
    }
    out.sort(ORDER);
    return out;
  }

  /**
   * Reports refused because the table was full.
   *
   * @return how many reports for a new (destination, group) were not kept since creation
   */
  public long refused() {
    return refused.get();
  }

  /**
   * Reports ignored because they named no destination (null or blank).
   *
   * @return how many reports were ignored as invalid since creation
   */
  public long invalid() {
    return invalid.get();
  }

  /**
   * The (destination, group) pairs kept now, expired ones not yet dropped included.
   *
   * @return the number of pairs, at most {@code maxSubscriptions}
   */
  public int size() {
    return size.get();
  }

  @Override
  public String toString() {
    return "SubscriptionGauges[kind=" + kind + ", size=" + size.get() + "/" + maxSubscriptions
        + ", refused=" + refused.get() + "]";
  }

  private static final Comparator<SubscriptionStatus> ORDER = Comparator
      .comparing(SubscriptionStatus::destination)
      .thenComparing(SubscriptionStatus::group, Comparator.nullsFirst(Comparator.naturalOrder()));

  /** The pair's entry, created when there is room; null when refused or invalid. */
  private Entry entry(String destination, String group) {
    if (destination == null || destination.isBlank()) {
      invalid.incrementAndGet();
      return null;
    }
    Key key = new Key(destination, group);
    Entry e = entries.get(key);
    if (e != null) {
      return e;
    }
    if (size.get() >= maxSubscriptions && !sweepIfDue()) {
      refused.incrementAndGet();
      return null;
    }
    e = entries.computeIfAbsent(key, k -> {
      if (size.incrementAndGet() > maxSubscriptions) {
        size.decrementAndGet();
        return null; // no mapping: the bound holds even when creators race
      }
      return new Entry();
    });
    if (e == null) {
      refused.incrementAndGet();
    }
    return e;
  }

  /** A full table drops expired pairs, at most once per expireAfter; true if room was made. */
  private boolean sweepIfDue() {
    long now = ticker.getAsLong();
    long due = nextSweep.get();
    if (now - due < 0 || !nextSweep.compareAndSet(due, now + expireAfterNanos)) {
      return false;
    }
    for (var me : entries.entrySet()) {
      if (expired(me.getValue(), now)) {
        remove(me.getKey(), me.getValue());
      }
    }
    return size.get() < maxSubscriptions;
  }

  private boolean expired(Entry e, long now) {
    return now - e.reportedNanos >= expireAfterNanos;
  }

  private void remove(Key key, Entry e) {
    if (entries.remove(key, e)) {
      size.decrementAndGet();
    }
  }

  private record Key(String destination, String group) {}

  /** One pair's latest figures; written by reporting threads, read by {@link #read()}. */
  private final class Entry {
    volatile long lag = SubscriptionStatus.UNKNOWN;
    volatile long inFlight = SubscriptionStatus.UNKNOWN;
    volatile long reportedNanos = ticker.getAsLong();
    volatile Instant reportedAt = clock.instant();

    void touch() {
      reportedNanos = ticker.getAsLong();
      reportedAt = clock.instant();
    }
  }

  /**
   * Builds {@link SubscriptionGauges}; {@link #build()} validates, naming the field and the value.
   */
  public static final class Builder {
    private String kind = DEFAULT_KIND;
    private int maxSubscriptions = DEFAULT_MAX_SUBSCRIPTIONS;
    private Duration expireAfter = DEFAULT_EXPIRE_AFTER;
    private InstantSource clock = InstantSource.system();
    private LongSupplier ticker = System::nanoTime;

    private Builder() {}

    /**
     * The kind every status of these gauges carries, e.g. {@code "kafka-group"}, {@code
     * "kafka-share-group"}, {@code "rabbitmq-queue"}. Default {@value #DEFAULT_KIND}.
     *
     * @param kind the kind; checked (not blank) by {@link #build()}
     * @return this builder
     */
    public Builder kind(String kind) {
      this.kind = kind;
      return this;
    }

    /**
     * How many (destination, group) pairs to keep at most. Default {@value
     * #DEFAULT_MAX_SUBSCRIPTIONS}.
     *
     * @param maxSubscriptions the bound; checked (1 to {@value #MAX_SUBSCRIPTIONS_LIMIT}) by
     *     {@link #build()}
     * @return this builder
     */
    public Builder maxSubscriptions(int maxSubscriptions) {
      this.maxSubscriptions = maxSubscriptions;
      return this;
    }

    /**
     * How long a pair may go without a report before it is dropped. Default 5 minutes; keep it
     * well above the transports' sampling interval.
     *
     * @param expireAfter the time; checked (positive) by {@link #build()}
     * @return this builder
     */
    public Builder expireAfter(Duration expireAfter) {
      this.expireAfter = expireAfter;
      return this;
    }

    /**
     * The wall clock whose instants become {@link SubscriptionStatus#readAt()}. Default {@link
     * InstantSource#system()}.
     *
     * @param clock the clock; checked (not null) by {@link #build()}
     * @return this builder
     */
    public Builder clock(InstantSource clock) {
      this.clock = clock;
      return this;
    }

    /**
     * The monotonic reading in nanoseconds that expiry is measured on, as {@link
     * System#nanoTime()} (the default): only differences between readings mean anything.
     *
     * @param ticker the reading; checked (not null) by {@link #build()}
     * @return this builder
     */
    public Builder ticker(LongSupplier ticker) {
      this.ticker = ticker;
      return this;
    }

    /**
     * Builds the gauges.
     *
     * @return new, empty gauges
     * @throws IllegalArgumentException if {@code kind} is blank, {@code maxSubscriptions} is out
     *     of range, {@code expireAfter} is not positive or {@code clock} or {@code ticker} is null
     */
    public SubscriptionGauges build() {
      Checks.requireNonBlank("kind", kind);
      if (maxSubscriptions < 1 || maxSubscriptions > MAX_SUBSCRIPTIONS_LIMIT) {
        throw new IllegalArgumentException("maxSubscriptions must be 1.."
            + MAX_SUBSCRIPTIONS_LIMIT + ", was " + maxSubscriptions);
      }
      Checks.requirePositive("expireAfter", expireAfter);
      Checks.requireNonNull("clock", clock);
      Checks.requireNonNull("ticker", ticker);
      return new SubscriptionGauges(this);
    }
  }
}
