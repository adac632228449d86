/**
 * relaykit's one configuration reader, JDK only: {@link io.relaykit.config.Settings} merges
 * {@code relaykit.*} properties and {@code RELAYKIT_*} environment variables (the environment
 * wins, defaults last), checks every value when built, masks secrets in its text and its errors,
 * and rejects an undeclared key with the nearest declared one suggested.
 *
 * <p>Each module declares the keys it reads through a {@link io.relaykit.config.ConfigKeys}
 * provider ({@link java.util.ServiceLoader}); {@link io.relaykit.config.ConfigRegistry} collects
 * them. Blocks read typed, validated records: {@link io.relaykit.config.RetrySettings}, {@link
 * io.relaykit.config.RelaySettings}, {@link io.relaykit.config.IdempotencySettings}, and each
 * adapter's {@code *Config.from(Settings)}. Durations have one syntax, {@link
 * io.relaykit.config.DurationFormat}'s. queue-guice's {@code RelayKitConfig} is a thin layer
 * over this package.
 */
package io.relaykit.config;
