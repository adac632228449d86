package io.relaykit.transport.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.internal.ClientVersionException;
import io.relaykit.internal.ClientVersions;
import org.apache.kafka.common.utils.AppInfoParser;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The kafka-clients floors: the run's client is the one the pom hands in (relaykit's pin, or
 * Spring Boot's 4.1.2 in the boot-versions run); consumer groups, the publisher and dead letters
 * start on it; share groups start only from 4.2.0 and below it fail at creation with one line
 * naming the library, the version found and the floor.
 */
class KafkaShareFloorTest {

  private final KafkaTransportConfig config = KafkaTestSupport.config()
      .groupType(KafkaTransportConfig.GroupType.SHARE).build();

  @Test
  @DisplayName("the run's kafka-clients is the one the pom names, and at least the floor")
  void runsOnTheExpectedClient() {
    assertThat(AppInfoParser.getVersion())
        .isEqualTo(System.getProperty("relaykit.test.kafka-clients.version"));
    KafkaClientVersion.check();
    KafkaSubscriber.create(config).close();
  }

  @Test
  @DisplayName("share groups start from kafka-clients 4.2.0; below it creation fails in one line")
  void shareGroupsNeedTheirFloor() {
    if (ClientVersions.compare(AppInfoParser.getVersion(), KafkaClientVersion.SHARE_FLOOR) < 0) {
      assertThatThrownBy(() -> KafkaShareSubscriber.create(config))
          .isInstanceOf(ClientVersionException.class)
          .hasMessage("relaykit-kafka (share groups, KafkaShareSubscriber) needs kafka-clients"
              + " 4.2.0 or newer, but kafka-clients " + AppInfoParser.getVersion() + " is on the"
              + " class path; upgrade kafka-clients to 4.2.0 or newer")
          .hasNoCause();
    } else {
      KafkaShareSubscriber.create(config).close();
    }
  }

  @Test
  @DisplayName("below the consumer-group floor every factory's check refuses in one line")
  void belowTheFloorIsRefused() {
    assertThatThrownBy(() -> ClientVersions.require("relaykit-kafka", "kafka-clients", "4.0.0",
        KafkaClientVersion.FLOOR, null))
        .isInstanceOf(ClientVersionException.class)
        .hasMessage("relaykit-kafka needs kafka-clients 4.1.2 or newer, but kafka-clients 4.0.0 is"
            + " on the class path; upgrade kafka-clients to 4.1.2 or newer");
  }
}
