package io.relaykit.bench;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A faithful Java port of the naive client queue relaykit replaces, kept as a benchmark baseline:
 * pending events in one list that is scanned in full on every drain and every eviction, a seen
 * map, and the whole state serialized to its storage on every change (as the original wrote its
 * JSON state to local storage). Not thread-safe, like the original; callers lock.
 *
 * <p>Every operation is O(n) in the queue's size, and every change copies the whole state: that
 * is what the ratios in the README measure relaykit against.
 */
final class SeedBaselineQueue {

  record Event(String id, String name, String payload, int priority, long createdAt,
      int attempts, long nextAttemptAt) {}

  private final int capacity;
  private final List<Event> pending = new ArrayList<>();
  private final List<Event> inflight = new ArrayList<>();
  /**
   * Ids already seen. The original's map grew without bound; here it keeps the newest 100 000,
   * relaykit's default dedupe window, so the baseline does not slow down as a run goes on.
   */
  private final Map<String, Long> seen = new LinkedHashMap<>() {
    private static final long serialVersionUID = 1L;

    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Long> eldest) {
      return size() > 100_000;
    }
  };
  /** The "local storage": one key holding the serialized state, rewritten on every change. */
  private final Map<String, String> storage = new HashMap<>();
  private long storedChars;

  SeedBaselineQueue(int capacity) {
    this.capacity = capacity;
  }

  boolean enqueue(Event event) {
    if (seen.containsKey(event.id())) {
      return false;
    }
    if (pending.size() >= capacity) {
      // Full scan for the lowest-priority, oldest event.
      Event victim = null;
      for (Event e : pending) {
        if (victim == null || e.priority() < victim.priority()
            || (e.priority() == victim.priority() && e.createdAt() < victim.createdAt())) {
          victim = e;
        }
      }
      if (victim == null || victim.priority() >= event.priority()) {
        return false;
      }
      pending.remove(victim);
    }
    pending.add(event);
    seen.put(event.id(), event.createdAt());
    persist();
    return true;
  }

  /** Bulk-loads events for a benchmark's setup, persisting once instead of per event. */
  void preload(List<Event> events) {
    for (Event e : events) {
      pending.add(e);
      seen.put(e.id(), e.createdAt());
    }
    persist();
  }

  List<Event> drainBatch(int max, long now) {
    // Full scan and sort of everything pending on every drain.
    List<Event> ready = new ArrayList<>();
    for (Event e : pending) {
      if (e.nextAttemptAt() <= now) {
        ready.add(e);
      }
    }
    ready.sort(Comparator.comparingInt(Event::priority).reversed()
        .thenComparingLong(Event::createdAt));
    List<Event> batch = new ArrayList<>(ready.subList(0, Math.min(max, ready.size())));
    pending.removeAll(batch);
    inflight.addAll(batch);
    persist();
    return batch;
  }

  int ack(Set<String> ids) {
    int removed = 0;
    for (Iterator<Event> it = inflight.iterator(); it.hasNext(); ) {
      if (ids.contains(it.next().id())) {
        it.remove();
        removed++;
      }
    }
    persist();
    return removed;
  }

  int pendingCount() {
    return pending.size();
  }

  long storedChars() {
    return storedChars;
  }

  /** Rewrites the whole state, as the original did with JSON.stringify on every change. */
  private void persist() {
    StringBuilder json = new StringBuilder(64 * (pending.size() + inflight.size()) + 16);
    json.append("{\"pending\":[");
    appendAll(json, pending);
    json.append("],\"inflight\":[");
    appendAll(json, inflight);
    json.append("],\"seen\":{");
    boolean first = true;
    for (Map.Entry<String, Long> s : seen.entrySet()) {
      if (!first) {
        json.append(',');
      }
      first = false;
      json.append('"').append(s.getKey()).append("\":").append(s.getValue());
    }
    json.append("}}");
    String state = json.toString();
    storage.put("report-queue", state);
    storedChars += state.length();
  }

  private static void appendAll(StringBuilder json, List<Event> events) {
    boolean first = true;
    for (Event e : events) {
      if (!first) {
        json.append(',');
      }
      first = false;
      json.append("{\"id\":\"").append(e.id()).append("\",\"name\":\"").append(e.name())
          .append("\",\"payload\":\"").append(e.payload()).append("\",\"priority\":")
          .append(e.priority()).append(",\"createdAt\":").append(e.createdAt())
          .append(",\"attempts\":").append(e.attempts()).append(",\"nextAttemptAt\":")
          .append(e.nextAttemptAt()).append('}');
    }
  }
}
