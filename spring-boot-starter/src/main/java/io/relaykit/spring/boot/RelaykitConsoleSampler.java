package io.relaykit.spring.boot;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.springframework.context.SmartLifecycle;

/**
 * Samples the operator console's history with the context: {@link #start()} asks for the sample
 * task (building the console, so a console that cannot be built fails the context's start), then
 * one daemon thread named {@value #THREAD_NAME} runs it at once and then every interval (a fixed
 * delay after the end of the previous run, so a slow read never queues runs).
 *
 * <p>A run that throws is counted ({@link #failedRuns()}) and logged once per failure streak; the
 * next run goes on. {@link #stop()} lets the run under way finish, waiting at most {@link
 * #STOP_WAIT}, and never interrupts it: a thread interrupted during JDBC I/O can close an H2 file
 * database under the application. The thread is a daemon, so a run stuck past that wait does not
 * hold the JVM. Memory: what the task keeps (the history's ring is bounded); the executor's queue
 * holds one scheduled run. Thread-safe.
 */
final class RelaykitConsoleSampler implements SmartLifecycle {

  /** The sampler thread's name. */
  static final String THREAD_NAME = "relaykit-console-sampler";
  /** How long {@link #stop()} waits for a run under way. */
  static final Duration STOP_WAIT = Duration.ofSeconds(10);

  private static final System.Logger LOG = System.getLogger(RelaykitConsoleSampler.class
      .getName());

  private final Supplier<? extends Runnable> task;
  private final Duration interval;
  private final AtomicLong runs = new AtomicLong();
  private final AtomicLong failedRuns = new AtomicLong();
  private ScheduledThreadPoolExecutor executor;
  private boolean failing;

  /**
   * A sampler, not started.
   *
   * @param task gives the sample task at start (a run of it may throw)
   * @param interval the delay between the end of one run and the start of the next; positive
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if {@code interval} is not positive
   */
  RelaykitConsoleSampler(Supplier<? extends Runnable> task, Duration interval) {
    this.task = Objects.requireNonNull(task, "task");
    this.interval = Objects.requireNonNull(interval, "interval");
    if (interval.isZero() || interval.isNegative()) {
      throw new IllegalArgumentException("interval must be positive, was " + interval);
    }
  }

  @Override
  public synchronized void start() {
    if (executor != null) {
      return;
    }
    Runnable run = Objects.requireNonNull(task.get(), "sample task");
    ScheduledThreadPoolExecutor e = new ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, THREAD_NAME);
      t.setDaemon(true);
      return t;
    });
    e.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
    e.setContinueExistingPeriodicTasksAfterShutdownPolicy(false);
    e.setRemoveOnCancelPolicy(true);
    e.scheduleWithFixedDelay(() -> runOnce(run), 0, interval.toMillis(), TimeUnit.MILLISECONDS);
    executor = e;
  }

  /** One run; never throws, so the schedule goes on. */
  private void runOnce(Runnable run) {
    try {
      run.run();
      runs.incrementAndGet();
      synchronized (this) {
        failing = false;
      }
    } catch (RuntimeException | Error e) {
      if (e instanceof VirtualMachineError vme) {
        throw vme;
      }
      failedRuns.incrementAndGet();
      boolean first;
      synchronized (this) {
        first = !failing;
        failing = true;
      }
      if (first) {
        LOG.log(System.Logger.Level.WARNING, "relaykit console: a history sample failed (the"
            + " chart shows a gap; logged once until a sample succeeds): " + e, e);
      }
    }
  }

  @Override
  public void stop() {
    ScheduledThreadPoolExecutor e;
    synchronized (this) {
      e = executor;
      executor = null;
    }
    if (e == null) {
      return;
    }
    e.shutdown();
    try {
      if (!e.awaitTermination(STOP_WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
        LOG.log(System.Logger.Level.WARNING, "relaykit console: a history sample still runs "
            + STOP_WAIT.toSeconds() + " s after stop; leaving its daemon thread to finish");
      }
    } catch (InterruptedException ie) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public synchronized boolean isRunning() {
    return executor != null;
  }

  /** Runs that completed. */
  long runs() {
    return runs.get();
  }

  /** Runs that threw. */
  long failedRuns() {
    return failedRuns.get();
  }

  @Override
  public String toString() {
    return "RelaykitConsoleSampler[interval=" + interval + ", runs=" + runs + ", failed="
        + failedRuns + ", running=" + isRunning() + "]";
  }
}
