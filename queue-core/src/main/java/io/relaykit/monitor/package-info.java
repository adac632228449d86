/**
 * Backlog verdicts, metrics and lifecycle events for operators.
 *
 * <p>{@link io.relaykit.monitor.BacklogMonitor} keeps a bounded window of backlog samples (depth
 * and oldest age) and answers a verdict: {@code OVER_BOUND} &gt; {@code STALLED} &gt; {@code
 * SUSTAINED_GROWTH} &gt; {@code DRAINING_SPIKE} &gt; {@code HEALTHY}, with O(1) amortized
 * recording. {@link io.relaykit.monitor.MetricsListener} and {@link
 * io.relaykit.monitor.LifecycleListener} are the hooks runtimes report to; a listener that throws
 * is contained (logged once per listener) and never stops the runtime that called it.
 *
 * <p>{@link io.relaykit.monitor.SubscriptionStatusSource} reads lag and in-flight counts per
 * subscription; {@link io.relaykit.monitor.SubscriptionGauges} is the one fed by this process's
 * consumers (bounded, O(1) per report), the transports add readers that ask the broker.
 */
package io.relaykit.monitor;
