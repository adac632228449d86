package io.relaykit.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.deadletter.InMemoryDeadLetterStore;
import io.relaykit.message.Message;
import io.relaykit.message.PublishReceipt;
import io.relaykit.message.Publisher;
import io.relaykit.trace.TraceContext;
import io.relaykit.trace.TracePropagation;
import io.relaykit.trace.TraceScope;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class TraceCaptureTest {
  private static final TraceContext CALLERS = new TraceContext(
      "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", 1, "");

  private static Message plain() {
    return Message.builder().type("t").payload("x").build();
  }

  @Test
  @DisplayName("a capture sets the caller's context and counts it; an explicit one is kept")
  void capturesAndCounts() {
    TraceCapture capture = TraceCapture.of(() -> Optional.of(CALLERS));

    Message stamped = capture.stamp(plain());
    Message explicit = plain().toBuilder()
        .traceContext(TraceContext.of("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331",
            true)).build();

    assertThat(stamped.traceContext().context()).contains(CALLERS);
    assertThat(stamped.traceId()).isEqualTo(CALLERS.traceId());
    assertThat(capture.stamp(explicit)).isSameAs(explicit);
    assertThat(capture.captured()).isEqualTo(1);
    assertThat(capture.failures()).isZero();
  }

  @Test
  @DisplayName("a malformed traceparent set by the caller stays: the caller's header wins")
  void malformedExplicitStays() {
    TraceCapture capture = TraceCapture.of(() -> Optional.of(CALLERS));
    Message m = plain().toBuilder().header("traceparent", "00-garbage").build();

    assertThat(capture.stamp(m)).isSameAs(m);
    assertThat(capture.captured()).isZero();
  }

  @Test
  @DisplayName("a propagation that throws or returns null is counted and the message kept as is")
  void failuresCounted() {
    AtomicInteger calls = new AtomicInteger();
    TraceCapture capture = TraceCapture.of(() -> {
      if (calls.incrementAndGet() % 2 == 1) {
        throw new IllegalStateException("tracer broken");
      }
      return null;
    });
    Message m = plain();

    for (int i = 0; i < 5; i++) {
      assertThat(capture.stamp(m)).isSameAs(m);
    }

    assertThat(calls).hasValue(5);
    assertThat(capture.failures()).isEqualTo(5);
    assertThat(capture.captured()).isZero();
  }

  @Test
  @DisplayName("the in-memory store counts failed captures and still appends")
  void storeCountsFailures() {
    InMemoryOutboxStore store = new InMemoryOutboxStore(InstantSource.system(),
        OutboxBound.unbounded(), () -> {
          throw new LinkageError("tracing jar half there");
        });

    store.append("orders", plain());
    store.append("orders", plain());

    assertThat(store.traceCapture().failures()).isEqualTo(2);
    assertThat(store.stats(Instant.now()).unsent()).isEqualTo(2);
  }

  @Test
  @DisplayName("without a provider on the class path the stores and relays propagate nothing")
  void discoveredIsNone() {
    assertThat(TracePropagation.discovered()).isSameAs(TracePropagation.none());
    assertThat(new InMemoryOutboxStore().traceCapture().propagation())
        .isSameAs(TracePropagation.none());
    assertThatThrownBy(() -> TraceCapture.of(null)).isInstanceOf(NullPointerException.class);
  }

  @Test
  @DisplayName("a relay publishes each row inside a producer scope whose context goes on the wire,"
      + " the child of the context captured at the append")
  void relayPublishesUnderProducerScope() {
    List<String> events = new ArrayList<>();
    TracePropagation tracing = new TracePropagation() {
      @Override
      public Optional<TraceContext> current() {
        return Optional.of(CALLERS);
      }

      @Override
      public TraceScope publishing(String destination, Optional<TraceContext> parent) {
        events.add("open " + destination + " parent " + parent.map(TraceContext::parentId)
            .orElse("none"));
        TraceContext producer = parent.orElseThrow().withParent("53995c3f42cd8ad8");
        return new TraceScope() {
          @Override
          public Optional<TraceContext> context() {
            return Optional.of(producer);
          }

          @Override
          public void close() {
            events.add("close");
          }
        };
      }
    };
    InMemoryOutboxStore store = new InMemoryOutboxStore(InstantSource.system(),
        OutboxBound.unbounded(), tracing);
    List<Message> sent = new ArrayList<>();
    Publisher publisher = new Publisher() {
      @Override
      public CompletableFuture<PublishReceipt> publish(String destination, Message message) {
        sent.add(message);
        events.add("publish");
        return CompletableFuture.completedFuture(
            new PublishReceipt(message.id(), destination, "p1"));
      }

      @Override
      public void close() {}
    };
    Message m = plain();
    store.append("orders", m);

    OutboxRelay relay = OutboxRelay.builder(store, publisher, new InMemoryDeadLetterStore())
        .tracePropagation(tracing).build();
    relay.runOnce();

    assertThat(events).containsExactly("open orders parent 00f067aa0ba902b7", "publish", "close");
    assertThat(sent).hasSize(1);
    assertThat(sent.get(0).id()).isEqualTo(m.id());
    assertThat(sent.get(0).traceContext().context())
        .contains(CALLERS.withParent("53995c3f42cd8ad8"));
    assertThat(store.stats(Instant.now()).unsent()).isZero();
  }
}
