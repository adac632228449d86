package io.relaykit.transport.rabbitmq;

import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import java.io.IOException;
import java.net.URISyntaxException;
import java.security.GeneralSecurityException;
import java.util.concurrent.TimeoutException;

/** Opens broker connections from a config, with errors that say which broker and how to start it. */
final class Connections {
  private Connections() {}

  /**
   * A new connection named {@code <connectionName>-<role>}.
   *
   * @param automaticRecovery whether amqp-client reconnects and restores channels, QoS and
   *     consumers by itself after a connection loss
   */
  static Connection open(RabbitMqTransportConfig config, String role, boolean automaticRecovery)
      throws IOException {
    ConnectionFactory factory = new ConnectionFactory();
    try {
      factory.setUri(config.uri());
    } catch (URISyntaxException | GeneralSecurityException e) {
      throw new IllegalArgumentException("uri is not usable: " + config.redactedUri(), e);
    }
    factory.setAutomaticRecoveryEnabled(automaticRecovery);
    factory.setTopologyRecoveryEnabled(automaticRecovery);
    factory.setNetworkRecoveryInterval(config.recoveryInterval().toMillis());
    factory.setConnectionTimeout(10_000);
    try {
      return factory.newConnection(config.connectionName() + "-" + role);
    } catch (TimeoutException e) {
      throw new IOException(unreachable(config), e);
    } catch (IOException e) {
      throw new IOException(unreachable(config) + ": " + rootCause(e), e);
    }
  }

  private static String rootCause(Throwable e) {
    Throwable t = e;
    while (t.getCause() != null && t.getCause() != t) {
      t = t.getCause();
    }
    return t.getMessage() != null ? t.getMessage() : t.toString();
  }

  static String unreachable(RabbitMqTransportConfig config) {
    return "cannot connect to RabbitMQ at " + config.redactedUri()
        + " (start it with `rabbitmq-server -detached`, or point "
        + RabbitMqTransportConfig.URI_ENV + " at a running broker)";
  }
}
