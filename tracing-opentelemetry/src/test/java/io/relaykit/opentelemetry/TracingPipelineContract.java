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
import io.relaykit.message.Publisher;
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

/**
 * Outbox append → relay → a transport → handler, recorded by the SDK's in-memory exporter: one
 * subclass per transport.
 */
abstract class TracingPipelineContract {
  protected static final Duration WAIT = Duration.ofSeconds(20);

  protected final Spans spans = new Spans();
  protected final InMemoryOutboxStore store = new InMemoryOutboxStore(Clock.systemUTC(),
      OutboxBound.unbounded(), spans.propagation);
  protected OutboxRelay relay;

  /** Where the relay publishes. */
  protected abstract Publisher publisher();

  /** What consumes. */
  protected abstract Subscriber subscriber();

  /** A fresh destination (created on the broker when it needs that). */
  protected abstract String newDestination();

  /** The group name the transport needs for {@code group} on {@code destination}. */
  protected String group(String destination, String group) {
    return group;
  }

  /** The messaging.system value expected on the spans. */
  protected abstract String system();

  @AfterEach
  void closeRelay() {
    if (relay != null) {
      relay.close();
    }
  }

  private void startRelay() {
    relay = OutboxRelay.builder(store, publisher(), new InMemoryDeadLetterStore())
        .tracePropagation(spans.propagation)
        .pollInterval(Duration.ofMillis(10))
        .build();
    relay.start();
  }

  private void subscribe(String destination, String group, MessageHandler handler) {
    Subscriber traced = Tracing.subscriber(subscriber(), spans.propagation);
    traced.subscribe(SubscriptionSpec.builder(destination, group(destination, group))
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
    String destination = newDestination();
    String id = "m-" + UUID.randomUUID();
    subscribe(destination, "billing", delivery -> {});
    startRelay();
    SpanData server = appendUnderServerSpan(destination, id);

    // The PRODUCER span ends when the publish call returns to the relay; on the in-process
    // transport the consumer can finish first, so wait for both.
    Await.until(WAIT, "one CONSUMER and one PRODUCER span",
        () -> spans.count(SpanKind.CONSUMER) == 1 && spans.count(SpanKind.PRODUCER) == 1);
    SpanData producer = spans.ofKind(SpanKind.PRODUCER).get(0);
    SpanData consumer = spans.ofKind(SpanKind.CONSUMER).get(0);

    assertThat(producer.getTraceId()).isEqualTo(server.getTraceId());
    assertThat(producer.getParentSpanId()).isEqualTo(server.getSpanId());
    assertThat(consumer.getTraceId()).isEqualTo(server.getTraceId());
    assertThat(consumer.getParentSpanId()).isEqualTo(producer.getSpanId());

    assertThat(producer.getName()).isEqualTo("publish " + destination);
    assertThat(producer.getAttributes().get(AttributeKey.stringKey("messaging.system")))
        .isEqualTo(system());
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
        AttributeKey.stringKey("messaging.consumer.group.name"))).isEqualTo(group(destination, "billing"));
    assertThat(consumer.getAttributes().get(AttributeKey.stringKey("messaging.message.id")))
        .isEqualTo(id);
    assertThat(consumer.getAttributes().get(
        AttributeKey.longKey(OpenTelemetryPropagation.DELIVERY_ATTEMPT))).isEqualTo(1L);
    assertThat(consumer.getStatus().getStatusCode()).isEqualTo(StatusCode.UNSET);
    // The message in the outbox carries the SERVER span's context (captured at the append).
    System.out.println("TRACE DUMP (" + system() + ")\n" + Spans.dump(List.of(server, producer,
        consumer)));
  }

  @Test
  void everyRetryIsItsOwnConsumerSpanAndAFailureIsAnErrorWithTheException() {
    String destination = newDestination();
    AtomicInteger calls = new AtomicInteger();
    subscribe(destination, "shipping", delivery -> {
      if (calls.incrementAndGet() < 3) {
        throw new IllegalStateException("warehouse down (attempt " + delivery.attempt() + ")");
      }
    });
    startRelay();
    SpanData server = appendUnderServerSpan(destination, "m-" + UUID.randomUUID());

    Await.until(WAIT, "three CONSUMER spans and one PRODUCER span",
        () -> spans.count(SpanKind.CONSUMER) == 3 && spans.count(SpanKind.PRODUCER) == 1);
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
    String destination = newDestination();
    AtomicInteger handled = new AtomicInteger();
    subscribe(destination, "billing", delivery -> handled.incrementAndGet());
    publisher().publish(destination, Message.builder().id("m-" + UUID.randomUUID())
        .type("order.placed").payload("{}")
        .header(TraceContext.TRACEPARENT, "00-not-a-trace-id-01").build()).join();

    Await.until(WAIT, "one CONSUMER span", () -> spans.count(SpanKind.CONSUMER) == 1);
    SpanData consumer = spans.ofKind(SpanKind.CONSUMER).get(0);
    assertThat(handled).hasValue(1);
    assertThat(consumer.getParentSpanContext().isValid()).isFalse();
    assertThat(consumer.getTraceId()).isNotEqualTo("00000000000000000000000000000000");
  }
}
