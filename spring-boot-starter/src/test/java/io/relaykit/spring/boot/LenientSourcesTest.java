package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import io.relaykit.config.RelaySettings;
import io.relaykit.config.Settings;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * As in core: an undeclared relaykit.* key that only a JVM system property carries is ignored
 * (with a warning), while the same key in the application's properties fails the start; declared
 * keys from system properties apply.
 */
class LenientSourcesTest {

  private static final String UNDECLARED = "relaykit.lenient-test.knob";

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(RelaykitAutoConfiguration.class));

  @Test
  @DisplayName("an undeclared key only in system properties is ignored; declared ones apply")
  void systemPropertiesAreLenient() {
    runner.withSystemProperties(UNDECLARED + "=1", "relaykit.relay.batch-size=7").run(ctx -> {
      assertThat(ctx).hasNotFailed();
      Settings s = ctx.getBean(Settings.class);
      assertThat(RelaySettings.from(s).batchSize()).isEqualTo(7);
      assertThat(s.isSet(UNDECLARED)).isFalse();
    });
  }

  @Test
  @DisplayName("the same undeclared key in the application's properties fails the start")
  void applicationPropertiesAreStrict() {
    runner.withPropertyValues(UNDECLARED + "=1").run(ctx -> assertThat(ctx).getFailure()
        .rootCause().hasMessageContaining(UNDECLARED).hasMessageContaining("not a relaykit"));
  }

  @Test
  @DisplayName("a key in both a system property and the properties is judged by the properties")
  void strictWinsWhenBothCarryIt() {
    runner.withSystemProperties(UNDECLARED + "=1").withPropertyValues(UNDECLARED + "=2")
        .run(ctx -> assertThat(ctx).getFailure().rootCause().hasMessageContaining(UNDECLARED));
  }
}
