/**
 * Test support for applications that use relaykit: {@link io.relaykit.test.RelayKitExtension}
 * runs relaykit in the test's JVM on the in-process transport, with in-memory or H2 storage and a
 * controllable clock; {@link io.relaykit.test.TestRelayKit} records what was published, handled
 * and dead-lettered, waits with deadlines, and injects handler failures. The {@code spring}
 * package does the same inside a Spring Boot test's application context. Add it with test scope.
 */
package io.relaykit.test;
