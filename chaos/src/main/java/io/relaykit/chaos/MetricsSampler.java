package io.relaykit.chaos;

import io.relaykit.chaos.History.Sample;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.LongSupplier;

/**
 * Reads the demo's {@code /metrics} into {@link Sample}s, one ask per {@link #tick}, so that the
 * samples are in the order their readings were taken:
 *
 * <ul>
 *   <li>a sample is stamped when its answer arrives, on the injected monotonic clock (the same
 *       clock the {@link FaultPacer} waits on), and appended under the list's lock in that same
 *       step, so the list is always in stamp order and a reader never sees a sample appear in its
 *       past;
 *   <li>an instance has at most one request in flight: a tick that finds every instance that is
 *       up still waiting asks none; so one instance's answers cannot overtake each other;
 *   <li>a request unanswered after {@code timeoutMs} yields a "no answer" sample (-1) at that
 *       moment and frees the instance; its answer, should it still come, is older than what the
 *       instance may answer next and is dropped (counted in {@link #staleAnswers}).
 * </ul>
 *
 * <p>Thread-safe: {@link #tick} runs on the sampler's thread, answers arrive on the HTTP client's
 * threads; both take the samples list's lock. Each tick costs O(instances).
 */
final class MetricsSampler {

  /** What one /metrics answer said; {@link #NONE} when there was no usable answer. */
  record Reading(long completed, long backlog, long oldestPendingMs) {
    static final Reading NONE = new Reading(-1, -1, -1);
  }

  /** Sends one /metrics request to an instance; the future completes with its answer. */
  interface Asker {
    /** Asks {@code instance}; may complete exceptionally (no answer). */
    CompletableFuture<Reading> ask(int instance);
  }

  private record InFlight(long seq, long askedMs) {}

  private final LongSupplier nowMs;
  private final LongSupplier accepted;
  private final long timeoutMs;
  private final Asker asker;
  private final List<Sample> samples;
  /** Guarded by {@code samples}. */
  private final Map<Integer, InFlight> inFlight = new HashMap<>();
  /** Guarded by {@code samples}. */
  private long nextSeq;
  /** Guarded by {@code samples}. */
  private long stale;

  /**
   * A sampler.
   *
   * @param nowMs monotonic ms on the run's scale (since the load started)
   * @param accepted the client's count of accepted orders, read when a sample is stamped
   * @param timeoutMs how long an answer may take before the ask counts as unanswered
   * @param asker sends the requests
   * @param samples where samples go; its monitor is the lock (a synchronized list)
   */
  MetricsSampler(LongSupplier nowMs, LongSupplier accepted, long timeoutMs, Asker asker,
      List<Sample> samples) {
    if (timeoutMs <= 0) {
      throw new IllegalArgumentException("timeoutMs must be > 0, was " + timeoutMs);
    }
    this.nowMs = nowMs;
    this.accepted = accepted;
    this.timeoutMs = timeoutMs;
    this.asker = asker;
    this.samples = samples;
  }

  /**
   * One sampling moment: gives up on asks older than the timeout, then asks the first instance
   * of {@code up} with no request in flight; with {@code up} empty, records a "no answer" sample.
   */
  void tick(List<Integer> up) {
    int instance = -1;
    long seq;
    long askedMs;
    synchronized (samples) {
      long now = nowMs.getAsLong();
      inFlight.entrySet().removeIf(e -> {
        if (now - e.getValue().askedMs() < timeoutMs) {
          return false;
        }
        samples.add(new Sample(now, accepted.getAsLong(), -1, -1, -1, e.getValue().askedMs()));
        return true;
      });
      if (up.isEmpty()) {
        samples.add(new Sample(now, accepted.getAsLong(), -1, -1, -1, now));
        return;
      }
      for (int i : up) {
        if (!inFlight.containsKey(i)) {
          instance = i;
          break;
        }
      }
      if (instance < 0) {
        return; // every instance up is still answering the previous ask
      }
      seq = ++nextSeq;
      askedMs = now;
      inFlight.put(instance, new InFlight(seq, askedMs));
    }
    int asked = instance;
    CompletableFuture<Reading> answer;
    try {
      answer = asker.ask(asked);
    } catch (RuntimeException e) {
      answer = CompletableFuture.failedFuture(e);
    }
    answer.whenComplete((r, e) -> answered(asked, seq, e == null && r != null ? r
        : Reading.NONE));
  }

  private void answered(int instance, long seq, Reading r) {
    synchronized (samples) {
      InFlight f = inFlight.get(instance);
      if (f == null || f.seq() != seq) {
        stale++; // timed out already; a newer ask may have been answered since
        return;
      }
      inFlight.remove(instance);
      samples.add(new Sample(nowMs.getAsLong(), accepted.getAsLong(), r.completed(), r.backlog(),
          r.oldestPendingMs(), f.askedMs()));
    }
  }

  /** Answers dropped because they came after their ask had timed out. */
  long staleAnswers() {
    synchronized (samples) {
      return stale;
    }
  }
}
