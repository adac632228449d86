/**
 * Order and parallelism: contiguous commits, per-key execution, stale-update guards.
 *
 * <p>{@link io.relaykit.ordering.OffsetTracker} answers the lowest unfinished offset per partition
 * (never going back) while records complete in any order, in O(log n). {@link
 * io.relaykit.ordering.KeyedExecutor} runs at most one task per key at a time in submission order,
 * keys in parallel, with a bound on accepted work and no thread per key. {@link
 * io.relaykit.ordering.VersionGuard} (SPI, checked by queue-tck's {@code VersionGuardContract})
 * applies an update only when its version is newer than the last applied one.
 */
package io.relaykit.ordering;
