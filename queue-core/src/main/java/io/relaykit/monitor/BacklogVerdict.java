package io.relaykit.monitor;

/**
 * The shape of a backlog over a {@link BacklogMonitor}'s window, most severe last. Each names what
 * an operator should do.
 */
public enum BacklogVerdict {
  /**
   * Nothing to act on: depth low or steady, or too few samples to judge (see {@link
   * BacklogMonitor.Config#minSamples()}).
   */
  HEALTHY,
  /** Depth is above the high mark but falling: a burst is being worked off. Watch, do not page. */
  DRAINING_SPIKE,
  /** Depth keeps rising over the window: consumers are slower than producers. Add capacity. */
  SUSTAINED_GROWTH,
  /**
   * The oldest message keeps ageing, as fast as time passes, while nothing drains: consumers are
   * stuck or gone. Page someone.
   */
  STALLED,
  /**
   * The latest depth is over the bound the backlog was configured with ({@link
   * BacklogMonitor.Config#maxDepth()}; an outbox's {@link io.relaykit.outbox.OutboxBound} with
   * ACCEPT): appends are still accepted, but the producer outruns the relay and the bound is
   * there to say so. Checked before every other verdict, with any number of samples. Page
   * someone.
   */
  OVER_BOUND
}
