/**
 * Retry building blocks: backoff, retry policy, failure classification, rate limiting.
 *
 * <p>{@link io.relaykit.retry.Backoff} is capped exponential backoff with optional jitter that
 * saturates instead of overflowing. {@link io.relaykit.retry.RetryPolicy} dead-letters on a
 * permanent failure, on the last allowed attempt, or when the next retry would pass the maximum
 * age, and says which. {@link io.relaykit.retry.FailureClassifier} decides permanent or retryable
 * ({@link io.relaykit.retry.PermanentFailureException} is always permanent). {@link
 * io.relaykit.retry.RateLimiter} is a token bucket with no drift and O(1) cost per call.
 */
package io.relaykit.retry;
