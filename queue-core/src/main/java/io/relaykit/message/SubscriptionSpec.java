package io.relaykit.message;

import io.relaykit.internal.Checks;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.ordering.OrderingMode;
import io.relaykit.retry.RetryPolicy;
import java.time.Duration;

/**
 * What to consume and how: destination, consumer group, ordering, parallelism, in-flight bound,
 * retry policy and handler timeout. Immutable; {@link Builder#build()} validates every field and
 * names the one that is wrong.
 *
 * @param destination topic or queue to consume
 * @param group consumer group (Kafka) or subscriber group (RabbitMQ pub/sub queue); members of one
 *     group share the messages, each group sees all of them
 * @param ordering what may run in parallel
 * @param concurrency worker threads
 * @param maxInFlight messages received but not yet finished; intake pauses at this bound
 * @param retryPolicy attempts, backoff and classification of failures
 * @param handlerTimeout a handler running longer counts as a retryable failure; its late result
 *     is ignored
 * @param inbound how records become messages: relaykit's envelope and foreign records (the
 *     default, {@link InboundMapping#standard()}), named id/type/key headers and CloudEvents, or
 *     relaykit's envelope only; see {@link InboundMapping}
 * @param handlerThreads platform (default) or virtual threads for the handlers; {@link
 *     HandlerThreads#VIRTUAL} on a JDK older than 21 is rejected here, naming the field
 * @param metrics where the subscription reports its own numbers, on every transport: the handler
 *     durations and timeouts ({@link MetricsListener#handlerDuration}, {@link
 *     MetricsListener#handlerTimedOut}) and what it received but ignored ({@link
 *     MetricsListener#ignored}); on Kafka also its consumer lag, per-partition lag, in-flight
 *     gauges, backlog verdict, drops and {@link MetricsListener#consumerFailed}; on RabbitMQ its
 *     consumer lag and in-flight gauges. Null (the
 *     default) for the transport's own listener (Kafka's {@code KafkaTransportConfig.metrics()},
 *     the RabbitMQ subscriber's and the in-process transport's; through queue-guice, the injector's
 *     {@code MetricsListener}), else none; see {@link #metricsOr}. A spec's listener replaces the
 *     transport's for that subscription: to feed both, pass {@link MetricsListener#composite}
 */
