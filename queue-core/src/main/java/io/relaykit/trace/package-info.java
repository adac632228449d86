/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/) as values: {@link
 * io.relaykit.trace.TraceContext} reads and writes the {@code traceparent} and {@code tracestate}
 * headers exactly as the recommendation defines them, with no tracing library behind it.
 *
 * <p>Guarantees: parsing never throws on what arrives from the wire. A malformed {@code
 * traceparent} reads as no context, a malformed {@code tracestate} as an empty one beside a valid
 * parent, so a bad header never fails a message; what was dropped is reported on the result.
 * Values are bounded (a {@code tracestate} keeps at most 32 members and 512 characters).
 */
package io.relaykit.trace;
