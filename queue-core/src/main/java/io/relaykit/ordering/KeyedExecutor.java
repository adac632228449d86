package io.relaykit.ordering;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;

/**
 * Runs tasks on a fixed pool of threads with per-key order: at most one task per key runs at a
 * time, tasks of one key run in submission order, different keys run in parallel. A {@code null}
 * key means "no ordering": the task may run beside anything. Using the partition as the key gives
 * {@link OrderingMode#PARTITION} order; using the message key gives {@link OrderingMode#KEY}.
 *
 * <p>Bounded: at most {@code maxQueued} tasks are accepted but unfinished (queued or running).
 * When full, {@link #submit(Object, Runnable)} blocks, {@link #submit(Object, Runnable, Duration)}
 * waits up to a timeout and {@link #trySubmit} returns {@code false} at once, so a poll loop can
 * pause its source instead of buffering without limit. {@link #remainingCapacity()} tells how much
 * it may submit without blocking.
 *
 * <p>A task that throws does not kill its worker nor hold back its key: the failure goes to the
 * configured failure handler (by default logged at WARNING through {@link System.Logger}) and the
 * key's next task runs. Keys are served round-robin: a hot key with a long backlog runs one task,
 * then goes to the back of the line.
 *
 * <p>Cost: submit and task hand-off are O(1); memory is O(queued tasks + keys with queued or
 * running tasks), with no thread per key. A single lock guards the queues; it is held only to move
 * a task in or out, never while a task runs, and a busy worker takes it once per task (booking
 * the finished task and taking the next in one go). A hot key caps its own throughput at one thread's
 * speed.
 *
 * <p>Shutdown: {@link #shutdown()} stops intake and lets accepted tasks finish; {@link
 * #close(Duration)} also waits for them up to a deadline; {@link #shutdownNow()} drops queued
 * tasks and interrupts running ones. Thread-safe.
 *
 * <p>WARNING: a task must not call {@link #submit(Object, Runnable)}, {@link #awaitDrained} or
 * {@link #close} on its own executor: a full executor, or one waiting for the calling task to
 * finish, would wait on itself (until the timeout, for the timed variants).
 */
public final class KeyedExecutor {

  private static final System.Logger LOG = System.getLogger(KeyedExecutor.class.getName());

  /** Receives the failure of a task; must not throw (anything it throws is logged and dropped). */
  @FunctionalInterface
  public interface FailureHandler {
    /**
     * Called on the worker thread when a task throws; the key's next task still runs.
     *
     * @param key the task's key, {@code null} for an unordered task
     * @param failure what the task threw
     */
    void taskFailed(Object key, Throwable failure);
  }

  private final int threads;
  private final int maxQueued;
  private final FailureHandler failureHandler;

  private final ReentrantLock lock = new ReentrantLock();
  private final Condition notFull = lock.newCondition();
  private final Condition workAvailable = lock.newCondition();
  private final Condition drained = lock.newCondition();
  private final Condition terminated = lock.newCondition();

  /** Runnable items: a {@link Lane} (one task of that key) or a bare unordered {@link Runnable}. */
  private final ArrayDeque<Object> ready = new ArrayDeque<>();
  /** Keys with a queued or running task. */
  private final Map<Object, Lane> lanes = new HashMap<>();
  private final List<Thread> workers = new ArrayList<>();
  private int pending;
  private int liveWorkers;
  private boolean shutdown;
  private boolean stopNow;

  private KeyedExecutor(Builder b) {
    this.threads = b.threads;
    this.maxQueued = b.maxQueued;
    this.failureHandler = b.failureHandler;
    ThreadFactory factory = b.threadFactory != null ? b.threadFactory : defaultFactory(b.threadName);
    lock.lock();
    try {
      for (int i = 0; i < threads; i++) {
        Thread t = factory.newThread(this::work);
        if (t == null) {
          throw new IllegalStateException("threadFactory returned null");
        }
        workers.add(t);
        liveWorkers++;
      }
    } finally {
      lock.unlock();
    }
    workers.forEach(Thread::start);
  }

  /**
   * A builder with the defaults: one thread per available processor, {@code maxQueued} 1024.
   *
   * @return a new builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Accepts {@code task}, waiting while the executor is full.
   *
   * @param key the ordering key; {@code null} for no ordering
   * @param task the task; not null
   * @throws RejectedExecutionException if the executor is shut down (also when it shuts down while
   *     this call waits)
   * @throws InterruptedException if interrupted while waiting; the task is then not accepted
   */
  public void submit(Object key, Runnable task) throws InterruptedException {
    requireTask(task);
    lock.lockInterruptibly();
    try {
      while (true) {
        rejectIfShutdown();
        if (pending < maxQueued) {
          enqueue(key, task);
          return;
        }
        notFull.await();
      }
    } finally {
      lock.unlock();
    }
  }

