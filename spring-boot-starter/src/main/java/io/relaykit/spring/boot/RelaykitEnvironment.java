package io.relaykit.spring.boot;

import io.relaykit.config.ConfigRegistry;
import io.relaykit.config.CoreKeys;
import io.relaykit.config.IdempotencySettings;
import io.relaykit.config.Settings;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.Environment;
import org.springframework.core.env.PropertySource;
import org.springframework.core.env.StandardEnvironment;

/**
 * Reads relaykit's {@link Settings} from a Spring {@link Environment}: every {@code relaykit.*}
 * property of every property source (application.properties or YAML, {@code RELAYKIT_*}
 * variables through Spring's relaxed binding, test properties) is handed to core's Settings, so
 * the keys, defaults, syntax and validation are core's and every adapter's, and an undeclared
 * {@code relaykit.*} key fails the start with the nearest declared one. Lists are written as
 * comma-separated values ({@code relaykit.rabbitmq.delay-levels=1s,10s}).
 *
 * <p>Spring Boot's own connection settings are reused where relaykit's are not set: with {@code
 * relaykit.transport=kafka}, {@code spring.kafka.bootstrap-servers} for {@code
 * relaykit.kafka.bootstrap-servers}; with {@code relaykit.transport=rabbitmq}, {@code
 * spring.rabbitmq.addresses} (its first address) or {@code spring.rabbitmq.host}, {@code port},
 * {@code username}, {@code password}, {@code virtual-host} and {@code ssl.enabled} for {@code
 * relaykit.rabbitmq.uri}; with {@code relaykit.idempotency.fast-tier=redis}, {@code
 * spring.data.redis.url}, or {@code spring.data.redis.host}, {@code port}, {@code username},
 * {@code password}, {@code database} and {@code ssl.enabled}, for {@code relaykit.redis.uri}. A
 * {@code relaykit.*} value always wins.
 *
 * <p>{@code relaykit.storage=redis} is refused (Redis holds no outbox, and the outbox must commit
 * with the business rows), and so is {@code relaykit.idempotency.fast-tier=redis} on any storage
 * but {@code jdbc} (or its aliases {@code h2}, {@code postgres}): the database's unique key is the
 * final guard behind Redis.
 *
 * <p>As in core ({@link Settings.Builder#systemProperties}, {@link Settings.Builder#environment}),
 * an undeclared {@code relaykit.*} key that only JVM system properties or environment variables
 * carry is logged (WARNING) and ignored rather than rejected: those namespaces hold entries for
 * other tools ({@code RELAYKIT_DEMO_SPANS}), and a tool's knob must not fail the application's
 * start. The same key in application.properties, YAML or any other property source is rejected.
 */
final class RelaykitEnvironment {

  /** The transports the starter wires. */
  static final List<String> TRANSPORTS = List.of("memory", "kafka", "rabbitmq");
  /**
   * The storage backends the starter wires: {@code jdbc} (the application's DataSource), with
   * {@code h2} and {@code postgres} accepted as its aliases.
   */
  static final List<String> STORAGES = List.of("memory", "jdbc", "h2", "postgres");
  /** The values of {@code relaykit.storage} that select the JDBC storage. */
  static final List<String> JDBC_STORAGES = List.of("jdbc", "h2", "postgres");
  /** The idempotency fast tiers the starter wires ({@code none}: no fast tier). */
  static final List<String> FAST_TIERS = List.of(IdempotencySettings.NONE, "redis");

