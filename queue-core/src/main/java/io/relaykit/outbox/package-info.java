/**
 * The transactional outbox: messages commit with the business data, then a relay publishes them.
 *
 * <p>{@link io.relaykit.outbox.OutboxStore} (SPI, checked by queue-tck's outbox kits) appends a
 * message in the caller's transaction and hands rows to relays under leases, oldest first and one
 * row per key at a time, so per-key order is commit order. {@link io.relaykit.outbox.OutboxRelay}
 * claims, publishes, waits for the broker's confirms, then marks rows sent, reschedules them with
 * backoff or moves them to dead letters; it renews leases while a batch is in flight, isolates a
 * row whose handling fails, and purges sent rows and dead letters in bounded steps. {@link
 * io.relaykit.outbox.OutboxBound} caps the unsent backlog. {@link io.relaykit.outbox.OutboxWakeup}
 * ends a relay's idle wait when rows commit (the poll stays the safety net). Publishing is at
 * least once.
 */
package io.relaykit.outbox;
