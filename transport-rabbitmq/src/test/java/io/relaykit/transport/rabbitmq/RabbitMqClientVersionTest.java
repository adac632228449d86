package io.relaykit.transport.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.impl.ClientVersion;
import io.relaykit.internal.ClientVersionException;
import io.relaykit.internal.ClientVersions;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Which amqp-client this run has (relaykit's pin, or Spring Boot's managed version in the
 * boot-versions run: the pom hands in the expected one), and that it is at least the floor.
 */
class RabbitMqClientVersionTest {

  @Test
  @DisplayName("the run's amqp-client is the one the pom names, and at least the floor")
  void runsOnTheExpectedClient() {
    assertThat(ClientVersion.VERSION).isEqualTo(System.getProperty(
        "relaykit.test.amqp-client.version"));
    assertThat(ClientVersions.compare(ClientVersion.VERSION, RabbitMqClientVersion.FLOOR))
        .isNotNegative();
    RabbitMqClientVersion.check();
  }

  @Test
  @DisplayName("a client below the floor is refused in one line naming library, version, floor")
  void belowTheFloorIsRefused() {
    assertThatThrownBy(() -> ClientVersions.require("relaykit-rabbitmq", "amqp-client", "5.20.0",
        RabbitMqClientVersion.FLOOR, null))
        .isInstanceOf(ClientVersionException.class)
        .hasMessage("relaykit-rabbitmq needs amqp-client 5.27.1 or newer, but amqp-client 5.20.0"
            + " is on the class path; upgrade amqp-client to 5.27.1 or newer");
  }
}
