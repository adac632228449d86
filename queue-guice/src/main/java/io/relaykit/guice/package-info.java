/**
 * Guice wiring: every SPI gets an in-memory default, and configuration picks the backends.
 *
 * <p>{@link io.relaykit.guice.RelayKitModule} binds the core services; {@link
 * io.relaykit.guice.RelayKitConfig} reads settings from properties and {@code RELAYKIT_*}
 * environment variables, a thin layer over queue-core's {@link io.relaykit.config.Settings}. {@code relaykit.storage} and {@code relaykit.transport} name backends
 * that {@link io.relaykit.guice.Backends} finds on the class path through {@link
 * io.relaykit.guice.BackendModuleProvider} (ServiceLoader); an unknown name fails with the list of
 * known ones. An adapter module replaces only the defaults it implements.
 */
package io.relaykit.guice;
