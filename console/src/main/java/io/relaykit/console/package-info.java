/**
 * The operator console: what an operator looks at before reading logs. Plain HTML pages with
 * inline SVG charts, no script and no external resource: the outbox backlog, its oldest pending
 * age and the backlog verdict over the last hour, lag and in-flight work per subscription, dead
 * letters per destination and group with their trend, a filterable list of dead letters paged on
 * the server, and a detail view of each.
 *
 * <p>{@link io.relaykit.console.Console} is framework-neutral: a host (the Spring Boot starter, or
 * {@link io.relaykit.console.ConsoleServer} on the JDK's HTTP server) turns each HTTP request into
 * a {@link io.relaykit.console.ConsoleRequest} and writes back the {@link
 * io.relaykit.console.ConsoleResponse}. Actions (replay one, replay a filtered set, purge where the
 * store can remove) are off unless enabled, carry a server-side action id recorded before they
 * run so that a repeated request does nothing twice, are logged in one line and counted through
 * {@link io.relaykit.monitor.MetricsListener#consoleAction}. Everything shown is escaped; every
 * page, set and ledger is bounded.
 *
 * <p>{@link io.relaykit.console.TimeChart} draws the charts; {@link
 * io.relaykit.console.ConsoleHistory} keeps the hour of samples they draw, in memory, from the
 * start of the process.
 */
package io.relaykit.console;
