/**
 * The checkout demo and the operator CLI: an example, not API (this module is never published).
 *
 * <p>An order commits with its outbox messages in one transaction and the request answers
 * {@code 202 Accepted}; a relay publishes the messages, two idempotent consumers send the SMS and
 * grant the coupon exactly once through failures, retries and {@code kill -9}, and a
 * dead-lettered order shows FAILED with its reason. {@code ./relaykit demo}, {@code stats} and
 * {@code dlq} run these classes.
 */
package io.relaykit.examples;
