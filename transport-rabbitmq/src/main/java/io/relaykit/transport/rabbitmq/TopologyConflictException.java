package io.relaykit.transport.rabbitmq;

/**
 * An exchange or queue already exists on the broker with other properties than relaykit declares
 * (a classic queue where a quorum queue is expected, another TTL, another exchange type). The
 * message names the entity and quotes the broker's description of the mismatch. Nothing is
 * changed on the broker: delete the entity or pick another name.
 */
public final class TopologyConflictException extends IllegalStateException {
  private static final long serialVersionUID = 1L;

  TopologyConflictException(String message, Throwable cause) {
    super(message, cause);
  }
}
