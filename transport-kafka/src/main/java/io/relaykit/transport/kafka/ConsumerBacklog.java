package io.relaykit.transport.kafka;

import io.relaykit.monitor.BacklogSample;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;

/**
 * One backlog sample of a Kafka subscription, taken by its poll thread.
 *
 * @param topic the consumed topic
 * @param group the consumer group
 * @param lagByPartition records between the consumer's position and the end of each assigned
 *     partition ({@code topic-partition} to records), retry partitions included; partitions whose
 *     lag the client does not know yet are left out
 * @param inFlight records fetched but not yet finished (running, waiting for their key, or being
 *     handed to the retry or dead-letter topic)
 * @param oldestInFlightAge how long the oldest unfinished record has been in flight; zero when none
 * @param at when the sample was taken
 */
public record ConsumerBacklog(
    String topic,
    String group,
    Map<String, Long> lagByPartition,
    long inFlight,
    Duration oldestInFlightAge,
    Instant at) {

  /**
   * Copies {@code lagByPartition}, so a sample never changes after it was taken.
   *
   * @param topic the consumed topic
   * @param group the consumer group
   * @param lagByPartition records behind the end of each assigned partition, by {@code
   *     topic-partition}
   * @param inFlight records fetched but not yet finished
   * @param oldestInFlightAge age of the oldest unfinished record; zero when none
   * @param at when the sample was taken
   * @throws NullPointerException if {@code lagByPartition} is null or holds a null key or value
   */
  public ConsumerBacklog {
    lagByPartition = Map.copyOf(lagByPartition);
  }

  /**
   * This sample as a {@link io.relaykit.monitor.BacklogMonitor} input: depth is the lag plus the
   * records in flight, age the oldest in-flight record's.
   *
   * @return a sample taken at {@link #at()} with depth {@code totalLag() + inFlight()}
   */
  public BacklogSample toSample() {
    return new BacklogSample(at, totalLag() + inFlight, oldestInFlightAge);
  }

  /**
   * The sum of every partition's lag; O(partitions) per call.
   *
   * @return the records behind the end of the assigned partitions; 0 when no lag is known yet
   */
  public long totalLag() {
    return lagByPartition.values().stream().mapToLong(Long::longValue).sum();
  }
}
