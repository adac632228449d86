package io.relaykit.spring.boot;

import io.relaykit.config.IdempotencySettings;
import io.relaykit.config.Settings;
import io.relaykit.idempotency.IdempotencyKeyProtocol;
import io.relaykit.idempotency.IdempotencyStore;
import io.relaykit.idempotency.IdempotentAnswerStore;
import io.relaykit.idempotency.InMemoryIdempotentAnswerStore;
import io.relaykit.storage.jdbc.JdbcStorage;
import java.time.InstantSource;
import java.util.Arrays;
import java.util.List;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The {@code Idempotency-Key} filter ({@link RelaykitIdempotencyFilter}) in a Spring MVC servlet
 * application, when {@code relaykit.spring.idempotency.enabled=true}; the other {@code
 * relaykit.spring.idempotency.*} keys set its paths, methods, header, lease and bounds. Keys are
 * claimed in the application's {@link IdempotencyStore} (the database's with {@code
 * relaykit.storage=h2}, under the namespace {@code http:}); answers are kept in the database next
 * to relaykit's tables with a DataSource-backed storage, else in memory (bounded by {@code
 * relaykit.spring.idempotency.max-answers}), for the idempotency retention. Each bean backs off
 * when the application defines its own.
 */
@AutoConfiguration(after = RelaykitAutoConfiguration.class)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@ConditionalOnClass(name = {"org.springframework.web.servlet.DispatcherServlet",
    "org.springframework.web.util.ContentCachingResponseWrapper",
    "jakarta.servlet.Filter"})
@ConditionalOnProperty(name = SpringConfigKeys.IDEMPOTENCY_ENABLED, havingValue = "true")
public class RelaykitWebAutoConfiguration {

  /** Created by Spring. */
  public RelaykitWebAutoConfiguration() {
  }

  /**
   * Answers in memory: the storage is not a database (or relaykit-jdbc is absent).
   *
   * @param settings the settings
   * @return the answer store
   */
  @Bean
  @ConditionalOnMissingBean
  public IdempotentAnswerStore relaykitIdempotentAnswerStore(Settings settings) {
    return new InMemoryIdempotentAnswerStore(InstantSource.system(),
        IdempotencySettings.from(settings).retention(),
        settings.getInt(SpringConfigKeys.IDEMPOTENCY_MAX_ANSWERS, 100_000));
  }

  /**
   * The protocol over the application's idempotency store and the answer store.
   *
   * @param store the idempotency store
   * @param answers the answer store
   * @param settings the settings
   * @return the protocol
   */
  @Bean
  @ConditionalOnMissingBean
  public IdempotencyKeyProtocol relaykitIdempotencyKeyProtocol(IdempotencyStore store,
      IdempotentAnswerStore answers, Settings settings) {
    String header = settings.getString(SpringConfigKeys.IDEMPOTENCY_HEADER,
        IdempotencyKeyProtocol.HEADER).strip();
    if (header.isEmpty()) {
      throw new IllegalArgumentException(SpringConfigKeys.IDEMPOTENCY_HEADER
          + " must name a request header, was blank");
    }
    int maxKeyLength = settings.getInt(SpringConfigKeys.IDEMPOTENCY_MAX_KEY_LENGTH,
        IdempotencyKeyProtocol.DEFAULT_MAX_KEY_LENGTH);
    if (IdempotencyKeyProtocol.DEFAULT_NAMESPACE.length() + maxKeyLength
        + RelaykitIdempotencyFilter.SCOPE_LENGTH > IdempotencyStore.MAX_KEY_LENGTH) {
      throw new IllegalArgumentException(SpringConfigKeys.IDEMPOTENCY_MAX_KEY_LENGTH + "="
          + maxKeyLength + " is too long: with the namespace and the per-user scope a key must"
          + " fit the store's " + IdempotencyStore.MAX_KEY_LENGTH + " characters; at most "
          + (IdempotencyStore.MAX_KEY_LENGTH - IdempotencyKeyProtocol.DEFAULT_NAMESPACE.length()
              - RelaykitIdempotencyFilter.SCOPE_LENGTH));
    }
    IdempotencyKeyProtocol.Builder b = IdempotencyKeyProtocol.builder(store, answers)
        .header(header)
        .lease(settings.getDuration(SpringConfigKeys.IDEMPOTENCY_LEASE,
            IdempotencyKeyProtocol.DEFAULT_LEASE))
        .maxKeyLength(maxKeyLength)
        .maxAnswerBytes(settings.getInt(SpringConfigKeys.IDEMPOTENCY_MAX_ANSWER_SIZE,
            IdempotencyKeyProtocol.DEFAULT_MAX_ANSWER_BYTES));
    try {
      return b.build();
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(SpringConfigKeys.IDEMPOTENCY_MAX_KEY_LENGTH + "="
          + maxKeyLength + " is too long: " + e.getMessage(), e);
    }
  }

