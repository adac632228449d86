/**
 * The status contract of asynchronous work, and clients that poll it politely.
 *
 * <p>{@link io.relaykit.poller.StatusResponses} answers a submit with {@code 202 Accepted}, {@code
 * Location} and {@code Retry-After}, never {@code 200 OK}, and a status URL with a {@link
 * io.relaykit.poller.StatusDocument} ({@code PENDING}, {@code PROCESSING}, {@code SUCCESS}, {@code
 * FAILED}). {@link io.relaykit.poller.StatusPoller} polls with capped, jittered backoff, honours
 * {@code Retry-After} as a floor, keeps at most one request in flight, and stops at a deadline, a
 * maximum of attempts or on cancel; its future never completes exceptionally. {@link
 * io.relaykit.poller.PollerAssets} serves the browser poller script with the same semantics.
 */
package io.relaykit.poller;
