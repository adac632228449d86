package io.relaykit.spring.boot;

import static io.relaykit.spring.boot.AbstractOutboxTransactionTest.unique;
import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.tracing.handler.DefaultTracingObservationHandler;
import io.micrometer.tracing.handler.PropagatingReceiverTracingObservationHandler;
import io.micrometer.tracing.handler.PropagatingSenderTracingObservationHandler;
import io.micrometer.tracing.otel.bridge.OtelCurrentTraceContext;
import io.micrometer.tracing.otel.bridge.OtelPropagator;
import io.micrometer.tracing.otel.bridge.OtelTracer;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.relaykit.message.Message;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.tck.Await;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * One trace from the append to the handler, with Micrometer Tracing's OpenTelemetry bridge (what
 * Spring Boot's OpenTelemetry starter wires) and OpenTelemetry's SDK exporting to memory.
 */
class ObservationOpenTelemetryTraceTest {

  private static final InMemorySpanExporter SPANS = InMemorySpanExporter.create();

  /** The registry with the bridge's handlers, as Boot's tracing auto-configuration adds them. */
  @Configuration(proxyBeanMethods = false)
  static class Bridge {
    @Bean
    ObservationRegistry observationRegistry() {
      SdkTracerProvider provider = SdkTracerProvider.builder()
          .addSpanProcessor(SimpleSpanProcessor.create(SPANS)).build();
      io.opentelemetry.api.trace.Tracer otel = provider.get("test");
      OtelTracer tracer = new OtelTracer(otel, new OtelCurrentTraceContext(), event -> { });
      OtelPropagator propagator = new OtelPropagator(
          ContextPropagators.create(W3CTraceContextPropagator.getInstance()), otel);
      ObservationRegistry registry = ObservationRegistry.create();
      registry.observationConfig().observationHandler(
          new ObservationHandler.FirstMatchingCompositeObservationHandler(
              new PropagatingSenderTracingObservationHandler<>(tracer, propagator),
              new PropagatingReceiverTracingObservationHandler<>(tracer, propagator),
              new DefaultTracingObservationHandler(tracer)));
      return registry;
    }
  }

  @Test
  @org.junit.jupiter.api.DisplayName("append, publish and handler spans form one trace; the"
      + " publish and the handler are children of the append, carried in the outbox row")
  void oneTraceFromAppendToHandler() {
    String destination = unique("orders");
    try (ConfigurableApplicationContext ctx = new SpringApplicationBuilder(MetricsApp.class,
        Bridge.class).web(WebApplicationType.NONE).properties(
            "spring.datasource.url=jdbc:h2:mem:" + unique("h2") + ";DB_CLOSE_DELAY=-1",
            "relaykit.storage=h2",
            "relaykit.jdbc.table-prefix=" + unique("rk") + "_",
            "relaykit.spring.relay.enabled=false",
            "test.destination=" + destination,
            "test.fail-destination=" + unique("fails"),
            "test.group=" + unique("g")).run()) {
      TransactionalOutbox outbox = ctx.getBean(TransactionalOutbox.class);
      Message m = new TransactionTemplate(ctx.getBean(PlatformTransactionManager.class))
          .execute(s -> outbox.append(destination, null,
              new ObservationInProcessTest.Payload("1")));
      assertThat(ctx.getBean(OutboxRelay.class).runOnce().sent()).isEqualTo(1);
      Await.until(Duration.ofSeconds(30), "the handler's span is exported",
          () -> span("process " + destination) != null && span("publish " + destination) != null);

      SpanData create = span("create " + destination);
      SpanData publish = span("publish " + destination);
      SpanData process = span("process " + destination);
      assertThat(create).as("the append's span").isNotNull();
      assertThat(create.getKind()).isEqualTo(SpanKind.PRODUCER);
      assertThat(publish.getKind()).isEqualTo(SpanKind.PRODUCER);
      assertThat(process.getKind()).isEqualTo(SpanKind.CONSUMER);
      assertThat(List.of(publish.getTraceId(), process.getTraceId())).as("one trace")
          .containsOnly(create.getTraceId());
      assertThat(publish.getParentSpanId()).isEqualTo(create.getSpanId());
      assertThat(process.getParentSpanId()).isEqualTo(create.getSpanId());
      assertThat(m.traceId()).isEqualTo(create.getTraceId());
      assertThat(process.getAttributes().asMap().entrySet().stream()
          .map(e -> e.getKey().getKey() + "=" + e.getValue()).toList())
          .contains("messaging.system=relaykit-inprocess",
              "messaging.destination.name=" + destination,
              "messaging.operation.type=process", "messaging.message.id=" + m.id());
    }
  }

  private static SpanData span(String name) {
    return SPANS.getFinishedSpanItems().stream().filter(s -> s.getName().equals(name))
        .findFirst().orElse(null);
  }
}
