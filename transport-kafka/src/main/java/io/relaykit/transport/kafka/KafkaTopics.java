package io.relaykit.transport.kafka;

import io.relaykit.config.Settings;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * How a subscriber provisions its topics: whether it creates a missing source topic, and with how
 * many partitions, which replication factor and which retention it creates the source, retry and
 * dead-letter topics. Off by default: a missing source topic is refused, naming {@value
 * KafkaConfigKeys#TOPICS_CREATE}; retry and dead-letter topics are always created when missing,
 * with the source's partition count.
 *
 * <p>Idempotent: a topic that exists is never changed. One that has fewer partitions than {@code
 * partitions} is reported (a WARN line naming it, its count and the configured one), not altered;
 * its replication and retention are left as they are. Two subscribers creating one topic at once
 * both succeed (the loser's "topic exists" is not an error).
 *
 * @param create whether a missing source topic is created
 * @param partitions the partitions of a created source topic and the fewest expected of an
 *     existing one; {@code 0} for the broker's {@code num.partitions}. Retry and dead-letter
 *     topics get the source's actual count.
 * @param replicationFactor the replication factor of every created topic; {@code 0} for the
 *     broker's {@code default.replication.factor}
 * @param retention the {@code retention.ms} of every created topic; null for the broker's
 */
public record KafkaTopics(boolean create, int partitions, int replicationFactor,
    Duration retention) {

  /**
   * Checks the values.
   *
   * @param create whether a missing source topic is created
   * @param partitions partitions of a created source topic; 0 for the broker's default
   * @param replicationFactor replication factor of created topics; 0 for the broker's default
   * @param retention retention of created topics; null for the broker's
   * @throws IllegalArgumentException if {@code partitions} or {@code replicationFactor} is
   *     negative, {@code replicationFactor} exceeds {@link Short#MAX_VALUE}, or {@code retention}
   *     is not positive
   */
  public KafkaTopics {
    if (partitions < 0) {
      throw new IllegalArgumentException("topics.partitions must be >= 0 (0: the broker's"
          + " default), was " + partitions);
    }
    if (replicationFactor < 0 || replicationFactor > Short.MAX_VALUE) {
      throw new IllegalArgumentException("topics.replicationFactor must be from 0 (the broker's"
          + " default) to " + Short.MAX_VALUE + ", was " + replicationFactor);
    }
    if (retention != null && (retention.isNegative() || retention.isZero())) {
      throw new IllegalArgumentException("topics.retention must be positive, was " + retention);
    }
  }

  /**
   * The default: no source topic created, broker defaults for everything.
   *
   * @return {@code KafkaTopics(false, 0, 0, null)}
   */
  public static KafkaTopics defaults() {
    return new KafkaTopics(false, 0, 0, null);
  }

  /**
   * What the {@code relaykit.kafka.topics.*} keys of {@code settings} say.
   *
   * @param settings the deployment's settings
   * @return the provisioning
   * @throws IllegalArgumentException naming the key and value of an invalid setting
   */
  public static KafkaTopics from(Settings settings) {
    return new KafkaTopics(settings.getBoolean(KafkaConfigKeys.TOPICS_CREATE, false),
        settings.getInt(KafkaConfigKeys.TOPICS_PARTITIONS, 0),
        settings.getInt(KafkaConfigKeys.TOPICS_REPLICATION_FACTOR, 0),
        settings.getDuration(KafkaConfigKeys.TOPICS_RETENTION, null));
  }

  /** The replication factor for {@code NewTopic}: empty for the broker's default. */
  java.util.Optional<Short> replication() {
    return replicationFactor == 0 ? java.util.Optional.empty()
        : java.util.Optional.of((short) replicationFactor);
  }

  /** The topic configs of a created topic: {@code retention.ms} when set, plus {@code extra}. */
  Map<String, String> configs(Map<String, String> extra) {
    Map<String, String> c = new LinkedHashMap<>(extra);
    if (retention != null) {
      long ms;
      try {
        ms = retention.toMillis();
      } catch (ArithmeticException e) {
        ms = Long.MAX_VALUE;
      }
      c.put("retention.ms", Long.toString(ms));
    }
    return c;
  }
}
