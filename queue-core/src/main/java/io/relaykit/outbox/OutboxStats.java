package io.relaykit.outbox;

import java.time.Duration;

/**
 * The outbox backlog at one instant.
 *
 * @param unsent rows not yet sent (pending, claimed or waiting for a retry)
 * @param oldestUnsentAge age of the oldest unsent row's message; zero when none
 * @param sent rows sent and not yet purged
 */
public record OutboxStats(long unsent, Duration oldestUnsentAge, long sent) {}
