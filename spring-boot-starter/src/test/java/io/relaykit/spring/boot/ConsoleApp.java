package io.relaykit.spring.boot;

import io.relaykit.monitor.MetricsListener;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.security.config.Customizer;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.core.userdetails.UserDetailsService;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import org.springframework.security.web.SecurityFilterChain;

/**
 * An application with the starter, the operator console and Spring Security, securing the
 * console the way docs/spring-boot.md shows: role {@code OPERATOR} for the console's path, form
 * login for browsers and HTTP Basic for scripts, Spring Security's CSRF protection left on. Users:
 * {@code operator} (OPERATOR) and {@code viewer} (no role). With {@code test.console-open=true}
 * the chain lets everyone through instead (a misconfigured application). Records the console's
 * action metrics in {@link #actions}.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
public class ConsoleApp {

  static final String OPERATOR_PASSWORD = "op-" + AbstractOutboxTransactionTest.unique("pw");
  static final String VIEWER_PASSWORD = "view-" + AbstractOutboxTransactionTest.unique("pw");

  /** Every consoleAction reported: "action outcome count". */
  final List<String> actions = new CopyOnWriteArrayList<>();

  @Bean
  @ConditionalOnProperty(name = "test.console-open", havingValue = "false", matchIfMissing = true)
  SecurityFilterChain consoleSecurity(HttpSecurity http) throws Exception {
    http.authorizeHttpRequests(a -> a
            .requestMatchers("/relaykit/console", "/relaykit/console/**").hasRole("OPERATOR")
            .requestMatchers("/error").permitAll()
            .anyRequest().authenticated())
        .formLogin(Customizer.withDefaults())
        .httpBasic(Customizer.withDefaults());
    return http.build();
  }

  @Bean
  @ConditionalOnProperty(name = "test.console-open", havingValue = "true")
  SecurityFilterChain openSecurity(HttpSecurity http) throws Exception {
    http.authorizeHttpRequests(a -> a.anyRequest().permitAll());
    return http.build();
  }

  @Bean
  UserDetailsService users() {
    return new InMemoryUserDetailsManager(
        User.withUsername("operator").password("{noop}" + OPERATOR_PASSWORD).roles("OPERATOR")
            .build(),
        User.withUsername("viewer").password("{noop}" + VIEWER_PASSWORD).roles().build());
  }

  @Bean
  MetricsListener consoleActionRecorder() {
    return new MetricsListener() {
      @Override
      public void consoleAction(String action, String outcome, long count) {
        actions.add(action + " " + outcome + " " + count);
      }
    };
  }
}
