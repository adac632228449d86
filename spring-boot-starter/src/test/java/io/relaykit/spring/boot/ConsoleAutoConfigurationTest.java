package io.relaykit.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.relaykit.config.Settings;
import io.relaykit.monitor.MetricsListener;
import io.relaykit.monitor.SubscriptionGauges;
import java.io.IOException;
import java.net.URL;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Properties;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.diagnostics.FailureAnalyzer;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.core.io.UrlResource;
import org.springframework.core.io.support.PropertiesLoaderUtils;
import org.springframework.security.web.SecurityFilterChain;

/** When the operator console is wired, when it refuses to start, and its settings. */
@DisplayName("The operator console's auto-configuration")
class ConsoleAutoConfigurationTest {

  private static final AutoConfigurations CONFIGS = AutoConfigurations.of(
      RelaykitAutoConfiguration.class, RelaykitActuatorAutoConfiguration.class,
      RelaykitConsoleAutoConfiguration.class);

  private final WebApplicationContextRunner web = new WebApplicationContextRunner()
      .withConfiguration(CONFIGS)
      .withPropertyValues("relaykit.spring.relay.enabled=false");

  @Nested
  @DisplayName("off unless enabled")
  class Off {
    @Test
    @DisplayName("by default there is no console bean, in a servlet application with Security")
    void offByDefault() {
      web.run(ctx -> assertThat(ctx).hasNotFailed()
          .doesNotHaveBean(RelaykitConsoleSettings.class)
          .doesNotHaveBean(RelaykitConsoleSampler.class));
    }

    @Test
    @DisplayName("relaykit.console.enabled=false without Spring Security starts (nothing is"
        + " checked)")
    void disabledWithoutSecurityStarts() {
      web.withClassLoader(new FilteredClassLoader(SecurityFilterChain.class))
          .withPropertyValues("relaykit.console.enabled=false")
          .run(ctx -> assertThat(ctx).hasNotFailed()
              .doesNotHaveBean(RelaykitConsoleSettings.class));
    }
  }

  @Nested
  @DisplayName("refuses to start where it cannot be served safely")
  class Refusals {
    @Test
    @DisplayName("enabled without Spring Security on the class path: the start fails naming"
        + " relaykit.console.enabled, and the failure analyzer says what to add")
    void withoutSecurity() {
      web.withClassLoader(new FilteredClassLoader(SecurityFilterChain.class))
          .withPropertyValues("relaykit.console.enabled=true")
          .run(ctx -> {
            assertThat(ctx).getFailure().rootCause().isInstanceOf(ConsoleSetupException.class)
                .hasMessageContaining("relaykit.console.enabled=true needs Spring Security");
            FailureAnalysis a = new ConsoleFailureAnalyzer().analyze(ctx.getStartupFailure());
            assertThat(a).isNotNull();
            assertThat(a.getDescription()).contains("relaykit.console.enabled");
            assertThat(a.getAction()).contains("spring-boot-starter-security")
                .contains("SecurityFilterChain");
          });
    }

    @Test
    @DisplayName("enabled in an application that is not a servlet web application: the start"
        + " fails naming relaykit.console.enabled")
    void notAWebApplication() {
      new ApplicationContextRunner().withConfiguration(CONFIGS)
          .withPropertyValues("relaykit.spring.relay.enabled=false",
              "relaykit.console.enabled=true")
          .run(ctx -> assertThat(ctx).getFailure().rootCause()
              .isInstanceOf(ConsoleSetupException.class)
              .hasMessageContaining("relaykit.console.enabled=true needs a Spring MVC servlet"));
    }

    @Test
    @DisplayName("the failure analyzer is registered in spring.factories")
    void analyzerIsRegistered() throws IOException {
      List<String> analyzers = new ArrayList<>();
      for (URL url : Collections.list(getClass().getClassLoader()
          .getResources("META-INF/spring.factories"))) {
        Properties factories = PropertiesLoaderUtils.loadProperties(new UrlResource(url));
        analyzers.add(factories.getProperty(FailureAnalyzer.class.getName(), ""));
      }
      assertThat(analyzers).anySatisfy(a ->
          assertThat(a).contains(ConsoleFailureAnalyzer.class.getName()));
    }

