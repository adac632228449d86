package io.relaykit.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import io.relaykit.tck.Await;
import io.relaykit.transport.kafka.KafkaTestBroker;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * One demo order gives one trace: the SERVER span of {@code POST /orders}, a PRODUCER span per
 * effect's message (child of the SERVER span, captured at the outbox append) and a CONSUMER span
 * per consumer (child of its PRODUCER span), on the in-process transport and on Kafka. The spans
 * are recorded by the SDK's in-memory exporter and, through {@link SpanLines}, written to a file.
 */
class DemoTraceTest {
  private static final Duration WAIT = Duration.ofSeconds(60);

  @Test
  @DisplayName("memory: POST /orders → outbox → relay → both consumers is one trace")
  void inProcess(@TempDir Path data) throws Exception {
    oneTrace(new DemoOptions("127.0.0.1", 0, data, "h2", "memory", 0, null,
        Duration.ofSeconds(2)), Map.of(), "relaykit-inprocess", data.resolve("spans.txt"));
  }

  @Test
  @DisplayName("kafka: POST /orders → outbox → relay → Kafka → both consumers is one trace")
  void kafka(@TempDir Path data) throws Exception {
    oneTrace(new DemoOptions("127.0.0.1", 0, data, "h2", "kafka", 0, null,
        Duration.ofSeconds(2)),
        Map.of("relaykit.kafka.bootstrap-servers", KafkaTestBroker.bootstrapServers()), "kafka",
        data.resolve("spans.txt"));
  }

  private static void oneTrace(DemoOptions options, Map<String, String> settings, String system,
      Path file) throws Exception {
    InMemorySpanExporter memory = InMemorySpanExporter.create();
    DemoTracing tracing = DemoTracing.exportingTo(
        SpanExporter.composite(memory, SpanLines.toFile(file)));
    CheckoutApp app = CheckoutApp.start(options, settings, tracing);
    DemoServer server;
    try {
      server = new DemoServer(app, "127.0.0.1", 0);
    } catch (Exception | Error e) {
      app.close();
      throw e;
    }
    int effects = Orders.Effect.values().length;
    List<SpanData> spans;
    try (RunningDemo demo = new RunningDemo(app, server,
        new DemoHttp(URI.create("http://127.0.0.1:" + server.port())))) {
      demo.orderSucceedsWithOneOfEachEffect(WAIT);
      Await.until(WAIT, effects + " CONSUMER spans", () -> memory.getFinishedSpanItems()
          .stream().filter(s -> s.getKind() == SpanKind.CONSUMER).count() >= effects);
      spans = List.copyOf(memory.getFinishedSpanItems()); // closing the SDK clears the exporter
    }
    System.out.println("TRACE DUMP (" + system + ")\n" + spans.stream().map(SpanLines::line)
        .collect(Collectors.joining("\n")));
    List<SpanData> servers = ofKind(spans, SpanKind.SERVER);
    List<SpanData> producers = ofKind(spans, SpanKind.PRODUCER);
    List<SpanData> consumers = ofKind(spans, SpanKind.CONSUMER);
    assertThat(servers).hasSize(1);
    SpanData root = servers.get(0);
    assertThat(root.getName()).isEqualTo("POST /orders");
    assertThat(root.getParentSpanContext().isValid()).isFalse();
    assertThat(root.getAttributes().get(AttributeKey.longKey("http.response.status_code")))
        .isEqualTo(202L);
    assertThat(spans).as("one trace").extracting(SpanData::getTraceId)
        .containsOnly(root.getTraceId());
    assertThat(producers).hasSize(effects).allSatisfy(p -> {
      assertThat(p.getParentSpanId()).isEqualTo(root.getSpanId());
      assertThat(p.getAttributes().get(AttributeKey.stringKey("messaging.system")))
          .isEqualTo(system);
    });
    assertThat(consumers).hasSize(effects);
    List<String> groups = new ArrayList<>();
    for (Orders.Effect effect : Orders.Effect.values()) {
      SpanData producer = producers.stream().filter(p -> effect.destination().equals(
          p.getAttributes().get(AttributeKey.stringKey("messaging.destination.name"))))
          .findFirst().orElseThrow();
      SpanData consumer = consumers.stream().filter(c -> effect.destination().equals(
          c.getAttributes().get(AttributeKey.stringKey("messaging.destination.name"))))
          .findFirst().orElseThrow();
      assertThat(consumer.getParentSpanId()).as(effect + " consumer's parent")
          .isEqualTo(producer.getSpanId());
      assertThat(consumer.getAttributes().get(AttributeKey.stringKey("messaging.system")))
          .isEqualTo(system);
      groups.add(consumer.getAttributes().get(
          AttributeKey.stringKey("messaging.consumer.group.name")));
      assertThat(consumer.getAttributes().get(AttributeKey.stringKey("messaging.message.id")))
          .isEqualTo(producer.getAttributes().get(AttributeKey.stringKey("messaging.message.id")));
    }
    assertThat(groups).containsExactlyInAnyOrder(Arrays.stream(Orders.Effect.values())
        .map(Orders.Effect::group).toArray(String[]::new));
    // The file export holds the same spans, one line each.
    List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
    assertThat(lines).hasSize(spans.size())
        .allSatisfy(l -> assertThat(l).contains("trace=" + root.getTraceId()));
  }

  private static List<SpanData> ofKind(List<SpanData> spans, SpanKind kind) {
    return spans.stream().filter(s -> s.getKind() == kind).collect(Collectors.toList());
  }
}
