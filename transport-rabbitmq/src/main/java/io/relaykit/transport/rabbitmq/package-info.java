/** RabbitMQ transport for relaykit. */
package io.relaykit.transport.rabbitmq;
