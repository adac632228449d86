package io.relaykit.spring.boot;

import io.relaykit.config.CoreKeys;
import io.relaykit.config.Settings;
import io.relaykit.console.Console;
import io.relaykit.console.ConsoleDeadLetterSource;
import io.relaykit.console.ConsoleHistory;
import io.relaykit.monitor.SubscriptionGauges;
import io.relaykit.monitor.SubscriptionStatusSource;
import io.relaykit.outbox.OutboxStore;
import io.relaykit.transport.kafka.KafkaSubscriptionStatus;
import io.relaykit.transport.kafka.KafkaTransportConfig;
import io.relaykit.transport.rabbitmq.RabbitMqQueueStatus;
import io.relaykit.transport.rabbitmq.RabbitMqTransportConfig;
import java.time.InstantSource;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.autoconfigure.condition.NoneNestedConditions;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Lazy;
import org.springframework.core.Ordered;
import org.springframework.web.servlet.handler.SimpleUrlHandlerMapping;

/**
 * relaykit's operator console in a Spring MVC servlet application, when {@code
 * relaykit.console.enabled=true} (off by default): the outbox backlog with its verdict over the
 * last hour, lag and in-flight per subscription, and the dead letters of every store the
 * application has (the ones the {@code relaykitdeadletters} endpoint lists), with replay and
 * purge unless {@code relaykit.console.read-only=true}. Served under {@code relaykit.console.path}
 * (default {@code /relaykit/console}).
 *
 * <p><b>Security is the application's.</b> Enabling the console without Spring Security on the
 * class path, or in an application that is not a Spring MVC servlet application, fails the start
 * naming {@code relaykit.console.enabled} ({@link ConsoleFailureAnalyzer}). The console defines no
 * security rule of its own: the application's {@code SecurityFilterChain} must require
 * authentication (a role, say {@code OPERATOR}) for the console's path, and the console refuses
 * every request that reaches it without an authenticated user. Its forms carry Spring Security's
 * CSRF token, so a POST without it is refused by Spring Security before the console sees it.
 *
 * <p>The console's history is sampled in memory, every {@code relaykit.console.sample-interval}
 * (default 10 s) for the last hour, by a {@link RelaykitConsoleSampler} that starts and stops with
 * the context.
 */
@AutoConfiguration(after = {RelaykitAutoConfiguration.class,
    RelaykitActuatorAutoConfiguration.class, RelaykitMicrometerAutoConfiguration.class})
@ConditionalOnProperty(name = SpringConfigKeys.CONSOLE_ENABLED, havingValue = "true")
public class RelaykitConsoleAutoConfiguration {

  /** The class whose absence means the application has no Spring Security (web). */
  static final String SECURITY_CLASS = "org.springframework.security.web.SecurityFilterChain";

  /** Created by Spring. */
  public RelaykitConsoleAutoConfiguration() {
  }

  /**
   * The console's checked settings.
   *
   * @param settings the application's settings
   * @return the console's
   * @throws IllegalArgumentException naming the {@code relaykit.console.*} key of a bad value
   */
  @Bean
  RelaykitConsoleSettings relaykitConsoleSettings(Settings settings) {
    return RelaykitConsoleSettings.from(settings);
  }

  /** The console, its history sampler and its handler, in a servlet application with Security. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
  @ConditionalOnClass(name = {SECURITY_CLASS, "org.springframework.web.servlet.DispatcherServlet",
      "io.relaykit.console.Console"})
  static class ServletConsole {

    /**
     * Lag and in-flight of this application's consumers, reported to it as a metrics listener
     * (the transport's subscriptions and the listeners' report to every such bean).
     */
    @Bean
    @ConditionalOnMissingBean
    SubscriptionGauges relaykitSubscriptionGauges(Settings settings) {
      return SubscriptionGauges.builder().kind(subscriptionKind(settings)).build();
    }

