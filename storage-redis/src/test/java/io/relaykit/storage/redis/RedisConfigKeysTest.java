package io.relaykit.storage.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.config.ConfigKey;
import io.relaykit.config.ConfigRegistry;
import io.relaykit.config.DurationFormat;
import io.relaykit.config.Settings;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** RedisStorageConfig.from(Settings) and the keys storage-redis registers; no server needed. */
class RedisConfigKeysTest {

  @Test
  @DisplayName("ServiceLoader finds the relaykit.redis keys, with the builder's defaults")
  void registered() {
    ConfigRegistry r = ConfigRegistry.discover();
    RedisStorageConfig d = RedisStorageConfig.from(Settings.builder().build());

    assertThat(r.declares("relaykit.redis")).isTrue();
    assertThat(default_(r, RedisConfigKeys.URI)).isEqualTo(d.uri());
    assertThat(DurationFormat.parse(default_(r, RedisConfigKeys.COMMAND_TIMEOUT)))
        .isEqualTo(d.commandTimeout());
    assertThat(DurationFormat.parse(default_(r, RedisConfigKeys.CONNECT_TIMEOUT)))
        .isEqualTo(d.connectTimeout());
    assertThat(DurationFormat.parse(default_(r, RedisConfigKeys.RECONNECT_MAX_DELAY)))
        .isEqualTo(d.reconnectMaxDelay());
    assertThat(DurationFormat.parse(default_(r, RedisConfigKeys.LEASE))).isEqualTo(d.lease());
    assertThat(default_(r, RedisConfigKeys.KEY_PREFIX)).isEqualTo(d.keyPrefix());
    assertThat(Boolean.parseBoolean(default_(r, RedisConfigKeys.CLUSTER))).isEqualTo(d.cluster());
    assertThat(d.retention()).as("relaykit.idempotency.retention's default")
        .isEqualTo(Duration.ofDays(1));
  }

  private static String default_(ConfigRegistry r, String key) {
    return r.find(key).map(ConfigKey::defaultValue).orElseThrow();
  }

  @Test
  @DisplayName("keys are read, the environment over properties, retention after the core block")
  void reads() {
    RedisStorageConfig c = RedisStorageConfig.from(Settings.builder()
        .values(Map.of(RedisConfigKeys.URI, "redis://a:6379", RedisConfigKeys.KEY_PREFIX, "t:",
            RedisConfigKeys.COMMAND_TIMEOUT, "250ms", RedisConfigKeys.MAX_VALUE_BYTES, "1024",
            "relaykit.idempotency.retention", "2h", RedisConfigKeys.CLUSTER, "TRUE"))
        .environment(Map.of("RELAYKIT_REDIS_URI", "redis://b:6379"))
        .build());

    assertThat(c.uri()).isEqualTo("redis://b:6379");
    assertThat(c.keyPrefix()).isEqualTo("t:");
    assertThat(c.commandTimeout()).isEqualTo(Duration.ofMillis(250));
    assertThat(c.maxValueBytes()).isEqualTo(1024);
    assertThat(c.retention()).isEqualTo(Duration.ofHours(2));
    assertThat(c.cluster()).isTrue();
  }

  @Test
  @DisplayName("invalid values name the key; a URI password is masked in the settings' text")
  void rejects() {
    assertThatThrownBy(() -> RedisStorageConfig.from(Settings.builder()
        .set(RedisConfigKeys.KEY_PREFIX, "a{b}").build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(RedisConfigKeys.KEY_PREFIX).hasMessageContaining("a{b}");
    assertThatThrownBy(() -> Settings.builder().set("relaykit.redis.url", "redis://x").build())
        .hasMessageContaining("did you mean relaykit.redis.uri?");
    assertThat(Settings.builder().set(RedisConfigKeys.URI, "redis://u:hunter2@h:6379").build()
        .toString()).doesNotContain("hunter2").contains("redis://u:****@h:6379");
  }
}
