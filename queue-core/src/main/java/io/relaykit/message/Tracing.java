package io.relaykit.message;

import io.relaykit.trace.SpanInfo;
import io.relaykit.trace.TraceContext;
import io.relaykit.trace.TracePropagation;
import io.relaykit.trace.TraceScope;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Puts a {@link TracePropagation}'s spans around publishes and handler calls, for every transport
 * alike: {@link #publisher} wraps a {@link Publisher} (an outbox relay wraps its own, see {@code
 * OutboxRelay.Builder.tracePropagation}) and {@link #handler} wraps a {@link MessageHandler}
 * before it is subscribed.
 *
 * <p>A propagation that throws never fails the publish or the handler: the work then runs
 * untraced (publish: the message goes out as it was). What the work itself throws is passed
 * through unchanged after {@link TraceScope#failed}. Cost: one scope per call, nothing more when
 * the propagation is {@link TracePropagation#none()} (the wrappers return their argument).
 */
public final class Tracing {
  private static final System.Logger LOG = System.getLogger(Tracing.class.getName());
  private static final AtomicBoolean WARNED = new AtomicBoolean();

  private Tracing() {}

  /**
   * {@code publisher} with a {@link TracePropagation#publishing} scope around each publish: the
   * message goes out carrying the scope's context (a producer span's, the child of the context
   * captured at the append), and the scope closes when the future completes, on the completing
   * thread. {@code publisher} itself when {@code propagation} is {@link TracePropagation#none()}.
   *
   * <p>relaykit's publishers complete every future within their confirm timeout, so every scope
   * ends. A publisher that returns no future gets its scope ended with a {@link PublishException}
   * and the caller a future failed with it; a custom publisher whose future never completes keeps
   * its scope open (the relay stops waiting after its confirm timeout, the scope does not).
   *
   * @param publisher the publisher to wrap
   * @param propagation the propagation whose scopes surround each publish
   * @return the traced publisher; closing it closes {@code publisher}
   * @throws NullPointerException if an argument is null
   */
  public static Publisher publisher(Publisher publisher, TracePropagation propagation) {
    Objects.requireNonNull(publisher, "publisher");
    Objects.requireNonNull(propagation, "propagation");
    if (propagation == TracePropagation.none()) {
      return publisher;
    }
    return new Publisher() {
      @Override
      public CompletableFuture<PublishReceipt> publish(String destination, Message message) {
        if (message == null) {
          throw new IllegalArgumentException("message must not be null");
        }
        TraceScope scope = open(() -> propagation.publishing(
            SpanInfo.publish(system(publisher), destination, message.id()),
            message.traceContext().context()));
        if (scope == null) {
          return publisher.publish(destination, message);
        }
        Message sent = message;
        try {
          Optional<TraceContext> context = scope.context();
          if (context.isPresent() && !context.equals(message.traceContext().context())) {
            sent = message.toBuilder().traceContext(context.get()).build();
          }
        } catch (VirtualMachineError e) {
          throw e;
        } catch (Throwable e) {
          contained(e);
        }
        CompletableFuture<PublishReceipt> result;
        try {
          result = publisher.publish(destination, sent);
        } catch (RuntimeException e) {
          end(scope, e);
          throw e;
        }
        if (result == null) {
          PublishException none = new PublishException("publisher returned no future");
          end(scope, none);
          return CompletableFuture.failedFuture(none);
        }
        return result.whenComplete((receipt, error) -> end(scope, error));
      }

      @Override
      public String messagingSystem() {
        return system(publisher);
      }

      @Override
      public void close() {
        publisher.close();
      }

      @Override
      public String toString() {
        return "Tracing.publisher(" + publisher + ", " + propagation + ")";
      }
    };
  }

  /**
   * {@code handler} run inside a {@link TracePropagation#handling} scope (a consumer span, the
   * child of the delivery's context), opened and closed on the handler's thread. {@code handler}
   * itself when {@code propagation} is {@link TracePropagation#none()}.
   *
   * @param handler the handler to wrap
   * @param propagation the propagation whose scope surrounds each call
   * @return the traced handler
   * @throws NullPointerException if an argument is null
   */
  public static MessageHandler handler(MessageHandler handler, TracePropagation propagation) {
    return handler(handler, propagation, "", "");
  }

  /**
   * {@link #handler(MessageHandler, TracePropagation)} that also tells the propagation the
   * messaging system and the consumer group (span attributes); {@link #subscriber} fills both in.
   *
   * @param handler the handler to wrap
   * @param propagation the propagation whose scope surrounds each call
   * @param system the messaging system ({@code kafka}, ...), "" if unknown
   * @param group the consumer group, "" if unknown
   * @return the traced handler
   * @throws NullPointerException if an argument is null
   */
  public static MessageHandler handler(MessageHandler handler, TracePropagation propagation,
      String system, String group) {
    Objects.requireNonNull(handler, "handler");
    Objects.requireNonNull(propagation, "propagation");
    Objects.requireNonNull(system, "system");
    Objects.requireNonNull(group, "group");
    if (propagation == TracePropagation.none()) {
      return handler;
    }
    return delivery -> {
      TraceScope scope = open(() -> propagation.handling(
          SpanInfo.delivery(system, delivery.source(), delivery.message().id(), group,
              delivery.attempt()),
          delivery.traceContext()));
      if (scope == null) {
        handler.handle(delivery);
        return;
      }
      try {
        handler.handle(delivery);
      } catch (Exception | Error e) {
        end(scope, e);
        throw e;
      }
      end(scope, null);
    };
  }

  /**
   * {@code subscriber} whose every subscription's handler is wrapped by {@link
   * #handler(MessageHandler, TracePropagation, String, String)} with the subscriber's {@link
   * Subscriber#messagingSystem()} and the spec's group: one consumer span per delivery (a retry
   * is a new delivery, so a new span). {@code subscriber} itself when {@code propagation} is
   * {@link TracePropagation#none()}.
   *
   * @param subscriber the subscriber to wrap
   * @param propagation the propagation whose scopes surround each handler call
   * @return the traced subscriber; closing it closes {@code subscriber}
   * @throws NullPointerException if an argument is null
   */
  public static Subscriber subscriber(Subscriber subscriber, TracePropagation propagation) {
    Objects.requireNonNull(subscriber, "subscriber");
    Objects.requireNonNull(propagation, "propagation");
    if (propagation == TracePropagation.none()) {
      return subscriber;
    }
    return new Subscriber() {
      @Override
      public Subscription subscribe(SubscriptionSpec spec, MessageHandler handler) {
        Objects.requireNonNull(spec, "spec");
        return subscriber.subscribe(spec,
            handler(handler, propagation, system(subscriber), spec.group()));
      }

      @Override
      public String messagingSystem() {
        return system(subscriber);
      }

      @Override
      public void close() {
        subscriber.close();
      }

      @Override
      public String toString() {
        return "Tracing.subscriber(" + subscriber + ", " + propagation + ")";
      }
    };
  }

  private static String system(Publisher publisher) {
    try {
      String s = publisher.messagingSystem();
      return s == null ? "" : s;
    } catch (RuntimeException e) {
      contained(e);
      return "";
    }
  }

  private static String system(Subscriber subscriber) {
    try {
      String s = subscriber.messagingSystem();
      return s == null ? "" : s;
    } catch (RuntimeException e) {
      contained(e);
      return "";
    }
  }

  private interface Opener {
    TraceScope open();
  }

  private static TraceScope open(Opener opener) {
    try {
      return opener.open();
    } catch (VirtualMachineError e) {
      throw e;
    } catch (Throwable e) {
      // An AssertionError or StackOverflowError in a tracing library is contained too.
      contained(e);
      return null;
    }
  }

  private static void end(TraceScope scope, Throwable error) {
    try {
      if (error != null) {
        scope.failed(error);
      }
    } catch (VirtualMachineError e) {
      throw e;
    } catch (Throwable e) {
      contained(e);
    }
    try {
      scope.close();
    } catch (VirtualMachineError e) {
      throw e;
    } catch (Throwable e) {
      contained(e);
    }
  }

  private static void contained(Throwable e) {
    // The first failure is a warning; later ones only debug, so a broken library cannot flood logs.
    boolean first = !WARNED.getAndSet(true);
    LOG.log(first ? System.Logger.Level.WARNING : System.Logger.Level.DEBUG,
        "trace propagation failed; the work goes on untraced", e);
  }
}
