/**
 * JDBC storage on H2 (the embedded default) and PostgreSQL, through the same code.
 *
 * <p>{@link io.relaykit.storage.jdbc.JdbcStorage} opens and migrates the tables for one prefix and
 * hands out the stores: the transactional outbox (append in the caller's transaction, claims with
 * {@code SKIP LOCKED} so any number of relays can run), the queue journal, idempotency keys (with
 * {@code tryRunOnce}, whose dedupe row commits with the effect), dead letters with atomic replay
 * into the outbox, and the version guard. Each passes the queue-tck kit of its SPI on both
 * databases. H2 with {@code WRITE_DELAY=0} survives a killed process but not an OS crash; use
 * PostgreSQL where that matters. A database failure surfaces as the caller's exception; nothing is
 * acknowledged that was not committed.
 */
package io.relaykit.storage.jdbc;
