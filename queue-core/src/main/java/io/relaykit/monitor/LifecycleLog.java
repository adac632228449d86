package io.relaykit.monitor;

import io.relaykit.internal.Checks;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;

/**
 * A {@link LifecycleListener} that keeps the most recent {@code capacity} events in memory and
 * answers "what happened to message X" and "what happened under trace T". For tests, the demo and
 * small deployments; production feeds a tracing system instead.
 *
 * <p>Thread-safe. {@link #on} is O(1); the queries scan the retained events, O(capacity).
 */
public final class LifecycleLog implements LifecycleListener {
  private final int capacity;
  private final Deque<LifecycleEvent> events;

  /**
   * An empty log that retains the last {@code capacity} events.
   *
   * @param capacity how many events to retain; once full, each new event evicts the oldest
   * @throws IllegalArgumentException if {@code capacity < 1}
   */
  public LifecycleLog(int capacity) {
    this.capacity = Checks.requirePositive("capacity", capacity);
    this.events = new ArrayDeque<>(Math.min(capacity, 1024));
  }

  @Override
  public synchronized void on(LifecycleEvent event) {
    if (events.size() == capacity) {
      events.removeFirst();
    }
    events.addLast(event);
  }

  /**
   * Every retained event of the message with this id, oldest first.
   *
   * @param messageId the message id to match exactly
   * @return a new list of the matching events; empty when none is retained. Costs one scan of the
   *     retained events under the log's lock
   */
  public synchronized List<LifecycleEvent> history(String messageId) {
    List<LifecycleEvent> out = new ArrayList<>();
    for (LifecycleEvent e : events) {
      if (e.messageId().equals(messageId)) {
        out.add(e);
      }
    }
    return out;
  }

  /**
   * Every retained event carrying this trace id, oldest first.
   *
   * @param traceId the trace id to match exactly; not null
   * @return a new list of the matching events; empty when none is retained. Costs one scan of the
   *     retained events under the log's lock
   */
  public synchronized List<LifecycleEvent> trace(String traceId) {
    List<LifecycleEvent> out = new ArrayList<>();
    for (LifecycleEvent e : events) {
      if (traceId.equals(e.traceId())) {
        out.add(e);
      }
    }
    return out;
  }

  /**
   * Every retained event, oldest first.
   *
   * @return a new list (a snapshot) of at most {@code capacity} events
   */
  public synchronized List<LifecycleEvent> all() {
    return new ArrayList<>(events);
  }
}
