package io.relaykit.message;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.trace.TraceContext;
import io.relaykit.trace.TracePropagation;
import io.relaykit.trace.TraceScope;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class TracingTest {
  private static final TraceContext SENT = TraceContext.of("4bf92f3577b34da6a3ce929d0e0e4736",
      "00f067aa0ba902b7", true);
  private final List<String> events = new ArrayList<>();

  /** Records each scope it opens, what failed in it and when it closed. */
  private final TracePropagation recording = new TracePropagation() {
    @Override
    public Optional<TraceContext> current() {
      return Optional.empty();
    }

    @Override
    public TraceScope publishing(String destination, Optional<TraceContext> parent) {
      return scope("producer " + destination, parent.map(p -> p.withParent("53995c3f42cd8ad8")));
    }

    @Override
    public TraceScope handling(String source, Optional<TraceContext> parent) {
      events.add("consumer " + source + " parent " + parent.map(TraceContext::parentId)
          .orElse("none"));
      return scope("consumer", parent);
    }

    private TraceScope scope(String name, Optional<TraceContext> context) {
      return new TraceScope() {
        @Override
        public Optional<TraceContext> context() {
          return context;
        }

        @Override
        public void failed(Throwable error) {
          events.add(name + " failed " + error.getMessage());
        }

        @Override
        public void close() {
          events.add(name + " closed");
        }
      };
    }
  };

  private static Message traced() {
    return Message.builder().type("t").payload("x").traceContext(SENT).build();
  }

  @Test
  @DisplayName("a wrapped handler runs inside a consumer scope, child of the delivery's context")
  void handlerScope() throws Exception {
    List<String> handled = new ArrayList<>();
    MessageHandler h = Tracing.handler(d -> handled.add(d.message().id()), recording);

    h.handle(Delivery.first(traced(), "orders"));

    assertThat(handled).hasSize(1);
    assertThat(events).containsExactly("consumer orders parent 00f067aa0ba902b7",
        "consumer closed");
  }

  @Test
  @DisplayName("a handler's failure is marked on its scope and rethrown unchanged")
  void handlerFailure() {
    IllegalStateException boom = new IllegalStateException("boom");
    MessageHandler h = Tracing.handler(d -> {
      throw boom;
    }, recording);

    assertThatThrownBy(() -> h.handle(Delivery.first(traced(), "orders"))).isSameAs(boom);
    assertThat(events).containsExactly("consumer orders parent 00f067aa0ba902b7",
        "consumer failed boom", "consumer closed");
  }

  @Test
  @DisplayName("a propagation that throws leaves the handler and the publish untraced, not failed")
  void throwingPropagation() throws Exception {
    TracePropagation broken = new TracePropagation() {
      @Override
      public Optional<TraceContext> current() {
        throw new IllegalStateException("broken");
      }

      @Override
      public TraceScope publishing(String destination, Optional<TraceContext> parent) {
        throw new IllegalStateException("broken");
      }

      @Override
      public TraceScope handling(String source, Optional<TraceContext> parent) {
        throw new IllegalStateException("broken");
      }
    };
    List<Message> sent = new ArrayList<>();
    Message m = traced();

    Tracing.handler(d -> sent.add(d.message()), broken).handle(Delivery.first(m, "orders"));
    Tracing.publisher(publisherInto(sent), broken).publish("orders", m).join();

    assertThat(sent).containsExactly(m, m);
  }

  @Test
  @DisplayName("a wrapped publisher sends the producer scope's context and closes the scope when"
      + " the broker answered, marking a failure")
  void publisherScope() {
    List<Message> sent = new ArrayList<>();
    CompletableFuture<PublishReceipt> pending = new CompletableFuture<>();
    Publisher inner = new Publisher() {
      @Override
      public CompletableFuture<PublishReceipt> publish(String destination, Message message) {
        sent.add(message);
        return pending;
      }

      @Override
      public void close() {}
    };
    Publisher p = Tracing.publisher(inner, recording);

    CompletableFuture<PublishReceipt> f = p.publish("orders", traced());

    assertThat(sent.get(0).traceContext().context())
        .contains(SENT.withParent("53995c3f42cd8ad8"));
    assertThat(events).isEmpty();
    pending.completeExceptionally(new PublishException("nacked"));
    assertThat(f).isCompletedExceptionally();
    assertThat(events).containsExactly("producer orders failed nacked", "producer orders closed");
  }

  @Test
  @DisplayName("a publisher that returns no future: the scope ends failed and the caller gets a"
      + " future failed with a PublishException, not a NullPointerException")
  void publisherWithoutFuture() {
    Publisher inner = new Publisher() {
      @Override
      public CompletableFuture<PublishReceipt> publish(String destination, Message message) {
        return null;
      }

      @Override
      public void close() {}
    };

    CompletableFuture<PublishReceipt> f = Tracing.publisher(inner, recording)
        .publish("orders", traced());

    assertThat(f).isCompletedExceptionally();
    assertThatThrownBy(f::join).hasCauseInstanceOf(PublishException.class)
        .hasMessageContaining("publisher returned no future");
    assertThat(events).containsExactly("producer orders failed publisher returned no future",
        "producer orders closed");
  }

  @Test
  @DisplayName("a propagation that throws an Error (not a VirtualMachineError) is contained too")
  void errorInPropagation() throws Exception {
    TracePropagation asserting = new TracePropagation() {
      @Override
      public Optional<TraceContext> current() {
        return Optional.empty();
      }

      @Override
      public TraceScope publishing(String destination, Optional<TraceContext> parent) {
        throw new AssertionError("tracer bug");
      }

      @Override
      public TraceScope handling(String source, Optional<TraceContext> parent) {
        throw new AssertionError("tracer bug");
      }
    };
    List<Message> sent = new ArrayList<>();
    Message m = traced();

    Tracing.handler(d -> sent.add(d.message()), asserting).handle(Delivery.first(m, "orders"));
    Tracing.publisher(publisherInto(sent), asserting).publish("orders", m).join();

    assertThat(sent).containsExactly(m, m);
  }

  @Test
  @DisplayName("with none() the wrappers are their arguments")
  void noneIsIdentity() {
    MessageHandler h = d -> {};
    Publisher p = publisherInto(new ArrayList<>());

    assertThat(Tracing.handler(h, TracePropagation.none())).isSameAs(h);
    assertThat(Tracing.publisher(p, TracePropagation.none())).isSameAs(p);
  }

  private static Publisher publisherInto(List<Message> sent) {
    return new Publisher() {
      @Override
      public CompletableFuture<PublishReceipt> publish(String destination, Message message) {
        sent.add(message);
        return CompletableFuture.completedFuture(new PublishReceipt(message.id(), destination,
            "p"));
      }

      @Override
      public void close() {}
    };
  }

  @Test
  @DisplayName("relaykit passes SpanInfo (system, message id, group, attempt); the default forwards"
      + " to the destination-only methods, and Tracing.subscriber fills in system and group")
  void spanInfo() throws Exception {
    List<io.relaykit.trace.SpanInfo> seen = new ArrayList<>();
    TracePropagation withInfo = new TracePropagation() {
      @Override
      public Optional<TraceContext> current() {
        return Optional.empty();
      }

      @Override
      public TraceScope publishing(io.relaykit.trace.SpanInfo info,
          Optional<TraceContext> parent) {
        seen.add(info);
        return TraceScope.unchanged(parent);
      }

      @Override
      public TraceScope handling(io.relaykit.trace.SpanInfo info,
          Optional<TraceContext> parent) {
        seen.add(info);
        return TraceScope.unchanged(parent);
      }
    };
    Message m = Message.builder().id("m-1").type("t").payload("x").traceContext(SENT).build();
    Publisher inner = new Publisher() {
      @Override
      public CompletableFuture<PublishReceipt> publish(String destination, Message message) {
        return new CompletableFuture<>();
      }

      @Override
      public String messagingSystem() {
        return "kafka";
      }

      @Override
      public void close() {}
    };
    Publisher traced = Tracing.publisher(inner, withInfo);
    traced.publish("orders", m);
    assertThat(traced.messagingSystem()).isEqualTo("kafka");

    List<MessageHandler> subscribed = new ArrayList<>();
    Subscriber sub = new Subscriber() {
      @Override
      public Subscription subscribe(SubscriptionSpec spec, MessageHandler handler) {
        subscribed.add(handler);
        return null;
      }

      @Override
      public String messagingSystem() {
        return "rabbitmq";
      }

      @Override
      public void close() {}
    };
    Tracing.subscriber(sub, withInfo).subscribe(SubscriptionSpec.builder("orders", "billing")
        .build(), delivery -> {});
    subscribed.get(0).handle(new Delivery(m, "orders", 2, java.time.Instant.EPOCH));

    assertThat(seen).containsExactly(
        io.relaykit.trace.SpanInfo.publish("kafka", "orders", "m-1"),
        io.relaykit.trace.SpanInfo.delivery("rabbitmq", "orders", "m-1", "billing", 2));

    // The destination-only implementation (recording) still sees every call.
    Tracing.handler(delivery -> {}, recording, "kafka", "g").handle(Delivery.first(m, "orders"));
    assertThat(events).contains("consumer orders parent 00f067aa0ba902b7", "consumer closed");
    assertThat(Tracing.subscriber(sub, TracePropagation.none())).isSameAs(sub);
  }
}
