package io.relaykit.bench;

import io.relaykit.queue.Priority;
import io.relaykit.queue.QueuedEvent;
import io.relaykit.queue.ReportEvent;
import io.relaykit.queue.ReportQueue;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * The report queue's cost per event, beside the naive design it replaced, in the same run.
 *
 * <p>{@code cycle}: one event's enqueue, drain and ack, in batches of {@value #BATCH}, with the
 * queue kept near {@code capacity} pending events (pre-filled with LOW events that the NORMAL cycle
 * never reaches). Reported per event. Implementations: {@code RELAYKIT} (ReportQueue, memory
 * journal); {@code SEED_BASELINE} (the naive design it replaces: full scans and whole-state
 * copies). Its ratios: flat cost from 1 000 to 100 000 pending, and against the seed design.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
// A fixed, pre-touched heap for every implementation: heap growth during a short run otherwise
// shows up as a slow first second for whichever queue allocates most.
@Fork(jvmArgsAppend = {"-Xms2g", "-Xmx2g", "-XX:+AlwaysPreTouch"})
public class ReportQueueBenchmark {

  static final int BATCH = 20;
  static final String PAYLOAD = "{\"sku\":\"A-1\",\"qty\":1,\"amount\":1999}";

  /** The queue under test. */
  public enum Impl { RELAYKIT, SEED_BASELINE }

  @Param
  Impl impl;

  @Param({"1000", "100000"})
  int capacity;

  private CycleQueue queue;
  private long sequence;

  @Setup(Level.Trial)
  public void setUp() {
    queue = CycleQueue.create(impl, capacity);
    // Keep the queue near capacity: LOW events stay pending under the NORMAL cycle.
    queue.preload(capacity - BATCH, Priority.LOW);
  }

  @Benchmark
  @OperationsPerInvocation(BATCH)
  public int cycle() {
    for (int i = 0; i < BATCH; i++) {
      queue.enqueue("e-" + (sequence++), Priority.NORMAL);
    }
    return queue.drainAndAck(BATCH);
  }

  /** What the benchmark needs of a queue; one adapter per implementation. Thread-safe. */
  abstract static class CycleQueue {
    abstract boolean enqueue(String id, Priority priority);

    /** Fills the queue with {@code count} events before measuring. */
    void preload(int count, Priority priority) {
      for (int i = 0; i < count; i++) {
        enqueue("fill-" + i, priority);
      }
    }

    /** Drains up to {@code max} ready events and acks them; returns how many. */
    abstract int drainAndAck(int max);

    static CycleQueue create(Impl impl, int capacity) {
      switch (impl) {
        case RELAYKIT:
          return new RelayKit(capacity);
        case SEED_BASELINE:
          return new Seed(capacity);
        default:
          throw new AssertionError(impl);
      }
    }
  }

  static final class RelayKit extends CycleQueue {
    private final ReportQueue queue;

    RelayKit(int capacity) {
      queue = ReportQueue.builder().capacity(capacity).batchSize(BATCH).build();
    }

    @Override
    boolean enqueue(String id, Priority priority) {
      return queue.enqueue(new ReportEvent(id, "page.viewed", PAYLOAD, priority, null))
          .accepted();
    }

    @Override
    int drainAndAck(int max) {
      List<QueuedEvent> batch = queue.drainBatch();
      if (batch.isEmpty()) {
        return 0;
      }
      List<String> ids = new ArrayList<>(batch.size());
      for (QueuedEvent e : batch) {
        ids.add(e.eventId());
      }
      return queue.ack(ids);
    }
  }

  static final class Seed extends CycleQueue {
    private final SeedBaselineQueue queue;

    Seed(int capacity) {
      queue = new SeedBaselineQueue(capacity);
    }

    @Override
    synchronized boolean enqueue(String id, Priority priority) {
      long now = System.currentTimeMillis();
      return queue.enqueue(new SeedBaselineQueue.Event(id, "page.viewed", PAYLOAD,
          priority.ordinal(), now, 0, now));
    }

    @Override
    synchronized void preload(int count, Priority priority) {
      long now = System.currentTimeMillis();
      List<SeedBaselineQueue.Event> events = new ArrayList<>(count);
      for (int i = 0; i < count; i++) {
        events.add(new SeedBaselineQueue.Event("fill-" + i, "page.viewed", PAYLOAD,
            priority.ordinal(), now, 0, now));
      }
      queue.preload(events);
    }

    @Override
    synchronized int drainAndAck(int max) {
      List<SeedBaselineQueue.Event> batch = queue.drainBatch(max, Long.MAX_VALUE);
      Set<String> ids = new HashSet<>();
      for (SeedBaselineQueue.Event e : batch) {
        ids.add(e.id());
      }
      return queue.ack(ids);
    }
  }
}
