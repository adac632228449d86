package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.observation.ObservationRegistry;
import io.relaykit.metrics.micrometer.RelayKitMeterBinder;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * An application's own {@link RelayKitMeterBinder} that still records the two timers while the
 * starter's observations record them: one WARN naming the bean and the fix; the context starts.
 */
class ObservationBinderDurationsWarningTest {

  /**
   * The auto-configuration's logger, read with a handler of its own: the records it gets do not
   * depend on which logging system an earlier test of this JVM installed on the console.
   */
  private final Logger logger =
      Logger.getLogger(RelaykitObservationAutoConfiguration.class.getName());
  private final List<String> warnings = new CopyOnWriteArrayList<>();
  private final Handler handler = new Handler() {
    @Override
    public void publish(LogRecord r) {
      if (r.getLevel().intValue() >= Level.WARNING.intValue()) {
        warnings.add(r.getMessage());
      }
    }

    @Override
    public void flush() {}

    @Override
    public void close() {}
  };
  private Level previousLevel;

  @BeforeEach
  void listen() {
    previousLevel = logger.getLevel();
    logger.setLevel(Level.ALL);
    logger.addHandler(handler);
  }

  @AfterEach
  void stopListening() {
    logger.removeHandler(handler);
    logger.setLevel(previousLevel);
  }

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(RelaykitObservationAutoConfiguration.class))
      .withBean(ObservationRegistry.class, ObservationRegistry::create);

  @Test
  @DisplayName("a binder bean recording durations: one WARN naming the bean and the fix")
  void warnsOnce() {
    runner.withBean("myBinder", RelayKitMeterBinder.class,
        () -> RelayKitMeterBinder.builder().build()).run(c -> {
          assertThat(c).hasNotFailed().hasSingleBean(RelaykitObservations.class);
          assertThat(warnings).hasSize(1);
          assertThat(warnings.get(0)).contains("RelayKitMeterBinder bean 'myBinder' records")
              .contains("recordDurations(false)");
        });
  }

  @Test
  @DisplayName("a binder bean built with recordDurations(false): no warning")
  void quietWhenOff() {
    runner.withBean("myBinder", RelayKitMeterBinder.class,
        () -> RelayKitMeterBinder.builder().recordDurations(false).build()).run(c -> {
          assertThat(c).hasNotFailed();
          assertThat(c.getBean(RelayKitMeterBinder.class).recordsDurations()).isFalse();
          assertThat(warnings).isEmpty();
        });
  }
}
