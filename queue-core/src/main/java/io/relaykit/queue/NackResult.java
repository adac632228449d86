package io.relaykit.queue;

/**
 * What {@link ReportQueue#nack} did with the in-flight events it was given. Ids that were not in
 * flight are counted nowhere.
 *
 * @param requeued events scheduled for another attempt
 * @param dead events moved to dead letters (not retryable, or out of attempts)
 * @param expired events that expired while in flight and were discarded instead of retried
 */
public record NackResult(int requeued, int dead, int expired) {
}
