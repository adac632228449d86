package io.relaykit.opentelemetry;

import static org.assertj.core.api.Assertions.assertThat;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.relaykit.deadletter.InMemoryDeadLetterStore;
import io.relaykit.inprocess.InProcessTransport;
import io.relaykit.message.Message;
import io.relaykit.message.MessageHandler;
import io.relaykit.message.Subscriber;
import io.relaykit.message.SubscriptionSpec;
import io.relaykit.message.Tracing;
import io.relaykit.outbox.InMemoryOutboxStore;
import io.relaykit.outbox.OutboxBound;
import io.relaykit.outbox.OutboxRelay;
import io.relaykit.retry.Backoff;
import io.relaykit.retry.RetryPolicy;
import io.relaykit.tck.Await;
import io.relaykit.trace.TraceContext;
import io.relaykit.trace.TracePropagation;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Outbox append → relay → in-process transport → handler, recorded by the SDK. */
class InProcessTracingTest {
  private static final Duration WAIT = Duration.ofSeconds(20);

  private final Spans spans = new Spans();
  private final InProcessTransport transport = InProcessTransport.create();
  private final InMemoryOutboxStore store = new InMemoryOutboxStore(Clock.systemUTC(),
      OutboxBound.unbounded(), spans.propagation);
  private OutboxRelay relay;

  @AfterEach
  void tearDown() {
    if (relay != null) {
      relay.close();
    }
    transport.close();
    spans.close();
  }

  private void startRelay() {
    relay = OutboxRelay.builder(store, transport, new InMemoryDeadLetterStore())
        .tracePropagation(spans.propagation)
        .pollInterval(Duration.ofMillis(10))
        .build();
    relay.start();
  }

  private void subscribe(String destination, String group, MessageHandler handler) {
    Subscriber traced = Tracing.subscriber(transport, spans.propagation);
    traced.subscribe(SubscriptionSpec.builder(destination, group)
        .retryPolicy(RetryPolicy.builder().maxAttempts(3)
            .backoff(Backoff.fixed(Duration.ofMillis(10))).build())
        .build(), handler);
  }

  /** Appends one message inside a SERVER span, as the demo's HTTP handler does. */
  private SpanData appendUnderServerSpan(String destination, String id) {
    Span server = spans.otel.getTracer("test").spanBuilder("POST /orders")
        .setSpanKind(SpanKind.SERVER).startSpan();
    try (Scope ignored = server.makeCurrent()) {
      store.append(destination, Message.builder().id(id).type("order.placed")
          .payload("{}").build());
    } finally {
      server.end();
    }
    return spans.ofKind(SpanKind.SERVER).get(0);
  }

  @Test
  void oneTraceFromAppendThroughProducerToConsumer() {
    String destination = "orders-" + UUID.randomUUID();
    String id = "m-" + UUID.randomUUID();
    subscribe(destination, "billing", delivery -> {});
    startRelay();
    SpanData server = appendUnderServerSpan(destination, id);

    Await.until(WAIT, "one CONSUMER span", () -> spans.count(SpanKind.CONSUMER) == 1);
    SpanData producer = spans.ofKind(SpanKind.PRODUCER).get(0);
    SpanData consumer = spans.ofKind(SpanKind.CONSUMER).get(0);

    assertThat(producer.getTraceId()).isEqualTo(server.getTraceId());
    assertThat(producer.getParentSpanId()).isEqualTo(server.getSpanId());
    assertThat(consumer.getTraceId()).isEqualTo(server.getTraceId());
    assertThat(consumer.getParentSpanId()).isEqualTo(producer.getSpanId());

    assertThat(producer.getName()).isEqualTo("publish " + destination);
    assertThat(producer.getAttributes().get(AttributeKey.stringKey("messaging.system")))
        .isEqualTo("relaykit-inprocess");
    assertThat(producer.getAttributes().get(AttributeKey.stringKey("messaging.operation.type")))
        .isEqualTo("publish");
    assertThat(producer.getAttributes().get(AttributeKey.stringKey("messaging.destination.name")))
        .isEqualTo(destination);
    assertThat(producer.getAttributes().get(AttributeKey.stringKey("messaging.message.id")))
        .isEqualTo(id);

    assertThat(consumer.getName()).isEqualTo("process " + destination);
    assertThat(consumer.getAttributes().get(AttributeKey.stringKey("messaging.operation.type")))
        .isEqualTo("process");
    assertThat(consumer.getAttributes().get(
        AttributeKey.stringKey("messaging.consumer.group.name"))).isEqualTo("billing");
    assertThat(consumer.getAttributes().get(AttributeKey.stringKey("messaging.message.id")))
        .isEqualTo(id);
    assertThat(consumer.getAttributes().get(
        AttributeKey.longKey(OpenTelemetryPropagation.DELIVERY_ATTEMPT))).isEqualTo(1L);
    assertThat(consumer.getStatus().getStatusCode()).isEqualTo(StatusCode.UNSET);
    // The message in the outbox carries the SERVER span's context (captured at the append).
    System.out.println("TRACE DUMP (in-process)\n" + Spans.dump(List.of(server, producer,
        consumer)));
  }