    /**
     * The console over the application's stores, built on first use: at the history sampler's
     * start, after every listener has been registered (their broker dead-letter stores are
     * known then).
     */
    @Bean
    @Lazy
    @ConditionalOnMissingBean
    Console relaykitConsole(RelaykitConsoleSettings console, DeadLetterSources deadLetters,
        TransactionalOutbox outbox, Settings settings, RelaykitMonitoring monitoring,
        ObjectProvider<SubscriptionStatusSource> subscriptions,
        ObjectProvider<InstantSource> clock) {
      OutboxStore store = outbox.store();
      Console.Builder b = Console.builder()
          .readOnly(console.readOnly())
          .readOnlyHint("this console is read-only: set " + SpringConfigKeys.CONSOLE_READ_ONLY
              + "=false to allow replay and purge")
          .payloadView(console.showPayloads() ? console.payloadMaxBytes() : 0)
          .history(console.historySamples(), console.sampleInterval())
          .clock(clock.getIfUnique(InstantSource::system))
          .metrics(monitoring.metrics())
          .backlog(store::stats)
          .backlogMonitor(RelaykitActuatorAutoConfiguration.monitorConfig(settings));
      for (DeadLetterSource s : deadLetters.all()) {
        b.deadLetters(consoleSource(s));
      }
      subscriptions.orderedStream().forEach(b::subscriptions);
      return b.build();
    }

    /** Samples the console's history with the context. */
    @Bean
    RelaykitConsoleSampler relaykitConsoleSampler(ObjectProvider<Console> console,
        RelaykitConsoleSettings settings) {
      return new RelaykitConsoleSampler(() -> {
        ConsoleHistory history = console.getObject().history();
        return history::tick;
      }, settings.sampleInterval());
    }

    /**
     * Maps the console's path and everything under it to the console, ahead of the
     * application's controllers and static resources.
     */
    @Bean
    SimpleUrlHandlerMapping relaykitConsoleHandlerMapping(ObjectProvider<Console> console,
        RelaykitConsoleSettings settings) {
      RelaykitConsoleHandler handler = new RelaykitConsoleHandler(console::getObject,
          settings.path());
      Map<String, Object> urls = new LinkedHashMap<>();
      urls.put(settings.path(), handler);
      urls.put(settings.path() + "/**", handler);
      return new SimpleUrlHandlerMapping(urls, Ordered.HIGHEST_PRECEDENCE + 100);
    }

    /**
     * The console's view of one dead-letter store: the same store (opened on use), replay and
     * purge refusal the dead-letter endpoint uses.
     */
    static ConsoleDeadLetterSource consoleSource(DeadLetterSource s) {
      String note = null;
      if (s.retention() != null) {
        note = "Reads its whole topic for each page and count. Retention is "
            + s.retention() + "; a replay hides the entry.";
        if (note.length() > 500) {
          note = note.substring(0, 497) + "...";
        }
      }
      return new ConsoleDeadLetterSource(consoleName(s.name()), s.opensOnUse(), s::replay,
          s.purgeRefusal() == null, note);
    }

    /**
     * A store's name as the console accepts it (letters, digits and {@code . _ : -}, at most 100):
     * as it is when it fits, else its fitting characters cut short and a hash of the whole name
     * (should two names still meet, building the console fails naming the store).
     */
    static String consoleName(String name) {
      if (name.matches("[A-Za-z0-9._:-]{1,100}")) {
        return name;
      }
      String safe = name.replaceAll("[^A-Za-z0-9._:-]", "_");
      String hash = Integer.toHexString(name.hashCode()) + Integer.toHexString(name.length());
      return safe.substring(0, Math.min(safe.length(), 100 - hash.length() - 1)) + "-" + hash;
    }

    /** The kind of the subscriptions of the application's transport. */
    static String subscriptionKind(Settings settings) {
      String transport = settings.getName(CoreKeys.TRANSPORT, "memory");
      return switch (transport) {
        case "kafka" -> "share".equalsIgnoreCase(settings.isSet(KAFKA_GROUP_TYPE)
            ? settings.getString(KAFKA_GROUP_TYPE, "consumer").strip() : "consumer")
            ? "kafka-share-group" : "kafka-group";
        case "rabbitmq" -> "rabbitmq-queue";
        default -> "in-process";
      };
    }

