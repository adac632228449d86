package io.relaykit.examples.bootapp;

/**
 * The event an order's placement publishes: appended as an object ({@code
 * TransactionalOutbox.append(destination, key, event)}), carried as JSON under the type name
 * {@code order.placed} ({@link BootApp#payloadTypes()}), handled as an object by {@link
 * Shipments#onOrder(OrderPlaced)}.
 *
 * @param orderId the order's id
 * @param sku the product
 */
public record OrderPlaced(String orderId, String sku) {}
