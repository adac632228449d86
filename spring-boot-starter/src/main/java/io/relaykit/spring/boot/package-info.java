/**
 * Spring Boot auto-configuration for relaykit: {@code relaykit.*} properties bound through core's
 * {@link io.relaykit.config.Settings} (same keys, same defaults), storage on the application's
 * {@link javax.sql.DataSource} through relaykit-jdbc, or in memory when nothing is configured, and
 * a {@link io.relaykit.spring.boot.TransactionalOutbox} whose appends join the caller's Spring
 * transaction.
 */
package io.relaykit.spring.boot;
