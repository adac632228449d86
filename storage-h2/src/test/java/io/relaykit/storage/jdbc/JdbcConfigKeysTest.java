package io.relaykit.storage.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.config.ConfigKey;
import io.relaykit.config.ConfigRegistry;
import io.relaykit.config.Settings;
import io.relaykit.outbox.OutboxBound;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** JdbcStorageConfig.from(Settings) and the keys storage-h2 registers, without Guice. */
class JdbcConfigKeysTest {

  private static Settings settings(String... keyValues) {
    Settings.Builder b = Settings.builder();
    for (int i = 0; i < keyValues.length; i += 2) {
      b.set(keyValues[i], keyValues[i + 1]);
    }
    return b.build();
  }

  @Test
  @DisplayName("ServiceLoader finds the relaykit.jdbc keys; secrets and defaults are as the code has"
      + " them")
  void registered() {
    ConfigRegistry r = ConfigRegistry.discover();
    JdbcStorageConfig d = JdbcStorageConfig.from(settings(JdbcConfigKeys.URL, "jdbc:h2:mem:keys"));

    assertThat(r.declares("relaykit.jdbc")).isTrue();
    assertThat(r.find(JdbcConfigKeys.PASSWORD)).get().extracting(ConfigKey::secret).isEqualTo(true);
    assertThat(r.find(JdbcConfigKeys.POOL_SIZE)).get().extracting(ConfigKey::defaultValue)
        .isEqualTo(Integer.toString(d.poolSize()));
    assertThat(r.find(JdbcConfigKeys.TABLE_PREFIX)).get().extracting(ConfigKey::defaultValue)
        .isEqualTo(d.tablePrefix());
    assertThat(d.migrate()).isTrue();
    assertThat(d.outboxBound()).isEqualTo(OutboxBound.unbounded());
    assertThat(d.outboxOrderScope()).isEqualTo(OutboxOrderScope.KEY);
    assertThat(d.lease()).as("relaykit.relay.lease's default").isEqualTo(Duration.ofSeconds(30));
    assertThat(d.retention()).as("relaykit.idempotency.retention's default")
        .isEqualTo(Duration.ofDays(1));
  }

  @Test
  @DisplayName("every key is read; the environment wins over a property")
  void reads() {
    JdbcStorageConfig c = JdbcStorageConfig.from(Settings.builder()
        .values(Map.of(JdbcConfigKeys.URL, "jdbc:h2:mem:a", JdbcConfigKeys.USERNAME, "app",
            JdbcConfigKeys.PASSWORD, "pw", JdbcConfigKeys.POOL_SIZE, "2",
            JdbcConfigKeys.TABLE_PREFIX, "rk_", JdbcConfigKeys.MIGRATE, "false",
            JdbcConfigKeys.OUTBOX_MAX_UNSENT, "5000000000", JdbcConfigKeys.OUTBOX_OVER_BOUND, "accept",
            JdbcConfigKeys.OUTBOX_ORDER_SCOPE, "key-per-destination",
            "relaykit.relay.lease", "2m"))
        .environment(Map.of("RELAYKIT_JDBC_URL", "jdbc:h2:mem:b", "RELAYKIT_JDBC_RETENTION", "3d"))
        .build());

    assertThat(c.jdbcUrl()).isEqualTo("jdbc:h2:mem:b");
    assertThat(c.username()).isEqualTo("app");
    assertThat(c.password()).isEqualTo("pw");
    assertThat(c.poolSize()).isEqualTo(2);
    assertThat(c.tablePrefix()).isEqualTo("rk_");
    assertThat(c.migrate()).isFalse();
    assertThat(c.outboxBound()).isEqualTo(new OutboxBound(5_000_000_000L,
        OutboxBound.OverBound.ACCEPT));
    assertThat(c.outboxOrderScope()).isEqualTo(OutboxOrderScope.KEY_PER_DESTINATION);
    assertThat(c.lease()).as("relaykit.relay.lease").isEqualTo(Duration.ofMinutes(2));
    assertThat(c.retention()).isEqualTo(Duration.ofDays(3));
  }