  /**
   * Accepts {@code task}, waiting up to {@code timeout} while the executor is full.
   *
   * @param key the ordering key; {@code null} for no ordering
   * @param task the task; not null
   * @param timeout the longest wait for room; not null, zero or negative means do not wait
   * @return true if accepted, false if still full at the timeout
   * @throws RejectedExecutionException if the executor is shut down
   * @throws InterruptedException if interrupted while waiting; the task is then not accepted
   */
  public boolean submit(Object key, Runnable task, Duration timeout) throws InterruptedException {
    requireTask(task);
    if (timeout == null) {
      throw new IllegalArgumentException("timeout must not be null");
    }
    long nanos = saturatedNanos(timeout);
    lock.lockInterruptibly();
    try {
      while (true) {
        rejectIfShutdown();
        if (pending < maxQueued) {
          enqueue(key, task);
          return true;
        }
        if (nanos <= 0) {
          return false;
        }
        nanos = notFull.awaitNanos(nanos);
      }
    } finally {
      lock.unlock();
    }
  }

  /**
   * Accepts {@code task} if there is room, without waiting.
   *
   * @param key the ordering key; {@code null} for no ordering
   * @param task the task; not null
   * @return true if accepted, false if the executor is full
   * @throws RejectedExecutionException if the executor is shut down
   */
  public boolean trySubmit(Object key, Runnable task) {
    requireTask(task);
    lock.lock();
    try {
      rejectIfShutdown();
      if (pending >= maxQueued) {
        return false;
      }
      enqueue(key, task);
      return true;
    } finally {
      lock.unlock();
    }
  }

  private void enqueue(Object key, Runnable task) {
    pending++;
    if (key == null) {
      ready.addLast(task);
      workAvailable.signal();
      return;
    }
    Lane lane = lanes.get(key);
    if (lane == null) {
      lane = new Lane(key);
      lanes.put(key, lane);
      lane.tasks.addLast(task);
      lane.queued = true;
      ready.addLast(lane);
      workAvailable.signal();
    } else {
      // the lane is queued or its task is running: it re-enters the ready queue when that finishes
      lane.tasks.addLast(task);
    }
  }

  private void work() {
    Object item = null; // the item this worker just ran: finished under the lock that takes the next
    while (true) {
      Runnable task;
      lock.lock();
      try {
        if (item != null) {
          finishLocked(item);
        }
        while (ready.isEmpty() && !stopNow && !(shutdown && pending == 0)) {
          try {
            workAvailable.await();
          } catch (InterruptedException e) {
            // shutdownNow interrupts to wake us; anything else: re-check and keep serving
          }
        }
        if (stopNow || ready.isEmpty()) {
          retireWorker();
          return;
        }
        item = ready.pollFirst();
        if (item instanceof Lane) {
          Lane lane = (Lane) item;
          lane.queued = false;
          task = lane.tasks.peekFirst();
        } else {
          task = (Runnable) item;
        }
      } finally {
        lock.unlock();
      }

      try {
        task.run();
      } catch (Throwable failure) {
        reportFailure(item instanceof Lane ? ((Lane) item).key : null, failure);
      }
    }
  }

  /**
   * Books the end of {@code item}'s task. The caller goes on to take the next ready item in the same
   * critical section, so a lane put back here needs no signal: the ready queue does not grow.
   */
  private void finishLocked(Object item) {
    if (!stopNow) {
      Thread.interrupted(); // an interrupt aimed at one task must not hit the next
    }
    pending--;
    notFull.signal();
    if (item instanceof Lane) {
      Lane lane = (Lane) item;
      lane.tasks.pollFirst();
      if (lane.tasks.isEmpty()) {
        lanes.remove(lane.key);
      } else if (!stopNow) {
        lane.queued = true;
        ready.addLast(lane);
      }
    }
    if (pending == 0) {
      drained.signalAll();
      if (shutdown) {
        workAvailable.signalAll(); // idle workers may now retire
      }
    }
  }

  private void retireWorker() {
    liveWorkers--;
    if (liveWorkers == 0) {
      terminated.signalAll();
    }
  }

  private void reportFailure(Object key, Throwable failure) {
    try {
      failureHandler.taskFailed(key, failure);
    } catch (Throwable handlerFailure) {
      LOG.log(System.Logger.Level.ERROR, "KeyedExecutor failure handler threw", handlerFailure);
    }
  }

  /**
   * Stops intake: later submits throw {@link RejectedExecutionException}, submits waiting for room
   * are rejected; accepted tasks still run. Idempotent.
   */
  public void shutdown() {
    lock.lock();
    try {
      shutdown = true;
      notFull.signalAll();
      workAvailable.signalAll();
    } finally {
      lock.unlock();
    }
  }