  /**
   * The filter, registered by Spring Boot for every request (it skips the paths and methods not
   * configured, and the Actuator's endpoints: {@code management.endpoints.web.base-path}, default
   * {@code /actuator}, and below, unless the Actuator runs on its own {@code
   * management.server.port} or at the root).
   *
   * @param protocol the protocol
   * @param settings the settings
   * @param environment the environment (the {@code management.*} properties)
   * @return the filter
   */
  @Bean
  @ConditionalOnMissingBean
  public RelaykitIdempotencyFilter relaykitIdempotencyFilter(IdempotencyKeyProtocol protocol,
      Settings settings, org.springframework.core.env.Environment environment) {
    List<String> paths = list(settings, SpringConfigKeys.IDEMPOTENCY_PATHS, "/**");
    List<String> methods = list(settings, SpringConfigKeys.IDEMPOTENCY_METHODS, "POST,PATCH");
    try {
      RelaykitIdempotencyFilter.parse(paths);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(SpringConfigKeys.IDEMPOTENCY_PATHS + ": "
          + e.getMessage(), e);
    }
    return new RelaykitIdempotencyFilter(protocol, paths, managementExclusions(environment),
        methods, settings.getInt(SpringConfigKeys.IDEMPOTENCY_MAX_REQUEST_SIZE, 1 << 20));
  }

  /** Answers in the database, next to relaykit-jdbc's tables ({@code relaykit.storage=h2}). */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "io.relaykit.storage.jdbc.JdbcStorage")
  @ConditionalOnBean(type = "io.relaykit.storage.jdbc.JdbcStorage")
  static class JdbcAnswers {

    @Bean
    @ConditionalOnMissingBean
    IdempotentAnswerStore relaykitJdbcIdempotentAnswerStore(JdbcStorage storage) {
      return new JdbcIdempotentAnswerStore(storage);
    }
  }

  /** The Actuator's base path and below, when it shares the application's server. */
  static List<String> managementExclusions(org.springframework.core.env.Environment env) {
    String port = env.getProperty("management.server.port");
    if (port != null && !port.isBlank() && !port.strip().equals(env.getProperty("server.port",
        "8080").strip())) {
      return List.of();
    }
    String base = env.getProperty("management.endpoints.web.base-path", "/actuator").strip();
    while (base.endsWith("/")) {
      base = base.substring(0, base.length() - 1);
    }
    if (base.isEmpty()) {
      return List.of();
    }
    return List.of((base.startsWith("/") ? base : "/" + base) + "/**");
  }

  /** The comma-separated values of {@code key}; blank (no value at all) fails naming it. */
  private static List<String> list(Settings settings, String key, String defaultValue) {
    String csv = settings.getString(key, defaultValue);
    List<String> values = Arrays.stream(csv.split(",")).map(String::strip)
        .filter(s -> !s.isEmpty()).toList();
    if (values.isEmpty()) {
      throw new IllegalArgumentException(key + " must list at least one value"
          + " (comma-separated), was '" + csv + "'");
    }
    return values;
  }
}
