/**
 * Kafka transport: confirmed publisher, parallel consumer runtime, retry topics, dead letters.
 *
 * <p>{@link io.relaykit.transport.kafka.KafkaPublisher} is an idempotent producer with {@code
 * acks=all}; each publish completes on the broker's confirm. {@link
 * io.relaykit.transport.kafka.KafkaSubscriber} runs records out of order on a worker pool
 * (UNORDERED, KEY or PARTITION) and commits only the lowest unfinished offset, so a crash replays
 * only unfinished work; retries go through a delay topic without blocking other keys, and the last
 * failure goes to a dead-letter topic, read and replayed through {@link
 * io.relaykit.transport.kafka.KafkaDeadLetterStore}. In-flight work is bounded and close drains.
 * With {@link io.relaykit.transport.kafka.KafkaTransportConfig.HandOff#TRANSACTIONAL} the retry
 * and dead-letter copies are written in one transaction with the source offsets that pass them
 * (read with {@code read_committed}), so a crash never both keeps a copy and re-runs its record.
 * Both pass queue-tck's publisher and subscriber kits. {@link
 * io.relaykit.transport.kafka.KafkaSubscriptionStatus} reads consumer and share groups' lag from
 * the brokers for operators.
 */
package io.relaykit.transport.kafka;