public record SubscriptionSpec(
    String destination,
    String group,
    OrderingMode ordering,
    int concurrency,
    int maxInFlight,
    RetryPolicy retryPolicy,
    Duration handlerTimeout,
    InboundMapping inbound,
    HandlerThreads handlerThreads,
    MetricsListener metrics) {

  /**
   * Checks every component.
   *
   * @param destination topic or queue; not blank
   * @param group the consumer group; not blank
   * @param ordering what may run in parallel; not null
   * @param concurrency worker threads, {@code >= 1}
   * @param maxInFlight the intake bound, {@code >= concurrency}
   * @param retryPolicy the retry policy; not null
   * @param handlerTimeout the handler timeout; positive
   * @param inbound how records become messages; not null
   * @param handlerThreads platform or virtual threads; not null, available on this JDK
   * @param metrics where the subscription's numbers are reported; null for the transport's own
   *     listener
   * @throws IllegalArgumentException naming the first invalid component and its value
   */
  public SubscriptionSpec {
    Checks.requireNonBlank("destination", destination);
    Checks.requireNonBlank("group", group);
    Checks.requireNonNull("ordering", ordering);
    Checks.requirePositive("concurrency", concurrency);
    Checks.requirePositive("maxInFlight", maxInFlight);
    if (maxInFlight < concurrency) {
      throw new IllegalArgumentException("maxInFlight must be >= concurrency (" + concurrency
          + "), was " + maxInFlight);
    }
    Checks.requireNonNull("retryPolicy", retryPolicy);
    Checks.requirePositive("handlerTimeout", handlerTimeout);
    Checks.requireNonNull("inbound", inbound);
    Checks.requireNonNull("handlerThreads", handlerThreads);
    handlerThreads.requireAvailable("handlerThreads");
  }

  /**
   * The listener this subscription reports to: {@link #metrics()} when set, else {@code
   * transportDefault} (a transport's own listener, or {@link MetricsListener#noop()}).
   *
   * @param transportDefault the listener to use when the spec names none; not null
   * @return the listener to report to
   * @throws IllegalArgumentException if {@code transportDefault} is null
   */
  public MetricsListener metricsOr(MetricsListener transportDefault) {
    Checks.requireNonNull("transportDefault", transportDefault);
    return metrics != null ? metrics : transportDefault;
  }

  /**
   * Defaults: KEY ordering, 16 workers, 256 in flight, default retry policy, 30 s timeout,
   * relaykit's envelope and foreign records ({@link InboundMapping#standard()}).
   *
   * @param destination topic or queue to consume; checked (not blank) by {@link Builder#build()}
   * @param group the consumer group; checked (not blank) by {@link Builder#build()}
   * @return a new builder
   */
  public static Builder builder(String destination, String group) {
    return new Builder(destination, group);
  }

  /** Builds a validated {@link SubscriptionSpec}. */
  public static final class Builder {
    private final String destination;
    private final String group;
    private OrderingMode ordering = OrderingMode.KEY;
    private int concurrency = 16;
    private int maxInFlight = 256;
    private RetryPolicy retryPolicy = RetryPolicy.defaults();
    private Duration handlerTimeout = Duration.ofSeconds(30);
    private InboundMapping inbound = InboundMapping.standard();
    private HandlerThreads handlerThreads = HandlerThreads.PLATFORM;
    private MetricsListener metrics;

    private Builder(String destination, String group) {
      this.destination = destination;
      this.group = group;
    }

    /**
     * Sets what may run in parallel. Default {@link OrderingMode#KEY}.
     *
     * @param ordering the mode; checked (not null) by {@link #build()}
     * @return this builder
     */
    public Builder ordering(OrderingMode ordering) {
      this.ordering = ordering;
      return this;
    }

    /**
     * Sets the number of worker threads. Default 16.
     *
     * @param concurrency the count; checked ({@code >= 1}) by {@link #build()}
     * @return this builder
     */
    public Builder concurrency(int concurrency) {
      this.concurrency = concurrency;
      return this;
    }

    /**
     * Sets the bound on messages received but not finished. Default 256.
     *
     * @param maxInFlight the bound; checked ({@code >= concurrency}) by {@link #build()}
     * @return this builder
     */
    public Builder maxInFlight(int maxInFlight) {
      this.maxInFlight = maxInFlight;
      return this;
    }

    /**
     * Sets attempts, backoff and failure classification. Default {@link RetryPolicy#defaults()}.
     *
     * @param retryPolicy the policy; checked (not null) by {@link #build()}
     * @return this builder
     */
    public Builder retryPolicy(RetryPolicy retryPolicy) {
      this.retryPolicy = retryPolicy;
      return this;
    }

    /**
     * Sets how long a handler may run before it counts as a retryable failure. Default 30 s.
     *
     * @param handlerTimeout the timeout; checked (positive) by {@link #build()}
     * @return this builder
     */
    public Builder handlerTimeout(Duration handlerTimeout) {
      this.handlerTimeout = handlerTimeout;
      return this;
    }

    /**
     * How records become messages; default {@link InboundMapping#standard()}. {@link
     * InboundMapping#foreign()} names id, type and key headers or reads CloudEvents; {@link
     * InboundMapping#relaykitOnly()} dead-letters every record without relaykit's headers.
     *
     * @param inbound the mapping
     * @return this builder
     * @throws IllegalArgumentException at {@link #build()} if null
     */
    public Builder inbound(InboundMapping inbound) {
      this.inbound = inbound;
      return this;
    }

    /**
     * What kind of thread the handlers run on; {@link HandlerThreads#PLATFORM} by default. The
     * concurrency and in-flight bounds apply unchanged to virtual threads.
     *
     * @param handlerThreads the kind of thread
     * @return this builder
     * @throws IllegalArgumentException at {@link #build()} if null, or if {@link
     *     HandlerThreads#VIRTUAL} is asked for on a JDK older than 21
     */
    public Builder handlerThreads(HandlerThreads handlerThreads) {
      this.handlerThreads = handlerThreads;
      return this;
    }

    /**
     * Where the subscription reports its own numbers (handler durations, ignored parts, and on
     * Kafka its lag, in-flight and verdict gauges; see {@link SubscriptionSpec#metrics()}),
     * instead of the transport's own listener, which is the default. Called on delivery and
     * sampling threads: must be fast and must not block.
     *
     * @param metrics the listener; not null
     * @return this builder
     * @throws IllegalArgumentException if {@code metrics} is null
     */
    public Builder metrics(MetricsListener metrics) {
      this.metrics = Checks.requireNonNull("metrics", metrics);
      return this;
    }

    /**
     * Builds the spec.
     *
     * @return an immutable, validated spec
     * @throws IllegalArgumentException naming the first invalid field and its value
     */
    public SubscriptionSpec build() {
      return new SubscriptionSpec(destination, group, ordering, concurrency, maxInFlight,
          retryPolicy, handlerTimeout, inbound, handlerThreads, metrics);
    }
  }
}
