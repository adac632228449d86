package io.relaykit.transport.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.Connection;
import io.relaykit.config.Settings;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("the RabbitMQ heartbeat: default, validation, and the URI's heartbeat parameter")
class RabbitMqHeartbeatConfigAttackTest {

  private static final String BASE = "amqp://guest:guest@127.0.0.1:5672/%2F";

  @Test
  @DisplayName("default 10 s, negotiated with the broker as 10 s")
  void defaultIsTenSeconds() throws Exception {
    RabbitMqTransportConfig c = TestBroker.config().build();
    assertThat(c.heartbeat()).isEqualTo(Duration.ofSeconds(10));
    assertThat(RabbitMqTransportConfig.from(Settings.builder().build()).heartbeat())
        .isEqualTo(Duration.ofSeconds(RabbitMqTransportConfig.DEFAULT_HEARTBEAT_SECONDS));
    try (Connection conn = TestBroker.connect(c)) {
      assertThat(conn.getHeartbeat()).isEqualTo(10);
    }
  }

  @Test
  @DisplayName("out-of-range, fractional and null heartbeats fail naming the field and value;"
      + " from settings, the failure says relaykit.rabbitmq")
  void invalidHeartbeatsNamed() {
    for (Duration bad : List.of(Duration.ZERO, Duration.ofSeconds(-1), Duration.ofMillis(1500),
        Duration.ofSeconds(65_536), Duration.ofMillis(999))) {
      assertThatThrownBy(() -> RabbitMqTransportConfig.builder().heartbeat(bad).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("heartbeat")
          .hasMessageContaining(bad.toString());
    }
    assertThatThrownBy(() -> RabbitMqTransportConfig.builder().heartbeat(null).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("heartbeat");
    assertThatThrownBy(() -> RabbitMqTransportConfig.from(Settings.builder()
        .set(RabbitMqConfigKeys.HEARTBEAT, "1500ms").build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("relaykit.rabbitmq").hasMessageContaining("heartbeat");
  }

  @Test
  @DisplayName("a heartbeat in the URI's query is the configured heartbeat (not silently replaced"
      + " by the default), and the broker negotiates it")
  void uriHeartbeatHonoured() throws Exception {
    RabbitMqTransportConfig c = TestBroker.config().uri(BASE + "?heartbeat=30").build();
    assertThat(c.heartbeat()).isEqualTo(Duration.ofSeconds(30));
    assertThat(c.toBuilder().build()).isEqualTo(c);
    RabbitMqTransportConfig fromSettings = RabbitMqTransportConfig.from(Settings.builder()
        .set(RabbitMqConfigKeys.URI, BASE + "?heartbeat=30").build());
    assertThat(fromSettings.heartbeat()).isEqualTo(Duration.ofSeconds(30));
    try (Connection conn = TestBroker.connect(c)) {
      assertThat(conn.getHeartbeat()).isEqualTo(30);
    }
  }

  @Test
  @DisplayName("a URI heartbeat that disagrees with the heartbeat setting, or is not 1..65535"
      + " whole seconds, fails naming both, the password hidden")
  void uriHeartbeatConflictsNamed() {
    assertThatThrownBy(() -> RabbitMqTransportConfig.builder().uri(BASE + "?heartbeat=30")
        .heartbeat(Duration.ofSeconds(20)).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("heartbeat")
        .hasMessageContaining("30").hasMessageContaining("20");
    assertThatThrownBy(() -> RabbitMqTransportConfig.from(Settings.builder()
        .set(RabbitMqConfigKeys.URI, BASE + "?heartbeat=30")
        .set(RabbitMqConfigKeys.HEARTBEAT, "20s").build()))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("heartbeat");
    for (String bad : List.of("0", "-1", "abc", "65536", "")) {
      assertThatThrownBy(() -> RabbitMqTransportConfig.builder()
          .uri("amqp://u:s3cret@127.0.0.1:5672/%2F?heartbeat=" + bad).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("heartbeat")
          .satisfies(e -> assertThat(e.getMessage()).doesNotContain("s3cret"));
    }
  }
}
