package io.relaykit.opentelemetry;

import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.util.List;
import java.util.stream.Collectors;

/** An SDK recording into an in-memory exporter, and queries over what it recorded. */
final class Spans implements AutoCloseable {
  final InMemorySpanExporter exporter = InMemorySpanExporter.create();
  final SdkTracerProvider provider = SdkTracerProvider.builder()
      .addSpanProcessor(SimpleSpanProcessor.create(exporter)).build();
  final OpenTelemetry otel = OpenTelemetrySdk.builder().setTracerProvider(provider)
      .setPropagators(ContextPropagators.create(W3CTraceContextPropagator.getInstance()))
      .build();
  final OpenTelemetryPropagation propagation = OpenTelemetryPropagation.create(otel);

  List<SpanData> finished() {
    return exporter.getFinishedSpanItems();
  }

  List<SpanData> ofKind(SpanKind kind) {
    return finished().stream().filter(s -> s.getKind() == kind).collect(Collectors.toList());
  }

  long count(SpanKind kind) {
    return ofKind(kind).size();
  }

  /** One line per span: name, kind, trace id, span id, parent span id, status, attributes. */
  static String dump(List<SpanData> spans) {
    StringBuilder out = new StringBuilder();
    for (SpanData s : spans) {
      out.append(line(s)).append('\n');
    }
    return out.toString();
  }

  static String line(SpanData s) {
    return s.getName() + " kind=" + s.getKind() + " trace=" + s.getTraceId() + " span="
        + s.getSpanId() + " parent=" + (s.getParentSpanContext().isValid()
            ? s.getParentSpanId() : "-")
        + " status=" + s.getStatus().getStatusCode() + " " + s.getAttributes().asMap().entrySet()
            .stream().map(e -> e.getKey().getKey() + "=" + e.getValue()).sorted()
            .collect(Collectors.joining(", ", "{", "}"));
  }

  @Override
  public void close() {
    provider.close();
  }
}
