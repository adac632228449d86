package io.relaykit.spring.boot;

import io.relaykit.config.RelaySettings;
import io.relaykit.config.Settings;
import io.relaykit.deadletter.DeadLetterStore;
import io.relaykit.deadletter.ReplayTarget;
import io.relaykit.message.Publisher;
import io.relaykit.monitor.BacklogMonitor;
import io.relaykit.monitor.BacklogVerdict;
import java.time.Duration;
import java.time.InstantSource;
import java.util.Set;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.AnyNestedCondition;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.core.env.Environment;

/**
 * relaykit's Spring Boot Actuator beans, when the application has Actuator on its class path.
 *
 * <ul>
 *   <li>{@link RelaykitBacklogHealthIndicator} as the health contributor {@code relaykit}
 *       (unless {@code management.health.relaykit.enabled=false}): the outbox backlog's verdict,
 *       mapped to a status by {@code relaykit.spring.health.out-of-service} (default {@code
 *       stalled,sustained-growth,over-bound}) and {@code relaykit.spring.health.down} (default
 *       none); thresholds from {@code relaykit.spring.health.*} ({@code window}, {@code
 *       min-samples}, {@code growth-per-second}, {@code stall-age}, {@code sample-interval}).
 *       Ages are measured with the application's {@link InstantSource} (a {@code Clock} bean is
 *       one) when it has exactly one, else the system clock.
 *   <li>The readiness group includes {@code relaykit} by default (Kubernetes stops routing to a
 *       pod whose outbox is stalled or growing), unless {@code
 *       relaykit.spring.health.readiness=false} or the application sets {@code
 *       management.endpoint.health.group.readiness.include} (or {@code .exclude}) itself. It is
 *       never added to liveness: restarting a pod does not drain a backlog, and a backlog on
 *       every pod would restart them all.
 *   <li>{@link RelaykitDeadLettersEndpoint} ({@code relaykitdeadletters}): list, replay and purge
 *       the dead letters of relaykit's store and of the listeners' Kafka dead-letter topics or
 *       RabbitMQ dead-letter queues. Available by default but, like every endpoint but health,
 *       exposed over HTTP only when {@code management.endpoints.web.exposure.include} names it,
 *       and guarded by Spring Security's rules when that is on the class path.
 * </ul>
 *
 * <p>Every bean backs off when the application defines its own of the same type. A bad {@code
 * relaykit.spring.health.*} or {@code relaykit.spring.dead-letters.*} value fails the context's
 * start naming the key.
 */
@AutoConfiguration(after = RelaykitAutoConfiguration.class, afterName = {
    "org.springframework.boot.health.autoconfigure.actuate.endpoint"
        + ".AvailabilityProbesAutoConfiguration",
    "org.springframework.boot.health.autoconfigure.actuate.endpoint"
        + ".HealthEndpointAutoConfiguration"})
@ConditionalOnClass(HealthIndicator.class)
public class RelaykitActuatorAutoConfiguration {

  /** Created by Spring. */
  public RelaykitActuatorAutoConfiguration() {
  }

  /**
   * The outbox backlog health indicator, named {@code relaykit}.
   *
   * @param outbox the outbox whose backlog is judged
   * @param settings the settings
   * @param clock the application's clock, if it has exactly one
   * @return the indicator
   * @throws IllegalArgumentException naming the {@code relaykit.spring.health.*} key of a bad
   *     value
   */
  @Bean
  @ConditionalOnMissingBean
  @ConditionalOnEnabledHealthIndicator("relaykit")
  public RelaykitBacklogHealthIndicator relaykitHealthIndicator(TransactionalOutbox outbox,
      Settings settings, ObjectProvider<InstantSource> clock) {
    Set<BacklogVerdict> outOfService = RelaykitBacklogHealthIndicator.parseVerdicts(
        SpringConfigKeys.HEALTH_OUT_OF_SERVICE, settings.getString(
            SpringConfigKeys.HEALTH_OUT_OF_SERVICE, "stalled,sustained-growth,over-bound"));
    Set<BacklogVerdict> down = RelaykitBacklogHealthIndicator.parseVerdicts(
        SpringConfigKeys.HEALTH_DOWN, settings.getString(SpringConfigKeys.HEALTH_DOWN, ""));
    return new RelaykitBacklogHealthIndicator(outbox.store(), monitorConfig(settings),
        clock.getIfUnique(InstantSource::system),
        settings.getDuration(SpringConfigKeys.HEALTH_SAMPLE_INTERVAL, Duration.ofSeconds(5)),
        outOfService, down);
  }

  /**
   * Adds {@code relaykit} to the readiness group unless the application chose its members.
   *
   * @param env the environment, for the application's own group settings
   * @param settings the settings, for {@code relaykit.spring.health.readiness}
   * @return the post-processor, ordered last so that it sees Boot's probe groups
   */
  @Bean
  @Order(Ordered.LOWEST_PRECEDENCE)
  @ConditionalOnEnabledHealthIndicator("relaykit")
  @ConditionalOnClass(name = "org.springframework.boot.health.actuate.endpoint"
      + ".HealthEndpointGroupsPostProcessor")
  static RelaykitReadinessGroup relaykitReadinessGroup(Environment env) {
    // Static, and reading the environment directly: post-processors are created early.
    return new RelaykitReadinessGroup(env, RelaykitEnvironment.settings(env)
        .getBoolean(SpringConfigKeys.HEALTH_READINESS, true));
  }

