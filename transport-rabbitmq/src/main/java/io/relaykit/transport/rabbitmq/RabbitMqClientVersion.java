package io.relaykit.transport.rabbitmq;

import com.rabbitmq.client.impl.ClientVersion;
import io.relaykit.internal.ClientVersions;

/**
 * The oldest amqp-client relaykit-rabbitmq runs on: {@value #FLOOR}, what Spring Boot 4.0
 * manages. Checked by the publisher's, subscriber's and dead-letter store's {@code create}, so an
 * older client fails there with one line.
 */
final class RabbitMqClientVersion {
  /** The oldest supported amqp-client. */
  static final String FLOOR = "5.27.1";

  private RabbitMqClientVersion() {}

  /** @throws io.relaykit.internal.ClientVersionException below {@value #FLOOR} */
  static void check() {
    ClientVersions.require("relaykit-rabbitmq", "amqp-client", ClientVersion.VERSION, FLOOR, null);
  }
}
