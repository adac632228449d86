/**
 * A Spring Boot application on relaykit's starter and Boot's managed library versions: {@code
 * POST /orders} writes an order row and its outbox message in one transaction, the relay publishes
 * the message over the configured transport, and {@link io.relaykit.examples.bootapp.Shipments}
 * receives it once.
 */
package io.relaykit.examples.bootapp;
