package io.relaykit.transport.kafka;

import io.relaykit.internal.ClientVersions;
import org.apache.kafka.common.utils.AppInfoParser;

/**
 * The kafka-clients versions relaykit-kafka runs on: consumer groups, the publisher and the dead
 * letter store from {@value #FLOOR} (what Spring Boot 4.0 manages); share groups from {@value
 * #SHARE_FLOOR} (they acknowledge with {@code AcknowledgeType.RENEW}, new in Kafka 4.2). Checked by
 * every {@code create} factory, so an older client fails there with one line.
 */
final class KafkaClientVersion {
  /** The oldest kafka-clients for consumer groups, the publisher and dead letters. */
  static final String FLOOR = "4.1.2";
  /** The oldest kafka-clients for share groups. */
  static final String SHARE_FLOOR = "4.2.0";

  private KafkaClientVersion() {}

  /** @throws io.relaykit.internal.ClientVersionException below {@value #FLOOR} */
  static void check() {
    ClientVersions.require("relaykit-kafka", "kafka-clients", AppInfoParser.getVersion(), FLOOR,
        null);
  }

  /** @throws io.relaykit.internal.ClientVersionException below {@value #SHARE_FLOOR} */
  static void checkShareGroups() {
    ClientVersions.require("relaykit-kafka", "kafka-clients", AppInfoParser.getVersion(),
        SHARE_FLOOR, "share groups, KafkaShareSubscriber");
  }
}
