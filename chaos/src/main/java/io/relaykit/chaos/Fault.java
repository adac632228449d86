package io.relaykit.chaos;

import java.util.concurrent.locks.LockSupport;

/**
 * One kind of fault a chaos run injects ({@code kill}, {@code partition}, ...). The run calls
 * {@link #inject} at the scheduled moment (held back until the previous fault recovered, see
 * {@link FaultPacer}), on the fault thread; it returns once the fault is over
 * and healed (a killed instance listens again, a proxy forwards again), and the run records the
 * window between the call and the return. A fault that cannot act (no instance up) returns at
 * once and says so in its detail.
 *
 * <p>New kinds (the Kafka broker's kill -9, a skewed clock) plug in by implementing this and being
 * registered by name in {@link ChaosRun}.
 */
interface Fault {
  /** The name used in {@code --faults}. */
  String name();

  /**
   * Injects {@code event} and heals it.
   *
   * @return what was done, for the report (the instance killed, the proxy mode)
   * @throws Exception if the fault or its healing failed; the run stops and reports it
   */
  String inject(FaultSchedule.Event event) throws Exception;

  /**
   * Holds the fault for {@code event}'s length (the length asked for, on the monotonic clock), or
   * until the fault thread is interrupted (the run is stopping); the caller heals afterwards.
   */
  static void holdFor(FaultSchedule.Event event) {
    long end = System.nanoTime() + event.lengthMs() * 1_000_000L;
    for (long left; (left = end - System.nanoTime()) > 0; ) {
      LockSupport.parkNanos(left);
      if (Thread.currentThread().isInterrupted()) {
        return;
      }
    }
  }
}
