/**
 * relaykit's one shared-internals package (argument checks, text bounds, UTF-8 sizes, the
 * length-prefixed field codec, digests), for relaykit's own modules only. Not API, unstable: it
 * may change in any release without notice.
 *
 * <p>Public only because Java has no narrower sharing across modules: queue-core, queue-guice,
 * queue-tck and the adapters may use it; examples, benchmarks and user code must not (the
 * architecture tests enforce it for relaykit's own applications).
 */
package io.relaykit.internal;
