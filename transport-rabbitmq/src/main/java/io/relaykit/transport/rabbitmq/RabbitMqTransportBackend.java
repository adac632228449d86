package io.relaykit.transport.rabbitmq;

import com.google.inject.Module;
import io.relaykit.guice.BackendModuleProvider;
import io.relaykit.guice.RelayKitConfig;

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
 * The keys are declared by {@link RabbitMqConfigKeys} and read by {@link
 * RabbitMqTransportConfig#from(io.relaykit.config.Settings)}: an unknown key under {@code
 * relaykit.rabbitmq.} fails when the settings are built, naming the nearest known key.
 */
public final class RabbitMqTransportBackend implements BackendModuleProvider {

  /** Created by {@link java.util.ServiceLoader}; holds no state. */
  public RabbitMqTransportBackend() {}

  /** The configuration section this backend reads. */
  public static final String SECTION = "relaykit.rabbitmq";

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
    return RabbitMqTransportConfig.from(config.settings());
  }
}