  @Test
  void everyRetryIsItsOwnConsumerSpanAndAFailureIsAnErrorWithTheException() {
    String destination = "orders-" + UUID.randomUUID();
    AtomicInteger calls = new AtomicInteger();
    subscribe(destination, "shipping", delivery -> {
      if (calls.incrementAndGet() < 3) {
        throw new IllegalStateException("warehouse down (attempt " + delivery.attempt() + ")");
      }
    });
    startRelay();
    SpanData server = appendUnderServerSpan(destination, "m-" + UUID.randomUUID());

    Await.until(WAIT, "three CONSUMER spans", () -> spans.count(SpanKind.CONSUMER) == 3);
    SpanData producer = spans.ofKind(SpanKind.PRODUCER).get(0);
    List<SpanData> consumers = spans.ofKind(SpanKind.CONSUMER);
    assertThat(consumers).allSatisfy(c -> {
      assertThat(c.getTraceId()).isEqualTo(server.getTraceId());
      assertThat(c.getParentSpanId()).isEqualTo(producer.getSpanId());
    });
    assertThat(consumers).extracting(c -> c.getAttributes().get(
        AttributeKey.longKey(OpenTelemetryPropagation.DELIVERY_ATTEMPT)))
        .containsExactlyInAnyOrder(1L, 2L, 3L);
    assertThat(consumers).filteredOn(c -> c.getStatus().getStatusCode() == StatusCode.ERROR)
        .hasSize(2).allSatisfy(c -> assertThat(c.getEvents())
            .anySatisfy(e -> assertThat(e.getName()).isEqualTo("exception")));
    assertThat(consumers).filteredOn(c -> c.getStatus().getStatusCode() == StatusCode.UNSET)
        .hasSize(1);
  }

  @Test
  void aMalformedTraceparentIsIgnoredAndTheConsumerStartsANewTrace() {
    String destination = "orders-" + UUID.randomUUID();
    AtomicInteger handled = new AtomicInteger();
    subscribe(destination, "billing", delivery -> handled.incrementAndGet());
    transport.publish(destination, Message.builder().id("m-" + UUID.randomUUID())
        .type("order.placed").payload("{}")
        .header(TraceContext.TRACEPARENT, "00-not-a-trace-id-01").build()).join();

    Await.until(WAIT, "one CONSUMER span", () -> spans.count(SpanKind.CONSUMER) == 1);
    SpanData consumer = spans.ofKind(SpanKind.CONSUMER).get(0);
    assertThat(handled).hasValue(1);
    assertThat(consumer.getParentSpanContext().isValid()).isFalse();
    assertThat(consumer.getTraceId()).isNotEqualTo("00000000000000000000000000000000");
  }

  @Test
  void aTracingLibraryThatThrowsNeverFailsTheMessage() {
    TracePropagation broken = new TracePropagation() {
      @Override
      public java.util.Optional<TraceContext> current() {
        throw new IllegalStateException("tracer broken");
      }

      @Override
      public io.relaykit.trace.TraceScope handling(io.relaykit.trace.SpanInfo info,
          java.util.Optional<TraceContext> parent) {
        throw new IllegalStateException("tracer broken");
      }

      @Override
      public io.relaykit.trace.TraceScope publishing(io.relaykit.trace.SpanInfo info,
          java.util.Optional<TraceContext> parent) {
        throw new IllegalStateException("tracer broken");
      }
    };
    String destination = "orders-" + UUID.randomUUID();
    InMemoryOutboxStore brokenStore = new InMemoryOutboxStore(Clock.systemUTC(),
        OutboxBound.unbounded(), broken);
    AtomicInteger handled = new AtomicInteger();
    Tracing.subscriber(transport, broken).subscribe(
        SubscriptionSpec.builder(destination, "billing").build(),
        delivery -> handled.incrementAndGet());
    relay = OutboxRelay.builder(brokenStore, transport, new InMemoryDeadLetterStore())
        .tracePropagation(broken).pollInterval(Duration.ofMillis(10)).build();
    relay.start();
    brokenStore.append(destination, Message.builder().id("m-" + UUID.randomUUID())
        .type("order.placed").payload("{}").build());

    Await.until(WAIT, "the message handled despite the broken tracer",
        () -> handled.get() == 1);
    assertThat(brokenStore.traceCapture().failures()).isEqualTo(1);
  }

  @Test
  void discoveredThroughServiceLoader() {
    TracePropagation found = TracePropagation.discover(getClass().getClassLoader());
    assertThat(found).isInstanceOf(OpenTelemetryPropagation.class);
  }
}
