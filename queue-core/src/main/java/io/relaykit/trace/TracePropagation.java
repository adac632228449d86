package io.relaykit.trace;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;

/**
 * The bridge between relaykit and a tracing library, with no tracing library in core: it tells
 * relaykit the caller's current W3C context and lets the library open a span around a publish and
 * around a handler. A tracing module (relaykit-opentelemetry, issue 19) implements it with its W3C
 * propagator and registers it for {@link ServiceLoader} ({@code
 * META-INF/services/io.relaykit.trace.TracePropagation}); {@link #discovered()} finds it, or it is
 * passed explicitly to an outbox store and a relay.
 *
 * <p>Where relaykit calls it:
 * <ul>
 *   <li>{@link #current()}: once per outbox append of a message that carries no {@code
 *       traceparent} of its own (an explicit context always wins), on the appending thread, inside
 *       the business transaction. What it returns becomes the message's context and trace id.
 *   <li>{@link #publishing}: around each publish of an outbox relay (or any {@link
 *       io.relaykit.message.Publisher} wrapped by {@code Tracing.publisher}), with the context
 *       captured at the append as parent: a PRODUCER span. The message goes out with the context
 *       the returned scope names (the producer span's, so consumers become its children). The
 *       scope is closed when the broker confirmed or failed, possibly on another thread: it must
 *       not be made current.
 *   <li>{@link #handling}: around each handler call of a subscription whose handler is wrapped by
 *       {@code Tracing.handler}, with the delivery's context as parent: a CONSUMER span, opened
 *       and closed on the handler's thread, so the library may make it current.
 * </ul>
 *
 * <p>WARNING: called on append, publish and delivery paths. Implementations must be fast,
 * thread-safe and must not block. What they throw never fails an append, a publish or a handler:
 * relaykit contains it, counts it where it says so ({@code TraceCapture#failures()} for appends)
 * and goes on without a context.
 */
public interface TracePropagation {

  /**
   * The caller's current context, or empty when there is none (or it is not sampled and the
   * library does not propagate unsampled contexts). Called on the appending thread.
   *
   * @return the current context, or empty; never null
   */
  Optional<TraceContext> current();

  /**
   * Opens a span for publishing to {@code destination} a message whose context is {@code parent}.
   * The default opens nothing and sends {@code parent} unchanged.
   *
   * @param destination the queue or topic, as the relay was configured
   * @param parent the context the message carries (captured at the append), empty for none
   * @return the scope to close when the publish is confirmed or failed; its {@link
   *     TraceScope#context()} is what the message carries on the wire
   */
  default TraceScope publishing(String destination, Optional<TraceContext> parent) {
    return TraceScope.unchanged(parent);
  }

  /**
   * Opens a span for handling a delivery from {@code source} whose context is {@code parent}, on
   * the handler's thread. The default opens nothing.
   *
   * @param source the queue or topic the delivery came from
   * @param parent the context the delivery carries, empty for none or a malformed one
   * @return the scope to close on the same thread when the handler returned or threw
   */
  default TraceScope handling(String source, Optional<TraceContext> parent) {
    return TraceScope.unchanged(parent);
  }

  /**
   * {@link #publishing(String, Optional)} with what relaykit knows about the publish (messaging
   * system, message id), for a library that records them as span attributes. relaykit calls this
   * one; the default forwards to {@link #publishing(String, Optional)}, so implementations written
   * before it existed keep working.
   *
   * @param info the publish: system, destination and message id
   * @param parent the context the message carries (captured at the append), empty for none
   * @return the scope to close when the publish is confirmed or failed
   */
  default TraceScope publishing(SpanInfo info, Optional<TraceContext> parent) {
    return publishing(info.destination(), parent);
  }

  /**
   * {@link #handling(String, Optional)} with what relaykit knows about the delivery (messaging
   * system, message id, consumer group, attempt). relaykit calls this one; the default forwards
   * to {@link #handling(String, Optional)}.
   *
   * @param info the delivery: system, source, message id, group and attempt
   * @param parent the context the delivery carries, empty for none or a malformed one
   * @return the scope to close on the same thread when the handler returned or threw
   */
  default TraceScope handling(SpanInfo info, Optional<TraceContext> parent) {
    return handling(info.destination(), parent);
  }

  /**
   * Propagation that captures nothing and opens no spans.
   *
   * @return the shared no-op propagation
   */
  static TracePropagation none() {
    return NoPropagation.INSTANCE;
  }

  /**
   * The implementation registered for {@link ServiceLoader} on the class path, found once per
   * process (the first run pays the class-path scan): {@link #none()} when there is none or it
   * cannot be loaded (logged once through {@link System.Logger}). With several, the first by
   * class name is used and the others are named in a warning.
   *
   * <p>The search uses relaykit-core's own class loader and its answer is shared by the whole
   * process. Where relaykit-core is shared by several applications (a servlet container's common
   * lib) and the tracing module is not, pass a propagation explicitly ({@link #discover} with the
   * application's loader, or the implementation itself) instead of relying on this.
   *
   * @return the discovered propagation, or {@link #none()}
   */
  static TracePropagation discovered() {
    return NoPropagation.DISCOVERED.get();
  }

  /**
   * Loads what {@link ServiceLoader} finds with {@code loader}, without caching: for tests and
   * containers with their own class loaders.
   *
   * @param loader where to look for providers
   * @return the first provider by class name, or {@link #none()}
   */
  static TracePropagation discover(ClassLoader loader) {
    System.Logger log = System.getLogger(TracePropagation.class.getName());
    List<TracePropagation> found = new ArrayList<>();
    try {
      for (TracePropagation p : ServiceLoader.load(TracePropagation.class, loader)) {
        found.add(p);
      }
    } catch (ServiceConfigurationError e) {
      log.log(System.Logger.Level.WARNING,
          "a TracePropagation provider could not be loaded; tracing stays off", e);
      return none();
    }
    if (found.isEmpty()) {
      return none();
    }
    found.sort(Comparator.comparing(p -> p.getClass().getName()));
    if (found.size() > 1) {
      log.log(System.Logger.Level.WARNING, "several TracePropagation providers on the class"
          + " path; using " + found.get(0).getClass().getName() + ", ignoring "
          + found.subList(1, found.size()).stream().map(p -> p.getClass().getName()).toList());
    }
    return found.get(0);
  }
}
