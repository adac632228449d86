package io.relaykit.spring.boot;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.observation.transport.Kind;
import io.micrometer.observation.transport.ReceiverContext;
import io.micrometer.observation.transport.SenderContext;
import io.relaykit.message.Message;
import io.relaykit.trace.SpanInfo;
import io.relaykit.trace.TraceContext;
import io.relaykit.trace.TracePropagation;
import io.relaykit.trace.TraceScope;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
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
 *       outcome="failure"} and the observation's error).
 * </ul>
 *
 * <p>Low-cardinality key values (tags on the timers, attributes on the spans) are the binder's
 * tag keys: {@code messaging.system}, {@code messaging.destination.name}, and for {@value
 * #HANDLE} {@code messaging.consumer.group.name} and {@code outcome} ({@code success} or {@code
 * failure}). Micrometer's meter handler adds its own {@code error} tag. High-cardinality key
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
    TransactionalOutbox.AppendObservation {

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
    return new ObservedScope(observation, null, parent, false);
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
    return new ObservedScope(observation, observation.openScope(), parent, true);
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

  /** One observation; {@code scope} is the handler thread's, else null. */
  private static final class ObservedScope implements TraceScope {
    private final Observation observation;
    private final Observation.Scope scope;
    private final Optional<TraceContext> context;
    private final boolean outcome;
    private volatile boolean failed;

    ObservedScope(Observation observation, Observation.Scope scope,
        Optional<TraceContext> context, boolean outcome) {
      this.observation = observation;
      this.scope = scope;
      this.context = context;
      this.outcome = outcome;
    }

    @Override
    public Optional<TraceContext> context() {
      return context;
    }

    @Override
    public void failed(Throwable error) {
      failed = true;
      observation.error(error);
    }

    @Override
    public void close() {
      try {
        if (outcome) {
          observation.lowCardinalityKeyValue(OUTCOME, failed ? "failure" : "success");
        }
        if (scope != null) {
          scope.close();
        }
      } finally {
        observation.stop();
      }
    }
  }
}
