package io.relaykit.ordering;

/**
 * How a consumer runtime may run one destination's messages in parallel.
 *
 * <ul>
 *   <li>{@link #UNORDERED}: any message may run beside any other; highest throughput. Use with
 *       order-independent consumers (a {@link VersionGuard} makes most state updates so).
 *   <li>{@link #KEY}: at most one message per key at a time, in arrival order; different keys run
 *       in parallel. A key whose message waits for a retry holds back that key only. A hot key caps
 *       its own throughput at one handler's speed.
 *   <li>{@link #PARTITION}: one message at a time per partition (per queue where the transport has
 *       no partitions); the strictest order, parallel only across partitions.
 * </ul>
 */
public enum OrderingMode {
  /** Any message may run beside any other. */
  UNORDERED,
  /** At most one message per key at a time, in arrival order. */
  KEY,
  /** One message at a time per partition (per queue without partitions). */
  PARTITION
}
