package io.relaykit.queue;

import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What a {@link QueueJournal} holds after replay.
 *
 * @param pending events awaiting delivery, in the order they were appended; events that were in
 *     flight are among them (the journal does not record drains)
 * @param dead dead-lettered events with the attempts they made
 * @param deadReasons the reason each dead event gave up, by event id
 * @param seen every remembered event id with the time it was first seen (pending, in flight, acked
 *     or expired, until forgotten), in first-seen order
 */
public record JournalState(
    List<QueuedEvent> pending,
    List<QueuedEvent> dead,
    Map<String, String> deadReasons,
    Map<String, Instant> seen) {

  /**
   * Copies the components into unmodifiable collections, keeping {@code seen} in its order.
   *
   * @param pending events awaiting delivery; not null
   * @param dead dead-lettered events; not null
   * @param deadReasons the reason of each dead event; not null
   * @param seen remembered ids with when each was first seen, insertion-ordered; not null
   * @throws NullPointerException if a component is null
   */
  public JournalState {
    pending = List.copyOf(Objects.requireNonNull(pending, "pending"));
    dead = List.copyOf(Objects.requireNonNull(dead, "dead"));
    deadReasons = Map.copyOf(Objects.requireNonNull(deadReasons, "deadReasons"));
    // Map.copyOf would lose first-seen order; callers pass an insertion-ordered map.
    seen = Collections.unmodifiableMap(
        new LinkedHashMap<>(Objects.requireNonNull(seen, "seen")));
  }

  /**
   * A journal with nothing recorded.
   *
   * @return a state with no pending, dead or seen event
   */
  public static JournalState empty() {
    return new JournalState(List.of(), List.of(), Map.of(), Map.of());
  }
}
