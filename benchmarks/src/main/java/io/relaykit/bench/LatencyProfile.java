package io.relaykit.bench;

import io.relaykit.deadletter.DeadLetter;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.message.Message;
import io.relaykit.message.PublishReceipt;
import io.relaykit.message.Publisher;
import io.relaykit.outbox.OutboxBound;
import io.relaykit.outbox.OutboxRecord;
import io.relaykit.outbox.OutboxStats;
import io.relaykit.outbox.OutboxStore;
import io.relaykit.outbox.OutboxWakeup;
import java.io.PrintStream;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.ToIntFunction;
import org.HdrHistogram.Histogram;

/**
 * The stages of a {@link LatencyBenchmark} row with one relay in this JVM ({@code --profile}):
 * the relay's store and publisher are wrapped so that every measured message gets a timestamp
 * ({@link System#nanoTime()}) when the claim that took it started and returned, when the relay
 * handed it to the publisher, when the broker confirmed it and when the markSent that covered it
 * returned; with the run's own due, commit and handler times, {@link #print} shows where the time
 * between due and handler goes, for all messages and for the slowest 1 %, and how the relay's
 * cycles ran (rows per claim, claim and markSent statement times, cycle length).
 *
 * <p>Costs a map entry per claimed row and a few array writes per message on the relay's thread:
 * small beside a database round trip, but not nothing, so profiled runs are not the recorded ones.
 */
final class LatencyProfile {

  /** Claims and marks recorded at most (one per relay cycle each). */
  private static final int MAX_CYCLES = 1_000_000;

  private final ToIntFunction<String> indexOf;
  private final AtomicLongArray claimStart;
  private final AtomicLongArray claimEnd;
  private final AtomicLongArray published;
  private final AtomicLongArray confirmed;
  private final AtomicLongArray marked;
  private final ConcurrentHashMap<Long, Integer> bySequence = new ConcurrentHashMap<>();
  private final long[] claimNanos = new long[MAX_CYCLES];
  private final long[] claimStarts = new long[MAX_CYCLES];
  private final int[] claimRows = new int[MAX_CYCLES];
  private final AtomicInteger claims = new AtomicInteger();
  private final long[] markNanos = new long[MAX_CYCLES];
  private final AtomicInteger marks = new AtomicInteger();

  /**
   * @param total messages in the run
   * @param indexOf a message id's index in the run, or -1 for a message not measured
   */
  LatencyProfile(int total, ToIntFunction<String> indexOf) {
    this.indexOf = indexOf;
    this.claimStart = new AtomicLongArray(total);
    this.claimEnd = new AtomicLongArray(total);
    this.published = new AtomicLongArray(total);
    this.confirmed = new AtomicLongArray(total);
    this.marked = new AtomicLongArray(total);
  }

  /** {@code store}, timing its claims and marks. */
  OutboxStore store(OutboxStore store) {
    return new TimedStore(store);
  }

  /** {@code publisher}, timing each publish and its confirm. */
  Publisher publisher(Publisher publisher) {
    return new Publisher() {
      @Override
      public CompletableFuture<PublishReceipt> publish(String destination, Message message) {
        int i = indexOf.applyAsInt(message.id());
        if (i >= 0) {
          published.set(i, System.nanoTime());
        }
        CompletableFuture<PublishReceipt> f = publisher.publish(destination, message);
        if (i >= 0 && f != null) {
          f.whenComplete((r, e) -> confirmed.set(i, System.nanoTime()));
        }
        return f;
      }

      @Override
      public String messagingSystem() {
        return publisher.messagingSystem();
      }

      @Override
      public void close() {
        publisher.close();
      }
    };
  }

  private void claimed(long start, long end, List<OutboxRecord> rows) {
    int c = claims.getAndIncrement();
    if (c < MAX_CYCLES) {
      claimStarts[c] = start;
      claimNanos[c] = end - start;
      claimRows[c] = rows.size();
    }
    for (OutboxRecord r : rows) {
      int i = indexOf.applyAsInt(r.message().id());
      if (i >= 0) {
        claimStart.set(i, start);
        claimEnd.set(i, end);
        bySequence.put(r.sequence(), i);
      }
    }
  }

  private void marked(long start, long end, Collection<Long> sequences) {
    int m = marks.getAndIncrement();
    if (m < MAX_CYCLES) {
      markNanos[m] = end - start;
    }
    for (Long seq : sequences) {
      Integer i = bySequence.remove(seq);
      if (i != null) {
        marked.set(i, end);
      }
    }
  }

