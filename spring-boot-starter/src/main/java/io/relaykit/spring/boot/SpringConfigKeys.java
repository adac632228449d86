package io.relaykit.spring.boot;

import static io.relaykit.config.ConfigKey.Type.BOOLEAN;
import static io.relaykit.config.ConfigKey.Type.DURATION;
import static io.relaykit.config.ConfigKey.Type.INTEGER;
import static io.relaykit.config.ConfigKey.Type.STRING;

import io.relaykit.config.ConfigKey;
import io.relaykit.config.ConfigKeys;
import java.util.List;

/**
 * The {@code relaykit.spring.*} and {@code relaykit.console.*} keys only the Spring Boot starter
 * reads, registered with {@link java.util.ServiceLoader} so {@link io.relaykit.config.Settings}
 * knows them (a typo under {@code relaykit.spring} or {@code relaykit.console} fails the start
 * with the nearest key).
 */
public final class SpringConfigKeys implements ConfigKeys {

  /** Whether this application runs an outbox relay; default true. */
  public static final String RELAY_ENABLED = "relaykit.spring.relay.enabled";
  /** Whether {@link RelaykitListener} methods are subscribed; default true. */
  public static final String LISTENERS_ENABLED = "relaykit.spring.listeners.enabled";
  /** The backlog verdicts that make the health indicator OUT_OF_SERVICE. */
  public static final String HEALTH_OUT_OF_SERVICE = "relaykit.spring.health.out-of-service";
  /** The backlog verdicts that make the health indicator DOWN; default none. */
  public static final String HEALTH_DOWN = "relaykit.spring.health.down";
  /** Whether the health indicator joins the readiness group; default true. */
  public static final String HEALTH_READINESS = "relaykit.spring.health.readiness";
  /** The shortest time between two backlog samples the health indicator takes; default 5s. */
  public static final String HEALTH_SAMPLE_INTERVAL = "relaykit.spring.health.sample-interval";
  /** How far back the health indicator's backlog samples count; default 5m. */
  public static final String HEALTH_WINDOW = "relaykit.spring.health.window";
  /** The fewest samples in the window for a verdict other than healthy; default 5. */
  public static final String HEALTH_MIN_SAMPLES = "relaykit.spring.health.min-samples";
  /** The depth trend, in messages per second, that counts as growth; default 1.0. */
  public static final String HEALTH_GROWTH_PER_SECOND =
      "relaykit.spring.health.growth-per-second";
  /** The oldest unsent age from which a backlog that does not move is stalled; default 1m. */
  public static final String HEALTH_STALL_AGE = "relaykit.spring.health.stall-age";
  /** The largest page the dead-letter endpoint lists; default 100. */
  public static final String DEAD_LETTERS_MAX_LIMIT = "relaykit.spring.dead-letters.max-limit";

  /** Whether the Idempotency-Key filter runs (Spring MVC servlet applications); default false. */
  public static final String IDEMPOTENCY_ENABLED = "relaykit.spring.idempotency.enabled";
  /** The path patterns (comma-separated) the Idempotency-Key filter applies to. */
  public static final String IDEMPOTENCY_PATHS = "relaykit.spring.idempotency.paths";
  /** The request methods (comma-separated) the Idempotency-Key filter applies to. */
  public static final String IDEMPOTENCY_METHODS = "relaykit.spring.idempotency.methods";
  /** The request header holding the key. */
  public static final String IDEMPOTENCY_HEADER = "relaykit.spring.idempotency.header";
  /** How long a request owns its key before a repeat may take it over. */
  public static final String IDEMPOTENCY_LEASE = "relaykit.spring.idempotency.lease";
  /** The longest key accepted, in characters. */
  public static final String IDEMPOTENCY_MAX_KEY_LENGTH =
      "relaykit.spring.idempotency.max-key-length";
  /** The largest request body accepted on a filtered request, in bytes (larger: 413). */
  public static final String IDEMPOTENCY_MAX_REQUEST_SIZE =
      "relaykit.spring.idempotency.max-request-size";
  /** The largest stored answer, in bytes (larger: kept without its body). */
  public static final String IDEMPOTENCY_MAX_ANSWER_SIZE =
      "relaykit.spring.idempotency.max-answer-size";
  /** The most answers the in-memory answer store keeps. */
  public static final String IDEMPOTENCY_MAX_ANSWERS = "relaykit.spring.idempotency.max-answers";

  /** Whether the operator console is served; default false. */
  public static final String CONSOLE_ENABLED = "relaykit.console.enabled";
  /** The path the operator console is served under; default {@value #CONSOLE_DEFAULT_PATH}. */
  public static final String CONSOLE_PATH = "relaykit.console.path";
  /** The console's path when {@link #CONSOLE_PATH} is not set. */
  public static final String CONSOLE_DEFAULT_PATH = "/relaykit/console";
  /** Whether the console shows dead letters' payloads (escaped, cut); default false. */
  public static final String CONSOLE_SHOW_PAYLOADS = "relaykit.console.show-payloads";
  /** The most bytes of a payload the console shows; default 16384. */
  public static final String CONSOLE_PAYLOAD_MAX_BYTES = "relaykit.console.payload-max-bytes";
  /** Whether the console refuses every action (replay, purge); default false. */
  public static final String CONSOLE_READ_ONLY = "relaykit.console.read-only";
  /** How often the console samples the backlog, lag and dead letters for its history. */
  public static final String CONSOLE_SAMPLE_INTERVAL = "relaykit.console.sample-interval";

