/**
 * Idempotency: run an effect once per business key, even when a message is delivered twice.
 *
 * <p>{@link io.relaykit.idempotency.IdempotencyStore} (the SPI, checked by queue-tck's {@code
 * IdempotencyStoreContract}) claims a key with a lease: CLAIMED, IN_PROGRESS or DONE. Completion
 * is fenced by the claim's token, not by time, and leases and retention run on the store's clock.
 * {@link io.relaykit.idempotency.IdempotentHandler} wraps a handler: a key held by another
 * delivery fails the delivery retryably ({@link io.relaykit.idempotency.WorkInProgressException}),
 * never acknowledges it as done. {@link io.relaykit.idempotency.TieredIdempotencyStore} puts a
 * fast tier (Redis) in front of a durable one (a database, the final guard) and keeps working on
 * the durable tier alone when the fast tier is down. A takeover after a lapsed lease means both
 * workers may run the effect; only a dedupe row committed with the effect ({@code tryRunOnce} of
 * the JDBC store) fences the effect itself.
 *
 * <p>{@link io.relaykit.idempotency.IdempotencyKeyProtocol} is the server side of the HTTP
 * {@code Idempotency-Key} header (400, 409, 410, 422, replay of the first answer) over an
 * IdempotencyStore and an {@link io.relaykit.idempotency.IdempotentAnswerStore}, without HTTP
 * types; the demo's server and the Spring starter's filter both run it.
 */
package io.relaykit.idempotency;
