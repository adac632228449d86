/**
 * The report queue: a bounded, prioritized, persistent client-side queue and its batch sender.
 *
 * <p>{@link io.relaykit.queue.ReportQueue} holds events by priority within a capacity in count and
 * bytes, drops by policy when full, dedupes event ids over a bounded window, retries with backoff,
 * dead-letters and expires events, and restores in-flight events as pending after a crash; O(1)
 * expected per enqueue, drain and ack. {@link io.relaykit.queue.ReportDispatcher} sends batches
 * through a {@link io.relaykit.queue.BatchSender} with per-event acks and {@code Retry-After} as a
 * floor. Durability comes from a {@link io.relaykit.queue.QueueJournal} (SPI, checked by
 * queue-tck's journal kits): {@link io.relaykit.queue.FileJournal} fsyncs CRITICAL events before
 * enqueue returns, group-commits the rest, checks every record with CRC32C, can encrypt at rest,
 * and fails closed after a failed fsync.
 */
package io.relaykit.queue;
