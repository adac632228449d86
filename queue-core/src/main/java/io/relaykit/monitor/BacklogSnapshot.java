package io.relaykit.monitor;

import java.time.Duration;
import java.time.Instant;

/**
 * A {@link BacklogMonitor}'s report: the verdict with the numbers behind it.
 *
 * @param verdict the backlog's shape over the window
 * @param at the latest sample's time; null when no sample was recorded
 * @param depth the latest depth (0 without samples)
 * @param oldestAge the latest oldest-message age ({@link Duration#ZERO} without samples)
 * @param samples how many samples the window holds
 * @param window the time the samples span, first to latest
 * @param depthPerSecond the depth's trend over the window (least-squares slope; positive = growing)
 */
public record BacklogSnapshot(
    BacklogVerdict verdict,
    Instant at,
    long depth,
    Duration oldestAge,
    int samples,
    Duration window,
    double depthPerSecond) {}
