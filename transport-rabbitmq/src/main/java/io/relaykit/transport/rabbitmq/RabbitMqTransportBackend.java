package io.relaykit.transport.rabbitmq;

import com.google.inject.Module;
import io.relaykit.guice.BackendModuleProvider;
import io.relaykit.guice.RelayKitConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Registers the RabbitMQ transport with relaykit's backend discovery: {@code
 * relaykit.transport=rabbitmq} installs a {@link RabbitMqTransportModule} configured from the
 * {@code relaykit.rabbitmq.*} keys:
 *
 * <table>
 *   <caption>relaykit.rabbitmq.* keys</caption>
 *   <tr><th>key</th><th>default</th></tr>
 *   <tr><td>uri</td><td>{@code RELAYKIT_RABBITMQ_URI} or amqp://guest:guest@127.0.0.1:5672</td></tr>
 *   <tr><td>connection-name</td><td>relaykit</td></tr>
 *   <tr><td>prefetch</td><td>the subscription's maxInFlight</td></tr>
 *   <tr><td>confirm-window</td><td>1024</td></tr>
 *   <tr><td>confirm-timeout</td><td>30s</td></tr>
 *   <tr><td>close-timeout</td><td>30s</td></tr>
 *   <tr><td>max-message-bytes</td><td>16777216</td></tr>
 *   <tr><td>delay-levels</td><td>1s,10s,1m,10m,1h</td></tr>
 *   <tr><td>recovery-interval</td><td>1s</td></tr>
 *   <tr><td>name-prefix</td><td>(none)</td></tr>
 * </table>
 *
 * An unknown key under {@code relaykit.rabbitmq.} is an error naming it, so a typo is not silently
 * ignored.
 */
public final class RabbitMqTransportBackend implements BackendModuleProvider {

  /** Created by {@link java.util.ServiceLoader}; holds no state. */
  public RabbitMqTransportBackend() {}

  /** The configuration section this backend reads. */
  public static final String SECTION = "relaykit.rabbitmq";

  private static final Set<String> KEYS = Set.of("uri", "connection-name", "prefetch",
      "confirm-window", "confirm-timeout", "close-timeout", "max-message-bytes", "delay-levels",
      "recovery-interval", "name-prefix");

  @Override
  public Kind kind() {
    return Kind.TRANSPORT;
  }

  @Override
  public String name() {
    return "rabbitmq";
  }

  @Override
  public Module module(RelayKitConfig config) {
    return new RabbitMqTransportModule(transportConfig(config));
  }

  /**
   * The transport config the {@code relaykit.rabbitmq.*} keys describe.
   *
   * @param config the relaykit configuration
   * @return the validated transport config
   * @throws IllegalArgumentException naming the key and value that are invalid or unknown
   */
  public static RabbitMqTransportConfig transportConfig(RelayKitConfig config) {
    Map<String, String> section = config.section(SECTION);
    for (String key : section.keySet()) {
      if (!KEYS.contains(key) && !KEYS.contains(key.replace('.', '-'))) {
        throw new IllegalArgumentException("unknown key " + SECTION + "." + key
            + "; known keys: " + new java.util.TreeSet<>(KEYS));
      }
    }
    RabbitMqTransportConfig.Builder b = RabbitMqTransportConfig.builder();
    config.get(SECTION + ".uri").ifPresent(b::uri);
    config.get(SECTION + ".connection-name").ifPresent(b::connectionName);
    config.get(SECTION + ".name-prefix").ifPresent(b::namePrefix);
    if (config.get(SECTION + ".prefetch").isPresent()) {
      b.prefetch(config.getInt(SECTION + ".prefetch", 1));
    }
    if (config.get(SECTION + ".confirm-window").isPresent()) {
      b.confirmWindow(config.getInt(SECTION + ".confirm-window", 1));
    }
    if (config.get(SECTION + ".max-message-bytes").isPresent()) {
      b.maxMessageBytes(config.getInt(SECTION + ".max-message-bytes", 1));
    }
    config.get(SECTION + ".confirm-timeout").ifPresent(v ->
        b.confirmTimeout(config.getDuration(SECTION + ".confirm-timeout", null)));
    config.get(SECTION + ".close-timeout").ifPresent(v ->
        b.closeTimeout(config.getDuration(SECTION + ".close-timeout", null)));
    config.get(SECTION + ".recovery-interval").ifPresent(v ->
        b.recoveryInterval(config.getDuration(SECTION + ".recovery-interval", null)));
    config.get(SECTION + ".delay-levels").ifPresent(v -> b.delayLevels(levels(v)));
    try {
      return b.build();
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(SECTION + ": " + e.getMessage(), e);
    }
  }

  private static List<Duration> levels(String value) {
    String key = SECTION + ".delay-levels";
    List<Duration> out = new ArrayList<>();
    for (String part : value.split(",")) {
      // RelayKitConfig's duration syntax (500ms, 30s, 5m, PT1H), with its error messages.
      out.add(RelayKitConfig.builder().set(key, part.trim()).build().getDuration(key, null));
    }
    return out;
  }
}
