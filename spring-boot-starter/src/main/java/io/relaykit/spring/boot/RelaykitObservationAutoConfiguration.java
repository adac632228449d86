package io.relaykit.spring.boot;

import io.micrometer.observation.ObservationRegistry;
import io.relaykit.config.CoreKeys;
import io.relaykit.metrics.micrometer.RelayKitMeterBinder;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;

/**
 * relaykit's Micrometer Observations ({@link RelaykitObservations}) in a Spring Boot application
 * that has an {@link ObservationRegistry} bean (Actuator, or any {@code
 * spring-boot-micrometer-observation} setup): the outbox, the relay and the {@link
 * RelaykitListener} subscriptions are observed through it, the tracing module found on the class
 * path ({@code TracePropagation.discovered()}) is not used by them, and the starter's {@code
 * RelayKitMeterBinder} stops recording its two timers, which the observations record under the
 * same names. With a tracing bridge (for example {@code spring-boot-starter-opentelemetry}) the
 * observations are spans of one trace from the append to the handler.
 *
 * <p>Define your own {@link RelaykitObservations} bean to replace this one, or exclude this
 * auto-configuration to go back to the hand-wired tracing and the binder's timers.
 *
 * <p>A {@code RelayKitMeterBinder} bean of the application's own that still records the two
 * timers ({@code RelayKitMeterBinder.recordsDurations()}) would record each handler call and
 * publish a second time in the same series: once the context is refreshed, one WARN names each
 * such bean and the fix ({@code recordDurations(false)} on its builder). The application still
 * starts.
 */
@AutoConfiguration(afterName =
    "org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration")
@ConditionalOnClass(ObservationRegistry.class)
@ConditionalOnBean(ObservationRegistry.class)
public class RelaykitObservationAutoConfiguration {

  /** Created by Spring. */
  public RelaykitObservationAutoConfiguration() {
  }

  /**
   * The observations, on the application's registry; appends carry the {@code messaging.system}
   * of {@code relaykit.transport}.
   *
   * @param registry the application's observation registry
   * @param environment where {@code relaykit.transport} is read
   * @return the observations
   */
  @Bean
  @ConditionalOnMissingBean
  public RelaykitObservations relaykitObservations(ObservationRegistry registry,
      Environment environment) {
    return new RelaykitObservations(registry, RelaykitEnvironment.messagingSystem(
        environment.getProperty(CoreKeys.TRANSPORT, "memory")));
  }

  /**
   * The check of the application's {@code RelayKitMeterBinder} beans, when the binder is on the
   * class path.
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(RelayKitMeterBinder.class)
  static class BinderDurationsCheck {

    static final String WARNING = "RelayKitMeterBinder bean '%s' records relaykit.handler.duration"
        + " and relaykit.publish.confirm.duration, which relaykit's Micrometer Observations"
        + " record too: every handler call and publish is counted twice in those timers. Build"
        + " it with RelayKitMeterBinder.builder().recordDurations(false), or exclude"
        + " RelaykitObservationAutoConfiguration to keep the binder's timers instead.";

    private static final System.Logger LOG =
        System.getLogger(RelaykitObservationAutoConfiguration.class.getName());

    @Bean
    static SmartInitializingSingleton relaykitObservationBinderCheck(
        org.springframework.beans.factory.ListableBeanFactory beans) {
      return () -> beans.getBeansOfType(RelayKitMeterBinder.class, false, false).forEach(
          (name, binder) -> {
            if (binder.recordsDurations()) {
              LOG.log(System.Logger.Level.WARNING, String.format(WARNING, name));
            }
          });
    }
  }
}
