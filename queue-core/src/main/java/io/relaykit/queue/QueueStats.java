package io.relaykit.queue;

/**
 * A consistent snapshot of a {@link ReportQueue}'s counts, taken under its lock in O(1).
 *
 * @param pending events waiting to be drained (ready or waiting for a retry)
 * @param inflight events drained and neither acked nor nacked yet
 * @param seen ids remembered by the dedupe window
 * @param deadLetters events that gave up, held until purged
 * @param dropped events lost for capacity since the queue was built: evicted, or rejected as
 *     {@code QUEUE_FULL} or {@code TOO_LARGE}
 * @param expired events discarded since the queue was built because their expiry passed,
 *     including those rejected as {@code EXPIRED} at enqueue, or because they were older than the
 *     queue's max age ({@link ReportQueue.Builder#maxAge})
 * @param bytes UTF-8 payload bytes of pending and in-flight events
 * @param journalFull enqueues refused as {@code JOURNAL_FULL} since the queue was built (the
 *     journal's buffer for its backend was full); not counted in {@code dropped}
 * @param deadDropped dead letters discarded since the queue was built because the dead letters
 *     were at their bounds (the oldest pushed out, or one too large to keep) or older than the
 *     dead letters' max age ({@link ReportQueue.Builder#maxAge})
 */
public record QueueStats(
    int pending, int inflight, int seen, int deadLetters, long dropped, long expired, long bytes,
    long journalFull, long deadDropped) {
}
