/**
 * OpenTelemetry tracing for relaykit: {@link io.relaykit.opentelemetry.OpenTelemetryPropagation}
 * implements core's {@link io.relaykit.trace.TracePropagation} with the W3C propagator (PRODUCER
 * span per publish, CONSUMER span per delivery, messaging semantic-convention attributes).
 * Depends on the OpenTelemetry API only; the SDK and exporters are the application's choice.
 */
package io.relaykit.opentelemetry;