    @ParameterizedTest(name = "{0}={1}")
    @DisplayName("a bad relaykit.console.* value fails the start naming the key and the value")
    @CsvSource(delimiter = '|', value = {
        "relaykit.console.path|/",
        "relaykit.console.path|console",
        "relaykit.console.path|/a/../b",
        "relaykit.console.path|/a//b",
        "relaykit.console.path|/ops/**",
        "relaykit.console.path|/ops/<script>",
        "relaykit.console.path|/ops/.",
        "relaykit.console.path|/ops%2Fx",
        "relaykit.console.path|/ops;x",
        "relaykit.console.path|/ops?x",
        "relaykit.console.path|/ops/ /x",
        "relaykit.console.path|/ops\\x",
        "relaykit.console.payload-max-bytes|0",
        "relaykit.console.payload-max-bytes|1000001",
        "relaykit.console.sample-interval|500ms",
        "relaykit.console.sample-interval|6m"})
    void badValue(String key, String value) {
      web.withPropertyValues("relaykit.console.enabled=true", key + "=" + value)
          .run(ctx -> assertThat(ctx).getFailure().hasStackTraceContaining(key)
              .hasStackTraceContaining(value));
    }
  }

  @Nested
  @DisplayName("enabled, with Spring Security, in a servlet application")
  class Enabled {
    @Test
    @DisplayName("the settings and the dead-letter stores are there, even with the dead-letter"
        + " endpoint switched off")
    void wired() {
      web.withPropertyValues("relaykit.console.enabled=true",
              "management.endpoint.relaykitdeadletters.access=NONE")
          .run(ctx -> {
            assertThat(ctx).hasNotFailed().hasSingleBean(RelaykitConsoleSettings.class)
                .hasSingleBean(DeadLetterSources.class)
                .doesNotHaveBean(RelaykitDeadLettersEndpoint.class);
            assertThat(ctx.getBean(DeadLetterSources.class).all())
                .extracting(DeadLetterSource::name).containsExactly("relaykit");
          });
    }

    @Test
    @DisplayName("SubscriptionGauges is one of the metrics listeners the transport and listeners"
        + " report to, so what they report is what the console reads")
    void gaugesAreFed() {
      web.withPropertyValues("relaykit.console.enabled=true")
          .run(ctx -> {
            assertThat(ctx).hasNotFailed().hasSingleBean(SubscriptionGauges.class);
            MetricsListener reported = ctx.getBean(RelaykitMonitoring.class).metrics();
            reported.consumerLag("orders", "billing", 7);
            reported.inFlight("orders", "billing", 2);
            assertThat(ctx.getBean(SubscriptionGauges.class).read()).singleElement()
                .satisfies(st -> {
                  assertThat(st.kind()).isEqualTo("in-process");
                  assertThat(st.destination()).isEqualTo("orders");
                  assertThat(st.group()).isEqualTo("billing");
                  assertThat(st.lag()).isEqualTo(7);
                  assertThat(st.inFlight()).isEqualTo(2);
                });
          });
    }

    @Test
    @DisplayName("with the console off and the endpoint switched off, no dead-letter stores are"
        + " assembled")
    void noSourcesWhenNeitherNeedsThem() {
      web.withPropertyValues("management.endpoint.relaykitdeadletters.access=NONE",
              "management.endpoints.web.exposure.include=relaykitdeadletters")
          .run(ctx -> assertThat(ctx).hasNotFailed().doesNotHaveBean(DeadLetterSources.class)
              .doesNotHaveBean(BrokerDeadLetterStores.class));
    }

    @Test
    @DisplayName("the endpoint and the console share one set of dead-letter stores")
    void endpointSharesTheSources() {
      web.withPropertyValues("relaykit.console.enabled=true",
              "management.endpoints.web.exposure.include=relaykitdeadletters")
          .run(ctx -> assertThat(ctx).hasNotFailed().hasSingleBean(DeadLetterSources.class)
              .hasSingleBean(RelaykitDeadLettersEndpoint.class));
    }
  }

  @Nested
  @DisplayName("settings")
  class SettingsOf {
    @Test
    @DisplayName("defaults: /relaykit/console, payloads hidden, 16 KiB cut, actions allowed, a"
        + " sample every 10 s, an hour of 360 samples")
    void defaults() {
      RelaykitConsoleSettings s = RelaykitConsoleSettings.from(Settings.builder().build());
      assertThat(s).isEqualTo(new RelaykitConsoleSettings("/relaykit/console", false, 16_384,
          false, Duration.ofSeconds(10)));
      assertThat(s.historySamples()).isEqualTo(360);
    }

    @Test
    @DisplayName("a path is stripped of blanks and trailing slashes")
    void pathNormalised() {
      assertThat(RelaykitConsoleSettings.path(" /ops/relaykit/ ")).isEqualTo("/ops/relaykit");
      assertThat(RelaykitConsoleSettings.path("/a-b_c.d~e")).isEqualTo("/a-b_c.d~e");
    }

    @Test
    @DisplayName("a huge path is refused with the value cut in the message")
    void hugePath() {
      String huge = "/" + "a".repeat(100_000);
      assertThatThrownBy(() -> RelaykitConsoleSettings.path(huge))
          .hasMessageContaining("relaykit.console.path must be at most 200 characters")
          .satisfies(e -> assertThat(e.getMessage().length()).isLessThan(400));
    }
  }
}
