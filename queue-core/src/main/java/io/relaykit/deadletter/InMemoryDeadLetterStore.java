package io.relaykit.deadletter;

import io.relaykit.internal.Checks;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;

/**
 * The embedded {@link DeadLetterStore}: dead letters in memory, ordered by last failure time, then
 * id. Supports every operation. Lost with the process: use a durable store in production.
 *
 * <p>Thread-safe (one lock). {@link #add}, {@link #find} and {@link #remove} are O(log n);
 * {@link #list}, {@link #count} and {@link #purge} scan in order, O(n) in the worst case.
 */
public final class InMemoryDeadLetterStore implements DeadLetterStore {

  /** An empty store. */
  public InMemoryDeadLetterStore() {}

  private static final Comparator<DeadLetter> ORDER =
      Comparator.comparing(DeadLetter::lastFailureAt).thenComparing(DeadLetter::id);

  private final Map<String, DeadLetter> byId = new HashMap<>();
  private final TreeSet<DeadLetter> ordered = new TreeSet<>(ORDER);

  @Override
  public synchronized void add(DeadLetter deadLetter) {
    Checks.requireNonNull("deadLetter", deadLetter);
    DeadLetter previous = byId.put(deadLetter.id(), deadLetter);
    if (previous != null) {
      ordered.remove(previous);
    }
    ordered.add(deadLetter);
  }

  @Override
  public synchronized Optional<DeadLetter> find(String id) {
    Checks.requireNonBlank("id", id);
    return Optional.ofNullable(byId.get(id));
  }

  @Override
  public synchronized List<DeadLetter> list(DeadLetterQuery query) {
    Checks.requireNonNull("query", query);
    List<DeadLetter> page = new ArrayList<>(Math.min(query.limit(), 64));
    int skipped = 0;
    for (DeadLetter d : ordered) {
      if (!query.matches(d)) {
        continue;
      }
      if (skipped < query.offset()) {
        skipped++;
        continue;
      }
      page.add(d);
      if (page.size() == query.limit()) {
        break;
      }
    }
    return page;
  }

  @Override
  public synchronized long count(DeadLetterQuery query) {
    Checks.requireNonNull("query", query);
    long n = 0;
    for (DeadLetter d : ordered) {
      if (query.matches(d)) {
        n++;
      }
    }
    return n;
  }

  @Override
  public synchronized Optional<DeadLetter> remove(String id) {
    Checks.requireNonBlank("id", id);
    DeadLetter d = byId.remove(id);
    if (d != null) {
      ordered.remove(d);
    }
    return Optional.ofNullable(d);
  }

  @Override
  public synchronized long purge(DeadLetterQuery query) {
    Checks.requireNonNull("query", query);
    long n = 0;
    for (Iterator<DeadLetter> it = ordered.iterator(); it.hasNext(); ) {
      DeadLetter d = it.next();
      if (query.matches(d)) {
        it.remove();
        byId.remove(d.id());
        n++;
      }
    }
    return n;
  }

  /** O(k log n) for k removed. */
  @Override
  public synchronized long purgeFailedBefore(Instant failedBefore, int max) {
    Checks.requireNonNull("failedBefore", failedBefore);
    Checks.requirePositive("max", max);
    long n = 0;
    while (n < max && !ordered.isEmpty() && ordered.first().lastFailureAt().isBefore(failedBefore)) {
      byId.remove(ordered.pollFirst().id());
      n++;
    }
    return n;
  }

  /** O(k log n) for k removed. */
  @Override
  public synchronized long trimTo(long keep, int max) {
    if (keep < 0) {
      throw new IllegalArgumentException("keep must be >= 0, was " + keep);
    }
    Checks.requirePositive("max", max);
    long n = 0;
    while (n < max && ordered.size() > keep) {
      byId.remove(ordered.pollFirst().id());
      n++;
    }
    return n;
  }
}
