package io.relaykit.monitor;

import java.util.List;
import java.util.Objects;

/**
 * Sees every step of every message (enqueued, published, confirmed, delivered, acked, retried,
 * dead-lettered, dropped, expired, replayed) with its trace id, so "where did my message go" has an
 * answer. Feed it to logs, metrics or a tracing system; {@link LifecycleLog} keeps a bounded
 * in-memory history for tests and the demo.
 *
 * <p>WARNING: called on the hot path of queues, relays and consumers, often under their locks.
 * Implementations must be fast, thread-safe and must not block; relaykit catches and ignores what
 * they throw (it reports it once through {@link System.Logger}) so a broken listener cannot stall
 * delivery.
 */
@FunctionalInterface
public interface LifecycleListener {

  void on(LifecycleEvent event);

  /** A listener that ignores everything. */
  static LifecycleListener noop() {
    return event -> { };
  }

  /** A listener that forwards every event to each of {@code listeners}, in order. */
  static LifecycleListener composite(List<LifecycleListener> listeners) {
    List<LifecycleListener> copy = List.copyOf(listeners);
    return event -> {
      for (LifecycleListener l : copy) {
        safely(l, event);
      }
    };
  }

  /**
   * Delivers {@code event} to {@code listener}, containing whatever the listener throws short of a
   * {@link VirtualMachineError}: runtime exceptions, and the {@link LinkageError}s and {@link
   * AssertionError}s a misconfigured or buggy exporter throws.
   */
  static void safely(LifecycleListener listener, LifecycleEvent event) {
    Objects.requireNonNull(event, "event");
    try {
      listener.on(event);
    } catch (RuntimeException | LinkageError | AssertionError e) {
      ListenerFailures.report(listener, e);
    }
  }
}
