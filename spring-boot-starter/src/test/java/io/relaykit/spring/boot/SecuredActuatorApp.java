package io.relaykit.spring.boot;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.health.actuate.endpoint.HealthEndpoint;
import org.springframework.boot.security.autoconfigure.actuate.web.servlet.EndpointRequest;
import org.springframework.context.annotation.Bean;
import org.springframework.security.config.Customizer;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.core.userdetails.UserDetailsService;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import org.springframework.security.web.SecurityFilterChain;

/**
 * An application with the starter, Actuator and Spring Security, securing the Actuator the way
 * the starter's README shows: health open, the dead-letter endpoint for role {@code OPERATOR}
 * over HTTP Basic, CSRF ignored for it (a script has no CSRF token), every other endpoint for any
 * authenticated user. Users: {@code operator} (OPERATOR) and {@code viewer} (no role). With
 * {@code test.actuator-chain=false}, neither the chain nor the users: Boot's default chain.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
public class SecuredActuatorApp {

  static final String OPERATOR_PASSWORD = "op-" + AbstractOutboxTransactionTest.unique("pw");
  static final String VIEWER_PASSWORD = "view-" + AbstractOutboxTransactionTest.unique("pw");

  @Bean
  @ConditionalOnProperty(name = "test.actuator-chain", havingValue = "true", matchIfMissing = true)
  SecurityFilterChain actuatorSecurity(HttpSecurity http) throws Exception {
    http.securityMatcher(EndpointRequest.toAnyEndpoint())
        .authorizeHttpRequests(a -> a
            .requestMatchers(EndpointRequest.to(HealthEndpoint.class)).permitAll()
            .requestMatchers(EndpointRequest.to(RelaykitDeadLettersEndpoint.ID))
            .hasRole("OPERATOR")
            .anyRequest().authenticated())
        .httpBasic(Customizer.withDefaults())
        .csrf(c -> c.ignoringRequestMatchers(
            EndpointRequest.to(RelaykitDeadLettersEndpoint.ID)));
    return http.build();
  }

  @Bean
  @ConditionalOnProperty(name = "test.actuator-chain", havingValue = "true", matchIfMissing = true)
  UserDetailsService users() {
    return new InMemoryUserDetailsManager(
        User.withUsername("operator").password("{noop}" + OPERATOR_PASSWORD).roles("OPERATOR")
            .build(),
        User.withUsername("viewer").password("{noop}" + VIEWER_PASSWORD).roles().build());
  }
}
