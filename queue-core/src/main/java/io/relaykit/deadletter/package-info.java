/**
 * Dead letters: messages that exhausted their retries or failed permanently, kept whole.
 *
 * <p>A {@link io.relaykit.deadletter.DeadLetter} keeps the full message, its source and consumer
 * group, the reason, the exception, the attempts and the first and last failure times. Its id is
 * (message id, source, group), so one message dead-lettered at two destinations or by two groups
 * gives two entries. {@link io.relaykit.deadletter.DeadLetterStore} is the SPI every backend
 * implements (checked by queue-tck's {@code DeadLetterStoreContract}): {@code add} replaces an
 * entry with the same id, {@code remove} hands an entry out at most once, queries filter and page
 * stably, and retention runs in bounded steps. {@link io.relaykit.deadletter.DeadLetterReplayer}
 * sends an entry back through a {@link io.relaykit.deadletter.ReplayTarget}; {@link
 * io.relaykit.deadletter.FailureRoute} decides retry or dead letter and bounds the reason and
 * exception text it records. The in-memory store is the reference backend.
 */
package io.relaykit.deadletter;