  static final String KAFKA_BOOTSTRAP = "relaykit.kafka.bootstrap-servers";
  static final String RABBITMQ_URI = "relaykit.rabbitmq.uri";
  /** Why {@code relaykit.storage=redis} fails the start, and what to set instead. */
  static final String REDIS_STORAGE_REFUSED = CoreKeys.STORAGE + "=redis is not wired by the"
      + " Spring Boot starter: the outbox must commit in the transaction of your business rows,"
      + " and Redis holds no outbox; set " + CoreKeys.STORAGE + "=jdbc (the application's"
      + " DataSource, H2 or PostgreSQL) and " + CoreKeys.IDEMPOTENCY_FAST_TIER + "=redis for"
      + " Redis as the idempotency fast path in front of the database's unique key";
  /** relaykit-redis's key (RedisConfigKeys.URI), named here so the starter loads without it. */
  static final String REDIS_URI = "relaykit.redis.uri";
  static final String SHUTDOWN_PHASE_TIMEOUT = "spring.lifecycle.timeout-per-shutdown-phase";

  /** Property sources whose undeclared relaykit.* keys are warned about, not rejected. */
  private static final Set<String> LENIENT_SOURCES = Set.of(
      StandardEnvironment.SYSTEM_PROPERTIES_PROPERTY_SOURCE_NAME,
      StandardEnvironment.SYSTEM_ENVIRONMENT_PROPERTY_SOURCE_NAME,
      // Boot's view over every other source, which would count the lenient ones again.
      "configurationProperties");

  private static final System.Logger LOG = System.getLogger(RelaykitEnvironment.class.getName());

  private RelaykitEnvironment() {}

  /**
   * The settings of {@code env}.
   *
   * @param env the application's environment
   * @return the validated settings
   * @throws IllegalArgumentException naming the key of an invalid or undeclared value, a
   *     storage, transport or idempotency fast tier the starter does not wire (listing those it
   *     does; {@code relaykit.storage=redis} saying what to set instead), or {@code
   *     relaykit.idempotency.fast-tier=redis} on a storage other than {@code jdbc}
   */
  static Settings settings(Environment env) {
    Binder binder = Binder.get(env);
    Map<String, String> values = new TreeMap<>();
    binder.bind("relaykit", Bindable.mapOf(String.class, String.class))
        .ifBound(m -> m.forEach((k, v) -> values.put("relaykit." + k, v)));
    dropUndeclaredLenientKeys(env, values);
    Settings s = Settings.builder().values(values).build();
    String storage = s.getName(CoreKeys.STORAGE, "memory");
    checkStorage(storage);
    String fastTier = s.getName(CoreKeys.IDEMPOTENCY_FAST_TIER, IdempotencySettings.NONE);
    if (!FAST_TIERS.contains(fastTier)) {
      throw new IllegalArgumentException(CoreKeys.IDEMPOTENCY_FAST_TIER + "=" + fastTier
          + " is not wired by the Spring Boot starter; use one of " + FAST_TIERS);
    }
    if (fastTier.equals("redis") && !JDBC_STORAGES.contains(storage)) {
      throw new IllegalArgumentException(CoreKeys.IDEMPOTENCY_FAST_TIER + "=redis puts Redis in"
          + " front of the storage's idempotency store, which stays the final guard; with "
          + CoreKeys.STORAGE + "=" + storage + " that guard is this JVM's memory, so instances"
          + " would not see each other's keys: set " + CoreKeys.STORAGE + "=jdbc (the"
          + " application's DataSource)");
    }
    if (fastTier.equals("redis") && !s.isSet(REDIS_URI)
        && ConfigRegistry.discover().find(REDIS_URI).isPresent()) {
      Optional<String> uri = springRedisUri(binder);
      if (uri.isPresent()) {
        s = s.with(REDIS_URI, uri.get());
      }
    }
    String transport = s.getName(CoreKeys.TRANSPORT, "memory");
    checkTransport(transport);
    if (transport.equals("kafka") && !s.isSet(KAFKA_BOOTSTRAP)) {
      Optional<String> servers = binder.bind("spring.kafka.bootstrap-servers",
          Bindable.listOf(String.class)).map(l -> String.join(",", l)).map(Optional::of)
          .orElse(Optional.empty());
      if (servers.isPresent()) {
        s = s.with(KAFKA_BOOTSTRAP, servers.get());
      }
    }
    if (transport.equals("rabbitmq") && !s.isSet(RABBITMQ_URI)) {
      Optional<String> uri = springRabbitUri(binder);
      if (uri.isPresent()) {
        s = s.with(RABBITMQ_URI, uri.get());
      }
    }
    return s;
  }

