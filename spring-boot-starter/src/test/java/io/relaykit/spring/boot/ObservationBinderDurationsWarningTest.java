package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.observation.ObservationRegistry;
import io.relaykit.metrics.micrometer.RelayKitMeterBinder;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * An application's own {@link RelayKitMeterBinder} that still records the two timers while the
 * starter's observations record them: one WARN naming the bean and the fix; the context starts.
 */
@ExtendWith(OutputCaptureExtension.class)
class ObservationBinderDurationsWarningTest {

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(RelaykitObservationAutoConfiguration.class))
      .withBean(ObservationRegistry.class, ObservationRegistry::create);

  @Test
  @DisplayName("a binder bean recording durations: one WARN naming the bean and the fix")
  void warnsOnce(CapturedOutput output) {
    runner.withBean("myBinder", RelayKitMeterBinder.class,
        () -> RelayKitMeterBinder.builder().build()).run(c -> {
          assertThat(c).hasNotFailed().hasSingleBean(RelaykitObservations.class);
          String text = output.getAll();
          assertThat(text).contains("RelayKitMeterBinder bean 'myBinder' records")
              .contains("recordDurations(false)");
          assertThat(text.split("RelayKitMeterBinder bean 'myBinder'", -1)).hasSize(2);
        });
  }

  @Test
  @DisplayName("a binder bean built with recordDurations(false): no warning")
  void quietWhenOff(CapturedOutput output) {
    runner.withBean("myBinder", RelayKitMeterBinder.class,
        () -> RelayKitMeterBinder.builder().recordDurations(false).build()).run(c -> {
          assertThat(c).hasNotFailed();
          assertThat(c.getBean(RelayKitMeterBinder.class).recordsDurations()).isFalse();
          assertThat(output.getAll()).doesNotContain("RelayKitMeterBinder bean");
        });
  }
}
