package io.relaykit.ordering;

import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Turns out-of-order completion into a safe commit position: per partition, the committable offset
 * is the lowest offset still in flight, so a crash replays only unfinished work (at-least-once),
 * never skips it.
 *
 * <p>A consumer runtime {@linkplain #track tracks} each record as it hands it to a worker (offsets
 * of one partition strictly increasing, gaps allowed: Kafka offsets skip over compacted records and
 * transaction markers), workers {@linkplain #complete complete} records in any order, and the poll
 * loop commits {@link #committable(Object)}: the lowest incomplete offset, or one past the highest
 * tracked offset once all are complete. The committable offset of a partition never goes back.
 *
 * <p>Cost: {@code track}, {@code complete} and {@code committable} are O(log n) with n the
 * partition's in-flight count; memory is O(in-flight records + partitions), whatever the gaps
 * between offsets (only incomplete offsets are kept, plus the highest tracked one).
 *
 * <p>Concurrency: thread-safe. Each partition has its own lock, so the poll thread tracking one
 * partition and workers completing records of others do not contend; {@link #inFlight()} is a
 * single atomic read. The intended model is one poll thread that calls {@code track}, {@code
 * committable} and {@code revoke}, and any number of workers that call {@code complete}.
 *
 * <p>Rebalances: {@link #revoke} drops a partition's state. Completions that arrive afterwards are
 * not errors (a worker may finish a record after its partition moved away): they return {@code
 * false}. If the same partition is assigned again, its records are tracked anew; a late completion
 * through the {@link Ticket} of the earlier assignment still returns {@code false} and cannot
 * complete the new assignment's record of the same offset. Completing by {@code (partition,
 * offset)} cannot tell assignments apart, so runtimes that revoke partitions should complete by
 * ticket. To re-read a partition from an earlier offset without a rebalance (a seek back), revoke
 * it first: tracking only moves forward.
 *
 * <p>Each record remembers when it was tracked (from the injected {@link InstantSource}), so the
 * age of the oldest in-flight record is available for monitoring.
 *
 * @param <P> the partition identity (a Kafka {@code TopicPartition}, a queue name, an int); needs
 *     {@code equals}/{@code hashCode}
 */
public final class OffsetTracker<P> {

  /**
   * A tracked record: which partition, which offset, and which assignment of that partition
   * tracked it. Pass it to {@link #complete(Ticket)}.
   *
   * @param <P> the partition identity
   */
  public static final class Ticket<P> {
    private final P partition;
    private final long offset;
    private final PartitionState state;

    private Ticket(P partition, long offset, PartitionState state) {
      this.partition = partition;
      this.offset = offset;
      this.state = state;
    }

    /**
     * The record's partition.
     *
     * @return the partition passed to {@link #track}
     */
    public P partition() {
      return partition;
    }

    /**
     * The record's offset.
     *
     * @return the offset passed to {@link #track}, {@code >= 0}
     */
    public long offset() {
      return offset;
    }

    @Override
    public String toString() {
      return "Ticket[" + partition + "@" + offset + "]";
    }
  }

  private final InstantSource clock;
  private final ConcurrentHashMap<P, PartitionState> partitions = new ConcurrentHashMap<>();
  private final AtomicLong inFlight = new AtomicLong();

  /** A tracker timing records with the system clock. */
  public OffsetTracker() {
    this(InstantSource.system());
  }

  /**
   * A tracker timing records with {@code clock}, for the oldest-in-flight age.
   *
   * @param clock the time source; not null
   * @throws NullPointerException if {@code clock} is null
   */
  public OffsetTracker(InstantSource clock) {
    this.clock = Objects.requireNonNull(clock, "clock");
  }

  /**
   * Records that {@code offset} of {@code partition} is now in flight.
   *
   * @param partition the partition; not null
   * @param offset the record's offset, {@code >= 0}
   * @return the ticket to complete the record with
   * @throws IllegalArgumentException if {@code partition} is null, {@code offset} is negative, or
   *     {@code offset} is not greater than the highest offset tracked for this partition since it
   *     was last revoked (a duplicate or a step back)
   */
  public Ticket<P> track(P partition, long offset) {
    requirePartition(partition);
    if (offset < 0) {
      throw new IllegalArgumentException("offset must be >= 0, was " + offset);
    }
    Instant now = clock.instant();
    while (true) {
      PartitionState state = partitions.computeIfAbsent(partition, p -> new PartitionState());
      synchronized (state) {
        if (state.revoked) {
          continue; // lost a race with revoke(): use the fresh state
        }
        if (offset <= state.highest) {
          throw new IllegalArgumentException("offset " + offset + " of partition " + partition
              + " must be greater than the highest tracked offset " + state.highest
              + (state.incomplete.containsKey(offset) ? " (already in flight)" : ""));
        }
        state.highest = offset;
        state.incomplete.put(offset, now);
        inFlight.incrementAndGet();
        return new Ticket<>(partition, offset, state);
      }
    }
  }

  /**
   * Marks the ticket's record complete.
   *
   * @param ticket a ticket {@link #track} returned
   * @return true if it was completed; false if its partition was revoked since it was tracked (the
   *     completion is ignored)
   * @throws IllegalArgumentException if the ticket is null, was not issued by this tracker, or was
   *     already completed
   */
  public boolean complete(Ticket<P> ticket) {
    if (ticket == null) {
      throw new IllegalArgumentException("ticket must not be null");
    }
    PartitionState state = ticket.state;
    synchronized (state) {
      if (state.revoked) {
        return false;
      }
      if (partitions.get(ticket.partition) != state) {
        throw new IllegalArgumentException(ticket + " was not issued by this tracker");
      }
      return completeLocked(state, ticket.partition, ticket.offset);
    }
  }

  /**
   * Whether {@code ticket} belongs to the current assignment of its partition: false once the
   * partition was {@linkplain #revoke revoked} after the ticket was issued, even if the partition
   * was assigned again since. A runtime checks it before work done under the ticket writes
   * anything (a retry copy, a dead letter, a hold on its key): work of an earlier assignment is
   * stale and writes nothing. O(1), lock-free.
   *
   * @param ticket a ticket {@link #track} returned
   * @return true while the ticket's assignment of the partition is not revoked
   * @throws IllegalArgumentException if the ticket is null
   */
  public boolean isCurrent(Ticket<P> ticket) {
    if (ticket == null) {
      throw new IllegalArgumentException("ticket must not be null");
    }
    return !ticket.state.revoked;
  }

  /**
   * Marks {@code offset} of {@code partition} complete. Completions may come in any order.
   *
   * @param partition the partition; not null
   * @param offset the record's offset
   * @return true if it was completed; false if the partition has no state (revoked, or never
   *     tracked), in which case the completion is ignored
   * @throws IllegalArgumentException if the partition is tracked but {@code offset} is not in flight
   *     in it (never tracked, or already completed)
   */
  public boolean complete(P partition, long offset) {
    requirePartition(partition);
    PartitionState state = partitions.get(partition);
    if (state == null) {
      return false;
    }
    synchronized (state) {
      if (state.revoked) {
        return false;
      }
      return completeLocked(state, partition, offset);
    }
  }

  private boolean completeLocked(PartitionState state, P partition, long offset) {
    if (state.incomplete.remove(offset) == null) {
      String why = offset > state.highest ? "was never tracked" : "is not in flight"
          + " (already completed, or never tracked)";
      throw new IllegalArgumentException("offset " + offset + " of partition " + partition + " "
          + why);
    }
    inFlight.decrementAndGet();
    return true;
  }

  /**
   * The offset to commit for {@code partition}: the lowest incomplete offset, or one past the
   * highest tracked offset when every tracked record is complete. Never decreases between
   * revocations.
   *
   * @param partition the partition; not null
   * @return empty if nothing was tracked for the partition since it was (re)assigned
   */
  public OptionalLong committable(P partition) {
    requirePartition(partition);
    PartitionState state = partitions.get(partition);
    if (state == null) {
      return OptionalLong.empty();
    }
    synchronized (state) {
      return state.revoked ? OptionalLong.empty() : OptionalLong.of(state.committable());
    }
  }

  /**
   * The committable offset of every partition that has state, in no particular order: what a poll
   * loop commits in one call. O(partitions * log n).
   *
   * @return a new map from partition to the offset to commit; empty when nothing is tracked
   */
  public Map<P, Long> committableOffsets() {
    Map<P, Long> result = new LinkedHashMap<>();
    partitions.forEach((partition, state) -> {
      synchronized (state) {
        if (!state.revoked) {
          result.put(partition, state.committable());
        }
      }
    });
    return result;
  }

  /**
   * Drops every record of {@code partition}: call it when the partition is revoked or lost. Later
   * completions of its records return {@code false}; a later {@code track} starts afresh at any
   * offset.
   *
   * @param partition the partition; not null
   * @return how many records were still in flight (their work may be redone by the next owner)
   */
  public int revoke(P partition) {
    requirePartition(partition);
    PartitionState state = partitions.get(partition);
    if (state == null) {
      return 0;
    }
    synchronized (state) {
      if (state.revoked) {
        return 0; // a concurrent revoke got here first
      }
      // mark and unmap under the lock: a completion holding the lock sees either a live, mapped
      // state or a revoked one, never a live state that is no longer mapped
      state.revoked = true;
      partitions.remove(partition, state);
      int dropped = state.incomplete.size();
      state.incomplete.clear();
      inFlight.addAndGet(-dropped);
      return dropped;
    }
  }

  /**
   * What a partition's commit position leaves out: the position, one past the highest offset
   * tracked, and every incomplete offset. Every tracked offset between the position and the end
   * that is not incomplete is complete; a runtime that hands a partition over can name those
   * records, so the next owner need not run them again.
   *
   * @param committable the offset to commit ({@link OffsetTracker#committable})
   * @param end one past the highest offset tracked
   * @param incomplete the incomplete offsets, ascending (a copy)
   */
  public record Pending(long committable, long end, long[] incomplete) {}

  /**
   * The {@link Pending} state of {@code partition}. O(n) in its incomplete records: for rebalances
   * and closes, not the hot path.
   *
   * @param partition the partition; not null
   * @return empty if nothing was tracked for the partition since it was (re)assigned
   */
  public Optional<Pending> pending(P partition) {
    requirePartition(partition);
    PartitionState state = partitions.get(partition);
    if (state == null) {
      return Optional.empty();
    }
    synchronized (state) {
      if (state.revoked) {
        return Optional.empty();
      }
      long[] open = new long[state.incomplete.size()];
      int i = 0;
      for (Long o : state.incomplete.keySet()) {
        open[i++] = o;
      }
      return Optional.of(new Pending(state.committable(), state.highest + 1, open));
    }
  }

  /**
   * The number of incomplete records of {@code partition}; 0 if it has no state. O(1).
   *
   * @param partition the partition; not null
   * @return the count, {@code >= 0}
   */
  public int inFlight(P partition) {
    requirePartition(partition);
    PartitionState state = partitions.get(partition);
    if (state == null) {
      return 0;
    }
    synchronized (state) {
      return state.incomplete.size();
    }
  }

  /**
   * The number of incomplete records across all partitions. O(1).
   *
   * @return the count, {@code >= 0}
   */
  public long inFlight() {
    return inFlight.get();
  }

  /**
   * How long the oldest incomplete record of any partition has been in flight, measured with the
   * tracker's clock; empty when nothing is in flight. O(partitions * log n).
   *
   * @return the age, or empty
   */
  public Optional<Duration> oldestInFlightAge() {
    Instant oldest = null;
    for (PartitionState state : partitions.values()) {
      synchronized (state) {
        Instant first = state.oldestTrackedAt();
        if (first != null && (oldest == null || first.isBefore(oldest))) {
          oldest = first;
        }
      }
    }
    return oldest == null ? Optional.empty() : Optional.of(ageOf(oldest));
  }

  /**
   * How long the oldest incomplete record of {@code partition} has been in flight; empty when it has
   * none.
   *
   * @param partition the partition; not null
   * @return the age, or empty
   */
  public Optional<Duration> oldestInFlightAge(P partition) {
    requirePartition(partition);
    PartitionState state = partitions.get(partition);
    if (state == null) {
      return Optional.empty();
    }
    synchronized (state) {
      Instant first = state.oldestTrackedAt();
      return first == null ? Optional.empty() : Optional.of(ageOf(first));
    }
  }

  private Duration ageOf(Instant trackedAt) {
    Duration age = Duration.between(trackedAt, clock.instant());
    return age.isNegative() ? Duration.ZERO : age; // a wall clock may step back
  }

  private static void requirePartition(Object partition) {
    if (partition == null) {
      throw new IllegalArgumentException("partition must not be null");
    }
  }

  @Override
  public String toString() {
    return "OffsetTracker[partitions=" + partitions.size() + ", inFlight=" + inFlight.get() + "]";
  }

  /*
   * Implementation notes. Per partition we keep only the incomplete offsets (a TreeMap from offset
   * to the instant it was tracked) and the highest offset ever tracked. Because tracking is strictly
   * increasing, the smallest key is both the commit position and the oldest record, and "all
   * complete" means "committable = highest + 1". A ring or bitset window over offsets would avoid
   * boxing, but its size follows the offset span, not the in-flight count: one stuck record behind
   * a fast flow, or a gap of a million compacted offsets, would grow it without bound.
   */
  private static final class PartitionState {
    final TreeMap<Long, Instant> incomplete = new TreeMap<>();
    long highest = -1;
    /** Written under the state's lock; read without it by {@link #isCurrent}. */
    volatile boolean revoked;

    long committable() {
      return incomplete.isEmpty() ? highest + 1 : incomplete.firstKey();
    }

    Instant oldestTrackedAt() {
      return incomplete.isEmpty() ? null : incomplete.firstEntry().getValue();
    }
  }
}