  /**
   * Prints the stage table for the measured messages {@code from..due.length-1}.
   *
   * @param due each message's due time
   * @param committed when each message's commit returned
   * @param handled when each message first reached the handler
   */
  void print(PrintStream out, int from, long[] due, long[] committed, AtomicLongArray handled) {
    String[] names = {"due → commit", "commit → claim start", "claim statement",
        "claim end → publish call", "publish → broker confirm", "publish → handler",
        "confirm → markSent returned", "due → handler (total)"};
    int n = names.length;
    Histogram[] h = new Histogram[n];
    for (int s = 0; s < n; s++) {
      h[s] = new Histogram(3);
    }
    Histogram total = h[n - 1];
    int count = due.length - from;
    long[][] stage = new long[n][count];
    int negative = 0;
    for (int i = from; i < due.length; i++) {
      long[] v = {
          committed[i] - due[i],
          claimStart.get(i) - committed[i],
          claimEnd.get(i) - claimStart.get(i),
          published.get(i) - claimEnd.get(i),
          confirmed.get(i) - published.get(i),
          handled.get(i) - published.get(i),
          marked.get(i) - confirmed.get(i),
          handled.get(i) - due[i]};
      for (int s = 0; s < n; s++) {
        stage[s][i - from] = v[s];
        if (v[s] < 0) {
          negative += s == 1 ? 1 : 0;
        }
        h[s].recordValue(Math.max(0, v[s]));
      }
    }
    long p99 = total.getValueAtPercentile(99);
    double[] tailMean = new double[n];
    int tail = 0;
    for (int j = 0; j < count; j++) {
      if (stage[n - 1][j] >= p99) {
        tail++;
        for (int s = 0; s < n; s++) {
          tailMean[s] += stage[s][j];
        }
      }
    }
    out.println("  profile (ms; one relay in this JVM):");
    out.println(String.format(Locale.ROOT, "    %-30s %8s %8s %8s %8s %14s", "stage", "p50",
        "p99", "p99.9", "max", "mean in ≥p99"));
    for (int s = 0; s < n; s++) {
      out.println(String.format(Locale.ROOT, "    %-30s %8.2f %8.2f %8.2f %8.2f %14.2f", names[s],
          ms(h[s].getValueAtPercentile(50)), ms(h[s].getValueAtPercentile(99)),
          ms(h[s].getValueAtPercentile(99.9)), ms(h[s].getMaxValue()),
          tail == 0 ? 0 : tailMean[s] / tail / 1e6));
    }
    out.println(String.format(Locale.ROOT, "    (%d messages at or over the total's p99; %d claims"
        + " started before their row's commit returned)", tail, negative));
    int c = Math.min(claims.get(), MAX_CYCLES);
    Histogram rows = new Histogram(3);
    Histogram claimMs = new Histogram(3);
    Histogram cycle = new Histogram(3);
    int empty = 0;
    for (int k = 0; k < c; k++) {
      rows.recordValue(claimRows[k]);
      claimMs.recordValue(claimNanos[k]);
      empty += claimRows[k] == 0 ? 1 : 0;
      if (k > 0) {
        cycle.recordValue(Math.max(0, claimStarts[k] - claimStarts[k - 1]));
      }
    }
    int m = Math.min(marks.get(), MAX_CYCLES);
    Histogram markMs = new Histogram(3);
    for (int k = 0; k < m; k++) {
      markMs.recordValue(markNanos[k]);
    }
    out.println(String.format(Locale.ROOT, "    claims %d (%d empty), rows per claim p50 %d p99 %d"
        + " max %d; claim ms p50 %.2f p99 %.2f; markSent %d, ms p50 %.2f p99 %.2f;"
        + " claim-to-claim ms p50 %.2f p99 %.2f max %.2f", c, empty,
        rows.getValueAtPercentile(50), rows.getValueAtPercentile(99), rows.getMaxValue(),
        ms(claimMs.getValueAtPercentile(50)), ms(claimMs.getValueAtPercentile(99)), m,
        ms(markMs.getValueAtPercentile(50)), ms(markMs.getValueAtPercentile(99)),
        ms(cycle.getValueAtPercentile(50)), ms(cycle.getValueAtPercentile(99)),
        ms(cycle.getMaxValue())));
  }

  private static double ms(long nanos) {
    return nanos / 1e6;
  }

  /** Delegates everything; times claim and markSent. */
  private final class TimedStore implements OutboxStore {
    private final OutboxStore store;

    TimedStore(OutboxStore store) {
      this.store = store;
    }

    @Override
    public List<OutboxRecord> claim(String owner, int max, Duration lease, Instant now) {
      long start = System.nanoTime();
      List<OutboxRecord> rows = store.claim(owner, max, lease, now);
      claimed(start, System.nanoTime(), rows);
      return rows;
    }

    @Override
    public List<OutboxRecord> claim(String owner, int max, int maxRun, Duration lease,
        Instant now) {
      long start = System.nanoTime();
      List<OutboxRecord> rows = store.claim(owner, max, maxRun, lease, now);
      claimed(start, System.nanoTime(), rows);
      return rows;
    }

    @Override
    public int release(String owner, Collection<Long> sequences) {
      return store.release(owner, sequences);
    }

    @Override
    public int markSent(String owner, Collection<Long> sequences, Instant now) {
      long start = System.nanoTime();
      int n = store.markSent(owner, sequences, now);
      marked(start, System.nanoTime(), sequences);
      return n;
    }

    @Override
    public boolean reschedule(String owner, long sequence, int attempts, Instant failedAt,
        Instant notBefore, String error) {
      return store.reschedule(owner, sequence, attempts, failedAt, notBefore, error);
    }

    @Override
    public boolean markDead(String owner, long sequence) {
      return store.markDead(owner, sequence);
    }

    @Override
    public boolean moveToDeadLetters(String owner, long sequence, DeadLetter deadLetter,
        DeadLetterStore deadLetters) {
      return store.moveToDeadLetters(owner, sequence, deadLetter, deadLetters);
    }

    @Override
    public Set<Long> renewLease(String owner, Collection<Long> sequences, Duration lease,
        Instant now) {
      return store.renewLease(owner, sequences, lease, now);
    }

    @Override
    public int purgeSent(Instant sentBefore) {
      return store.purgeSent(sentBefore);
    }

    @Override
    public int purgeSentOlderThan(Duration retention, int max, Instant now) {
      return store.purgeSentOlderThan(retention, max, now);
    }

    @Override
    public OutboxStats stats(Instant now) {
      return store.stats(now);
    }

    @Override
    public OutboxBound bound() {
      return store.bound();
    }

    @Override
    public Optional<OutboxWakeup> wakeup() {
      return store.wakeup();
    }

    @Override
    public void committed() {
      store.committed();
    }

    @Override
    public long refusedAppends() {
      return store.refusedAppends();
    }

    @Override
    public long overBoundAppends() {
      return store.overBoundAppends();
    }
  }
}
