package io.relaykit.opentelemetry;

import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributesBuilder;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.context.propagation.TextMapPropagator;
import io.opentelemetry.context.propagation.TextMapSetter;
import io.relaykit.trace.SpanInfo;
import io.relaykit.trace.TraceContext;
import io.relaykit.trace.TracePropagation;
import io.relaykit.trace.TraceScope;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * relaykit's {@link TracePropagation} over OpenTelemetry, with the W3C Trace Context propagator:
 * the outbox append captures the caller's current span context; each relay publish runs in a
 * {@link SpanKind#PRODUCER} span, child of that captured context, and the message goes out with
 * the producer span's {@code traceparent}; each handler call runs in a {@link SpanKind#CONSUMER}
 * span (operation {@code process}), child of the producer span, one per delivery, so a retry is a
 * new span with a higher {@value #DELIVERY_ATTEMPT}. The consumer span is current while the
 * handler runs, so spans the handler opens become its children.
 *
 * <p>Attributes follow the OpenTelemetry messaging semantic conventions: {@code
 * messaging.system}, {@code messaging.destination.name}, {@code messaging.operation.type} ({@code
 * publish} / {@code process}), {@code messaging.operation.name}, {@code messaging.message.id},
 * {@code messaging.consumer.group.name} (consumer spans), and relaykit's {@value
 * #DELIVERY_ATTEMPT} (1 for the first delivery). Span names are {@code "publish <destination>"}
 * and {@code "process <destination>"}. A failed handler or publish sets the span's status to
 * {@link StatusCode#ERROR} and records the exception.
 *
 * <p>Found by {@link TracePropagation#discovered()} through {@link java.util.ServiceLoader} (the
 * no-argument constructor uses {@link GlobalOpenTelemetry}), or built from an {@link
 * OpenTelemetry} instance with {@link #create}. Thread-safe; costs one span (and, for {@link
 * #current}, one propagator inject) per call. When the tracing library throws, relaykit contains
 * it ({@code io.relaykit.message.Tracing}, {@code TraceCapture}): the message goes on untraced. A
 * malformed incoming {@code traceparent} is ignored by core, so the consumer span starts a new
 * trace.
 */
public final class OpenTelemetryPropagation implements TracePropagation {

  /** The instrumentation scope name spans are recorded under. */
  public static final String INSTRUMENTATION_NAME = "io.relaykit";
  /** relaykit's attribute for the delivery attempt (1 for the first; no convention exists). */
  public static final String DELIVERY_ATTEMPT = "relaykit.delivery.attempt";

  private static final TextMapPropagator W3C = W3CTraceContextPropagator.getInstance();
  private static final TextMapSetter<Map<String, String>> SETTER = (map, k, v) -> map.put(k, v);
  private static final TextMapGetter<Map<String, String>> GETTER = new TextMapGetter<>() {
    @Override
    @SuppressWarnings("deprecation") // still abstract in 1.68; the W3C propagator never calls it
    public Iterable<String> keys(Map<String, String> carrier) {
      return carrier.keySet();
    }

    @Override
    public String get(Map<String, String> carrier, String key) {
      return carrier == null ? null : carrier.get(key);
    }
  };

  private final OpenTelemetry openTelemetry;
  private volatile Tracer tracer;

  /**
   * The propagation {@link java.util.ServiceLoader} creates: over {@link GlobalOpenTelemetry},
   * looked up on first use (so an SDK registered globally after relaykit started is still used).
   */
  public OpenTelemetryPropagation() {
    checkApiVersion();
    this.openTelemetry = null;
  }

  private OpenTelemetryPropagation(OpenTelemetry openTelemetry) {
    checkApiVersion();
    this.openTelemetry = openTelemetry;
    this.tracer = openTelemetry.getTracer(INSTRUMENTATION_NAME);
  }

  /**
   * A propagation that records spans with {@code openTelemetry}'s tracer provider; pass it to
   * {@code OutboxRelay.Builder.tracePropagation}, the outbox store and {@code Tracing.subscriber}.
   *
   * @param openTelemetry the OpenTelemetry instance (SDK or API no-op)
   * @return the propagation
   * @throws NullPointerException if {@code openTelemetry} is null
   */
  public static OpenTelemetryPropagation create(OpenTelemetry openTelemetry) {
    return new OpenTelemetryPropagation(Objects.requireNonNull(openTelemetry, "openTelemetry"));
  }

  /**
   * The oldest opentelemetry-api relaykit-opentelemetry runs on: 1.55.0, what Spring Boot 4.0
   * manages; an older one fails here with one line.
   */
  private static void checkApiVersion() {
    io.relaykit.internal.ClientVersions.require("relaykit-opentelemetry", "opentelemetry-api",
        io.relaykit.internal.ClientVersions.ofJar(OpenTelemetry.class).orElse(null), "1.55.0",
        null);
  }

  private Tracer tracer() {
    Tracer t = tracer;
    if (t == null) {
      t = GlobalOpenTelemetry.get().getTracer(INSTRUMENTATION_NAME);
      tracer = t;
    }
    return t;
  }

  /**
   * The current OpenTelemetry span context, written and read back through the W3C propagator.
   *
   * @return the current context; empty when no valid span is current
   */
  @Override
  public Optional<TraceContext> current() {
    return toRelaykit(Context.current());
  }

  @Override
  public TraceScope publishing(String destination, Optional<TraceContext> parent) {
    return publishing(SpanInfo.publish("", destination, ""), parent);
  }

  @Override
  public TraceScope handling(String source, Optional<TraceContext> parent) {
    return handling(SpanInfo.delivery("", source, "", "", 1), parent);
  }

  /**
   * Starts a PRODUCER span {@code "publish <destination>"}, child of {@code parent}; the scope's
   * context (what the message carries) is the producer span's. The span ends when relaykit closes
   * the scope (on confirm or failure, on any thread); it is never made current.
   *
   * @param info the publish
   * @param parent the context captured at the append
   * @return the producer span's scope
   */
  @Override
  public TraceScope publishing(SpanInfo info, Optional<TraceContext> parent) {
    Span span = tracer().spanBuilder("publish " + info.destination())
        .setSpanKind(SpanKind.PRODUCER)
        .setParent(toOtel(parent))
        .setAllAttributes(attributes(info, "publish", "publish"))
        .startSpan();
    Optional<TraceContext> context = toRelaykit(Context.root().with(span));
    return new SpanScope(span, null, context.isPresent() ? context : parent);
  }

  /**
   * Starts a CONSUMER span {@code "process <source>"}, child of {@code parent} (a root span when
   * there is none), and makes it current on the handler's thread until the scope closes.
   *
   * @param info the delivery
   * @param parent the delivery's context (the producer span's)
   * @return the consumer span's scope
   */
  @Override
  public TraceScope handling(SpanInfo info, Optional<TraceContext> parent) {
    Context parentContext = toOtel(parent);
    Span span = tracer().spanBuilder("process " + info.destination())
        .setSpanKind(SpanKind.CONSUMER)
        .setParent(parentContext)
        .setAllAttributes(attributes(info, "process", "process"))
        .startSpan();
    Context context = parentContext.with(span);
    Scope scope = context.makeCurrent();
    return new SpanScope(span, scope, toRelaykit(context));
  }

  private static Attributes attributes(SpanInfo info, String type, String name) {
    AttributesBuilder a = Attributes.builder()
        .put("messaging.destination.name", info.destination())
        .put("messaging.operation.type", type)
        .put("messaging.operation.name", name);
    if (!info.system().isEmpty()) {
      a.put("messaging.system", info.system());
    }
    if (!info.messageId().isEmpty()) {
      a.put("messaging.message.id", info.messageId());
    }
    if (!info.group().isEmpty()) {
      a.put("messaging.consumer.group.name", info.group());
    }
    if (info.attempt() > 0) {
      a.put(DELIVERY_ATTEMPT, (long) info.attempt());
    }
    return a.build();
  }

  /** The W3C headers of {@code parent} read into an OpenTelemetry context (root when empty). */
  private static Context toOtel(Optional<TraceContext> parent) {
    if (parent.isEmpty()) {
      return Context.root();
    }
    Map<String, String> headers = new HashMap<>(4);
    headers.put(TraceContext.TRACEPARENT, parent.get().traceparent());
    if (!parent.get().traceState().isEmpty()) {
      headers.put(TraceContext.TRACESTATE, parent.get().traceState());
    }
    return W3C.extract(Context.root(), headers, GETTER);
  }

  /** {@code context}'s span written as W3C headers and read back; empty when it has none. */
  private static Optional<TraceContext> toRelaykit(Context context) {
    Map<String, String> headers = new HashMap<>(4);
    W3C.inject(context, headers, SETTER);
    return TraceContext.read(headers.get(TraceContext.TRACEPARENT),
        headers.get(TraceContext.TRACESTATE)).context();
  }

  @Override
  public String toString() {
    return "OpenTelemetryPropagation(" + (openTelemetry == null ? "global" : openTelemetry) + ")";
  }

  /** One span; {@code scope} is the current-context scope of a consumer span, else null. */
  private static final class SpanScope implements TraceScope {
    private final Span span;
    private final Scope scope;
    private final Optional<TraceContext> context;

    SpanScope(Span span, Scope scope, Optional<TraceContext> context) {
      this.span = span;
      this.scope = scope;
      this.context = context;
    }

    @Override
    public Optional<TraceContext> context() {
      return context;
    }

    @Override
    public void failed(Throwable error) {
      span.setStatus(StatusCode.ERROR, String.valueOf(error.getMessage()));
      span.recordException(error);
    }

    @Override
    public void close() {
      try {
        if (scope != null) {
          scope.close();
        }
      } finally {
        span.end();
      }
    }
  }
}
