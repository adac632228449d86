/**
 * The in-process transport: a {@code Publisher} and {@code Subscriber} inside one JVM.
 *
 * <p>It keeps the same contracts as the broker transports (queue-tck's {@code PublisherContract}
 * and {@code SubscriberContract}): consumer groups, per-key order, retries with backoff that do
 * not block other keys, dead letters after the last attempt, bounded in-flight work, drain on
 * close. Messages live in memory only: a crash loses what was not handled, so pair it with an
 * outbox that re-sends unsent rows.
 */
package io.relaykit.inprocess;
