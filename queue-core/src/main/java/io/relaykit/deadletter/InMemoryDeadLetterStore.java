package io.relaykit.deadletter;

import io.relaykit.internal.Checks;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
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
 * id. Supports every operation, replay marks included (their leases on the clock it was given).
 * Lost with the process: use a durable store in production.
 *
 * <p>Thread-safe (one lock). {@link #add}, {@link #find} and {@link #remove} are O(log n);
 * {@link #list}, {@link #count} and {@link #purge} scan in order, O(n) in the worst case.
 */
public final class InMemoryDeadLetterStore implements DeadLetterStore {

  /** An empty store; replay-mark leases on the system clock. */
  public InMemoryDeadLetterStore() {
    this(InstantSource.system());
  }

  /**
   * An empty store whose replay-mark leases run on {@code clock}.
   *
   * @param clock the clock replay marks lapse on
   * @throws IllegalArgumentException if {@code clock} is null
   */
  public InMemoryDeadLetterStore(InstantSource clock) {
    this.clock = Checks.requireNonNull("clock", clock);
  }

  private record Mark(String token, Instant until) {}

  private final InstantSource clock;
  private final Map<String, Mark> marks = new HashMap<>();

  private static final Comparator<DeadLetter> ORDER =
      Comparator.comparing(DeadLetter::lastFailureAt).thenComparing(DeadLetter::id);

  private final Map<String, DeadLetter> byId = new HashMap<>();
  private final TreeSet<DeadLetter> ordered = new TreeSet<>(ORDER);

  @Override
  public synchronized void add(DeadLetter deadLetter) {
    Checks.requireNonNull("deadLetter", deadLetter);
    DeadLetter previous = byId.put(deadLetter.id(), deadLetter);
    marks.remove(deadLetter.id());
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
    for (DeadLetter d : query.newestFirst() ? ordered.descendingSet() : ordered) {
      if (!query.isAfterPosition(d) || !query.matches(d)) {
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
      marks.remove(id);
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
        marks.remove(d.id());
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
      String gone = ordered.pollFirst().id();
      byId.remove(gone);
      marks.remove(gone);
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
      String gone = ordered.pollFirst().id();
      byId.remove(gone);
      marks.remove(gone);
      n++;
    }
    return n;
  }

  @Override
  public boolean marksReplays() {
    return true;
  }

  @Override
  public synchronized Optional<DeadLetter> beginReplay(String id, String token, Duration lease) {
    Checks.requireNonBlank("id", id);
    Checks.requireNonBlank("token", token);
    Checks.requirePositive("lease", lease);
    DeadLetter d = byId.get(id);
    if (d == null) {
      return Optional.empty();
    }
    Instant now = clock.instant();
    Mark m = marks.get(id);
    if (m != null && !m.token().equals(token) && now.isBefore(m.until())) {
      throw new ReplayInProgressException(id, m.until());
    }
    marks.put(id, new Mark(token, now.plus(lease)));
    return Optional.of(d);
  }

  @Override
  public synchronized boolean finishReplay(String id, String token) {
    Checks.requireNonBlank("id", id);
    Checks.requireNonBlank("token", token);
    Mark m = marks.get(id);
    if (m == null || !m.token().equals(token)) {
      return false;
    }
    return remove(id).isPresent();
  }

  @Override
  public synchronized boolean abandonReplay(String id, String token) {
    Checks.requireNonBlank("id", id);
    Checks.requireNonBlank("token", token);
    Mark m = marks.get(id);
    return m != null && m.token().equals(token) && marks.remove(id) != null;
  }
}
