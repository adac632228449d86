package io.relaykit.chaos;

import io.relaykit.chaos.History.FaultWindow;
import io.relaykit.chaos.History.Sample;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Injects a fault schedule one fault at a time: the next fault starts only once the previous one
 * has recovered by {@link Checker#recovery} (backlog back at its level before the fault and
 * deliveries flowing), or once the recovery bound has passed since its start, and never before
 * its planned moment nor sooner than {@code gapMs} after that. Interrupted, it stops at once and
 * its outcome says how many faults it injected (the run interrupts a schedule that outlasts the
 * time it gives it). So each fault's recovery measures
 * that fault alone. A fault that does not recover within the bound is recorded as unrecovered
 * (its recovery is the bound) and fails the run's verdict; the schedule goes on after it.
 *
 * <p>Time comes from a {@link Clock}, so the rule is tested without waiting.
 */
final class FaultPacer {

  /** Milliseconds since the load started, and a way to wait for a moment on that scale. */
  interface Clock {
    /** Now, in ms since the load started. */
    long nowMs();

    /** Returns at or after {@code atMs}; throws when the waiting thread is interrupted. */
    void sleepUntilMs(long atMs) throws InterruptedException;
  }

  /** Injects one event and heals it, returning its detail (see {@link Fault#inject}). */
  interface Injector {
    /** Injects and heals {@code e}. */
    String inject(FaultSchedule.Event e) throws Exception;
  }

  /**
   * What the schedule did.
   *
   * @param recoveries each injected fault's recovery as seen while waiting for it
   * @param fatal the failure that stopped the schedule, or null
   */
  record Outcome(List<Checker.Recovery> recoveries, String fatal) {}

  private final long boundMs;
  private final long gapMs;
  private final long pollMs;
  private final Clock clock;
  private final Supplier<List<Sample>> samples;
  private final Consumer<String> log;

  /**
   * A pacer.
   *
   * @param boundMs how long a fault may take to recover, from its start
   * @param gapMs the pause after a fault recovered before the next may start
   * @param pollMs how often to look at the samples while waiting for a recovery
   * @param clock the time source
   * @param samples the metrics samples recorded so far, stamped when their answers arrived on
   *     {@code clock}'s scale (see {@link MetricsSampler}); the pacer judges a recovery on the
   *     samples it has seen, by the rule the checker applies afterwards to all of them, and since
   *     that rule looks only at samples answered before a moment, both find the same recovery
   * @param log where a line per fault goes
   */
  FaultPacer(long boundMs, long gapMs, long pollMs, Clock clock, Supplier<List<Sample>> samples,
      Consumer<String> log) {
    this.boundMs = boundMs;
    this.gapMs = gapMs;
    this.pollMs = pollMs;
    this.clock = clock;
    this.samples = samples;
    this.log = log;
  }

  /**
   * Runs {@code schedule}; each fault's window goes to {@code windows} as soon as it ends (a
   * failed injection's window too, and then the schedule stops).
   */
  Outcome run(List<FaultSchedule.Event> schedule, Injector injector,
      Consumer<FaultWindow> windows) {
    List<Checker.Recovery> out = new ArrayList<>();
    int injected = 0;
    long notBefore = 0;
    long previousRecovered = Long.MIN_VALUE;
    try {
      for (FaultSchedule.Event e : schedule) {
        clock.sleepUntilMs(Math.max(e.atMs(), notBefore));
        long start = clock.nowMs();
        String detail;
        try {
          detail = injector.inject(e);
        } catch (InterruptedException ex) {
          throw ex;
        } catch (Exception ex) {
          windows.accept(new FaultWindow(e.fault(), e.target(), e.mode(), "FAILED: " + ex,
              start, clock.nowMs()));
          return new Outcome(out, e.fault() + " " + e.target() + " failed: " + ex);
        }
        injected++;
        long end = clock.nowMs();
        FaultWindow w = new FaultWindow(e.fault(), e.target(), e.mode(), detail, start, end);
        windows.accept(w);
        Checker.Recovery r;
        while (true) {
          List<Sample> seen = new ArrayList<>(samples.get());
          seen.sort(Comparator.comparingLong(Sample::atMs));
          r = Checker.recovery(seen, w, previousRecovered, boundMs);
          long now = clock.nowMs();
          if (!r.unrecovered() || now >= start + boundMs) {
            break;
          }
          clock.sleepUntilMs(Math.min(now + pollMs, start + boundMs));
        }
        out.add(r);
        previousRecovered = r.unrecovered() ? start + boundMs : r.recoveredAtMs();
        notBefore = clock.nowMs() + gapMs;
        log.accept(String.format(java.util.Locale.ROOT, "%.1f s: %s (%d ms), %s", start / 1000.0,
            detail, end - start, r.unrecovered()
                ? "NOT recovered within " + boundMs + " ms (backlog above " + r.baselineBacklog()
                    + " or completed orders not above the most seen before)"
                : "recovered in " + r.recoveryMs() + " ms (backlog <= " + r.baselineBacklog()
                    + ")"));
      }
    } catch (InterruptedException stop) {
      Thread.currentThread().interrupt();
      // Stopped from outside (the run's time for the schedule ran out, or Ctrl-C): the faults
      // left out, and a recovery not waited for, must not pass as a complete schedule.
      return new Outcome(out, "the schedule was stopped after injecting " + injected + " of "
          + schedule.size() + " faults");
    }
    return new Outcome(out, null);
  }
}