  @Test
  @DisplayName("a missing URL, an unknown key and bad values name the key")
  void rejects() {
    assertThatThrownBy(() -> JdbcStorageConfig.from(Settings.builder().build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(JdbcConfigKeys.URL).hasMessageContaining("RELAYKIT_JDBC_URL");
    assertThatThrownBy(() -> settings("relaykit.jdbc.pool-sise", "3"))
        .hasMessageContaining("did you mean relaykit.jdbc.pool-size?");
    assertThatThrownBy(() -> settings(JdbcConfigKeys.OUTBOX_ORDER_SCOPE, "table"))
        .hasMessageContaining(JdbcConfigKeys.OUTBOX_ORDER_SCOPE).hasMessageContaining("'table'");
    assertThatThrownBy(() -> JdbcStorageConfig.from(settings(JdbcConfigKeys.URL, "jdbc:h2:mem:c",
        JdbcConfigKeys.OUTBOX_OVER_BOUND, "accept")))
        .hasMessageContaining(JdbcConfigKeys.OUTBOX_MAX_UNSENT);
    assertThatThrownBy(() -> settings(JdbcConfigKeys.PASSWORD, "x", JdbcConfigKeys.POOL_SIZE, "0"))
        .hasMessageContaining(JdbcConfigKeys.POOL_SIZE).hasMessageContaining("'0'");
    assertThat(settings(JdbcConfigKeys.PASSWORD, "hunter2").toString()).doesNotContain("hunter2");
  }

  @Test
  @DisplayName("every former relaykit.h2.* key is a deprecated name of its relaykit.jdbc.* key")
  void deprecatedNames() {
    ConfigRegistry r = ConfigRegistry.discover();
    for (ConfigKey k : new JdbcConfigKeys().keys()) {
      String old = "relaykit.h2." + k.name().substring("relaykit.jdbc.".length());
      assertThat(r.replacementOf(old)).as(old).contains(k.name());
      assertThat(r.find(old)).as(old + " is no declared key").isEmpty();
    }
    assertThat(r.deprecatedKeys()).hasSize(new JdbcConfigKeys().keys().size());
  }

  @Test
  @DisplayName("a relaykit.h2.* key or RELAYKIT_H2_* variable is read as its new key, with one"
      + " line naming the old and the new key")
  void deprecatedKeysAreRead() {
    List<String> lines = new ArrayList<>();
    JdbcStorageConfig c = JdbcStorageConfig.from(Settings.builder().warnings(lines::add)
        .values(Map.of("relaykit.h2.url", "jdbc:h2:mem:old", "relaykit.h2.pool-size", "3"))
        .environment(Map.of("RELAYKIT_H2_TABLE_PREFIX", "old_"))
        .build());

    assertThat(c.jdbcUrl()).isEqualTo("jdbc:h2:mem:old");
    assertThat(c.poolSize()).isEqualTo(3);
    assertThat(c.tablePrefix()).isEqualTo("old_");
    assertThat(lines).containsExactlyInAnyOrder(
        "relaykit.h2.url is deprecated and read for one more release; use relaykit.jdbc.url",
        "relaykit.h2.pool-size is deprecated and read for one more release; use"
            + " relaykit.jdbc.pool-size",
        "RELAYKIT_H2_TABLE_PREFIX is deprecated and read for one more release; use"
            + " RELAYKIT_JDBC_TABLE_PREFIX");
  }

  @Test
  @DisplayName("with the old and the new key both set, the new one wins and the old one is"
      + " reported as ignored")
  void newKeyWins() {
    List<String> lines = new ArrayList<>();
    Settings s = Settings.builder().warnings(lines::add)
        .values(Map.of("relaykit.h2.url", "jdbc:h2:mem:old", JdbcConfigKeys.URL, "jdbc:h2:mem:new"))
        .build();

    assertThat(s.require(JdbcConfigKeys.URL)).isEqualTo("jdbc:h2:mem:new");
    assertThat(s.asMap()).containsOnlyKeys(JdbcConfigKeys.URL);
    assertThat(lines).containsExactly(
        "relaykit.h2.url is deprecated and ignored: relaykit.jdbc.url is set");
  }

  @Test
  @DisplayName("a bad value under an old key names the new key; a misspelt old key suggests the"
      + " new one")
  void deprecatedKeysAreChecked() {
    assertThatThrownBy(() -> settings("relaykit.h2.pool-size", "0"))
        .hasMessageContaining(JdbcConfigKeys.POOL_SIZE).hasMessageContaining("'0'");
    assertThatThrownBy(() -> settings("relaykit.h2.pool-sise", "3"))
        .hasMessageContaining("did you mean relaykit.jdbc.pool-size?");
  }
}
