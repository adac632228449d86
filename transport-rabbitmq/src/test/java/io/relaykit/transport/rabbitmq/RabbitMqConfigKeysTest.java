package io.relaykit.transport.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.config.ConfigKey;
import io.relaykit.config.ConfigRegistry;
import io.relaykit.config.DurationFormat;
import io.relaykit.config.Settings;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** RabbitMqTransportConfig.from(Settings) and the keys it registers; no broker needed. */
class RabbitMqConfigKeysTest {

  @Test
  @DisplayName("ServiceLoader finds the relaykit.rabbitmq keys, with the builder's defaults")
  void registered() {
    ConfigRegistry r = ConfigRegistry.discover();
    RabbitMqTransportConfig d = RabbitMqTransportConfig.builder().build();

    assertThat(r.declares("relaykit.rabbitmq")).isTrue();
    assertThat(def(r, RabbitMqConfigKeys.CONNECTION_NAME)).isEqualTo(d.connectionName());
    assertThat(def(r, RabbitMqConfigKeys.DELAY_LEVELS)).isEqualTo(d.delayLevels().stream()
        .map(DurationFormat::format).collect(Collectors.joining(",")));
    assertThat(DurationFormat.parse(def(r, RabbitMqConfigKeys.CONFIRM_TIMEOUT)))
        .isEqualTo(d.confirmTimeout());
    assertThat(DurationFormat.parse(def(r, RabbitMqConfigKeys.CLOSE_TIMEOUT)))
        .isEqualTo(d.closeTimeout());
    assertThat(DurationFormat.parse(def(r, RabbitMqConfigKeys.RECOVERY_INTERVAL)))
        .isEqualTo(d.recoveryInterval());
    assertThat(DurationFormat.parse(def(r, RabbitMqConfigKeys.METRICS_INTERVAL)))
        .isEqualTo(d.metricsInterval());
    assertThat(Integer.parseInt(def(r, RabbitMqConfigKeys.CONFIRM_WINDOW)))
        .isEqualTo(d.confirmWindow());
    assertThat(Integer.parseInt(def(r, RabbitMqConfigKeys.MAX_MESSAGE_BYTES)))
        .isEqualTo(d.maxMessageBytes());
  }

  private static String def(ConfigRegistry r, String key) {
    return r.find(key).map(ConfigKey::defaultValue).orElseThrow();
  }

  @Test
  @DisplayName("delay levels use the core duration syntax, ISO and short forms mixed")
  void delayLevels() {
    RabbitMqTransportConfig c = RabbitMqTransportConfig.from(Settings.builder()
        .values(Map.of(RabbitMqConfigKeys.DELAY_LEVELS, "200ms, PT5S,2d",
            RabbitMqConfigKeys.CONNECTION_NAME, "props"))
        .environment(Map.of("RELAYKIT_RABBITMQ_CONNECTION_NAME", "env"))
        .build());

    assertThat(c.delayLevels()).isEqualTo(List.of(Duration.ofMillis(200), Duration.ofSeconds(5),
        Duration.ofDays(2)));
    assertThat(c.connectionName()).isEqualTo("env");
    assertThatThrownBy(() -> Settings.builder().set(RabbitMqConfigKeys.DELAY_LEVELS, "1s,0s")
        .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(RabbitMqConfigKeys.DELAY_LEVELS).hasMessageContaining("'1s,0s'");
  }

  @Test
  @DisplayName("the URI's password never shows, in text or in errors")
  void masksUri() {
    Settings s = Settings.builder().set(RabbitMqConfigKeys.URI, "amqp://app:hunter2@h:5672")
        .build();
    assertThat(s.toString()).doesNotContain("hunter2").contains("amqp://app:****@h:5672");
    assertThatThrownBy(() -> Settings.builder()
        .set(RabbitMqConfigKeys.CONFIRM_WINDOW, "amqp://app:hunter2@h").build())
        .hasMessageNotContaining("hunter2");
  }
}
