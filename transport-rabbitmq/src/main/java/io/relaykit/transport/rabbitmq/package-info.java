/**
 * RabbitMQ transport: confirmed publisher, manual-ack subscriber, delay queues, dead letters.
 *
 * <p>{@link io.relaykit.transport.rabbitmq.RabbitMqPublisher} publishes persistent, mandatory
 * messages and completes each publish on the broker's confirm, within a bounded window,
 * reconnecting and republishing after a connection loss. {@link
 * io.relaykit.transport.rabbitmq.RabbitMqSubscriber} consumes from durable quorum queues and
 * acknowledges only after the handler succeeds; retries wait in one delay queue per backoff level,
 * and the last failure goes to a dead-letter queue per group, read and replayed through {@link
 * io.relaykit.transport.rabbitmq.RabbitMqDeadLetterStore}. A queue declared with other arguments
 * fails with {@link io.relaykit.transport.rabbitmq.TopologyConflictException}, naming the steps to
 * migrate. Both pass queue-tck's publisher and subscriber kits. {@link
 * io.relaykit.transport.rabbitmq.RabbitMqQueueStatus} reads queues' ready messages and consumers
 * for operators, by passive declare.
 */
package io.relaykit.transport.rabbitmq;
