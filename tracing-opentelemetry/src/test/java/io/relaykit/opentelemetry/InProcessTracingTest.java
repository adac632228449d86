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

/** The pipeline on the in-process transport, plus what only needs one transport. */
class InProcessTracingTest extends TracingPipelineContract {
  private final InProcessTransport transport = InProcessTransport.create();

  @Override
  protected Publisher publisher() {
    return transport;
  }

  @Override
  protected Subscriber subscriber() {
    return transport;
  }

  @Override
  protected String newDestination() {
    return "orders-" + UUID.randomUUID();
  }

  @Override
  protected String system() {
    return "relaykit-inprocess";
  }

  @AfterEach
  void tearDown() {
    closeRelay();
    transport.close();
    spans.close();
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
