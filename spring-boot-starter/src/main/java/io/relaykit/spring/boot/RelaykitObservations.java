package io.relaykit.spring.boot;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.observation.transport.Kind;
import io.micrometer.observation.transport.ReceiverContext;
import io.micrometer.observation.transport.SenderContext;
import io.relaykit.message.Message;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.trace.SpanInfo;
import io.relaykit.trace.TraceContext;
import io.relaykit.trace.TracePropagation;
import io.relaykit.trace.TraceScope;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;

/**
 * relaykit's outbox append, relay publish and handler call as Micrometer Observations, so that a
 * Spring Boot application gets spans (through its tracing bridge) and timers (through its meter
 * registry) from one instrumentation. The starter registers it when the application has an
 * {@link ObservationRegistry} bean; it then replaces the hand-wired tracing and the two timers of
 * {@code RelayKitMeterBinder}, under the same names and tags.
 *
 * <p>Observations, with OpenTelemetry's messaging conventions for names and attributes:
 * <ul>
 *   <li>{@value #APPEND} (span {@code "create <destination>"}, kind producer): the append in the
 *       caller's transaction. Its trace context (injected by the tracing bridge) is stored with the
 *       message ({@code traceparent}), unless the message carries one already.
 *   <li>{@value #PUBLISH} (span {@code "publish <destination>"}, kind producer, child of the
 *       append's context): from the relay's publish until the broker confirmed or failed it; the
 *       timer is the one the binder recorded under that name.
 *   <li>{@value #HANDLE} (span {@code "process <destination>"}, kind consumer, child of the
 *       context the delivery carries, the append's): one per handler call, current on the
 *       handler's thread while it runs; a handler that throws marks it failed ({@code
 *       outcome="failure"} and the observation's error). A call that runs past its handler
 *       timeout is stopped when the timeout fires ({@link #handlerTimedOut}), with {@code
 *       outcome="timeout"} and a {@link TimeoutException} as its error, and recorded once: its
 *       late return or throw records nothing more (it only closes the scope on the handler's
 *       thread), as {@code RelayKitMeterBinder} recorded it.
 * </ul>
 *
 * <p>Low-cardinality key values (tags on the timers, attributes on the spans) are the binder's
 * tag keys: {@code messaging.system}, {@code messaging.destination.name}, and for {@value
 * #HANDLE} {@code messaging.consumer.group.name} and {@code outcome} ({@code success}, {@code
 * failure} or {@code timeout}), with the binder's values. Micrometer's meter handler adds its own
 * {@code error} tag ({@code none}, or the simple class name of the error: the handler's exception,
 * {@code TimeoutException} for a timeout) and a {@code <name>.active} long task timer. High-cardinality key
 * values (spans only): {@code messaging.operation.type} ({@code create}, {@code send}, {@code
 * process}), {@code messaging.operation.name}, {@code messaging.message.id} and, on {@value
 * #HANDLE}, {@code relaykit.delivery.attempt}.
 *
 * <p>Cost: one observation per append, publish and handler call (with a no-op registry, a few
 * allocations each). Thread-safe. What a handler of the registry throws is contained by relaykit
 * for publish and handle ({@code io.relaykit.message.Tracing}): the message goes on unobserved;
 * at the append it propagates to the caller, as Micrometer's own instrumentations do.
 */
