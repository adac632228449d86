package io.relaykit.spring.boot;

import io.relaykit.monitor.MetricsListener;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.core.userdetails.UserDetailsService;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
// tag::console-security[]
import org.springframework.context.annotation.Bean;
import org.springframework.security.config.Customizer;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.web.SecurityFilterChain;
// end::console-security[]

/**
 * An application with the starter, the operator console and Spring Security, securing the
 * console the way docs/spring-boot.md shows: role {@code OPERATOR} for the console's path, form
 * login for browsers and HTTP Basic for scripts, Spring Security's CSRF protection left on. Users:
 * {@code operator} (OPERATOR) and {@code viewer} (no role). Records the console's action metrics
 * in {@link #actions}.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
public class ConsoleApp {

  static final String OPERATOR_PASSWORD = "op-" + AbstractOutboxTransactionTest.unique("pw");
  static final String VIEWER_PASSWORD = "view-" + AbstractOutboxTransactionTest.unique("pw");

  /** Every consoleAction reported: "action outcome count". */
  final List<String> actions = new CopyOnWriteArrayList<>();

  // tag::console-security[]
  @Bean
  SecurityFilterChain consoleSecurity(HttpSecurity http) throws Exception {
    http.authorizeHttpRequests(a -> a
            .requestMatchers("/relaykit/console", "/relaykit/console/**").hasRole("OPERATOR")
            .requestMatchers("/error").permitAll()
            .anyRequest().authenticated())
        .formLogin(Customizer.withDefaults())
        .httpBasic(Customizer.withDefaults());
    return http.build(); // CSRF protection stays on: the console's forms carry the token
  }
  // end::console-security[]

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
