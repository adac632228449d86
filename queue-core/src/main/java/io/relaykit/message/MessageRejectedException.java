package io.relaykit.message;

import io.relaykit.retry.PermanentFailureException;

/**
 * A {@link Publisher} refused a message that no retry can make acceptable: larger than the
 * transport allows, missing a key the destination requires, addressed to an invalid destination.
 * Permanent: the outbox relay dead-letters it at once.
 */
public class MessageRejectedException extends PermanentFailureException {
  private static final long serialVersionUID = 1L;

  /**
   * A refusal without a cause.
   *
   * @param message why the message was refused; becomes the dead letter's reason
   */
  public MessageRejectedException(String message) {
    super(message);
  }

  /**
   * A refusal caused by {@code cause}.
   *
   * @param message why the message was refused; becomes the dead letter's reason
   * @param cause the transport's failure; may be null
   */
  public MessageRejectedException(String message, Throwable cause) {
    super(message, cause);
  }
}