  /**
   * Checks only {@code relaykit.storage} and {@code relaykit.transport} of {@code env}, the two
   * properties the starter's conditions choose beans by: for an application that defines its own
   * {@link Settings} bean (whose other keys the starter then does not validate).
   *
   * @param env the application's environment
   * @throws IllegalArgumentException naming the property, the value and the allowed values
   */
  static void checkBackends(Environment env) {
    Binder binder = Binder.get(env);
    Map<String, String> values = new TreeMap<>();
    for (String key : List.of(CoreKeys.STORAGE, CoreKeys.TRANSPORT)) {
      binder.bind(key, String.class).ifBound(v -> values.put(key, v));
    }
    Settings s = Settings.builder().values(values).build();
    checkStorage(s.getName(CoreKeys.STORAGE, "memory"));
    checkTransport(s.getName(CoreKeys.TRANSPORT, "memory"));
  }

  private static void checkStorage(String storage) {
    if (storage.equals("redis")) {
      throw new IllegalArgumentException(REDIS_STORAGE_REFUSED);
    }
    if (!STORAGES.contains(storage)) {
      throw new IllegalArgumentException(CoreKeys.STORAGE + "=" + storage + " is not wired by the"
          + " Spring Boot starter; use one of " + STORAGES);
    }
  }

  private static void checkTransport(String transport) {
    if (!TRANSPORTS.contains(transport)) {
      throw new IllegalArgumentException(CoreKeys.TRANSPORT + "=" + transport + " is not wired by"
          + " the Spring Boot starter; use one of " + TRANSPORTS);
    }
  }

  /**
   * Removes from {@code values} the undeclared keys that no strict property source carries (only
   * system properties or environment variables do), logging them once.
   */
  private static void dropUndeclaredLenientKeys(Environment env, Map<String, String> values) {
    if (!(env instanceof ConfigurableEnvironment configurable) || values.isEmpty()) {
      return;
    }
    ConfigRegistry registry = ConfigRegistry.discover();
    List<String> undeclared = values.keySet().stream()
        .filter(k -> registry.find(k).isEmpty() && registry.replacementOf(k).isEmpty()).toList();
    if (undeclared.isEmpty()) {
      return;
    }
    List<PropertySource<?>> strict = new ArrayList<>();
    configurable.getPropertySources().forEach(ps -> {
      if (!LENIENT_SOURCES.contains(ps.getName())) {
        strict.add(ps);
      }
    });
    Set<String> strictKeys = new TreeSet<>();
    new Binder(ConfigurationPropertySources.from(strict))
        .bind("relaykit", Bindable.mapOf(String.class, String.class))
        .ifBound(m -> m.keySet().forEach(k -> strictKeys.add("relaykit." + k)));
    List<String> ignored = undeclared.stream().filter(k -> !strictKeys.contains(k)).toList();
    if (!ignored.isEmpty()) {
      ignored.forEach(values::remove);
      LOG.log(System.Logger.Level.WARNING, "ignoring system properties or environment variables"
          + " that name no relaykit setting on the class path: " + ignored);
    }
  }

  /** {@code spring.lifecycle.timeout-per-shutdown-phase}, Spring's default 30 s when unset. */
  static Duration shutdownPhaseTimeout(Environment env) {
    return Binder.get(env).bind(SHUTDOWN_PHASE_TIMEOUT, Duration.class)
        .orElse(Duration.ofSeconds(30));
  }

