/**
 * Redis (Lettuce) backends: idempotency leases, version guard, dead letters, queue journal.
 *
 * <p>{@link io.relaykit.storage.redis.RedisStorage} holds one auto-reconnecting connection and
 * hands out the stores; each call costs one round trip (a few cost two) and waits at most the
 * configured command timeout. The idempotency store is the fast tier of queue-core's {@code
 * TieredIdempotencyStore}: when Redis is down, the durable tier keeps answering alone. Leases and
 * retention run on Redis's clock, never the host's. Each store passes the queue-tck kit of its
 * SPI.
 */
package io.relaykit.storage.redis;
