package io.relaykit.bench;

import io.relaykit.ordering.OffsetTracker;
import java.util.OptionalLong;
import java.util.SplittableRandom;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * The consumer's commit bookkeeping: with {@value #IN_FLIGHT} records in flight, each operation
 * completes one random in-flight offset, tracks the next offset, and asks for the committable
 * position, as a worker pool finishing out of order does.
 *
 * <p>{@code RELAYKIT} is {@link OffsetTracker}; {@code TREE_SET} is the obvious structure, a
 * {@code TreeSet} of incomplete offsets whose first element is the commit position.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class OffsetTrackerBenchmark {

  static final int IN_FLIGHT = 10_000;
  private static final String PARTITION = "orders-0";

  /** The tracker under test. */
  public enum Impl { RELAYKIT, TREE_SET }

  @Param
  Impl impl;

  private OffsetTracker<String> tracker;
  private TreeSet<Long> incomplete;
  private final long[] inFlight = new long[IN_FLIGHT];
  private final SplittableRandom random = new SplittableRandom(42);
  private long next;

  @Setup(Level.Trial)
  public void setUp() {
    tracker = new OffsetTracker<>();
    incomplete = new TreeSet<>();
    for (int i = 0; i < IN_FLIGHT; i++) {
      track(next);
      inFlight[i] = next++;
    }
  }

  @Benchmark
  public long completeTrackCommit() {
    int slot = random.nextInt(IN_FLIGHT);
    complete(inFlight[slot]);
    track(next);
    inFlight[slot] = next++;
    return committable();
  }

  private void track(long offset) {
    if (impl == Impl.RELAYKIT) {
      tracker.track(PARTITION, offset);
    } else {
      incomplete.add(offset);
    }
  }

  private void complete(long offset) {
    if (impl == Impl.RELAYKIT) {
      tracker.complete(PARTITION, offset);
    } else {
      incomplete.remove(offset);
    }
  }

  private long committable() {
    if (impl == Impl.RELAYKIT) {
      OptionalLong c = tracker.committable(PARTITION);
      return c.orElse(-1);
    }
    return incomplete.isEmpty() ? next : incomplete.first();
  }
}
