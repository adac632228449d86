/**
 * Micrometer meters for relaykit: {@link io.relaykit.metrics.micrometer.RelayKitMeterBinder}
 * implements core's {@code MetricsListener} and {@code LifecycleListener} and registers the meters
 * {@link io.relaykit.metrics.micrometer.RelayKitMeter} lists, each with bounded tags. Depends on
 * relaykit-core and micrometer-core only.
 */
package io.relaykit.metrics.micrometer;
