/**
 * Contract kits: one abstract JUnit 5 suite per queue-core SPI, and the tools they use.
 *
 * <p>A backend proves it keeps a contract by subclassing its kit ({@code OutboxStoreContract},
 * {@code IdempotencyStoreContract}, {@code SubscriberContract}, ...) with a factory method; the
 * in-memory reference backends and every adapter pass the same kits. The tools: {@link
 * io.relaykit.tck.FakeClock} (time that moves only when told), {@link io.relaykit.tck.Await} (wait
 * for a condition with a deadline, never a fixed sleep), {@link io.relaykit.tck.Race}, {@link
 * io.relaykit.tck.FaultProxy} (a loopback TCP proxy that cuts, refuses, blackholes or delays
 * connections, for outage tests) and {@link io.relaykit.tck.FaultyJournal}. For test scope only:
 * this artifact depends on JUnit and AssertJ at compile scope.
 */
package io.relaykit.tck;
