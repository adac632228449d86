package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** Bad relaykit.spring.health.* and dead-letter values fail the start naming the key. */
@DisplayName("Health and dead-letter endpoint settings")
class HealthSettingsTest {

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(RelaykitAutoConfiguration.class,
          RelaykitActuatorAutoConfiguration.class));

  @ParameterizedTest(name = "{0}={1}")
  @DisplayName("an out-of-range value fails the start naming the key")
  @CsvSource(delimiter = '|', value = {
      "relaykit.spring.health.sample-interval|-1s",
      "relaykit.spring.health.growth-per-second|NaN",
      "relaykit.spring.health.growth-per-second|-1",
      "relaykit.spring.health.min-samples|2",
      "relaykit.spring.health.window|0s",
      "relaykit.spring.health.stall-age|0s",
      "relaykit.spring.dead-letters.max-limit|0"})
  void badValueNamesKey(String key, String value) {
    runner.withPropertyValues(key + "=" + value).run(ctx -> assertThat(ctx).getFailure()
        .hasStackTraceContaining(key));
  }
}
