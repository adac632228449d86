package io.relaykit.guice;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.config.IdempotencySettings;
import io.relaykit.config.RelaySettings;
import io.relaykit.config.RetrySettings;
import io.relaykit.retry.Jitter;
import io.relaykit.retry.RetryPolicy;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class RelayKitConfigTest {

  private static Properties props(String... keyValues) {
    Properties p = new Properties();
    for (int i = 0; i < keyValues.length; i += 2) {
      p.setProperty(keyValues[i], keyValues[i + 1]);
    }
    return p;
  }

  @Nested
  @DisplayName("defaults")
  class Defaults {

    @Test
    @DisplayName("an empty configuration runs everything in memory with the documented values")
    void pinned() {
      RelayKitConfig c = RelayKitConfig.defaults();

      assertThat(c.storage()).isEqualTo("memory");
      assertThat(c.transport()).isEqualTo("memory");
      assertThat(c.retryMaxAttempts()).isEqualTo(5);
      assertThat(c.retryInitialBackoff()).isEqualTo(Duration.ofSeconds(1));
      assertThat(c.retryMaxBackoff()).isEqualTo(Duration.ofMinutes(5));
      assertThat(c.retryJitter()).isEqualTo(Jitter.FULL);
      assertThat(c.retryMaxAge()).isEmpty();
      assertThat(c.relayBatchSize()).isEqualTo(100);
      assertThat(c.relayLease()).isEqualTo(Duration.ofSeconds(30));
      assertThat(c.relayPollInterval()).isEqualTo(Duration.ofMillis(500));
      assertThat(c.idempotencyRetention()).isEqualTo(Duration.ofDays(1));
      assertThat(c.idempotencyFastTier()).isEmpty();
      assertThat(c.asMap()).isEmpty();
    }

    @Test
    @DisplayName("the default retry policy equals RetryPolicy.defaults() in every setting")
    void retryPolicyMatchesCore() {
      RetryPolicy fromConfig = RelayKitConfig.defaults().retryPolicy();
      RetryPolicy core = RetryPolicy.defaults();

      assertThat(fromConfig.maxAttempts()).isEqualTo(core.maxAttempts());
      assertThat(fromConfig.maxAge()).isEqualTo(core.maxAge());
      assertThat(fromConfig.backoff().initial()).isEqualTo(core.backoff().initial());
      assertThat(fromConfig.backoff().max()).isEqualTo(core.backoff().max());
      assertThat(fromConfig.backoff().jitter()).isEqualTo(core.backoff().jitter());
    }
  }

  @Nested
  @DisplayName("sources and precedence")
  class Sources {

    @Test
    @DisplayName("properties set every documented setting")
    void fromProperties() {
      RelayKitConfig c = RelayKitConfig.from(props(
          "relaykit.storage", "h2",
          "relaykit.transport", "Kafka",
          "relaykit.retry.max-attempts", "7",
          "relaykit.retry.initial-backoff", "200ms",
          "relaykit.retry.max-backoff", "PT30S",
          "relaykit.retry.jitter", "equal",
          "relaykit.retry.max-age", "1h",
          "relaykit.relay.batch-size", "50",
          "relaykit.relay.lease", "2m",
          "relaykit.relay.poll-interval", "250ms",
          "relaykit.idempotency.retention", "7d",
          "relaykit.idempotency.fast-tier", "Redis",
          "unrelated.key", "ignored"));

      assertThat(c.storage()).isEqualTo("h2");
      assertThat(c.transport()).as("backend names are case-insensitive").isEqualTo("kafka");
      assertThat(c.retryMaxAttempts()).isEqualTo(7);
      assertThat(c.retryInitialBackoff()).isEqualTo(Duration.ofMillis(200));
      assertThat(c.retryMaxBackoff()).isEqualTo(Duration.ofSeconds(30));
      assertThat(c.retryJitter()).isEqualTo(Jitter.EQUAL);
      assertThat(c.retryMaxAge()).contains(Duration.ofHours(1));
      assertThat(c.relayBatchSize()).isEqualTo(50);
      assertThat(c.relayLease()).isEqualTo(Duration.ofMinutes(2));
      assertThat(c.relayPollInterval()).isEqualTo(Duration.ofMillis(250));
      assertThat(c.idempotencyRetention()).isEqualTo(Duration.ofDays(7));
      assertThat(c.idempotencyFastTier()).as("case-insensitive, like backend names")
          .contains("redis");
      assertThat(c.asMap()).doesNotContainKey("unrelated.key").hasSize(12);
    }

    @Test
    @DisplayName("the blocks and the retry policy are core's records over the same settings")
    void blocksAreCoreRecords() {
      RelayKitConfig c = RelayKitConfig.from(props(
          "relaykit.retry.max-attempts", "3",
          "relaykit.retry.max-age", "10s",
          "relaykit.relay.lease", "2m",
          "relaykit.idempotency.retention", "2h"));

      assertThat(c.retry()).isEqualTo(RetrySettings.from(c.settings()));
      assertThat(c.relay()).isEqualTo(RelaySettings.from(c.settings()));
      assertThat(c.idempotency()).isEqualTo(IdempotencySettings.from(c.settings()));
      RetryPolicy p = c.retryPolicy();
      assertThat(p.maxAttempts()).isEqualTo(3);
      assertThat(p.maxAge()).isEqualTo(Duration.ofSeconds(10));
      assertThat(RelayKitConfig.from(c.settings())).isEqualTo(c);
    }

    @Test
    @DisplayName("fromSystem reads system properties, and this process's environment over them")
    void fromSystem() {
      String key = "relaykit.guice-test.marker";
      System.setProperty(key, "from-system-property");
      try {
        RelayKitConfig c = RelayKitConfig.fromSystem();
        String variable = System.getenv(RelayKitConfig.environmentName(key));

        assertThat(c.get(key)).contains(variable != null ? variable : "from-system-property");
      } finally {
        System.clearProperty(key);
      }
    }

    @Test
    @DisplayName("an environment variable overrides the property of the same key")
    void environmentWins() {
      RelayKitConfig c = RelayKitConfig.from(
          props("relaykit.storage", "h2", "relaykit.retry.max-attempts", "7"),
          Map.of("RELAYKIT_STORAGE", "redis", "RELAYKIT_RETRY_MAX_ATTEMPTS", "9"));

      assertThat(c.storage()).isEqualTo("redis");
      assertThat(c.retryMaxAttempts()).isEqualTo(9);
      assertThat(c.asMap())
          .containsEntry("relaykit.storage", "redis")
          .containsEntry("relaykit.retry.max-attempts", "9")
          .hasSize(2);
    }

    @Test
    @DisplayName("the environment alone sets documented keys, dashes included")
    void environmentOnly() {
      RelayKitConfig c = RelayKitConfig.from(new Properties(), Map.of(
          "RELAYKIT_TRANSPORT", "rabbitmq",
          "RELAYKIT_RELAY_POLL_INTERVAL", "1s",
          "PATH", "/usr/bin",
          "HOME", "/root"));

      assertThat(c.transport()).isEqualTo("rabbitmq");
      assertThat(c.relayPollInterval()).isEqualTo(Duration.ofSeconds(1));
      assertThat(c.asMap())
          .containsOnlyKeys("relaykit.transport", "relaykit.relay.poll-interval");
    }

    @Test
    @DisplayName("an adapter key set only in the environment is found by its dashed key")
    void environmentOnlyAdapterKey() {
      RelayKitConfig c = RelayKitConfig.from(new Properties(), Map.of(
          "RELAYKIT_SAMPLE_CLIENT_ID", "relay-1",
          "RELAYKIT_SAMPLE_URI", "sample://127.0.0.1:6379"));

      assertThat(c.get("relaykit.sample.client-id")).contains("relay-1");
      assertThat(c.get("relaykit.sample.uri")).contains("sample://127.0.0.1:6379");
      assertThat(c.section("relaykit.sample")).containsExactly(
          Map.entry("client-id", "relay-1"), Map.entry("uri", "sample://127.0.0.1:6379"));
    }

    @Test
    @DisplayName("a variable of a module that is not on the class path is ignored, not an error")
    void environmentOfAbsentModule() {
      RelayKitConfig c = RelayKitConfig.from(new Properties(), Map.of(
          "RELAYKIT_KAFKA_CLIENT_ID", "relay-1", "RELAYKIT_STORAGE", "h2"));

      assertThat(c.asMap()).containsOnlyKeys("relaykit.storage");
    }

    @Test
    @DisplayName("an explicit key of a module that is not on the class path names the artifact")
    void explicitKeyOfAbsentModule() {
      assertThatThrownBy(() -> RelayKitConfig.from(props("relaykit.kafka.client-id", "x")))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("no module on the class path declares relaykit.kafka.*")
          .hasMessageContaining("relaykit-kafka");
      assertThatThrownBy(() -> RelayKitConfig.builder().set("relaykit.retry.max-attempt", "3")
          .build())
          .hasMessageContaining("did you mean relaykit.retry.max-attempts?");
    }

    @Test
    @DisplayName("a builder value set after the environment wins over it")
    void builderAfterEnvironment() {
      RelayKitConfig c = RelayKitConfig.builder()
          .environment(Map.of("RELAYKIT_STORAGE", "redis"))
          .storage("h2")
          .build();

      assertThat(c.storage()).isEqualTo("h2");
      assertThat(c.asMap()).containsExactly(Map.entry("relaykit.storage", "h2"));
    }

    @Test
    @DisplayName("typed builder setters round-trip through the parser")
    void builderSetters() {
      RelayKitConfig c = RelayKitConfig.builder()
          .storage("h2").transport("kafka")
          .retryMaxAttempts(2)
          .retryInitialBackoff(Duration.ofMillis(10))
          .retryMaxBackoff(Duration.ofSeconds(3))
          .retryJitter(Jitter.NONE)
          .retryMaxAge(Duration.ofMinutes(1))
          .relayBatchSize(10)
          .relayLease(Duration.ofSeconds(5))
          .relayPollInterval(Duration.ofMillis(20))
          .idempotencyRetention(Duration.ofHours(2))
          .idempotencyFastTier("redis")
          .build();

      assertThat(c.retryMaxAttempts()).isEqualTo(2);
      assertThat(c.retryInitialBackoff()).isEqualTo(Duration.ofMillis(10));
      assertThat(c.retryMaxBackoff()).isEqualTo(Duration.ofSeconds(3));
      assertThat(c.retryJitter()).isEqualTo(Jitter.NONE);
      assertThat(c.retryMaxAge()).contains(Duration.ofMinutes(1));
      assertThat(c.relayBatchSize()).isEqualTo(10);
      assertThat(c.relayLease()).isEqualTo(Duration.ofSeconds(5));
      assertThat(c.relayPollInterval()).isEqualTo(Duration.ofMillis(20));
      assertThat(c.idempotencyRetention()).isEqualTo(Duration.ofHours(2));
      assertThat(c.idempotencyFastTier()).contains("redis");
      assertThat(RelayKitConfig.builder().idempotencyFastTier("none").build()
          .idempotencyFastTier()).as("none is no fast tier").isEmpty();
    }

    @Test
    @DisplayName("a null value unsets a key and its default applies again")
    void unset() {
      RelayKitConfig c = RelayKitConfig.builder().storage("h2").storage(null).build();

      assertThat(c.storage()).isEqualTo("memory");
    }

    @Test
    @DisplayName("the config is a snapshot: later changes to the properties do not leak in")
    void snapshot() {
      Properties p = props("relaykit.storage", "h2");
      RelayKitConfig c = RelayKitConfig.from(p);
      p.setProperty("relaykit.storage", "redis");

      assertThat(c.storage()).isEqualTo("h2");
      assertThatThrownBy(() -> c.asMap().put("relaykit.x", "y"))
          .isInstanceOf(UnsupportedOperationException.class);
      assertThat(c).isEqualTo(RelayKitConfig.from(props("relaykit.storage", "h2")));
    }
  }

  @Nested
  @DisplayName("adapter keys")
  class AdapterKeys {

    private final RelayKitConfig config = RelayKitConfig.from(props(
        "relaykit.sample.url", "jdbc:h2:mem:x",
        "relaykit.sample.pool-size", "4",
        "relaykit.sample.lock-timeout", "3s",
        "relaykit.sample.create-schema", "false",
        "relaykit.samplex.other", "not in the sample section"));

    @Test
    @DisplayName("section strips the prefix and keeps only that section's keys")
    void section() {
      assertThat(config.section("relaykit.sample")).containsExactly(
          Map.entry("create-schema", "false"),
          Map.entry("lock-timeout", "3s"),
          Map.entry("pool-size", "4"),
          Map.entry("url", "jdbc:h2:mem:x"));
      assertThat(config.section("relaykit.sample.")).isEqualTo(config.section("relaykit.sample"));
      assertThat(config.section("relaykit.kafka")).isEmpty();
    }

    @Test
    @DisplayName("typed getters parse a present key and fall back to the default for a missing one")
    void typedGetters() {
      assertThat(config.get("relaykit.sample.url")).contains("jdbc:h2:mem:x");
      assertThat(config.get("relaykit.sample.uri")).isEmpty();
      assertThat(config.getInt("relaykit.sample.pool-size", 10)).isEqualTo(4);
      assertThat(config.getInt("relaykit.sample.pool-max", 10)).isEqualTo(10);
      assertThat(config.getDuration("relaykit.sample.lock-timeout", Duration.ZERO))
          .isEqualTo(Duration.ofSeconds(3));
      assertThat(config.getBoolean("relaykit.sample.create-schema", true)).isFalse();
      assertThat(config.getBoolean("relaykit.sample.missing", true)).isTrue();
    }

    @Test
    @DisplayName("require names the missing key and its environment variable")
    void requireMissing() {
      assertThat(config.require("relaykit.sample.url")).isEqualTo("jdbc:h2:mem:x");
      assertThatThrownBy(() -> config.require("relaykit.sample.uri"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("relaykit.sample.uri")
          .hasMessageContaining("RELAYKIT_SAMPLE_URI");
    }

    @Test
    @DisplayName("typed getters name the key and the value they cannot parse")
    void typedGetterErrors() {
      RelayKitConfig bad = RelayKitConfig.from(props(
          "relaykit.x.count", "many", "relaykit.x.wait", "soon", "relaykit.x.flag", "yes"));

      assertThatThrownBy(() -> bad.getInt("relaykit.x.count", 1))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("relaykit.x.count").hasMessageContaining("'many'");
      assertThatThrownBy(() -> bad.getDuration("relaykit.x.wait", Duration.ofSeconds(1)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("relaykit.x.wait").hasMessageContaining("'soon'");
      assertThatThrownBy(() -> bad.getBoolean("relaykit.x.flag", true))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("relaykit.x.flag").hasMessageContaining("'yes'");
    }

    @Test
    @DisplayName("toString masks secrets and the password in a URI")
    void masksSecrets() {
      String s = RelayKitConfig.from(props(
          "relaykit.sample.uri", "redis://app:s3cr3t@cache:6379/0",
          "relaykit.sample.password", "hunter2",
          "relaykit.sample.url", "jdbc:h2:mem:x")).toString();

      assertThat(s).doesNotContain("s3cr3t").doesNotContain("hunter2")
          .startsWith("RelayKitConfig{")
          .contains("redis://app:****@cache:6379/0")
          .contains("relaykit.sample.password=****")
          .contains("relaykit.sample.url=jdbc:h2:mem:x");
    }
  }

  @Nested
  @DisplayName("durations")
  class Durations {

    @ParameterizedTest(name = "{0} is {1} ms")
    @CsvSource({"1ms, 1", "500ms, 500", "30s, 30000", "5m, 300000", "1h, 3600000",
        "2d, 172800000", "PT0.25S, 250", "' 7s ', 7000"})
    @DisplayName("short and ISO-8601 forms are accepted")
    void accepted(String text, long millis) {
      assertThat(RelayKitConfig.builder().set(RelayKitConfig.RELAY_LEASE, text).build()
          .relayLease()).isEqualTo(Duration.ofMillis(millis));
    }
  }

  @Nested
  @DisplayName("invalid values")
  class Invalid {

    @ParameterizedTest(name = "{0}={1}")
    @CsvSource({
        "relaykit.storage, h2!",
        "relaykit.storage, ''",
        "relaykit.transport, 'kafka rabbit'",
        "relaykit.retry.max-attempts, 0",
        "relaykit.retry.max-attempts, -3",
        "relaykit.retry.max-attempts, five",
        "relaykit.retry.max-attempts, 99999999999",
        "relaykit.retry.initial-backoff, 0s",
        "relaykit.retry.initial-backoff, -PT1S",
        "relaykit.retry.initial-backoff, 10",
        "relaykit.retry.initial-backoff, 10 sec",
        "relaykit.retry.max-backoff, 99999999999999999999d",
        "relaykit.retry.jitter, random",
        "relaykit.retry.max-age, forever",
        "relaykit.relay.batch-size, 0",
        "relaykit.relay.batch-size, 1.5",
        "relaykit.relay.batch-size, 10001",
        "relaykit.relay.lease, 0ms",
        "relaykit.relay.poll-interval, fast",
        "relaykit.idempotency.retention, 0d",
        "relaykit.idempotency.fast-tier, re dis"})
    @DisplayName("a bad value fails the build with its key and value in the message")
    void rejected(String key, String value) {
      assertThatThrownBy(() -> RelayKitConfig.from(props(key, value)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining(key)
          .hasMessageContaining("'" + value + "'");
    }

    @Test
    @DisplayName("a bad value from the environment is reported under its key")
    void rejectedFromEnvironment() {
      assertThatThrownBy(() -> RelayKitConfig.from(new Properties(),
          Map.of("RELAYKIT_RELAY_BATCH_SIZE", "lots")))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("relaykit.relay.batch-size")
          .hasMessageContaining("'lots'");
    }

    @Test
    @DisplayName("a max backoff below the initial backoff is rejected, naming both")
    void maxBelowInitial() {
      assertThatThrownBy(() -> RelayKitConfig.builder()
          .retryInitialBackoff(Duration.ofSeconds(10))
          .retryMaxBackoff(Duration.ofSeconds(1))
          .build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("relaykit.retry.max-backoff")
          .hasMessageContaining("relaykit.retry.initial-backoff")
          .hasMessageContaining("PT1S");
    }

    @ParameterizedTest(name = "''{0}''")
    @CsvSource({"storage", "relaykit", "relaykit.", "relaykit.Storage", "relaykit..x",
        "relaykit.a_b"})
    @DisplayName("set rejects a key that is not a relaykit key")
    void badKey(String key) {
      assertThatThrownBy(() -> RelayKitConfig.builder().set(key, "x"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("'" + key + "'");
    }

    @Test
    @DisplayName("an environment variable that maps to no key is ignored (and warned about)")
    void badEnvironmentName() {
      assertThat(RelayKitConfig.from(new Properties(), Map.of("RELAYKIT__STORAGE", "h2"))
          .storage()).isEqualTo("memory");
    }

    @Test
    @DisplayName("two properties that are the same environment variable are rejected")
    void collidingProperties() {
      assertThatThrownBy(() -> RelayKitConfig.from(props(
          "relaykit.sample.client-id", "a", "relaykit.sample.client.id", "b")))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("relaykit.sample.client-id")
          .hasMessageContaining("relaykit.sample.client.id")
          .hasMessageContaining("RELAYKIT_SAMPLE_CLIENT_ID");
    }
  }
}