  /** For ServiceLoader. */
  public SpringConfigKeys() {}

  @Override
  public String module() {
    return "relaykit-spring-boot-starter";
  }

  @Override
  public List<String> namespaces() {
    return List.of("relaykit.spring", "relaykit.console");
  }

  @Override
  public List<ConfigKey> keys() {
    return List.of(
        ConfigKey.of(RELAY_ENABLED, BOOLEAN, "true",
            "whether this application runs an outbox relay (a SmartLifecycle bean)"),
        ConfigKey.of(LISTENERS_ENABLED, BOOLEAN, "true",
            "whether @RelaykitListener methods are subscribed (a SmartLifecycle bean)"),
        ConfigKey.of(HEALTH_OUT_OF_SERVICE, STRING, "stalled,sustained-growth,over-bound",
            "the backlog verdicts (comma-separated) that make the relaykit health indicator"
                + " OUT_OF_SERVICE; empty: never"),
        ConfigKey.of(HEALTH_DOWN, STRING, "",
            "the backlog verdicts (comma-separated) that make the relaykit health indicator"
                + " DOWN; empty: never"),
        ConfigKey.of(HEALTH_READINESS, BOOLEAN, "true",
            "whether the relaykit health indicator joins the readiness group (never liveness)"
                + " when management.endpoint.health.group.readiness.include is not set"),
        ConfigKey.of(HEALTH_SAMPLE_INTERVAL, DURATION, "5s",
            "the shortest time between two outbox backlog samples taken by health checks"),
        ConfigKey.of(HEALTH_WINDOW, DURATION, "5m",
            "how far back the health indicator's backlog samples count"),
        ConfigKey.of(HEALTH_MIN_SAMPLES, INTEGER, "5",
            "the fewest samples in the window for a verdict other than healthy (at least 3)"),
        ConfigKey.of(HEALTH_GROWTH_PER_SECOND, STRING, "1.0",
            "the outbox depth trend, in messages per second, that counts as sustained growth"),
        ConfigKey.of(HEALTH_STALL_AGE, DURATION, "1m",
            "the oldest unsent age from which an outbox backlog that does not move is stalled"),
        ConfigKey.of(DEAD_LETTERS_MAX_LIMIT, INTEGER, "100",
            "the largest page the relaykitdeadletters actuator endpoint lists"),
        ConfigKey.of(IDEMPOTENCY_ENABLED, BOOLEAN, "false",
            "whether the Idempotency-Key filter runs (Spring MVC servlet applications)"),
        ConfigKey.of(IDEMPOTENCY_PATHS, STRING, "/**",
            "the path patterns (comma-separated, Spring PathPattern syntax, without the context"
                + " path) the Idempotency-Key filter applies to"),
        ConfigKey.of(IDEMPOTENCY_METHODS, STRING, "POST,PATCH",
            "the request methods (comma-separated) the Idempotency-Key filter applies to"),
        ConfigKey.of(IDEMPOTENCY_HEADER, STRING, "Idempotency-Key",
            "the request header holding the idempotency key"),
        ConfigKey.of(IDEMPOTENCY_LEASE, DURATION, "30s",
            "how long a request owns its key before a repeat may take it over (longer than the"
                + " slowest request)"),
        ConfigKey.of(IDEMPOTENCY_MAX_KEY_LENGTH, INTEGER, "255",
            "the longest idempotency key accepted, in characters (longer: 400)"),
        ConfigKey.of(IDEMPOTENCY_MAX_REQUEST_SIZE, INTEGER, "1048576",
            "the largest request body accepted on a filtered request, in bytes (larger: 413,"
                + " nothing runs)"),
        ConfigKey.of(IDEMPOTENCY_MAX_ANSWER_SIZE, INTEGER, "65536",
            "the largest answer kept for replay, in bytes (larger: sent once, kept without its"
                + " body; a repeat gets 410)"),
        ConfigKey.of(IDEMPOTENCY_MAX_ANSWERS, INTEGER, "100000",
            "the most answers the in-memory answer store keeps (relaykit.storage=memory)"),
        ConfigKey.of(CONSOLE_ENABLED, BOOLEAN, "false",
            "whether the operator console is served (a Spring MVC servlet application with"
                + " Spring Security, which must protect the console's path)"),
        ConfigKey.of(CONSOLE_PATH, STRING, CONSOLE_DEFAULT_PATH,
            "the path the operator console is served under (segments of letters, digits, '.',"
                + " '_', '~' and '-'; not the root)"),
        ConfigKey.of(CONSOLE_SHOW_PAYLOADS, BOOLEAN, "false",
            "whether the console shows dead letters' payloads (escaped, cut at"
                + " relaykit.console.payload-max-bytes)"),
        ConfigKey.of(CONSOLE_PAYLOAD_MAX_BYTES, INTEGER, "16384",
            "the most bytes of a payload the console shows (1..1000000)"),
        ConfigKey.of(CONSOLE_READ_ONLY, BOOLEAN, "false",
            "whether the console refuses every action (replay, purge) and only shows"),
        ConfigKey.of(CONSOLE_SAMPLE_INTERVAL, DURATION, "10s",
            "how often the console samples the outbox backlog, lag and dead letters for its"
                + " hour of history (1s..5m)"));
  }
}
