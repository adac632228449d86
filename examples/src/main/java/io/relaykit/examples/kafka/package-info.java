/**
 * A real single-node Kafka broker (KRaft) run as a child process, for {@code ./relaykit demo
 * --transport kafka} when no broker is configured and for the chaos runs, which kill and restart
 * it. Not API (the examples module is never published).
 *
 * <p>The broker listens on 127.0.0.1 only, keeps its data and log in the directory it is given,
 * and halts when its parent process dies, so a killed demo leaves no broker holding the port.
 */
package io.relaykit.examples.kafka;