  /** The AMQP URI Spring Boot's {@code spring.rabbitmq.*} describe, if any of them is set. */
  static Optional<String> springRabbitUri(Binder binder) {
    Optional<String> addresses = binder.bind("spring.rabbitmq.addresses",
        Bindable.listOf(String.class)).map(l -> l.isEmpty() ? null : l.get(0).strip())
        .map(Optional::of).orElse(Optional.empty());
    Optional<String> host = string(binder, "spring.rabbitmq.host");
    Optional<String> port = string(binder, "spring.rabbitmq.port");
    Optional<String> user = string(binder, "spring.rabbitmq.username");
    Optional<String> password = string(binder, "spring.rabbitmq.password");
    Optional<String> vhost = string(binder, "spring.rabbitmq.virtual-host");
    boolean ssl = binder.bind("spring.rabbitmq.ssl.enabled", Boolean.class).orElse(false);
    if (addresses.isPresent() && addresses.get().contains("://")) {
      return addresses;
    }
    if (addresses.isEmpty() && host.isEmpty() && port.isEmpty() && user.isEmpty()
        && password.isEmpty() && vhost.isEmpty()) {
      return Optional.empty();
    }
    String hostPort = addresses.orElse(host.orElse("localhost") + ":"
        + port.orElse(ssl ? "5671" : "5672"));
    StringBuilder uri = new StringBuilder(ssl ? "amqps://" : "amqp://")
        .append(encode(user.orElse("guest"))).append(':').append(encode(password.orElse("guest")))
        .append('@').append(hostPort);
    if (vhost.isPresent() && !vhost.get().equals("/")) {
      uri.append('/').append(encode(vhost.get()));
    }
    return Optional.of(uri.toString());
  }

  /**
   * The Redis URI Spring Boot's {@code spring.data.redis.*} describe, if any of them is set: {@code
   * url} as it is (Boot's {@code url} overrides host, port, username, password and database;
   * {@code ssl.enabled=true} turns {@code redis://} into {@code rediss://}), else {@code host}
   * (default localhost), {@code port} (6379), {@code username}, {@code password}, {@code database}
   * and {@code ssl.enabled}.
   */
  static Optional<String> springRedisUri(Binder binder) {
    Optional<String> url = string(binder, "spring.data.redis.url").filter(u -> !u.isEmpty());
    Optional<String> host = string(binder, "spring.data.redis.host");
    Optional<String> port = string(binder, "spring.data.redis.port");
    Optional<String> user = string(binder, "spring.data.redis.username");
    Optional<String> password = string(binder, "spring.data.redis.password");
    Optional<String> database = string(binder, "spring.data.redis.database");
    boolean ssl = binder.bind("spring.data.redis.ssl.enabled", Boolean.class).orElse(false);
    if (url.isPresent()) {
      String u = url.get();
      return Optional.of(ssl && u.startsWith("redis://") ? "rediss://" + u.substring(8) : u);
    }
    if (host.isEmpty() && port.isEmpty() && user.isEmpty() && password.isEmpty()
        && database.isEmpty()) {
      return Optional.empty();
    }
    StringBuilder uri = new StringBuilder(ssl ? "rediss://" : "redis://");
    if (user.isPresent() || password.isPresent()) {
      uri.append(encode(user.orElse(""))).append(':').append(encode(password.orElse("")))
          .append('@');
    }
    uri.append(host.orElse("localhost")).append(':').append(port.orElse("6379"));
    if (database.isPresent() && !database.get().equals("0")) {
      uri.append('/').append(encode(database.get()));
    }
    return Optional.of(uri.toString());
  }

  private static Optional<String> string(Binder binder, String name) {
    return binder.bind(name, String.class).map(String::strip).map(Optional::of)
        .orElse(Optional.empty());
  }

  private static String encode(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
  }

  /**
   * The OpenTelemetry {@code messaging.system} of a {@code relaykit.transport} value, as {@code
   * Publisher.messagingSystem()} of that transport names it; another value (the starter refuses
   * it at start) is passed on as it is.
   */
  static String messagingSystem(String transport) {
    return switch (transport) {
      case "memory" -> "relaykit-inprocess";
      case "kafka", "rabbitmq" -> transport;
      default -> transport.isBlank() ? "unknown" : transport;
    };
  }
}