  /**
   * The application's dead-letter stores, shared by the dead-letter endpoint and the operator
   * console: present when either is.
   */
  @Configuration(proxyBeanMethods = false)
  @Conditional(DeadLetterSourcesNeeded.class)
  static class DeadLetterSourcesConfiguration {

    /** The dead-letter topics or queues of the listeners, opened on first use. */
    @Bean
    BrokerDeadLetterStores relaykitBrokerDeadLetterStores(BeanFactory beans,
        RelaykitMonitoring monitoring) {
      return BrokerDeadLetterStores.of(beans, monitoring.lifecycle());
    }

    /** relaykit's store with its replay, then the broker stores. */
    @Bean
    DeadLetterSources relaykitDeadLetterSources(DeadLetterStore deadLetters,
        TransactionalOutbox outbox, ObjectProvider<Publisher> publisher,
        ObjectProvider<ReplayTarget> target, Settings settings, RelaykitMonitoring monitoring,
        BrokerDeadLetterStores brokers) {
      Duration confirmTimeout = RelaySettings.confirmTimeoutFor(
          RelaySettings.from(settings).lease());
      RelaykitDeadLettersEndpoint.Replay replay = DeadLetterReplays.choose(deadLetters,
          outbox.store(), publisher.getIfUnique(), target.getIfUnique(), confirmTimeout,
          monitoring.lifecycle());
      return new DeadLetterSources(deadLetters, replay, brokers::sources);
    }
  }

  /** The dead-letter endpoint is available, or the operator console is enabled. */
  static final class DeadLetterSourcesNeeded extends AnyNestedCondition {

    DeadLetterSourcesNeeded() {
      super(ConfigurationPhase.REGISTER_BEAN);
    }

    @ConditionalOnClass(name = {
        "org.springframework.boot.actuate.endpoint.web.annotation.WebEndpoint",
        "org.springframework.boot.actuate.autoconfigure.endpoint.condition"
            + ".ConditionalOnAvailableEndpoint"})
    @ConditionalOnAvailableEndpoint(RelaykitDeadLettersEndpoint.class)
    static final class EndpointAvailable {}

    @ConditionalOnProperty(name = SpringConfigKeys.CONSOLE_ENABLED, havingValue = "true")
    static final class ConsoleEnabled {}
  }

  /** The dead-letter endpoint, where Actuator's endpoint support is present. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = {
      "org.springframework.boot.actuate.endpoint.web.annotation.WebEndpoint",
      "org.springframework.boot.actuate.autoconfigure.endpoint.condition"
          + ".ConditionalOnAvailableEndpoint"})
  static class DeadLetterEndpointConfiguration {

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnAvailableEndpoint(RelaykitDeadLettersEndpoint.class)
    RelaykitDeadLettersEndpoint relaykitDeadLettersEndpoint(DeadLetterSources sources,
        Settings settings) {
      return new RelaykitDeadLettersEndpoint(sources,
          settings.getInt(SpringConfigKeys.DEAD_LETTERS_MAX_LIMIT, 100));
    }
  }

  static BacklogMonitor.Config monitorConfig(Settings settings) {
    BacklogMonitor.Config.Builder b = BacklogMonitor.Config.builder();
    if (settings.isSet(SpringConfigKeys.HEALTH_WINDOW)) {
      b.window(settings.getDuration(SpringConfigKeys.HEALTH_WINDOW, null));
    }
    if (settings.isSet(SpringConfigKeys.HEALTH_MIN_SAMPLES)) {
      b.minSamples(settings.getInt(SpringConfigKeys.HEALTH_MIN_SAMPLES, 5));
    }
    if (settings.isSet(SpringConfigKeys.HEALTH_STALL_AGE)) {
      b.stallAge(settings.getDuration(SpringConfigKeys.HEALTH_STALL_AGE, null));
    }
    String growth = settings.getString(SpringConfigKeys.HEALTH_GROWTH_PER_SECOND, null);
    if (growth != null) {
      try {
        b.growthPerSecond(Double.parseDouble(growth.strip()));
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(SpringConfigKeys.HEALTH_GROWTH_PER_SECOND
            + " must be a number of messages per second such as 0.5, was '" + growth + "'");
      }
    }
    try {
      return b.build();
    } catch (IllegalArgumentException e) {
      // The core message names the component (minSamples); name the property it came from.
      String m = String.valueOf(e.getMessage());
      for (String[] c : new String[][] {{"window", SpringConfigKeys.HEALTH_WINDOW},
          {"minSamples", SpringConfigKeys.HEALTH_MIN_SAMPLES},
          {"growthPerSecond", SpringConfigKeys.HEALTH_GROWTH_PER_SECOND},
          {"stallAge", SpringConfigKeys.HEALTH_STALL_AGE}}) {
        if (m.startsWith(c[0] + " ")) {
          throw new IllegalArgumentException(c[1] + ": " + m);
        }
      }
      throw new IllegalArgumentException("relaykit.spring.health: " + m);
    }
  }
}
