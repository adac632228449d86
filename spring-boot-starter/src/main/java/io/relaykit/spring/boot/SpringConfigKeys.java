package io.relaykit.spring.boot;

import static io.relaykit.config.ConfigKey.Type.BOOLEAN;
import static io.relaykit.config.ConfigKey.Type.STRING;

import io.relaykit.config.ConfigKey;
import io.relaykit.config.ConfigKeys;
import java.util.List;

/**
 * The {@code relaykit.spring.*} keys only the Spring Boot starter reads, registered with {@link
 * java.util.ServiceLoader} so {@link io.relaykit.config.Settings} knows them (a typo under {@code
 * relaykit.spring} fails the start with the nearest key).
 */
public final class SpringConfigKeys implements ConfigKeys {

  /** Whether this application runs an outbox relay; default true. */
  public static final String RELAY_ENABLED = "relaykit.spring.relay.enabled";
  /** Whether {@link RelaykitListener} methods are subscribed; default true. */
  public static final String LISTENERS_ENABLED = "relaykit.spring.listeners.enabled";
  /** The backlog verdicts that make the health indicator OUT_OF_SERVICE. */
  public static final String HEALTH_OUT_OF_SERVICE = "relaykit.spring.health.out-of-service";
  /** Whether the health indicator joins the readiness group; default true. */
  public static final String HEALTH_READINESS = "relaykit.spring.health.readiness";

  /** For ServiceLoader. */
  public SpringConfigKeys() {}

  @Override
  public String module() {
    return "relaykit-spring-boot-starter";
  }

  @Override
  public List<String> namespaces() {
    return List.of("relaykit.spring");
  }

  @Override
  public List<ConfigKey> keys() {
    return List.of(
        ConfigKey.of(RELAY_ENABLED, BOOLEAN, "true",
            "whether this application runs an outbox relay (a SmartLifecycle bean)"),
        ConfigKey.of(LISTENERS_ENABLED, BOOLEAN, "true",
            "whether @RelaykitListener methods are subscribed (a SmartLifecycle bean)"),
        ConfigKey.of(HEALTH_OUT_OF_SERVICE, STRING, "stalled,sustained-growth",
            "the backlog verdicts (comma-separated) that make the relaykit health indicator"
                + " OUT_OF_SERVICE; empty: never"),
        ConfigKey.of(HEALTH_READINESS, BOOLEAN, "true",
            "whether the relaykit health indicator joins the readiness group (never liveness)"));
  }
}
