package io.relaykit.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.retry.Jitter;
import io.relaykit.retry.RetryPolicy;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class BlockSettingsTest {

  private static Settings settings(String... keyValues) {
    Settings.Builder b = Settings.builder().registry(ConfigRegistry.of());
    for (int i = 0; i < keyValues.length; i += 2) {
      b.set(keyValues[i], keyValues[i + 1]);
    }
    return b.build();
  }

  /** The declared default of {@code key} as core's registry documents it. */
  private static String declared(String key) {
    return ConfigRegistry.of().find(key).orElseThrow().defaultValue();
  }

  @Nested
  @DisplayName("retry")
  class Retry {

    @Test
    @DisplayName("defaults equal RetryPolicy.defaults() and the documented key defaults")
    void defaults() {
      RetrySettings r = RetrySettings.from(Settings.empty());
      RetryPolicy core = RetryPolicy.defaults();

      assertThat(r).isEqualTo(RetrySettings.defaults());
      assertThat(r.maxAttempts()).isEqualTo(core.maxAttempts())
          .isEqualTo(Integer.parseInt(declared(CoreKeys.RETRY_MAX_ATTEMPTS)));
      assertThat(r.initialBackoff()).isEqualTo(core.backoff().initial())
          .isEqualTo(DurationFormat.parse(declared(CoreKeys.RETRY_INITIAL_BACKOFF)));
      assertThat(r.maxBackoff()).isEqualTo(core.backoff().max())
          .isEqualTo(DurationFormat.parse(declared(CoreKeys.RETRY_MAX_BACKOFF)));
      assertThat(r.jitter()).isEqualTo(core.backoff().jitter())
          .isEqualTo(Jitter.valueOf(declared(CoreKeys.RETRY_JITTER).toUpperCase()));
      assertThat(r.maxAge()).isEmpty();
      assertThat(core.maxAge()).isNull();
      assertThat(declared(CoreKeys.RETRY_MAX_AGE)).isNull();
    }

    @Test
    @DisplayName("the policy follows the settings")
    void policy() {
      RetryPolicy p = RetrySettings.from(settings(
          CoreKeys.RETRY_MAX_ATTEMPTS, "3", CoreKeys.RETRY_INITIAL_BACKOFF, "100ms",
          CoreKeys.RETRY_MAX_BACKOFF, "250ms", CoreKeys.RETRY_JITTER, "none",
          CoreKeys.RETRY_MAX_AGE, "10s")).toPolicy();

      assertThat(p.maxAttempts()).isEqualTo(3);
      assertThat(p.maxAge()).isEqualTo(Duration.ofSeconds(10));
      assertThat(p.backoff().delay(1)).isEqualTo(Duration.ofMillis(100));
      assertThat(p.backoff().delay(2)).isEqualTo(Duration.ofMillis(200));
      assertThat(p.backoff().delay(3)).as("capped").isEqualTo(Duration.ofMillis(250));
      Instant t = Instant.parse("2026-01-01T00:00:00Z");
      assertThat(p.decide(3, t, t, new RuntimeException("x")).retry()).isFalse();
    }

    @Test
    @DisplayName("a max backoff below the initial one is rejected naming both keys")
    void maxBelowInitial() {
      assertThatThrownBy(() -> RetrySettings.from(settings(
          CoreKeys.RETRY_INITIAL_BACKOFF, "10s", CoreKeys.RETRY_MAX_BACKOFF, "1s")))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining(CoreKeys.RETRY_MAX_BACKOFF)
          .hasMessageContaining(CoreKeys.RETRY_INITIAL_BACKOFF)
          .hasMessageContaining("PT1S");
    }

    @Test
    @DisplayName("the record checks its values, naming the key")
    void recordChecks() {
      assertThatThrownBy(() -> new RetrySettings(0, Duration.ofSeconds(1), Duration.ofSeconds(1),
          Jitter.FULL, Optional.empty())).hasMessageContaining(CoreKeys.RETRY_MAX_ATTEMPTS);
      assertThatThrownBy(() -> new RetrySettings(1, Duration.ZERO, Duration.ofSeconds(1),
          Jitter.FULL, Optional.empty())).hasMessageContaining(CoreKeys.RETRY_INITIAL_BACKOFF);
      assertThatThrownBy(() -> new RetrySettings(1, Duration.ofSeconds(1), Duration.ofSeconds(1),
          Jitter.FULL, Optional.of(Duration.ofSeconds(-1))))
          .hasMessageContaining(CoreKeys.RETRY_MAX_AGE);
    }
  }

  @Nested
  @DisplayName("relay")
  class Relay {

    @Test
    @DisplayName("defaults: adaptive batches from 100, 30 s lease, 500 ms poll, as documented")
    void defaults() {
      RelaySettings r = RelaySettings.from(Settings.empty());

      assertThat(r).isEqualTo(RelaySettings.defaults());
      assertThat(r.fixedBatchSize()).isFalse();
      assertThat(r.batchSize()).isEqualTo(100)
          .isEqualTo(Integer.parseInt(declared(CoreKeys.RELAY_BATCH_SIZE)));
      assertThat(r.lease()).isEqualTo(Duration.ofSeconds(30))
          .isEqualTo(DurationFormat.parse(declared(CoreKeys.RELAY_LEASE)));
      assertThat(r.pollInterval()).isEqualTo(Duration.ofMillis(500))
          .isEqualTo(DurationFormat.parse(declared(CoreKeys.RELAY_POLL_INTERVAL)));
    }

    @Test
    @DisplayName("a set batch size is fixed")
    void fixed() {
      RelaySettings r = RelaySettings.from(settings(CoreKeys.RELAY_BATCH_SIZE, "50",
          CoreKeys.RELAY_LEASE, "2m", CoreKeys.RELAY_POLL_INTERVAL, "PT0.25S"));

      assertThat(r).isEqualTo(new RelaySettings(50, true, Duration.ofMinutes(2),
          Duration.ofMillis(250)));
    }

    @ParameterizedTest(name = "{0}={1}")
    @CsvSource({"relaykit.relay.batch-size, 10001", "relaykit.relay.batch-size, 0",
        "relaykit.relay.lease, 0ms", "relaykit.relay.poll-interval, fast"})
    @DisplayName("invalid values are rejected naming the key and value")
    void rejected(String key, String value) {
      assertThatThrownBy(() -> RelaySettings.from(settings(key, value)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining(key).hasMessageContaining("'" + value + "'");
    }
  }

  @Nested
  @DisplayName("idempotency")
  class Idempotency {

    @Test
    @DisplayName("defaults: one day, no fast tier, as documented")
    void defaults() {
      IdempotencySettings i = IdempotencySettings.from(Settings.empty());

      assertThat(i).isEqualTo(IdempotencySettings.defaults());
      assertThat(i.retention()).isEqualTo(Duration.ofDays(1))
          .isEqualTo(DurationFormat.parse(declared(CoreKeys.IDEMPOTENCY_RETENTION)));
      assertThat(i.fastTier()).isEmpty();
      assertThat(declared(CoreKeys.IDEMPOTENCY_FAST_TIER)).isEqualTo(IdempotencySettings.NONE);
    }

    @Test
    @DisplayName("a fast tier is a lower-cased backend name; none is none")
    void fastTier() {
      assertThat(IdempotencySettings.from(settings(CoreKeys.IDEMPOTENCY_FAST_TIER, "Redis",
          CoreKeys.IDEMPOTENCY_RETENTION, "7d")))
          .isEqualTo(new IdempotencySettings(Duration.ofDays(7), Optional.of("redis")));
      assertThat(IdempotencySettings.from(settings(CoreKeys.IDEMPOTENCY_FAST_TIER, "NONE"))
          .fastTier()).isEmpty();
      assertThatThrownBy(() -> settings(CoreKeys.IDEMPOTENCY_FAST_TIER, "re dis"))
          .hasMessageContaining(CoreKeys.IDEMPOTENCY_FAST_TIER).hasMessageContaining("'re dis'");
      assertThatThrownBy(() -> IdempotencySettings.from(Settings.builder()
          .registry(ConfigRegistry.of())
          .environment(Map.of("RELAYKIT_IDEMPOTENCY_RETENTION", "0d")).build()))
          .hasMessageContaining(CoreKeys.IDEMPOTENCY_RETENTION).hasMessageContaining("'0d'");
    }
  }
}
