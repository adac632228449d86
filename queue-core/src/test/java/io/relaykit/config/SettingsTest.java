package io.relaykit.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.SplittableRandom;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class SettingsTest {

  private static final ConfigRegistry REGISTRY = ConfigRegistry.of(new SampleKeys());

  private static Properties props(String... keyValues) {
    Properties p = new Properties();
    for (int i = 0; i < keyValues.length; i += 2) {
      p.setProperty(keyValues[i], keyValues[i + 1]);
    }
    return p;
  }

  private static Settings.Builder builder() {
    return Settings.builder().registry(REGISTRY);
  }

  @Nested
  @DisplayName("sources and precedence")
  class Precedence {

    @Test
    @DisplayName("an environment variable wins over the property; unset keys have no value")
    void environmentWins() {
      Settings s = builder()
          .properties(props("relaykit.sample.uri", "sample://props", "relaykit.retry.jitter",
              "none", "other.key", "ignored"))
          .environment(Map.of("RELAYKIT_SAMPLE_URI", "sample://env", "PATH", "/usr/bin"))
          .build();

      assertThat(s.get("relaykit.sample.uri")).contains("sample://env");
      assertThat(s.get("relaykit.retry.jitter")).contains("none");
      assertThat(s.get("relaykit.sample.timeout")).isEmpty();
      assertThat(s.getDuration("relaykit.sample.timeout", Duration.ofSeconds(5)))
          .as("default last").isEqualTo(Duration.ofSeconds(5));
      assertThat(s.asMap()).containsOnlyKeys("relaykit.sample.uri", "relaykit.retry.jitter");
    }

    @Test
    @DisplayName("from(properties, environment) applies the environment last")
    void fromAppliesEnvironmentLast() {
      Settings s = Settings.from(props("relaykit.retry.max-attempts", "7"),
          Map.of("RELAYKIT_RETRY_MAX_ATTEMPTS", "9"));

      assertThat(s.getInt("relaykit.retry.max-attempts", 1)).isEqualTo(9);
    }

    @Test
    @DisplayName("a later explicit source overrides an earlier one, the environment included")
    void laterWins() {
      Settings s = builder()
          .environment(Map.of("RELAYKIT_SAMPLE_POOL_SIZE", "2"))
          .values(Map.of("relaykit.sample.pool-size", "3"))
          .set("relaykit.sample.migrate", "false")
          .set("relaykit.sample.migrate", null)
          .build();

      assertThat(s.getInt("relaykit.sample.pool-size", 1)).isEqualTo(3);
      assertThat(s.isSet("relaykit.sample.migrate")).as("null unsets").isFalse();
    }

    @Test
    @DisplayName("settings are a snapshot: later changes to the source do not leak in")
    void snapshot() {
      Properties p = props("relaykit.sample.uri", "a");
      Settings s = builder().properties(p).build();
      p.setProperty("relaykit.sample.uri", "b");

      assertThat(s.get("relaykit.sample.uri")).contains("a");
      assertThatThrownBy(() -> s.asMap().put("relaykit.sample.uri", "c"))
          .isInstanceOf(UnsupportedOperationException.class);
      assertThat(s).isEqualTo(builder().properties(props("relaykit.sample.uri", "a")).build())
          .hasSameHashCodeAs(builder().set("relaykit.sample.uri", "a").build());
      assertThat(s.with("relaykit.sample.uri", "d").get("relaykit.sample.uri")).contains("d");
    }
  }

  @Nested
  @DisplayName("relaxed names")
  class Relaxed {

    @Test
    @DisplayName("a dashed key is one setting with its variable, both ways")
    void keyAndVariable() {
      assertThat(Settings.environmentName("relaykit.retry.max-attempts"))
          .isEqualTo("RELAYKIT_RETRY_MAX_ATTEMPTS");
      Settings s = builder().environment(Map.of("RELAYKIT_SAMPLE_ORDER_SCOPE", "KEY")).build();

      assertThat(s.asMap()).containsOnlyKeys("relaykit.sample.order-scope");
      assertThat(s.get("relaykit.sample.order-scope")).contains("KEY");
    }

    @Test
    @DisplayName("an explicit key spelled with dots for dashes is read as the declared key")
    void dotsForDashes() {
      Settings s = builder().set("relaykit.sample.pool.size", "6").build();

      assertThat(s.asMap()).containsOnlyKeys("relaykit.sample.pool-size");
      assertThat(s.getInt("relaykit.sample.pool-size", 1)).isEqualTo(6);
    }

    @Test
    @DisplayName("a variable under a family becomes its dotted key; explicit family keys stay")
    void family() {
      Settings s = builder()
          .set("relaykit.sample.client.fetch-size", "9")
          .environment(Map.of("RELAYKIT_SAMPLE_CLIENT_LINGER_MS", "5"))
          .build();

      assertThat(s.section("relaykit.sample.client")).containsExactly(
          Map.entry("fetch-size", "9"), Map.entry("linger.ms", "5"));
    }

    @Test
    @DisplayName("two explicit keys that are one variable are rejected, naming both")
    void collision() {
      assertThatThrownBy(() -> builder().values(Map.of(
          "relaykit.sample.pool-size", "1", "relaykit.sample.pool.size", "2")))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("relaykit.sample.pool-size")
          .hasMessageContaining("relaykit.sample.pool.size")
          .hasMessageContaining("RELAYKIT_SAMPLE_POOL_SIZE");
    }

    @Test
    @DisplayName("property: every declared key survives key -> variable -> key, and 2 000 seeded"
        + " dashed keys map to variables that differ only where the keys do")
    void roundTrip() {
      for (ConfigKey k : REGISTRY.keys()) {
        if (!k.isFamily()) {
          assertThat(REGISTRY.keyOf(Settings.environmentName(k.name()))).contains(k.name());
        }
      }
      SplittableRandom random = new SplittableRandom(42);
      String alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
      for (int i = 0; i < 2_000; i++) {
        StringBuilder name = new StringBuilder("relaykit.sample.client");
        int parts = random.nextInt(1, 4);
        for (int p = 0; p < parts; p++) {
          name.append('.');
          for (int c = random.nextInt(1, 8); c > 0; c--) {
            name.append(alphabet.charAt(random.nextInt(alphabet.length())));
          }
        }
        String key = name.toString();
        String variable = Settings.environmentName(key);
        assertThat(variable).matches("RELAYKIT_[A-Z0-9_]+")
            .isEqualTo(key.toUpperCase(java.util.Locale.ROOT).replace('.', '_'));
        assertThat(REGISTRY.keyOf(variable)).as(variable).contains(key);
        Settings s = builder().environment(Map.of(variable, "v" + i)).build();
        assertThat(s.get(key)).contains("v" + i);
      }
    }
  }

  @Nested
  @DisplayName("typed getters")
  class Typed {

    private final Settings s = builder()
        .set("relaykit.sample.pool-size", " 12 ")
        .set("relaykit.sample.max-bytes", "8589934592")
        .set("relaykit.sample.migrate", "FALSE")
        .set("relaykit.sample.timeout", "250ms")
        .set("relaykit.sample.delays", "1s, 10s,1m")
        .set("relaykit.sample.order-scope", "Key-Per-Destination")
        .set("relaykit.storage", "H2")
        .build();

    enum Scope { KEY, KEY_PER_DESTINATION }

    @Test
    @DisplayName("each type reads its value, and the default when unset")
    void read() {
      assertThat(s.getInt("relaykit.sample.pool-size", 1)).isEqualTo(12);
      assertThat(s.getLong("relaykit.sample.max-bytes", 1)).isEqualTo(8_589_934_592L);
      assertThat(s.getBoolean("relaykit.sample.migrate", true)).isFalse();
      assertThat(s.getDuration("relaykit.sample.timeout", null)).isEqualTo(Duration.ofMillis(250));
      assertThat(s.getDurations("relaykit.sample.delays", null)).containsExactly(
          Duration.ofSeconds(1), Duration.ofSeconds(10), Duration.ofMinutes(1));
      assertThat(s.getEnum("relaykit.sample.order-scope", Scope.class, Scope.KEY))
          .isEqualTo(Scope.KEY_PER_DESTINATION);
      assertThat(s.getName("relaykit.storage", "memory")).isEqualTo("h2");
      assertThat(s.getString("relaykit.sample.uri", "sample://x")).isEqualTo("sample://x");
      assertThat(s.getInt("relaykit.sample.unset", 3)).isEqualTo(3);
      assertThat(s.getBoolean("relaykit.sample.unset", true)).isTrue();
      assertThat(s.getName("relaykit.transport", "memory")).isEqualTo("memory");
    }

    @Test
    @DisplayName("require names the key and its variable when unset")
    void require() {
      assertThat(s.require("relaykit.sample.pool-size")).isEqualTo(" 12 ");
      assertThatThrownBy(() -> s.require("relaykit.sample.uri"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("relaykit.sample.uri")
          .hasMessageContaining("RELAYKIT_SAMPLE_URI");
    }

    @ParameterizedTest(name = "{0}={1}")
    @CsvSource({
        "relaykit.sample.pool-size, many",
        "relaykit.sample.pool-size, 0",
        "relaykit.sample.pool-size, -1",
        "relaykit.sample.pool-size, 2147483648",
        "relaykit.sample.pool-size, 1.5",
        "relaykit.sample.max-bytes, 9223372036854775808",
        "relaykit.sample.migrate, yes",
        "relaykit.sample.timeout, soon",
        "relaykit.sample.timeout, 0s",
        "relaykit.sample.delays, '1s,,2s'",
        "relaykit.sample.delays, '1s,0s'",
        "relaykit.sample.order-scope, partition",
        "relaykit.storage, h2!",
        "relaykit.storage, ''",
        "relaykit.retry.jitter, random"})
    @DisplayName("a value its type cannot read fails the build, naming the key and the value")
    void rejected(String key, String value) {
      assertThatThrownBy(() -> builder().set(key, value).build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining(key)
          .hasMessageContaining("'" + value + "'");
    }

    @Test
    @DisplayName("a bad value from the environment names its key, value and variable")
    void rejectedFromEnvironment() {
      assertThatThrownBy(() -> builder()
          .environment(Map.of("RELAYKIT_SAMPLE_TIMEOUT", "later")).build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("relaykit.sample.timeout")
          .hasMessageContaining("'later'")
          .hasMessageContaining("environment variable RELAYKIT_SAMPLE_TIMEOUT");
    }

    @Test
    @DisplayName("a getter that reads a value as another type than declared names key and value")
    void getterMismatch() {
      assertThatThrownBy(() -> s.getInt("relaykit.sample.timeout", 1))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("relaykit.sample.timeout").hasMessageContaining("'250ms'");
      assertThatThrownBy(() -> s.getEnum("relaykit.storage", Scope.class, null))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("relaykit.storage").hasMessageContaining("'H2'")
          .hasMessageContaining("key, key-per-destination");
    }

    @ParameterizedTest(name = "''{0}''")
    @CsvSource({"storage", "relaykit", "relaykit.", "relaykit.Storage", "relaykit..x",
        "relaykit.a_b"})
    @DisplayName("set rejects a key that is not a relaykit key")
    void badKey(String key) {
      assertThatThrownBy(() -> builder().set(key, "x"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("'" + key + "'");
    }
  }

  @Nested
  @DisplayName("secrets")
  class Secrets {

    @Test
    @DisplayName("toString masks declared secrets, secret-looking keys and URI passwords")
    void toStringMasks() {
      String text = builder()
          .set("relaykit.sample.api-key", "k3y")
          .set("relaykit.sample.password", "hunter2")
          .set("relaykit.sample.uri", "sample://app:s3cr3t@host:1/x")
          .set("relaykit.sample.client.sasl-token", "t0ken")
          .set("relaykit.sample.pool-size", "4")
          .build().toString();

      assertThat(text).doesNotContain("k3y", "hunter2", "s3cr3t", "t0ken")
          .contains("relaykit.sample.api-key=****", "relaykit.sample.password=****",
              "relaykit.sample.uri=sample://app:****@host:1/x",
              "relaykit.sample.client.sasl-token=****", "relaykit.sample.pool-size=4");
    }

    @Test
    @DisplayName("error messages mask secret values and URI passwords too")
    void errorsMask() {
      ConfigRegistry reg = ConfigRegistry.of(new SampleKeys(), new ConfigKeys() {
        @Override
        public String module() {
          return "secret-test";
        }

        @Override
        public List<String> namespaces() {
          return List.of("relaykit.vault");
        }

        @Override
        public List<ConfigKey> keys() {
          return List.of(ConfigKey.of("relaykit.vault.lease", ConfigKey.Type.DURATION, null,
              "a secret duration").asSecret(),
              ConfigKey.of("relaykit.vault.size", ConfigKey.Type.INTEGER, null, "a size"));
        }
      });

      assertThatThrownBy(() -> Settings.builder().registry(reg)
          .set("relaykit.vault.lease", "hunter2").build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("relaykit.vault.lease").hasMessageContaining("'****'")
          .hasMessageNotContaining("hunter2");
      assertThatThrownBy(() -> Settings.builder().registry(reg)
          .set("relaykit.vault.size", "x://u:hunter2@h").build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("'x://u:****@h'").hasMessageNotContaining("hunter2");
    }
  }

  @Nested
  @DisplayName("unknown keys")
  class Unknown {

    @Test
    @DisplayName("an explicit typo is rejected with the nearest known key")
    void typo() {
      assertThatThrownBy(() -> builder().set("relaykit.retry.max-attempt", "3").build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("relaykit.retry.max-attempt is not a relaykit setting; did you mean"
              + " relaykit.retry.max-attempts?");
      assertThatThrownBy(() -> builder().properties(props("relaykit.sample.timout", "1s"))
          .build())
          .hasMessageContaining("did you mean relaykit.sample.timeout?");
    }

    @Test
    @DisplayName("a key of a relaykit adapter that is not on the class path names the artifact")
    void absentAdapter() {
      assertThatThrownBy(() -> builder().set("relaykit.kafka.bootstrap-servers", "h:9092")
          .build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("relaykit.kafka.bootstrap-servers is not a relaykit setting")
          .hasMessageContaining("no module on the class path declares relaykit.kafka.*")
          .hasMessageContaining("relaykit-kafka");
    }

    @Test
    @DisplayName("a key far from every known one lists the declared namespaces")
    void farAway() {
      assertThatThrownBy(() -> builder().set("relaykit.zzzzzzzz.qqqqqqqqqq", "1").build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("relaykit.zzzzzzzz.qqqqqqqqqq is not a relaykit setting")
          .hasMessageContaining("relaykit.sample.*").hasMessageContaining("relaykit.retry.*");
    }

    @Test
    @DisplayName("unknown RELAYKIT_* variables are warned about once per build and ignored")
    void environmentWarns() {
      List<String> warnings = new ArrayList<>();
      Settings s = builder().warnings(warnings::add)
          .environment(Map.of("RELAYKIT_POSTGRES_URL", "jdbc:postgresql://x",
              "RELAYKIT_RETRY_MAX_ATTEMPT", "3", "RELAYKIT__STORAGE", "h2",
              "RELAYKIT_SAMPLE_URI", "sample://ok"))
          .build();

      assertThat(s.asMap()).containsOnlyKeys("relaykit.sample.uri");
      assertThat(warnings).singleElement().asString()
          .contains("RELAYKIT_POSTGRES_URL", "RELAYKIT_RETRY_MAX_ATTEMPT", "RELAYKIT__STORAGE")
          .doesNotContain("RELAYKIT_SAMPLE_URI").doesNotContain("jdbc:postgresql");
      List<String> none = new ArrayList<>();
      builder().warnings(none::add).environment(Map.of("RELAYKIT_SAMPLE_URI", "x")).build();
      assertThat(none).isEmpty();
    }

    @Test
    @DisplayName("without a sink, the warning goes to the System.Logger at WARNING")
    void environmentWarnsToLogger() {
      java.util.logging.Logger jul = java.util.logging.Logger.getLogger(Settings.class.getName());
      List<java.util.logging.LogRecord> records = new ArrayList<>();
      java.util.logging.Handler handler = new java.util.logging.Handler() {
        @Override
        public void publish(java.util.logging.LogRecord r) {
          records.add(r);
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
      };
      jul.addHandler(handler);
      try {
        builder().environment(Map.of("RELAYKIT_NOT_A_SETTING", "1")).build();
      } finally {
        jul.removeHandler(handler);
      }
      assertThat(records).singleElement().satisfies(r -> {
        assertThat(r.getLevel()).isEqualTo(java.util.logging.Level.WARNING);
        assertThat(r.getMessage()).contains("RELAYKIT_NOT_A_SETTING");
      });
    }
  }

  @Test
  @DisplayName("system properties are read like properties, but an undeclared one (a tool's knob)"
      + " is warned about and ignored")
  void systemProperties() {
    Properties p = props("relaykit.sample.pool-size", "3", "relaykit.kit.seed", "42",
        "java.home", "/jdk");
    // Not even key-shaped: a tool's knob still never fails startup.
    Properties system = new Properties();
    system.putAll(p);
    system.setProperty("relaykit.kit.dockerHost", "x");
    system.setProperty("relaykit.bench_dir", "/tmp");
    system.setProperty("relaykit.", "1");
    List<String> warnings = new ArrayList<>();
    Settings s = builder().warnings(warnings::add).systemProperties(system).build();

    assertThat(s.asMap()).containsOnlyKeys("relaykit.sample.pool-size");
    assertThat(warnings).singleElement().asString().contains("relaykit.kit.seed")
        .contains("relaykit.kit.dockerHost").contains("relaykit.bench_dir").contains("relaykit.,");
    assertThatThrownBy(() -> builder().properties(p).build())
        .hasMessageContaining("relaykit.kit.seed is not a relaykit setting");
    assertThatThrownBy(() -> builder().systemProperties(props("relaykit.sample.pool-size", "x"))
        .build()).hasMessageContaining("'x'");
  }

  @Test
  @DisplayName("fromSystem reads system properties, and this process's environment over them")
  void fromSystem() {
    String key = "relaykit.relay.poll-interval";
    String before = System.getProperty(key);
    System.setProperty(key, "123ms");
    System.setProperty("relaykit.some-tool.knob", "not a setting, not an error");
    try {
      Settings s = Settings.fromSystem();
      String variable = System.getenv(Settings.environmentName(key));
      assertThat(s.get(key)).contains(variable != null ? variable : "123ms");
    } finally {
      System.clearProperty("relaykit.some-tool.knob");
      if (before == null) {
        System.clearProperty(key);
      } else {
        System.setProperty(key, before);
      }
    }
  }
}
