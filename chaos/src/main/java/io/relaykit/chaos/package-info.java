/**
 * {@code ./relaykit chaos}: a fault-injection run with a checker. Not API (this module is never
 * published).
 *
 * <p>It starts the checkout demo as child processes, drives orders over its HTTP API, injects real
 * faults (kill -9, TCP partitions through queue-tck's {@code FaultProxy}, broker kills, clock
 * skew), then checks the recorded history against what the database holds: accepted orders
 * lost, effects applied twice, statuses that go back, Idempotency-Key violations, dead letters
 * without a FAILED order; the run exits 0 only if all of those are 0.
 */
package io.relaykit.chaos;