  /**
   * Stops intake, drops every queued task and interrupts running ones. Running tasks still count as
   * pending until they return.
   *
   * @return the dropped tasks, in no particular order
   */
  public List<Runnable> shutdownNow() {
    List<Runnable> dropped = new ArrayList<>();
    lock.lock();
    try {
      shutdown = true;
      stopNow = true;
      for (Object item : ready) {
        if (!(item instanceof Lane)) {
          dropped.add((Runnable) item);
        }
      }
      ready.clear();
      for (Lane lane : lanes.values()) {
        // the head of a lane that is not in the ready queue is running: it stays
        boolean running = !lane.queued;
        int skip = running ? 1 : 0;
        for (Runnable t : lane.tasks) {
          if (skip-- > 0) {
            continue;
          }
          dropped.add(t);
        }
        lane.tasks.clear();
      }
      lanes.clear();
      pending -= dropped.size();
      notFull.signalAll();
      workAvailable.signalAll();
      if (pending == 0) {
        drained.signalAll();
      }
      workers.forEach(Thread::interrupt);
    } finally {
      lock.unlock();
    }
    return dropped;
  }

  /**
   * Waits until every accepted task has finished (the executor may still accept more).
   *
   * @param timeout the longest wait; not null
   * @return true if nothing is pending, false if {@code timeout} passed first
   * @throws InterruptedException if interrupted while waiting
   */
  public boolean awaitDrained(Duration timeout) throws InterruptedException {
    return awaitUnderLock(timeout, drained, () -> pending <= 0);
  }

  /**
   * Graceful close: stops intake, waits up to {@code deadline} for accepted tasks to finish, and if
   * they do not, {@linkplain #shutdownNow() drops the rest and interrupts} what still runs.
   *
   * @param deadline the longest wait for accepted tasks to finish; not null
   * @return true if every accepted task finished within the deadline
   * @throws InterruptedException if interrupted while waiting; the executor is then shut down now,
   *     as if the deadline had passed
   */
  public boolean close(Duration deadline) throws InterruptedException {
    shutdown();
    boolean done;
    try {
      done = awaitDrained(deadline);
    } catch (InterruptedException e) {
      shutdownNow();
      throw e;
    }
    if (!done) {
      List<Runnable> dropped = shutdownNow();
      LOG.log(System.Logger.Level.WARNING, "KeyedExecutor closed after {0} with {1} task(s) "
          + "dropped unstarted and the running ones interrupted", deadline, dropped.size());
    }
    return done;
  }

  /**
   * Waits until every worker thread has exited (after a shutdown and drain, or shutdownNow).
   *
   * @param timeout the longest wait; not null
   * @return true if every worker exited, false if {@code timeout} passed first
   * @throws InterruptedException if interrupted while waiting
   */
  public boolean awaitTermination(Duration timeout) throws InterruptedException {
    return awaitUnderLock(timeout, terminated, () -> liveWorkers <= 0);
  }

