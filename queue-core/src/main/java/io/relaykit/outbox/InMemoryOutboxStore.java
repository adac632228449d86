package io.relaykit.outbox;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.internal.Checks;
import io.relaykit.message.Message;
import io.relaykit.trace.TracePropagation;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The embedded {@link OutboxStore}: outbox rows in memory, for tests, the demo and services whose
 * business state is itself in memory. {@link #append} stands in for the insert a JDBC outbox does
 * in the business transaction. Lost with the process.
 *
 * <p>Thread-safe (one lock). A claim costs O(m log n) for m rows claimed and n unsent rows: only
 * claimable rows (keyless rows and the oldest unsent row of each key) are indexed as candidates,
 * later rows of a key wait in that key's queue, and leased or rescheduled rows wait in a time index
 * until they are due.
 *
 * <p>Time: built with a clock ({@link #InMemoryOutboxStore(InstantSource)}), the store decides
 * readiness, lease expiry and retention on that clock alone, whatever time its callers pass in (see
 * {@link OutboxStore}'s "one clock" rule); built without one, it uses the time each caller passes,
 * which is right when every relay of the process reads one clock.
 */
public final class InMemoryOutboxStore implements OutboxStore {
  private final OutboxWakeup wakeup = OutboxWakeup.create();

  private static final Comparator<Row> BY_DUE =
      Comparator.comparing((Row r) -> r.dueAt).thenComparingLong(r -> r.sequence);

  /** The store's own clock, or null to use the time callers pass. */
  private final InstantSource clock;
  private final OutboxBound bound;
  private final TraceCapture traceCapture;
  private long refusedAppends;
  private long overBoundAppends;
  private long nextSequence = 1;
  /** Every unsent row by sequence. */
  private final TreeMap<Long, Row> unsent = new TreeMap<>();
  /** Unsent rows of each key, oldest first; only the head may be a candidate. */
  private final Map<String, ArrayDeque<Row>> byKey = new HashMap<>();
  /** Candidates claimable now: no lease, not waiting for a retry. */
  private final TreeSet<Row> ready = new TreeSet<>(Comparator.comparingLong((Row r) -> r.sequence));
  /** Candidates leased or rescheduled, by the time they become claimable. */
  private final TreeSet<Row> waiting = new TreeSet<>(BY_DUE);
  /** Sent rows by sent time, for purging. */
  private final TreeSet<Row> sent =
      new TreeSet<>(Comparator.comparing((Row r) -> r.sentAt).thenComparingLong(r -> r.sequence));

  /** A store that decides on the time its callers pass in. */
  public InMemoryOutboxStore() {
    this.clock = null;
    this.bound = OutboxBound.unbounded();
    this.traceCapture = TraceCapture.discovered();
  }

  /**
   * A store that decides readiness, lease expiry and retention on {@code clock}, ignoring the time
   * callers pass: several relays with skewed clocks share it as they would share a database.
   *
   * @param clock the store's clock; not null
   * @throws IllegalArgumentException if {@code clock} is null
   */
  public InMemoryOutboxStore(InstantSource clock) {
    this(clock, OutboxBound.unbounded());
  }

  /**
   * A store on {@code clock} whose appends are checked against {@code bound}, exactly: the
   * unsent rows are counted under the store's lock.
   *
   * @param clock the store's clock; not null
   * @param bound the bound appends are checked against; not null
   * @throws IllegalArgumentException if {@code clock} or {@code bound} is null
   */
  public InMemoryOutboxStore(InstantSource clock, OutboxBound bound) {
    this(clock, bound, TracePropagation.discovered());
  }

  /**
   * A store on {@code clock}, checked against {@code bound}, whose appends capture the caller's
   * trace context from {@code propagation} (see {@link TraceCapture}); the other constructors use
   * {@link TracePropagation#discovered()}.
   *
   * @param clock the store's clock
   * @param bound the bound appends are checked against
   * @param propagation where appends capture the caller's trace context from
   * @throws IllegalArgumentException if an argument is null
   */
  public InMemoryOutboxStore(InstantSource clock, OutboxBound bound,
      TracePropagation propagation) {
    this.clock = Checks.requireNonNull("clock", clock);
    this.bound = Checks.requireNonNull("bound", bound);
    this.traceCapture = TraceCapture.of(Checks.requireNonNull("propagation", propagation));
  }

  /**
   * How appends capture the caller's trace context, with its counts.
   *
   * @return this store's capture
   */
  public TraceCapture traceCapture() {
    return traceCapture;
  }

  @Override
  public OutboxBound bound() {
    return bound;
  }

  /** Appends refused because the backlog was at its bound (REFUSE). */
  @Override
  public synchronized long refusedAppends() {
    return refusedAppends;
  }

  /** Appends accepted over the bound (ACCEPT). */
  @Override
  public synchronized long overBoundAppends() {
    return overBoundAppends;
  }

  /** The store's now: its own clock's, else the caller's. */
  private Instant now(Instant callerNow) {
    return clock == null ? callerNow : clock.instant();
  }

  /**
   * Appends a message for {@code destination}, claimable at once (unless an earlier row of its key
   * is unsent). A message without a {@code traceparent} gets the caller's current trace context
   * ({@link #traceCapture()}); the claimed record holds that message.
   *
   * @param destination where the message is to be published; not blank
   * @param message the message; not null
   * @return the row's sequence
   * @throws IllegalArgumentException if {@code destination} is blank or {@code message} null
   * @throws OutboxFullException if the store's {@link OutboxBound} refuses it (nothing is added)
   */
  public long append(String destination, Message message) {
    Checks.requireNonBlank("destination", destination);
    Checks.requireNonNull("message", message);
    long seq = insert(destination, traceCapture.stamp(message)); // outside the lock: user code
    wakeup.wake(); // the row is claimable now: no transaction to wait for
    return seq;
  }

  /**
   * Woken after every {@link #append}, which is visible to claims at once: this JVM's relays of
   * the store claim it without waiting out their poll interval.
   */
  @Override
  public java.util.Optional<OutboxWakeup> wakeup() {
    return java.util.Optional.of(wakeup);
  }

  private synchronized long insert(String destination, Message message) {
    try {
      if (bound.admit(unsent.size(), "in-memory outbox")) {
        overBoundAppends++;
      }
    } catch (OutboxFullException e) {
      refusedAppends++;
      throw e;
    }
    Row row = new Row(nextSequence++, destination, message);
    unsent.put(row.sequence, row);
    String key = message.key().orElse(null);
    if (key == null) {
      ready.add(row);
    } else {
      ArrayDeque<Row> queue = byKey.computeIfAbsent(key, k -> new ArrayDeque<>());
      queue.addLast(row);
      if (queue.size() == 1) {
        ready.add(row);
      }
    }
    return row.sequence;
  }

  @Override
  public List<OutboxRecord> claim(String owner, int max, Duration lease, Instant now) {
    return claim(owner, max, 1, lease, now);
  }

  /**
   * Runs: the followers of a claimed key head come from the key's queue, in order, while they are
   * not rescheduled and not under another live lease. Leased followers are not candidates (only a
   * key's head is), so they wait in no index; a follower becomes a candidate when it is its key's
   * head, through the time index (its lease, if any, still hides it).
   */
  @Override
  public synchronized List<OutboxRecord> claim(String owner, int max, int maxRun,
      Duration lease, Instant now) {
    if (maxRun < 1) {
      throw new IllegalArgumentException("maxRun must be >= 1, was " + maxRun);
    }
    Checks.requireNonBlank("owner", owner);
    Checks.requirePositive("max", max);
    Checks.requirePositive("lease", lease);
    Checks.requireNonNull("now", now);
    Instant at = now(now);
    Row due;
    while (!waiting.isEmpty() && !(due = waiting.first()).dueAt.isAfter(at)) {
      waiting.pollFirst();
      ready.add(due);
    }
    List<OutboxRecord> claimed = new ArrayList<>(Math.min(max, ready.size()));
    Instant expiresAt = at.plus(lease);
    while (claimed.size() < max && !ready.isEmpty()) {
      Row row = ready.pollFirst();
      row.owner = owner;
      row.dueAt = expiresAt;
      waiting.add(row);
      claimed.add(new OutboxRecord(row.sequence, row.destination, row.message, row.attempts,
          row.firstFailureAt, owner, expiresAt));
    }
    if (maxRun > 1 && claimed.size() < max) {
      List<ArrayDeque<Row>> runs = new ArrayList<>();
      for (OutboxRecord r : claimed) {
        ArrayDeque<Row> queue = r.message().key().map(byKey::get).orElse(null);
        if (queue != null && queue.size() > 1) {
          runs.add(queue);
        }
      }
      int room = max - claimed.size();
      for (int i = 0; i < runs.size() && room > 0; i++) {
        int share = Math.min(maxRun - 1, (room + runs.size() - i - 1) / (runs.size() - i));
        java.util.Iterator<Row> it = runs.get(i).iterator();
        it.next(); // the head, claimed above
        int taken = 0;
        while (taken < share && it.hasNext()) {
          Row f = it.next();
          if (f.dueAt.isAfter(at)) {
            break; // rescheduled, or leased by another relay: the run stops before it
          }
          f.owner = owner;
          f.dueAt = expiresAt;
          claimed.add(new OutboxRecord(f.sequence, f.destination, f.message, f.attempts,
              f.firstFailureAt, owner, expiresAt));
          taken++;
        }
        room -= taken;
      }
      claimed.sort(Comparator.comparingLong(OutboxRecord::sequence));
    }
    return claimed;
  }

  @Override
  public synchronized int release(String owner, Collection<Long> sequences) {
    Checks.requireNonBlank("owner", owner);
    Checks.requireNonNull("sequences", sequences);
    int released = 0;
    for (Long sequence : sequences) {
      Row row = held(owner, Checks.requireNonNull("sequence", sequence));
      if (row != null) {
        boolean candidate = waiting.remove(row) | ready.remove(row);
        row.owner = null;
        row.dueAt = Instant.MIN;
        if (candidate) {
          ready.add(row);
        }
        released++;
      }
    }
    return released;
  }

  /** Whether {@code row} is a candidate: keyless, or its key's head. */
  private boolean isHead(Row row) {
    String key = row.message.key().orElse(null);
    return key == null || byKey.get(key).peekFirst() == row;
  }

  @Override
  public synchronized int markSent(String owner, Collection<Long> sequences, Instant now) {
    Checks.requireNonBlank("owner", owner);
    Checks.requireNonNull("sequences", sequences);
    Checks.requireNonNull("now", now);
    Instant at = now(now);
    int changed = 0;
    for (Long sequence : sequences) {
      Row row = held(owner, Checks.requireNonNull("sequence", sequence));
      if (row != null) {
        leave(row);
        row.sentAt = at;
        sent.add(row);
        changed++;
      }
    }
    return changed;
  }

  @Override
  public synchronized boolean reschedule(String owner, long sequence, int attempts,
      Instant failedAt, Instant notBefore, String error) {
    Checks.requireNonBlank("owner", owner);
    if (attempts < 1) {
      throw new IllegalArgumentException("attempts must be >= 1, was " + attempts);
    }
    Checks.requireNonNull("failedAt", failedAt);
    Checks.requireNonNull("notBefore", notBefore);
    Row row = held(owner, sequence);
    if (row == null) {
      return false;
    }
    waiting.remove(row);
    row.owner = null;
    row.attempts = attempts;
    if (row.firstFailureAt == null) {
      row.firstFailureAt = failedAt;
    }
    row.dueAt = clock == null ? notBefore : clock.instant().plus(Duration.between(failedAt,
        notBefore));
    if (isHead(row)) {
      waiting.add(row);
    }
    return true;
  }

  @Override
  public synchronized boolean markDead(String owner, long sequence) {
    Checks.requireNonBlank("owner", owner);
    Row row = held(owner, sequence);
    if (row == null) {
      return false;
    }
    leave(row);
    return true;
  }

  /**
   * Under the store's lock: if {@code owner} holds the row, stores the dead letter and then takes
   * the row out, so no other relay can claim or send it in between; if {@code deadLetters} throws,
   * the row stays, still held. Holds the store's lock for the dead-letter store's call.
   */
  @Override
  public synchronized boolean moveToDeadLetters(String owner, long sequence,
      DeadLetter deadLetter, DeadLetterStore deadLetters) {
    Checks.requireNonBlank("owner", owner);
    Checks.requireNonNull("deadLetter", deadLetter);
    Checks.requireNonNull("deadLetters", deadLetters);
    Row row = held(owner, sequence);
    if (row == null) {
      return false;
    }
    deadLetters.add(deadLetter);
    leave(row);
    return true;
  }

  @Override
  public synchronized Set<Long> renewLease(String owner, Collection<Long> sequences,
      Duration lease, Instant now) {
    Checks.requireNonBlank("owner", owner);
    Checks.requireNonNull("sequences", sequences);
    Checks.requirePositive("lease", lease);
    Checks.requireNonNull("now", now);
    Instant until = now(now).plus(lease);
    Set<Long> kept = new HashSet<>();
    for (Long sequence : sequences) {
      Row row = held(owner, Checks.requireNonNull("sequence", sequence));
      // A held row waits until its lease ends, or, once that passed, may be ready again; a
      // rescheduled one has no owner.
      if (row != null) {
        waiting.remove(row);
        ready.remove(row);
        row.dueAt = until;
        if (isHead(row)) {
          waiting.add(row);
        }
        kept.add(sequence);
      }
    }
    return kept;
  }

  @Override
  public synchronized int purgeSent(Instant sentBefore) {
    Checks.requireNonNull("sentBefore", sentBefore);
    int purged = 0;
    while (!sent.isEmpty() && sent.first().sentAt.isBefore(sentBefore)) {
      sent.pollFirst();
      purged++;
    }
    return purged;
  }

  @Override
  public synchronized int purgeSentOlderThan(Duration retention, int max, Instant now) {
    Checks.requireNonNull("retention", retention);
    if (retention.isNegative()) {
      throw new IllegalArgumentException("retention must be a duration >= 0, was " + retention);
    }
    Checks.requirePositive("max", max);
    Checks.requireNonNull("now", now);
    Instant cutoff = now(now).minus(retention);
    int purged = 0;
    while (purged < max && !sent.isEmpty() && sent.first().sentAt.isBefore(cutoff)) {
      sent.pollFirst();
      purged++;
    }
    return purged;
  }

  @Override
  public synchronized OutboxStats stats(Instant now) {
    Checks.requireNonNull("now", now);
    Duration oldest = Duration.ZERO;
    if (!unsent.isEmpty()) {
      Duration age = Duration.between(unsent.firstEntry().getValue().message.createdAt(), now);
      oldest = age.isNegative() ? Duration.ZERO : age;
    }
    return new OutboxStats(unsent.size(), oldest, sent.size());
  }

  /** The row if {@code owner} still holds its claim (a takeover replaced the owner). */
  private Row held(String owner, long sequence) {
    Row row = unsent.get(sequence);
    return row != null && owner.equals(row.owner) ? row : null;
  }

  /** Takes an unsent row out of the outbox and promotes the next row of its key. */
  private void leave(Row row) {
    unsent.remove(row.sequence);
    waiting.remove(row);
    ready.remove(row);
    row.owner = null;
    String key = row.message.key().orElse(null);
    if (key != null) {
      ArrayDeque<Row> queue = byKey.get(key);
      if (queue.peekFirst() != row) {
        queue.remove(row); // a follower of a run, sent before its head was marked
        return;
      }
      queue.pollFirst();
      if (queue.isEmpty()) {
        byKey.remove(key);
      } else {
        // Through the time index: a follower leased in a run, or rescheduled, is not claimable
        // before its due time.
        waiting.add(queue.peekFirst());
      }
    }
  }

  private static final class Row {
    final long sequence;
    final String destination;
    final Message message;
    String owner;
    int attempts;
    Instant firstFailureAt;
    /** While waiting: when the lease lapses or the retry is due. */
    Instant dueAt = Instant.MIN;
    Instant sentAt;

    Row(long sequence, String destination, Message message) {
      this.sequence = sequence;
      this.destination = destination;
      this.message = message;
    }
  }
}
