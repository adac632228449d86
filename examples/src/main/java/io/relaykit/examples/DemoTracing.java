package io.relaykit.examples;

import com.sun.net.httpserver.Headers;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import io.relaykit.opentelemetry.OpenTelemetryPropagation;
import io.relaykit.trace.TracePropagation;
import java.io.IOException;
import java.nio.file.Path;

/**
 * The demo's tracing: an OpenTelemetry SDK whose spans go to a {@link SpanExporter} ({@link
 * SpanLines} to the log or a file), relaykit's {@link OpenTelemetryPropagation} over it, and the
 * SERVER span around {@code POST /orders}. Chosen with {@code -Drelaykit.demo.spans} or {@code
 * RELAYKIT_DEMO_SPANS}: {@code off} (the default: no SDK, no spans), {@code log}, or a file path.
 */
final class DemoTracing implements AutoCloseable {
  static final String PROPERTY = "relaykit.demo.spans";
  static final String ENV = "RELAYKIT_DEMO_SPANS";

  private static final TextMapGetter<Headers> HEADERS = new TextMapGetter<>() {
    @Override
    @SuppressWarnings("deprecation") // still abstract in 1.68; the W3C propagator never calls it
    public Iterable<String> keys(Headers carrier) {
      return carrier.keySet();
    }

    @Override
    public String get(Headers carrier, String key) {
      return carrier == null ? null : carrier.getFirst(key);
    }
  };

  private final SdkTracerProvider provider;
  private final Tracer tracer;
  private final TracePropagation propagation;

  private DemoTracing(SdkTracerProvider provider) {
    this.provider = provider;
    if (provider == null) {
      this.tracer = OpenTelemetry.noop().getTracer("io.relaykit.examples");
      this.propagation = TracePropagation.none();
    } else {
      OpenTelemetry otel = OpenTelemetrySdk.builder().setTracerProvider(provider)
          .setPropagators(ContextPropagators.create(W3CTraceContextPropagator.getInstance()))
          .build();
      this.tracer = otel.getTracer("io.relaykit.examples");
      this.propagation = OpenTelemetryPropagation.create(otel);
    }
  }

  /** No SDK, no spans. */
  static DemoTracing off() {
    return new DemoTracing(null);
  }

  /** Spans exported to {@code exporter}, as each ends. */
  static DemoTracing exportingTo(SpanExporter exporter) {
    return new DemoTracing(SdkTracerProvider.builder()
        .addSpanProcessor(SimpleSpanProcessor.create(exporter)).build());
  }

  /** What {@code -Drelaykit.demo.spans} / {@code RELAYKIT_DEMO_SPANS} asks for. */
  static DemoTracing fromEnvironment() throws IOException {
    String v = System.getProperty(PROPERTY, System.getenv(ENV));
    if (v == null || v.isBlank() || v.strip().equals("off")) {
      return off();
    }
    return exportingTo(v.strip().equals("log") ? SpanLines.toLog()
        : SpanLines.toFile(Path.of(v.strip())));
  }

  /** What the outbox, the relay and the subscribers trace through. */
  TracePropagation propagation() {
    return propagation;
  }

  /**
   * A SERVER span for {@code method path}, child of the request's {@code traceparent} if it
   * carries a valid one; the caller makes it current and ends it.
   */
  Span server(String method, String path, Headers requestHeaders) {
    Context parent = W3CTraceContextPropagator.getInstance().extract(Context.root(),
        requestHeaders, HEADERS);
    return tracer.spanBuilder(method + " " + path).setSpanKind(SpanKind.SERVER)
        .setParent(parent)
        .setAttribute("http.request.method", method)
        .setAttribute("url.path", path)
        .startSpan();
  }

  /** Records the response status on {@code span} (5xx is an error, per the HTTP conventions). */
  static void answered(Span span, int status) {
    span.setAttribute("http.response.status_code", (long) status);
    if (status >= 500) {
      span.setStatus(StatusCode.ERROR);
    }
  }

  @Override
  public void close() {
    if (provider != null) {
      provider.close();
    }
  }
}