  /**
   * Waits on {@code signal} until {@code done} holds or {@code timeout} passes. {@code done} is
   * read under {@link #lock}, and whoever makes it true signals {@code signal}.
   */
  private boolean awaitUnderLock(Duration timeout, Condition signal, BooleanSupplier done)
      throws InterruptedException {
    long nanos = saturatedNanos(Objects.requireNonNull(timeout, "timeout"));
    lock.lockInterruptibly();
    try {
      while (!done.getAsBoolean()) {
        if (nanos <= 0) {
          return false;
        }
        nanos = signal.awaitNanos(nanos);
      }
      return true;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Whether intake stopped ({@link #shutdown()}, {@link #close} or {@link #shutdownNow()}).
   *
   * @return true once shut down; submits then throw {@link RejectedExecutionException}
   */
  public boolean isShutdown() {
    lock.lock();
    try {
      return shutdown;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Whether every worker thread has exited.
   *
   * @return true once terminated; never before a shutdown
   */
  public boolean isTerminated() {
    lock.lock();
    try {
      return liveWorkers == 0;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Accepted tasks that have not finished yet (queued or running).
   *
   * @return the count, at most {@link #maxQueued()}
   */
  public int pending() {
    lock.lock();
    try {
      return pending;
    } finally {
      lock.unlock();
    }
  }

  /**
   * How many tasks may be submitted now without blocking: {@code maxQueued - pending()}.
   *
   * @return the free room, {@code >= 0}
   */
  public int remainingCapacity() {
    lock.lock();
    try {
      return maxQueued - pending;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Keys that have a queued or running task.
   *
   * @return how many distinct keys; unordered tasks count for none
   */
  public int activeKeys() {
    lock.lock();
    try {
      return lanes.size();
    } finally {
      lock.unlock();
    }
  }

  /**
   * The number of worker threads, fixed at build time.
   *
   * @return the threads, {@code >= 1}
   */
  public int threads() {
    return threads;
  }

  /**
   * The most accepted-but-unfinished tasks, fixed at build time.
   *
   * @return the bound, {@code >= 1}
   */
  public int maxQueued() {
    return maxQueued;
  }

  private void rejectIfShutdown() {
    if (shutdown) {
      throw new RejectedExecutionException("KeyedExecutor is shut down");
    }
  }

  private static void requireTask(Runnable task) {
    if (task == null) {
      throw new IllegalArgumentException("task must not be null");
    }
  }

  private static long saturatedNanos(Duration d) {
    try {
      return d.toNanos();
    } catch (ArithmeticException e) {
      return d.isNegative() ? Long.MIN_VALUE : Long.MAX_VALUE;
    }
  }

  private static ThreadFactory defaultFactory(String name) {
    AtomicInteger n = new AtomicInteger();
    return r -> new Thread(r, name + "-" + n.incrementAndGet());
  }

  @Override
  public String toString() {
    lock.lock();
    try {
      return "KeyedExecutor[threads=" + threads + ", pending=" + pending + "/" + maxQueued
          + ", keys=" + lanes.size() + (shutdown ? ", shut down" : "") + "]";
    } finally {
      lock.unlock();
    }
  }

  /** The tasks of one key; its head is running, or waiting in the ready queue when queued. */
  private static final class Lane {
    final Object key;
    final ArrayDeque<Runnable> tasks = new ArrayDeque<>();
    /** In the ready queue; false while its head task runs. */
    boolean queued;

    Lane(Object key) {
      this.key = key;
    }
  }

  /** Configures a {@link KeyedExecutor}; {@link #build()} validates and starts the threads. */
  public static final class Builder {
    private int threads = Runtime.getRuntime().availableProcessors();
    private int maxQueued = 1024;
    private String threadName = "relaykit-keyed";
    private ThreadFactory threadFactory;
    private FailureHandler failureHandler = (key, failure) -> LOG.log(System.Logger.Level.WARNING,
        "task for key " + key + " failed", failure);

    private Builder() {}

    /**
     * Worker threads; default: the number of available processors.
     *
     * @param threads the count; checked ({@code >= 1}) by {@link #build()}
     * @return this builder
     */
    public Builder threads(int threads) {
      this.threads = threads;
      return this;
    }

    /**
     * Most accepted-but-unfinished tasks (queued plus running); default 1024.
     *
     * @param maxQueued the bound; checked ({@code >= 1}) by {@link #build()}
     * @return this builder
     */
    public Builder maxQueued(int maxQueued) {
      this.maxQueued = maxQueued;
      return this;
    }

    /**
     * Prefix of worker thread names (default {@code relaykit-keyed}); ignored with a factory.
     *
     * @param threadName the prefix; checked (not blank, without a factory) by {@link #build()}
     * @return this builder
     */
    public Builder threadName(String threadName) {
      this.threadName = threadName;
      return this;
    }

    /**
     * Creates the worker threads with {@code threadFactory} instead of named platform threads (pass
     * a virtual-thread factory, say). Default none.
     *
     * @param threadFactory the factory, or null for the default; must not return null
     * @return this builder
     */
    public Builder threadFactory(ThreadFactory threadFactory) {
      this.threadFactory = threadFactory;
      return this;
    }

    /**
     * Where task failures go; default: logged at WARNING.
     *
     * @param failureHandler the handler; checked (not null) by {@link #build()}
     * @return this builder
     */
    public Builder failureHandler(FailureHandler failureHandler) {
      this.failureHandler = failureHandler;
      return this;
    }

    /**
     * Validates and starts the worker threads.
     *
     * @return a running executor
     * @throws IllegalArgumentException naming the field and value of an invalid setting
     * @throws IllegalStateException if the thread factory returns null
     */
    public KeyedExecutor build() {
      if (threads < 1) {
        throw new IllegalArgumentException("threads must be >= 1, was " + threads);
      }
      if (maxQueued < 1) {
        throw new IllegalArgumentException("maxQueued must be >= 1, was " + maxQueued);
      }
      if (threadFactory == null && (threadName == null || threadName.isBlank())) {
        throw new IllegalArgumentException("threadName must not be blank, was '" + threadName + "'");
      }
      if (failureHandler == null) {
        throw new IllegalArgumentException("failureHandler must not be null");
      }
      return new KeyedExecutor(this);
    }
  }
}
