/**
 * Messages and the transport SPI: what is sent, how it is published, how it is consumed.
 *
 * <p>{@link io.relaykit.message.Message} is the immutable envelope (id, type, key, payload,
 * headers, trace id, schema version, times); the id is chosen once and kept across retries and
 * replays. {@link io.relaykit.message.Publisher} completes a publish only on the backend's
 * confirm; {@link io.relaykit.message.Subscriber} delivers to a {@link
 * io.relaykit.message.MessageHandler}, where returning means done and throwing means retry or dead
 * letter, as the subscription's {@link io.relaykit.message.SubscriptionSpec} (ordering,
 * concurrency, in-flight bound, retry policy) says. Delivery is at least once: handlers must be
 * idempotent. Every transport is checked by queue-tck's publisher and subscriber kits.
 *
 * <p>Interop: {@link io.relaykit.message.InboundMapping} says, once for every transport, how a
 * record without relaykit's headers (opt-in per subscription) or a CloudEvent becomes a message;
 * {@link io.relaykit.message.CloudEvents} writes CloudEvents binary mode beside the envelope.
 */
package io.relaykit.message;
