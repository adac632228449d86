package io.relaykit.spring.boot;

import io.micrometer.core.instrument.MeterRegistry;
import io.relaykit.config.CoreKeys;
import io.relaykit.metrics.micrometer.RelayKitMeterBinder;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;

/**
 * relaykit's Micrometer meters in a Spring Boot application that has a {@link MeterRegistry}
 * (Actuator with any registry) and {@code io.relaykit:relaykit-micrometer} on its class path.
 *
 * <p>One {@link RelayKitMeterBinder} bean: Spring Boot binds it, as every {@code MeterBinder}
 * bean, to the application's registry (the composite one when there are several) once the
 * singletons are created; relaykit calls made before that are not recorded (nothing is buffered).
 * Being a {@code MetricsListener} and a {@code LifecycleListener} bean, it is picked up by {@link
 * RelaykitMonitoring} with the application's other listeners: the starter's transport reports
 * every step (published and confirmed, delivered, acked, retried, dead-lettered) and, for each
 * subscription ({@link RelaykitListener} methods included), handler timings (timeouts under
 * {@code outcome="timeout"}) and, on Kafka and RabbitMQ, consumer lag and in flight; the relay reports the outbox backlog, oldest age, verdict and confirm times
 * and its own steps but published and confirmed, which its publisher reports.
 *
 * <p>Meter names, tags and bounds are the binder's ({@code relaykit.*}, at most 256 tag
 * combinations per meter); its {@code messaging.system} tag names the starter's transport, from
 * {@code relaykit.transport}: {@code relaykit-inprocess} (memory, the default), {@code kafka} or
 * {@code rabbitmq}, as the transports name themselves. Define your own {@code RelayKitMeterBinder} bean to change them; this
 * one then backs off and yours is attached instead. A registry that throws is contained by the
 * binder and costs no delivery.
 */
@AutoConfiguration(afterName = {
    "org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration",
    "org.springframework.boot.micrometer.metrics.autoconfigure"
        + ".CompositeMeterRegistryAutoConfiguration",
    "org.springframework.boot.micrometer.metrics.autoconfigure.export.simple"
        + ".SimpleMetricsExportAutoConfiguration"})
@ConditionalOnClass({RelayKitMeterBinder.class, MeterRegistry.class})
@ConditionalOnBean(MeterRegistry.class)
public class RelaykitMicrometerAutoConfiguration {

  /** Created by Spring. */
  public RelaykitMicrometerAutoConfiguration() {
  }

  /**
   * The binder, with its default names and bounds and the transport's {@code messaging.system};
   * Spring Boot binds it to the registry. Read from the property, not from the transport's
   * {@code Publisher}: the transport reports to this binder, so it cannot be built first.
   *
   * @param environment where {@code relaykit.transport} is read
   * @param observations the starter's observations, when the application has an {@code
   *     ObservationRegistry}: they record the two timers instead of the binder
   * @return the binder
   */
  @Bean
  @ConditionalOnMissingBean
  public RelayKitMeterBinder relaykitMeterBinder(Environment environment,
      ObjectProvider<RelaykitObservations> observations) {
    return RelayKitMeterBinder.builder()
        .messagingSystem(messagingSystem(environment.getProperty(CoreKeys.TRANSPORT, "memory")))
        .recordDurations(observations.getIfAvailable() == null)
        .build();
  }

  /**
   * The OpenTelemetry {@code messaging.system} of a {@code relaykit.transport} value, as {@code
   * Publisher.messagingSystem()} of that transport names it; another value (the starter refuses
   * it at start) is passed on as it is.
   */
  static String messagingSystem(String transport) {
    return RelaykitEnvironment.messagingSystem(transport);
  }
}
