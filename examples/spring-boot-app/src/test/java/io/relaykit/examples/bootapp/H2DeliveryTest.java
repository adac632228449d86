package io.relaykit.examples.bootapp;

import static org.assertj.core.api.Assertions.assertThat;

import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * H2 in memory, the in-process transport; with spring-boot-starter-opentelemetry on the class
 * path, one order's event is one trace from the append to the handler (an in-memory span
 * exporter, every trace sampled).
 */
@Import(H2DeliveryTest.Spans.class)
class H2DeliveryTest extends AbstractDeliveryTest {
  @DynamicPropertySource
  static void props(DynamicPropertyRegistry r) {
    r.add("spring.datasource.url", () -> "jdbc:h2:mem:bootapp_" + RUN + ";DB_CLOSE_DELAY=-1");
    r.add("relaykit.storage", () -> "jdbc");
    r.add("relaykit.transport", () -> "memory");
    r.add("management.tracing.sampling.probability", () -> "1.0");
  }

  @Autowired InMemorySpanExporter spans;

  @Test
  void oneTraceFromAppendToHandler() throws Exception {
    spans.reset();
    String id = place("pen");
    // Spans of earlier tests that end late have no append span left in the exporter.
    await(() -> shipments.deliveries(id) == 1 && tracedHandlerSpan() != null);

    SpanData process = tracedHandlerSpan();
    Map<String, SpanData> trace = trace(process.getTraceId());
    SpanData create = trace.values().stream().filter(s -> s.getName().equals("create orders"))
        .findFirst().orElseThrow();
    assertThat(create.getKind()).isEqualTo(SpanKind.PRODUCER);
    assertThat(process.getKind()).isEqualTo(SpanKind.CONSUMER);
    assertThat(trace.values()).extracting(SpanData::getName).contains("publish orders");
    // The handler's span descends from the append's.
    List<String> ancestors = new ArrayList<>();
    for (SpanData s = process; s != null; s = trace.get(s.getParentSpanId())) {
      ancestors.add(s.getName());
    }
    assertThat(ancestors).as("the handler's span and its ancestors").contains("create orders");
  }

  /** A finished handler span whose trace holds a finished append span, or null. */
  private SpanData tracedHandlerSpan() {
    return spans.getFinishedSpanItems().stream()
        .filter(s -> s.getName().equals("process orders"))
        .filter(s -> trace(s.getTraceId()).values().stream()
            .anyMatch(t -> t.getName().equals("create orders")))
        .findFirst().orElse(null);
  }

  /** The finished spans of {@code traceId}, by span id. */
  private Map<String, SpanData> trace(String traceId) {
    return spans.getFinishedSpanItems().stream().filter(s -> s.getTraceId().equals(traceId))
        .collect(Collectors.toMap(SpanData::getSpanId, Function.identity(), (a, b) -> a));
  }

  /** Spans kept in memory: Boot's OpenTelemetry auto-configuration exports to every exporter. */
  @TestConfiguration(proxyBeanMethods = false)
  static class Spans {
    @Bean
    InMemorySpanExporter inMemorySpanExporter() {
      return InMemorySpanExporter.create();
    }
  }
}
