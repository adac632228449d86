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
 * Implementations must be fast (O(1): increment a counter cached per stage and destination; never
 * register a meter or build a tag map per event), thread-safe and must not block; relaykit catches and ignores what
 * they throw (it reports it once through {@link System.Logger}) so a broken listener cannot stall
 * delivery.
 */
@FunctionalInterface
public interface LifecycleListener {

  /**
   * Receives one step of one message. Called synchronously by the component that took the step,
   * possibly under its lock; what it throws is contained and reported once, never propagated.
   *
   * @param event the step; never null
   */
  void on(LifecycleEvent event);

  /**
   * A listener that ignores everything.
   *
   * @return a listener whose {@link #on} does nothing; shared and stateless
   */
  static LifecycleListener noop() {
    return event -> { };
  }

  /**
   * A listener that forwards every event to each of {@code listeners}, in order.
   *
   * @param listeners the listeners to call; copied, so later changes to the list are not seen
   * @return a listener calling each of {@code listeners} through {@link #safely}, so one that
   *     throws does not stop the rest
   * @throws NullPointerException if {@code listeners} or one of its elements is null
   */
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
   *
   * @param listener the listener to call
   * @param event the event to deliver
   * @throws NullPointerException if {@code event} is null
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