public final class RelaykitObservations implements TracePropagation,
    TransactionalOutbox.AppendObservation, MetricsListener {

  /** The observation (and timer) of an outbox append. */
  public static final String APPEND = "relaykit.append.duration";
  /** The observation (and timer) of a relay publish, until confirmed: the binder's name. */
  public static final String PUBLISH = "relaykit.publish.confirm.duration";
  /** The observation (and timer) of a handler call: the binder's name. */
  public static final String HANDLE = "relaykit.handler.duration";

  static final String SYSTEM = "messaging.system";
  static final String DESTINATION = "messaging.destination.name";
  static final String GROUP = "messaging.consumer.group.name";
  static final String OPERATION_TYPE = "messaging.operation.type";
  static final String OPERATION_NAME = "messaging.operation.name";
  static final String MESSAGE_ID = "messaging.message.id";
  static final String ATTEMPT = "relaykit.delivery.attempt";
  static final String OUTCOME = "outcome";

  private final ObservationRegistry registry;
  private final String system;
  /** Handler calls under way, by destination and group, for {@link #handlerTimedOut}. */
  private final Map<Key, Set<ObservedScope>> handling = new ConcurrentHashMap<>();

  /**
   * Observations on {@code registry}.
   *
   * @param registry the application's registry
   * @param system the {@code messaging.system} of appends (publishes and handler calls take the
   *     transport's own), e.g. {@code kafka}
   * @throws NullPointerException if an argument is null
   */
  public RelaykitObservations(ObservationRegistry registry, String system) {
    this.registry = Objects.requireNonNull(registry, "registry");
    this.system = Objects.requireNonNull(system, "system");
  }

  /**
   * The registry observations are recorded on.
   *
   * @return the registry
   */
  public ObservationRegistry registry() {
    return registry;
  }

  /**
   * Empty: the context of an append comes from its own observation ({@link TransactionalOutbox}
   * stamps it on the message), not from whatever is current.
   *
   * @return empty
   */
  @Override
  public Optional<TraceContext> current() {
    return Optional.empty();
  }

  /**
   * Runs {@code append} inside {@value #APPEND}, with {@code message} stamped with the
   * observation's injected trace context (when the bridge injected one and the message has none).
   *
   * @param destination the outbox destination
   * @param message the message
   * @param append the store's append
   * @return the message as appended
   */
  @Override
  public Message observeAppend(String destination, Message message, Consumer<Message> append) {
    SenderContext<Map<String, String>> context =
        new SenderContext<>((carrier, key, value) -> carrier.put(key, value), Kind.PRODUCER);
    context.setCarrier(new HashMap<>(4));
    Observation observation = Observation.createNotStarted(APPEND, () -> context, registry)
        .contextualName("create " + destination)
        .lowCardinalityKeyValue(SYSTEM, system)
        .lowCardinalityKeyValue(DESTINATION, destination)
        .highCardinalityKeyValue(OPERATION_TYPE, "create")
        .highCardinalityKeyValue(OPERATION_NAME, "create")
        .highCardinalityKeyValue(MESSAGE_ID, message.id())
        .start();
    Observation.Scope scope = observation.openScope();
    try {
      Message stamped = stamp(message, context.getCarrier());
      append.accept(stamped);
      return stamped;
    } catch (RuntimeException | Error e) {
      observation.error(e);
      throw e;
    } finally {
      scope.close();
      observation.stop();
    }
  }

  /** {@code message} with the context the tracing bridge injected, unless it has one. */
  private static Message stamp(Message message, Map<String, String> carrier) {
    if (message.headers().containsKey(TraceContext.TRACEPARENT)
        || !carrier.containsKey(TraceContext.TRACEPARENT)) {
      return message;
    }
    Optional<TraceContext> injected = TraceContext.read(carrier.get(TraceContext.TRACEPARENT),
        carrier.get(TraceContext.TRACESTATE)).context();
    return injected.isEmpty() ? message
        : message.toBuilder().traceContext(injected.get()).build();
  }

  /**
   * Starts {@value #PUBLISH}, child of {@code parent}; stopped when relaykit closes the scope (on
   * confirm or failure, on any thread). Never made current. The message keeps {@code parent}:
   * handler calls become children of the append.
   *
   * @param info the publish
   * @param parent the context captured at the append
   * @return the scope
   */
  @Override
  public TraceScope publishing(SpanInfo info, Optional<TraceContext> parent) {
    ReceiverContext<Map<String, String>> context = receiver(parent, Kind.PRODUCER);
    Observation observation = Observation.createNotStarted(PUBLISH, () -> context, registry)
        .contextualName("publish " + info.destination())
        .lowCardinalityKeyValue(SYSTEM, info.system().isEmpty() ? system : info.system())
        .lowCardinalityKeyValue(DESTINATION, info.destination())
        .highCardinalityKeyValue(OPERATION_TYPE, "send")
        .highCardinalityKeyValue(OPERATION_NAME, "publish")
        .highCardinalityKeyValue(MESSAGE_ID, info.messageId())
        .start();
    return new ObservedScope(observation, null, parent, false, null, 0);
  }

  /**
   * Starts {@value #HANDLE}, child of {@code parent}, and makes it current on the handler's
   * thread until the scope closes.
   *
   * @param info the delivery
   * @param parent the context the delivery carries
   * @return the scope
   */
  @Override
  public TraceScope handling(SpanInfo info, Optional<TraceContext> parent) {
    ReceiverContext<Map<String, String>> context = receiver(parent, Kind.CONSUMER);
    Observation observation = Observation.createNotStarted(HANDLE, () -> context, registry)
        .contextualName("process " + info.destination())
        .lowCardinalityKeyValue(SYSTEM, info.system().isEmpty() ? system : info.system())
        .lowCardinalityKeyValue(DESTINATION, info.destination())
        .lowCardinalityKeyValue(GROUP, info.group().isEmpty() ? "unknown" : info.group())
        .highCardinalityKeyValue(OPERATION_TYPE, "process")
        .highCardinalityKeyValue(OPERATION_NAME, "process")
        .highCardinalityKeyValue(MESSAGE_ID, info.messageId())
        .highCardinalityKeyValue(ATTEMPT, Integer.toString(info.attempt()))
        .start();
    Key key = new Key(info.destination(), info.group());
    ObservedScope scope =
        new ObservedScope(observation, null, parent, true, key, System.nanoTime());
    handling.computeIfAbsent(key, k -> ConcurrentHashMap.newKeySet()).add(scope);
    try {
      scope.scope = observation.openScope();
    } catch (RuntimeException | Error e) {
      scope.untrack();
      throw e;
    }
    return scope;
  }

  /**
   * A handler call of {@code group} on {@code destination} ran past its handler timeout (the
   * transport reports it, on its timer thread): the call's {@value #HANDLE} observation is
   * stopped now with {@code outcome="timeout"} and a {@link TimeoutException} as its error, and
   * its late return records nothing. The transport names no call, so of the calls of that
   * destination and group under way the one whose start is nearest {@code duration} ago is taken
   * (calls of one subscription share a timeout: the oldest). A handler that returns at the very
   * moment its timeout fires may already have been recorded as its return; then nothing is
   * stopped. Cost: a look at the calls under way for that destination and group (at most the
   * subscription's concurrency).
   *
   * @param destination the topic or queue consumed
   * @param group the consumer group
   * @param duration from the handler's start to the timeout firing
   */
  @Override
  public void handlerTimedOut(String destination, String group, Duration duration) {
    Set<ObservedScope> calls = handling.get(new Key(destination, group));
    if (calls == null || duration == null) {
      return;
    }
    long started = System.nanoTime() - duration.toNanos();
    ObservedScope nearest = null;
    for (ObservedScope c : calls) {
      if (nearest == null
          || Math.abs(c.started - started) < Math.abs(nearest.started - started)) {
        nearest = c;
      }
    }
    if (nearest != null) {
      nearest.timedOut(duration);
    }
  }

  private static ReceiverContext<Map<String, String>> receiver(Optional<TraceContext> parent,
      Kind kind) {
    ReceiverContext<Map<String, String>> context =
        new ReceiverContext<>((carrier, key) -> carrier.get(key), kind);
    Map<String, String> carrier = new HashMap<>(4);
    parent.ifPresent(p -> {
      carrier.put(TraceContext.TRACEPARENT, p.traceparent());
      if (!p.traceState().isEmpty()) {
        carrier.put(TraceContext.TRACESTATE, p.traceState());
      }
    });
    context.setCarrier(carrier);
    return context;
  }

  @Override
  public String toString() {
    return "RelaykitObservations(" + registry + ")";
  }

  /** The destination and group of handler calls ({@code null} parts are kept as they are). */
  private record Key(String destination, String group) {
  }

  /**
   * One observation; {@code scope} is the handler thread's, else null. Stopped once: by {@link
   * #close} or, for a handler call, by {@link #timedOut}, whichever comes first.
   */
  private final class ObservedScope implements TraceScope {
    private final Observation observation;
    private final Optional<TraceContext> context;
    private final boolean outcome;
    private final Key key;
    final long started;
    private volatile Observation.Scope scope;
    private boolean failed;
    private boolean stopped;

    ObservedScope(Observation observation, Observation.Scope scope,
        Optional<TraceContext> context, boolean outcome, Key key, long started) {
      this.observation = observation;
      this.scope = scope;
      this.context = context;
      this.outcome = outcome;
      this.key = key;
      this.started = started;
    }

    @Override
    public Optional<TraceContext> context() {
      return context;
    }

    @Override
    public synchronized void failed(Throwable error) {
      if (!stopped) {
        failed = true;
        observation.error(error);
      }
    }

    /** Stops the observation as timed out, unless it was stopped; the scope stays open. */
    void timedOut(Duration duration) {
      synchronized (this) {
        if (stopped) {
          return;
        }
        stopped = true;
        observation.lowCardinalityKeyValue(OUTCOME, "timeout");
        observation.error(new TimeoutException("handler did not finish within its timeout ("
            + duration + ")"));
      }
      untrack();
      observation.stop();
    }

    @Override
    public void close() {
      boolean stop;
      synchronized (this) {
        stop = !stopped;
        stopped = true;
        if (stop && outcome) {
          observation.lowCardinalityKeyValue(OUTCOME, failed ? "failure" : "success");
        }
      }
      try {
        Observation.Scope s = scope;
        if (s != null) {
          s.close();
        }
      } finally {
        if (stop) {
          untrack();
          observation.stop();
        }
      }
    }

    void untrack() {
      if (key != null) {
        Set<ObservedScope> calls = handling.get(key);
        if (calls != null) {
          calls.remove(this);
        }
      }
    }
  }
}
