package io.relaykit.spring.boot;

import io.relaykit.config.Settings;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.autoconfigure.condition.NoneNestedConditions;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;

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
