package io.relaykit.transport.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("RabbitMqTransportConfig")
class RabbitMqTransportConfigTest {

  @Test
  @DisplayName("defaults are pinned")
  void defaults() {
    RabbitMqTransportConfig c = RabbitMqTransportConfig.builder()
        .uri(RabbitMqTransportConfig.DEFAULT_URI).build();
    assertThat(c.uri()).isEqualTo("amqp://guest:guest@127.0.0.1:5672");
    assertThat(c.connectionName()).isEqualTo("relaykit");
    assertThat(c.prefetch()).isZero();
    assertThat(c.confirmWindow()).isEqualTo(1024);
    assertThat(c.confirmTimeout()).isEqualTo(Duration.ofSeconds(30));
    assertThat(c.closeTimeout()).isEqualTo(Duration.ofSeconds(30));
    assertThat(c.maxMessageBytes()).isEqualTo(16 * 1024 * 1024);
    assertThat(c.delayLevels()).containsExactly(Duration.ofSeconds(1), Duration.ofSeconds(10),
        Duration.ofMinutes(1), Duration.ofMinutes(10), Duration.ofHours(1));
    assertThat(c.recoveryInterval()).isEqualTo(Duration.ofSeconds(1));
    assertThat(c.metricsInterval()).isEqualTo(Duration.ofSeconds(5));
    assertThat(c.namePrefix()).isEmpty();
    assertThat(c.toBuilder().build()).isEqualTo(c);
  }

  @Test
  @DisplayName("delay levels are sorted; the password never shows in toString")
  void sortedAndRedacted() {
    RabbitMqTransportConfig c = RabbitMqTransportConfig.builder()
        .uri("amqp://app:s3cret@broker:5672/prod")
        .delayLevels(Duration.ofSeconds(5), Duration.ofMillis(100)).build();
    assertThat(c.delayLevels()).containsExactly(Duration.ofMillis(100), Duration.ofSeconds(5));
    assertThat(c.toString()).doesNotContain("s3cret").contains("app:****@broker");
  }

  private static void rejects(UnaryOperator<RabbitMqTransportConfig.Builder> change,
      String... fragments) {
    assertThatThrownBy(() -> change.apply(RabbitMqTransportConfig.builder()).build())
        .isInstanceOf(IllegalArgumentException.class)
        .satisfies(e -> assertThat(e.getMessage()).contains(fragments));
  }

  @Test
  @DisplayName("each invalid field fails build() naming the field and the value")
  void validation() {
    rejects(b -> b.uri(" "), "uri");
    rejects(b -> b.uri("http://x"), "uri", "http://x");
    rejects(b -> b.uri("amqp://u:pw@h:5672 x"), "uri", "u:****@");
    rejects(b -> b.connectionName(""), "connectionName");
    rejects(b -> b.prefetch(-1), "prefetch", "-1");
    rejects(b -> b.prefetch(70_000), "prefetch", "70000");
    rejects(b -> b.confirmWindow(0), "confirmWindow", "0");
    rejects(b -> b.confirmTimeout(Duration.ZERO), "confirmTimeout", "PT0S");
    rejects(b -> b.closeTimeout(null), "closeTimeout", "null");
    rejects(b -> b.recoveryInterval(Duration.ofSeconds(-1)), "recoveryInterval", "PT-1S");
    rejects(b -> b.metricsInterval(Duration.ZERO), "metricsInterval", "PT0S");
    rejects(b -> b.metricsInterval(Duration.ofMillis(5)), "metricsInterval", "PT0.005S");
    rejects(b -> b.maxMessageBytes(10), "maxMessageBytes", "10");
    rejects(b -> b.maxMessageBytes(Integer.MAX_VALUE), "maxMessageBytes");
    rejects(b -> b.delayLevels(List.of()), "delayLevels");
    rejects(b -> b.delayLevels((List<Duration>) null), "delayLevels", "null");
    rejects(b -> b.delayLevels(Duration.ofSeconds(1), Duration.ofMillis(1000)), "delayLevels",
        "twice");
    rejects(b -> b.delayLevels(Duration.ofDays(30)), "delayLevels", "PT720H");
    rejects(b -> b.delayLevels(Duration.ofNanos(10)), "delayLevels");
    rejects(b -> b.namePrefix("a b"), "namePrefix", "a b");
  }

  @Test
  @DisplayName("an invalid URI never shows or chains its password")
  void invalidUriHidesPassword() {
    for (String uri : List.of("amqp://user:pa%zzss@host", "amqp://user:pa ss@host",
        "amqp://pa%zzss@host", "amqp://u:p@a%zzss@host")) {
      assertThatThrownBy(() -> RabbitMqTransportConfig.builder().uri(uri).build())
          .isInstanceOf(IllegalArgumentException.class)
          .satisfies(e -> {
            assertThat(e.getCause()).isNull();
            assertThat(e.getMessage()).contains("uri is not a valid URI").contains("at index")
                .doesNotContain("pa%zzss").doesNotContain("pa ss").doesNotContain("zzss");
          });
      assertThatThrownBy(() -> RabbitMqTransportConfig.from(io.relaykit.config.Settings.builder()
          .set(RabbitMqConfigKeys.URI, uri).build()))
          .isInstanceOf(IllegalArgumentException.class)
          .satisfies(e -> {
            for (Throwable c = e; c != null; c = c.getCause()) {
              assertThat(String.valueOf(c)).doesNotContain("pa%zzss").doesNotContain("pa ss")
                  .doesNotContain("zzss");
            }
          });
    }
  }
}