    /** relaykit-kafka's key, named here so the starter loads without it. */
    static final String KAFKA_GROUP_TYPE = "relaykit.kafka.group-type";
  }

  /**
   * The lag of the listeners' Kafka groups as the brokers see it (every instance's consumers, not
   * only this one's), read with an Admin client when the page asks; built with the console.
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "io.relaykit.transport.kafka.KafkaSubscriptionStatus")
  @ConditionalOnBean(type = "io.relaykit.transport.kafka.KafkaTransportConfig")
  static class KafkaStatus {

    /** The listeners' groups; none (not every group of the cluster) without listeners. */
    @Bean
    @Lazy
    @ConditionalOnMissingBean(name = "relaykitKafkaSubscriptionStatus")
    SubscriptionStatusSource relaykitKafkaSubscriptionStatus(KafkaTransportConfig config,
        ObjectProvider<RelaykitListenerRegistry> registry) {
      Set<String> groups = new TreeSet<>();
      RelaykitListenerRegistry r = registry.getIfUnique();
      if (r != null) {
        r.specs().forEach(spec -> groups.add(spec.group()));
      }
      if (groups.isEmpty()) {
        return List::of;
      }
      KafkaSubscriptionStatus.Builder b = KafkaSubscriptionStatus.builder(config);
      if (config.groupType() == KafkaTransportConfig.GroupType.SHARE) {
        b.shareGroups(groups).consumerGroups(List.of());
      } else {
        b.consumerGroups(groups).shareGroups(List.of());
      }
      return b.build();
    }
  }

  /**
   * The depth of the listeners' RabbitMQ queues as the broker sees it, read when the page asks;
   * built with the console, when the application has listeners.
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "io.relaykit.transport.rabbitmq.RabbitMqQueueStatus")
  @ConditionalOnBean(type = "io.relaykit.transport.rabbitmq.RabbitMqTransportConfig")
  static class RabbitMqStatus {

    @Bean
    @Lazy
    @ConditionalOnMissingBean(name = "relaykitRabbitMqQueueStatus")
    SubscriptionStatusSource relaykitRabbitMqQueueStatus(RabbitMqTransportConfig config,
        ObjectProvider<RelaykitListenerRegistry> registry) {
      RelaykitListenerRegistry r = registry.getIfUnique();
      List<io.relaykit.message.SubscriptionSpec> specs = r == null ? List.of() : r.specs();
      if (specs.isEmpty()) {
        return List::of; // no listener queue to read
      }
      RabbitMqQueueStatus.Builder b = RabbitMqQueueStatus.builder(config);
      specs.forEach(spec -> b.subscription(spec.destination(), spec.group()));
      return new ClosingStatus(b.maxQueues(Math.max(specs.size(),
          RabbitMqQueueStatus.DEFAULT_MAX_QUEUES)).build());
    }

    /** A RabbitMQ reader closed with the context. */
    record ClosingStatus(RabbitMqQueueStatus status) implements SubscriptionStatusSource,
        AutoCloseable {
      @Override
      public List<io.relaykit.monitor.SubscriptionStatus> read() throws Exception {
        return status.read();
      }

      @Override
      public void close() {
        status.close();
      }
    }
  }

  /** Spring Security missing: fail the start naming the property. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnMissingClass(SECURITY_CLASS)
  static class SecurityMissing {
    SecurityMissing() {
      throw new ConsoleSetupException(SpringConfigKeys.CONSOLE_ENABLED + "=true needs Spring"
          + " Security on the class path: the console is served only behind the application's"
          + " own security (authentication, a role, CSRF protection for its actions)",
          "Add org.springframework.boot:spring-boot-starter-security and a SecurityFilterChain"
              + " that requires a role for the console's path (relaykit.console.path, default "
              + SpringConfigKeys.CONSOLE_DEFAULT_PATH + "), or set "
              + SpringConfigKeys.CONSOLE_ENABLED + "=false.");
    }
  }

  /** Not a Spring MVC servlet application: fail the start naming the property. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = SECURITY_CLASS)
  @Conditional(NotServletMvc.class)
  static class NotServletMvcApplication {
    NotServletMvcApplication() {
      throw new ConsoleSetupException(SpringConfigKeys.CONSOLE_ENABLED + "=true needs a Spring"
          + " MVC servlet web application: the console is served by the application's"
          + " DispatcherServlet", "Add org.springframework.boot:spring-boot-starter-web, or set "
              + SpringConfigKeys.CONSOLE_ENABLED + "=false (the standalone console, ./relaykit"
              + " console, serves the same pages without Spring).");
    }
  }

  /** Anything but a servlet web application with Spring MVC. */
  static final class NotServletMvc extends NoneNestedConditions {
    NotServletMvc() {
      super(ConfigurationPhase.PARSE_CONFIGURATION);
    }

    @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
    @ConditionalOnClass(name = "org.springframework.web.servlet.DispatcherServlet")
    static final class ServletMvc {}
  }
}
