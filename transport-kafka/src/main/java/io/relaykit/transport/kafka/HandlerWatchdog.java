package io.relaykit.transport.kafka;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Times out handler calls that all share one timeout, without a timer task per call: each worker
 * thread publishes its running call in a slot of its own, and one scan on the timer thread expires
 * the calls past their deadline, then schedules itself for the earliest deadline it saw, or one
 * timeout ahead when nothing runs. A call that starts after a scan is due no earlier than the next
 * one, so every call is expired at its deadline (give or take the timer thread's own delays), as
 * with a timer task per call.
 *
 * <p>Expiring a call marks it settled, interrupts its thread and runs its expiry action on the
 * timer thread; the worker's {@link #end} then reports that the call's own result no longer counts.
 * Exactly one of the two settles a call. An {@link #end} that meets a running expiry action waits
 * for it: whatever the action sets up (the consumer runtime parks the record's key there) is in
 * place before the call's thread moves on, as if that thread had handled the failure itself.
 *
 * <p>Cost: per call one small object and two volatile writes, no lock shared between workers; the
 * timer thread wakes about once per timeout while handlers finish in time, and scans one slot per
 * worker thread. Only an expired call's own thread ever waits, for its expiry action. Thread-safe.
 */
final class HandlerWatchdog {

  private static final System.Logger LOG = System.getLogger(HandlerWatchdog.class.getName());
  /** Keeps {@code nanoTime() + timeout} far from overflow: about 73 years. */
  private static final long MAX_TIMEOUT_NANOS = Long.MAX_VALUE / 4;

  /** One handler call being watched. */
  static final class Call {
    private final Thread thread;
    private final long deadline;
    private final Runnable onExpiry;
    private final Slot slot;
    private boolean settled; // guarded by this

    private Call(Thread thread, long deadline, Runnable onExpiry, Slot slot) {
      this.thread = thread;
      this.deadline = deadline;
      this.onExpiry = onExpiry;
      this.slot = slot;
    }
  }

  /** A worker thread's running call, if any. */
  private static final class Slot {
    volatile Call current;
  }

  private final long timeoutNanos;
  private final ScheduledExecutorService timer;
  private final LongSupplier nanoTime;
  private final List<Slot> slots = new CopyOnWriteArrayList<>();
  private final ThreadLocal<Slot> mySlot = ThreadLocal.withInitial(() -> {
    Slot slot = new Slot();
    slots.add(slot);
    return slot;
  });

  /**
   * @param timeout how long a call may run
   * @param timer runs the scans and the expiry actions; shutting it down stops the watchdog
   */
  HandlerWatchdog(Duration timeout, ScheduledExecutorService timer) {
    this(timeout, timer, System::nanoTime);
  }

  /** As above, reading time from {@code nanoTime} (tests). */
  HandlerWatchdog(Duration timeout, ScheduledExecutorService timer, LongSupplier nanoTime) {
    if (timeout == null || timeout.isNegative() || timeout.isZero()) {
      throw new IllegalArgumentException("timeout must be positive, was " + timeout);
    }
    this.timeoutNanos = timeout.compareTo(Duration.ofNanos(MAX_TIMEOUT_NANOS)) > 0
        ? MAX_TIMEOUT_NANOS : timeout.toNanos();
    this.timer = timer;
    this.nanoTime = nanoTime;
  }

  /** Starts scanning. */
  void start() {
    scheduleScan(timeoutNanos);
  }

  /**
   * Starts watching a call on the current thread, which must {@link #end} it before it begins
   * another.
   *
   * @param onExpiry runs on the timer thread if the call is still running at its deadline; {@link
   *     #end} of this call waits until it has run, so it must be short and must not wait for this
   *     call's thread (hand slow work, such as a send, to another task)
   */
  Call begin(Runnable onExpiry) {
    Slot slot = mySlot.get();
    Call call = new Call(Thread.currentThread(), nanoTime.getAsLong() + timeoutNanos, onExpiry,
        slot);
    slot.current = call;
    return call;
  }

  /**
   * Stops watching {@code call} and clears an interrupt its expiry sent. If the call expired, returns
   * only after its expiry action has run.
   *
   * @return true if the call finished first, false if it had expired (its result is to be ignored)
   */
  boolean end(Call call) {
    call.slot.current = null;
    boolean mine;
    synchronized (call) {
      // after an expiry, this waits until its interrupt has been sent and its action has run, so
      // the line below clears that interrupt and the caller sees what the action did
      mine = !call.settled;
      call.settled = true;
    }
    Thread.interrupted();
    return mine;
  }

  /**
   * How long the longest-running handler call on a watched worker has run, expired calls whose
   * handler has not returned included: a worker stuck in a handler that ignores interrupts holds
   * its thread, and an oldest-age alarm must see it even though its record has moved on to its
   * retry. Empty when no call runs. O(workers).
   */
  java.util.Optional<Duration> oldestRunning() {
    long now = nanoTime.getAsLong();
    long oldest = Long.MIN_VALUE;
    for (Slot slot : slots) {
      Call call = slot.current;
      if (call != null) {
        oldest = Math.max(oldest, now - (call.deadline - timeoutNanos));
      }
    }
    return oldest == Long.MIN_VALUE ? java.util.Optional.empty()
        : java.util.Optional.of(Duration.ofNanos(Math.max(0, oldest)));
  }

  private void scan() {
    long now = nanoTime.getAsLong();
    long next = now + timeoutNanos;
    try {
      for (Slot slot : slots) {
        Call call = slot.current;
        if (call == null) {
          continue;
        }
        if (now - call.deadline >= 0) {
          expire(call);
        } else if (call.deadline - next < 0) {
          next = call.deadline;
        }
      }
    } finally {
      scheduleScan(next - nanoTime.getAsLong());
    }
  }

  private void expire(Call call) {
    synchronized (call) {
      if (call.settled) {
        return;
      }
      call.settled = true;
      call.thread.interrupt();
      // Still holding the call: its thread, once out of the handler, waits in end() until the
      // action has run. Released any earlier, that thread would go on (its executor would start
      // the key's next record) before the action had parked the key.
      try {
        call.onExpiry.run();
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.ERROR, "handler timeout action failed", e);
      }
    }
  }

  private void scheduleScan(long delayNanos) {
    try {
      timer.schedule(this::scan, Math.max(0, delayNanos), TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      // the timer is shut down: the subscription is closing
    }
  }
}
